//! Signals a child process, and stops one as Kubernetes stops a pod: SIGTERM, then a wait for it
//! to exit.

use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

use super::{Error, Result, io_error, wait_for};

/// Sends SIGTERM to `child` and waits up to `within` for it to exit; its exit status.
///
/// # Errors
/// [`Error::Io`] if the signal cannot be sent, [`Error::Timeout`] if the process is still
/// running after `within`.
pub async fn terminate(child: &mut Child, within: Duration) -> Result<ExitStatus> {
    signal(child, "TERM")?;
    let pid = child.id();
    wait_for(
        within,
        &format!("process {pid} to exit after SIGTERM"),
        || {
            let status = child.try_wait().ok().flatten();
            async move { status }
        },
    )
    .await
}

/// Sends the signal named `name` (`"TERM"`, `"INT"`, as `kill -s` names them) to `child`.
///
/// # Errors
/// [`Error::Io`] if `kill` cannot run or does not deliver the signal (the process is gone).
pub fn signal(child: &Child, name: &str) -> Result<()> {
    let pid = child.id();
    let sent = Command::new("kill")
        .args(["-s", name, &pid.to_string()])
        .status()
        .map_err(io_error(format!("running kill -s {name} {pid}")))?;
    if sent.success() {
        return Ok(());
    }
    Err(Error::Io {
        action: format!("sending SIG{name} to process {pid}"),
        source: std::io::Error::other(format!("kill exited with {sent}")),
    })
}
