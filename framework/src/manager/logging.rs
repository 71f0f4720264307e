//! Sets up logging from the `--log-format` and `--log-level` flags.

use tracing_subscriber::EnvFilter;

use super::{Error, LogFormat};

/// Installs a global tracing subscriber writing to stderr; `RUST_LOG`, when set, wins over `level`.
///
/// # Errors
/// [`Error::InvalidFlags`] when `level` is not a valid filter; [`Error::Logging`] when a global
/// subscriber was already installed.
pub fn init_logging(format: LogFormat, level: &str) -> Result<(), Error> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(env) if !env.is_empty() => EnvFilter::try_new(env),
        _ => EnvFilter::try_new(level),
    }
    .map_err(|e| Error::InvalidFlags(format!("--log-level: {e}")))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    }
    .map_err(Error::Logging)
}
