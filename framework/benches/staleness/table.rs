//! What one side measured at one delay, and the markdown table of every cell.

use std::time::Duration;

use crate::sides::Side;

/// One side at one watch delay, over both workloads.
#[derive(Debug, Default)]
pub struct Cell {
    /// Copies beyond one per source (copier run), listed on the API server.
    pub duplicates: usize,
    /// 409s kube-apiserver answered on ConfigMaps during the runs.
    pub conflicts: u64,
    /// Reconciles of a source, failed ones included.
    pub reconciles: usize,
    /// Writes to the sources (creates and changes).
    pub updates: usize,
    /// Per write of the copier run, sent to the finish of the first reconcile that saw it.
    pub copier: Vec<Duration>,
    /// The same for the recorder run.
    pub recorder: Vec<Duration>,
}

impl Cell {
    /// The p99 latencies of the copier and the recorder runs.
    pub fn p99s(&self) -> [Duration; 2] {
        [p99(&self.copier), p99(&self.recorder)]
    }

    /// Whether fencing on this cell failed its promise.
    pub fn stale(&self) -> bool {
        self.duplicates > 0 || self.conflicts > 0
    }
}

/// The 99th percentile of `latencies` (nearest rank; zero when empty).
pub fn p99(latencies: &[Duration]) -> Duration {
    let mut sorted = latencies.to_vec();
    sorted.sort_unstable();
    let rank = ((sorted.len() as f64 - 1.0) * 0.99).round() as usize;
    sorted.get(rank).copied().unwrap_or_default()
}

/// Prints the table: a row per (delay, side), the fenced row checking the fence's cost.
pub fn print(rows: &[(Duration, Side, Cell)], rounds: usize) {
    println!("## Read your own writes");
    println!();
    println!(
        "Local control plane, watches held back by the delay (writes on time); 3 sources changed \
         every 180 ms for {rounds} rounds, once under a `generateName` copier and once under a \
         replacing recorder; latency: a source write sent → the reconcile that saw it finished."
    );
    println!();
    println!(
        "| watch delay | controller | duplicates | conflicts (409) | reconciles per update | p99 latency, copier | p99 latency, recorder | fenced − unfenced p99 (≤ delay) |"
    );
    println!("| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |");
    for (delay, side, cell) in rows {
        let check = match side {
            Side::Fenced => fence_cost(rows, *delay, cell),
            _ => String::new(),
        };
        let [copier, recorder] = cell.p99s();
        println!(
            "| {} ms | {} | {} | {} | {:.2} | {} | {} | {check} |",
            delay.as_millis(),
            side.label(),
            cell.duplicates,
            cell.conflicts,
            cell.reconciles as f64 / cell.updates.max(1) as f64,
            ms(copier),
            ms(recorder),
        );
    }
}

/// The fenced p99s minus the unfenced ones at `delay` (copier, recorder), and whether both stay
/// within the delay (the rule; at 0 ms the difference is noise and is not judged).
fn fence_cost(rows: &[(Duration, Side, Cell)], delay: Duration, fenced: &Cell) -> String {
    let Some((_, _, unfenced)) = rows
        .iter()
        .find(|(d, s, _)| *d == delay && *s == Side::Unfenced)
    else {
        return String::new();
    };
    let pairs = fenced.p99s().into_iter().zip(unfenced.p99s());
    let costs: Vec<String> = pairs
        .clone()
        .map(|(on, off)| {
            if on >= off {
                format!("+{}", ms(on.saturating_sub(off)))
            } else {
                format!("−{}", ms(off.saturating_sub(on)))
            }
        })
        .collect();
    let costs = costs.join(" / ");
    if delay.is_zero() {
        format!("{costs} (no delay)")
    } else if pairs
        .into_iter()
        .all(|(on, off)| on.saturating_sub(off) <= delay)
    {
        format!("{costs}: within")
    } else {
        format!("{costs}: **over**")
    }
}

/// Milliseconds, whole above 10.
fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms < 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}
