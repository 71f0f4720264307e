//! Reads durations given on the command line.

use std::time::Duration;

/// Parses a duration: a number with `ms`, `s`, `m` or `h` (`15s`; `1m30s` is not accepted), or
/// plain seconds; the error names the accepted forms.
pub(super) fn parse_duration(value: &str) -> Result<Duration, String> {
    let bad = || format!("`{value}` is not a duration; use e.g. `15s`, `500ms`, `2m` or `1h`");
    let split = value
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "" | "s" => number,
        "ms" => number / 1000.0,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| bad())
}
