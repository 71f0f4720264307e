//! Runs a server process that cannot outlive the test process that started it.
//!
//! The server runs under a small `sh` guard whose standard input is a pipe from us. When we drop
//! the [`Supervised`] handle, or our process dies in any way (even SIGKILL), the pipe closes, the
//! guard's `read` returns and it kills the server. So no etcd or kube-apiserver is ever orphaned,
//! not even one held in a `static` that is never dropped.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use super::{Result, io_error};

/// The guard: start the server with the remaining arguments, wait for stdin to close, kill it.
const GUARD: &str = r#""$@" </dev/null & server=$!
read _ignored
kill -9 "$server" 2>/dev/null
wait "$server" 2>/dev/null
exit 0"#;

/// A running server process, killed when this is dropped.
#[derive(Debug)]
pub(crate) struct Supervised {
    guard: Child,
    lifeline: Option<ChildStdin>,
    log: PathBuf,
}

impl Supervised {
    /// Starts `program args…` with stdout and stderr going to `log`.
    pub(crate) fn spawn(program: &Path, args: &[String], log: PathBuf) -> Result<Self> {
        let out = File::create(&log).map_err(io_error(format!("creating {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(io_error("duplicating a log file handle"))?;
        let mut guard = Command::new("sh")
            .arg("-c")
            .arg(GUARD)
            .arg("kubeward-guard")
            .arg(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(io_error(format!("starting {}", program.display())))?;
        let lifeline = guard.stdin.take();
        Ok(Self {
            guard,
            lifeline,
            log,
        })
    }

    /// The last `lines` lines of the server's output.
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log, lines)
    }

    /// Kills the server and waits until it is gone.
    pub(crate) fn stop(&mut self) {
        drop(self.lifeline.take());
        // The guard kills and reaps the server, then exits.
        let _ = self.guard.wait();
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    let mut text = String::new();
    if let Ok(mut file) = File::open(path) {
        let _ = file.read_to_string(&mut text);
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
