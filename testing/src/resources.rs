//! What a process uses, read from `/proc`: its resident memory and its CPU time.

use std::time::Duration;

use super::{Error, Result};

/// Resident memory (`VmRSS`) of process `pid`, in bytes; `std::process::id()` for this one.
///
/// # Errors
/// [`Error::Io`] if the process is gone or `/proc` cannot be read.
pub fn resident_bytes(pid: u32) -> Result<u64> {
    let status = process(pid)?.status().map_err(proc_error(pid, "status"))?;
    let kib = status.vmrss.ok_or_else(|| Error::Io {
        action: format!("reading /proc/{pid}/status"),
        source: std::io::Error::other("it has no VmRSS line"),
    })?;
    Ok(kib * 1024)
}

/// CPU time (user + system) process `pid` has used so far; `std::process::id()` for this one.
///
/// # Errors
/// [`Error::Io`] if the process is gone or `/proc` cannot be read.
pub fn cpu_time(pid: u32) -> Result<Duration> {
    let stat = process(pid)?.stat().map_err(proc_error(pid, "stat"))?;
    let ticks = stat.utime + stat.stime;
    let per_second = procfs::ticks_per_second().max(1);
    Ok(Duration::from_nanos(
        ticks.saturating_mul(1_000_000_000) / per_second,
    ))
}

fn process(pid: u32) -> Result<procfs::process::Process> {
    let id = i32::try_from(pid).unwrap_or(i32::MAX);
    procfs::process::Process::new(id).map_err(proc_error(pid, ""))
}

fn proc_error(pid: u32, file: &'static str) -> impl FnOnce(procfs::ProcError) -> Error {
    move |err| Error::Io {
        action: format!("reading /proc/{pid}/{file}"),
        source: std::io::Error::other(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_holds_memory_and_its_cpu_time_grows_as_it_spins() -> anyhow::Result<()> {
        let me = std::process::id();
        assert!(
            resident_bytes(me)? > 1024 * 1024,
            "a test process holds over 1 MB"
        );
        let before = cpu_time(me)?;
        // Spin until the reading shows it (the wall time it takes depends on the machine's load).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let mut spin = 0u64;
        while cpu_time(me)? < before + Duration::from_millis(50) {
            for _ in 0..1_000_000 {
                spin = std::hint::black_box(spin.wrapping_add(1));
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "30 s of spinning did not show as 50 ms of CPU time"
            );
        }
        Ok(())
    }

    #[test]
    fn a_process_that_is_not_there_is_an_error() {
        // Beyond the kernel's largest pid (2^22).
        assert!(resident_bytes(1 << 23).is_err());
        assert!(cpu_time(1 << 23).is_err());
    }
}
