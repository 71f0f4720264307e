//! Collects one row per fault and renders the suite's summary table.

use std::fmt::Write as _;
use std::time::Duration;

use super::witness::Checked;

/// One fault: how often it was injected, what the checks after it saw, and the worst recovery.
#[derive(Debug)]
pub(super) struct Row {
    fault: String,
    injected: u64,
    checked: usize,
    lost: usize,
    worst: Duration,
    measured_from: String,
}

impl Row {
    /// A row for `fault`, whose recovery time is measured from `measured_from`.
    pub(super) fn new(fault: impl Into<String>, measured_from: impl Into<String>) -> Self {
        Self {
            fault: fault.into(),
            injected: 0,
            checked: 0,
            lost: 0,
            worst: Duration::ZERO,
            measured_from: measured_from.into(),
        }
    }

    /// Counts one injection, checked by `checked`, recovered after `recovery`.
    pub(super) fn record(&mut self, checked: &Checked, recovery: Duration) {
        self.injected += 1;
        self.checked += checked.objects;
        self.lost += checked.lost;
        self.worst = self.worst.max(recovery);
    }

    /// Sets the number of injections, when one check covers several (e.g. a panic per attempt).
    pub(super) fn injected(&mut self, times: u64) {
        self.injected = times;
    }

    /// Adds a remark to the "measured from" cell.
    pub(super) fn note(&mut self, note: impl AsRef<str>) {
        let _ = write!(self.measured_from, "; {}", note.as_ref());
    }
}

/// The rows so far, in the order the faults ran.
#[derive(Debug, Default)]
pub(super) struct Summary {
    rows: Vec<Row>,
}

impl Summary {
    pub(super) fn add(&mut self, row: Row) {
        self.rows.push(row);
    }

    /// The table in markdown, with the profile it ran under.
    pub(super) fn table(&self, profile: &str) -> String {
        let mut out = format!(
            "reliability summary ({profile} profile)\n\n\
             | fault | times injected | objects checked | lost updates | recovery (worst) | measured from |\n\
             | --- | ---: | ---: | ---: | ---: | --- |\n"
        );
        for row in &self.rows {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {:.2} s | {} |",
                row.fault,
                row.injected,
                row.checked,
                row.lost,
                row.worst.as_secs_f64(),
                row.measured_from
            );
        }
        out
    }
}
