//! Turns SIGTERM and SIGINT into the cancellation of a token.

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// Cancels `token` on the first SIGTERM or SIGINT; returns when either arrived or `token` was
/// cancelled by someone else.
///
/// # Errors
/// The signal handlers could not be installed.
pub async fn cancel_on_signal(token: CancellationToken) -> std::io::Result<()> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
        _ = int.recv() => tracing::info!("SIGINT received, shutting down"),
        () = token.cancelled() => return Ok(()),
    }
    token.cancel();
    Ok(())
}
