//! Sets up logging from the `--log-format` and `--log-level` flags.

use std::ffi::OsString;
use std::io::IsTerminal as _;

use tracing_subscriber::EnvFilter;

use super::LogFormat;
use crate::manager::Error;

/// What the default filter adds: kube's client writes an ERROR for every failed request (its
/// HTTP trace layer) and a WARN for every watch the server drops, a flood while the API server
/// restarts. The informers report an outage once instead, so those lines are off unless the
/// filter names `kube_client` itself.
const QUIET_CLIENT: [&str; 2] = [
    "kube_client::client::builder=off",
    "kube_client::client=error",
];

/// Installs a global tracing subscriber writing to stderr; `RUST_LOG`, when set, wins over `level`.
/// Text lines are coloured only when stderr is a terminal and `NO_COLOR` is unset or empty (see
/// <https://no-color.org>); JSON is one object per line.
///
/// # Errors
/// [`Error::InvalidFlags`] when `level` (or `RUST_LOG`, naming it) is not a valid filter;
/// [`Error::Logging`] when a global subscriber was already installed.
pub fn init_logging(format: LogFormat, level: &str) -> Result<(), Error> {
    let (origin, directives) = match std::env::var("RUST_LOG") {
        Ok(env) if !env.is_empty() => ("RUST_LOG", env),
        _ => ("--log-level", level.to_owned()),
    };
    let filter = log_filter(&directives)
        .map_err(|e| Error::InvalidFlags(format!("{origin} {directives}: {e}")))?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_ansi(colour(
                std::io::stderr().is_terminal(),
                std::env::var_os("NO_COLOR"),
            ))
            .try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    }
    .map_err(Error::Logging)
}

/// Whether text lines carry ANSI colours: only on a terminal, and never when `NO_COLOR` is set
/// to a non-empty value. A file or a pipe (a log collector, `2> operator.log`) gets plain text.
fn colour(terminal: bool, no_color: Option<OsString>) -> bool {
    terminal && no_color.is_none_or(|value| value.is_empty())
}

/// The filter `directives` describe, with kube's per-request error lines off unless they name
/// `kube_client`.
fn log_filter(directives: &str) -> Result<EnvFilter, tracing_subscriber::filter::ParseError> {
    let filter = EnvFilter::try_new(directives)?;
    if directives.contains("kube_client") {
        return Ok(filter);
    }
    QUIET_CLIENT.iter().try_fold(filter, |filter, directive| {
        Ok(filter.add_directive(directive.parse()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_coloured_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(
            colour(true, Some(OsString::new())),
            "an empty NO_COLOR is unset"
        );
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None), "a file or a pipe gets no colour");
        assert!(!colour(false, Some("1".into())));
    }

    #[test]
    fn the_client_per_request_errors_are_off_unless_the_filter_names_kube_client() {
        let quiet = log_filter("info").unwrap().to_string();
        for directive in QUIET_CLIENT {
            assert!(quiet.contains(directive), "{quiet}");
        }
        let chosen = log_filter("info,kube_client=debug").unwrap().to_string();
        assert!(!chosen.contains("=off"), "{chosen}");
        assert!(log_filter("[[[").is_err());
    }
}
