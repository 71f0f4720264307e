//! The work-queue example runs to completion: every key processed once to success.

use std::process::Command;

#[test]
fn the_work_queue_example_processes_every_key_once_to_success() -> std::io::Result<()> {
    let status = Command::new(env!("CARGO_BIN_EXE_work_queue")).status()?;
    assert!(status.success(), "work_queue exited with {status}");
    Ok(())
}
