//! Turns SIGTERM and SIGINT into the cancellation of a token, and a second one into an exit.

use std::convert::Infallible;

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// The exit code of a forced shutdown, as controller-runtime's signal handler uses.
pub const FORCED_EXIT_CODE: i32 = 1;

/// Cancels `token` on the first SIGTERM or SIGINT; on a second one, while the graceful shutdown
/// is still under way, exits the process at once with [`FORCED_EXIT_CODE`] (as
/// controller-runtime's signal handler does). Runs until dropped.
///
/// # Errors
/// The signal handlers could not be installed.
pub(crate) async fn cancel_on_signal(token: CancellationToken) -> std::io::Result<Infallible> {
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut received = 0_u32;
    loop {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        received += 1;
        if received == 1 {
            tracing::info!(
                signal = name,
                "shutting down; send it again to exit at once"
            );
            token.cancel();
        } else {
            tracing::warn!(
                signal = name,
                "second signal during shutdown; exiting at once"
            );
            std::process::exit(FORCED_EXIT_CODE);
        }
    }
}
