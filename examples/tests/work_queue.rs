//! The work-queue example runs to completion: every key processed once to success, its log
//! lines plain text when they go to a file.

use std::fs::File;
use std::process::Command;

#[test]
fn the_work_queue_example_processes_every_key_once_to_success() -> std::io::Result<()> {
    let status = Command::new(env!("CARGO_BIN_EXE_work_queue")).status()?;
    assert!(status.success(), "work_queue exited with {status}");
    Ok(())
}

#[test]
fn the_work_queue_example_writes_no_colour_codes_into_a_log_file() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("work_queue.log");
    let status = Command::new(env!("CARGO_BIN_EXE_work_queue"))
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .stderr(File::create(&path)?)
        .status()?;
    assert!(status.success(), "work_queue exited with {status}");
    let log = std::fs::read_to_string(&path)?;
    assert!(
        log.contains("processed"),
        "no log lines in the file: {log:?}"
    );
    assert!(
        !log.contains("\x1b["),
        "colour codes in a log file: {log:?}"
    );
    Ok(())
}
