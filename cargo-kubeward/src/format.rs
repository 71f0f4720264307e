//! Formats generated Rust code with rustfmt, as `cargo fmt` would, so line breaks that depend on
//! the length of a kind's name are right for every name.

use std::io::Write as _;
use std::process::{Command, Stdio};

use anyhow::{Context as _, bail};

/// `code` formatted by rustfmt (`$RUSTFMT`, else `rustfmt` on the `PATH`) with the 2024 edition,
/// or unchanged when there is no rustfmt.
///
/// # Errors
/// rustfmt refuses the code: a broken template.
pub(crate) fn rust(code: &str) -> anyhow::Result<String> {
    let program = std::env::var_os("RUSTFMT").unwrap_or_else(|| "rustfmt".into());
    let child = Command::new(&program)
        .args(["--edition", "2024", "--emit", "stdout"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        return Ok(code.to_owned());
    };
    child
        .stdin
        .take()
        .context("rustfmt's standard input")?
        .write_all(code.as_bytes())?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "rustfmt refused generated code (a broken template): {}\n{code}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8(output.stdout)?)
}
