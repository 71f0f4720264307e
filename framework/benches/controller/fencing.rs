//! What read-your-writes costs when nothing is pending: the watch table's row with no reconcile
//! parked, for kubeward with read-your-writes on (the default) and off, in alternating rounds,
//! beside the spread of the off side's own rounds (the noise the difference is read against).

use std::time::Duration;

use super::{CONCURRENCY, fast, quick, show, slots, start_ours, watch};

/// Rounds per side: 5, or 1 with `KUBEWARD_BENCH_QUICK=1`.
fn rounds() -> usize {
    if quick() { 1 } else { 5 }
}

/// One round of the watch row `concurrency`, 0 parked, with read-your-writes `on` or off.
async fn round(concurrency: usize, on: bool) -> Option<Duration> {
    let slots = slots(0, concurrency);
    let timed = watch::measure(0, |fake, load| {
        start_ours(fake, load, slots, |c| c.read_your_writes(on))
    })
    .await;
    timed.map(|t| t.wall)
}

/// The median of `times` (`None` if a round timed out).
fn median(mut times: Vec<Option<Duration>>) -> Option<Duration> {
    if times.iter().any(Option::is_none) {
        return None;
    }
    times.sort();
    times.get(times.len() / 2).copied().flatten()
}

/// `slow` / `fast` of two optional times, as "1.03×".
fn over(slow: Option<Duration>, fast: Option<Duration>) -> String {
    match (slow, fast) {
        (Some(s), Some(f)) => format!("{:.2}×", s.as_secs_f64() / f.as_secs_f64()),
        _ => "–".into(),
    }
}

/// Prints the table.
pub(super) async fn table() {
    println!(
        "{} freshly created ConfigMaps each reconciled from its watch event by a no-op reconciler (it writes nothing, so no read ever has a write to wait for), no reconcile parked; {} alternating rounds per side, medians. \"on / off\" is the time with read-your-writes over the time without (above 1: it costs); \"off's spread\" is the slowest round without it over its fastest, the noise that figure is read against.",
        fast(),
        rounds()
    );
    println!();
    println!("| concurrency | read-your-writes on | off | on / off | off's spread |");
    println!("| ---: | ---: | ---: | ---: | ---: |");
    for concurrency in CONCURRENCY {
        let (mut on, mut off) = (Vec::new(), Vec::new());
        for _ in 0..rounds() {
            on.push(round(concurrency, true).await);
            off.push(round(concurrency, false).await);
        }
        let spread = over(
            off.iter().copied().max().flatten(),
            off.iter().copied().min().flatten(),
        );
        let (on, off) = (median(on), median(off));
        println!(
            "| {concurrency} | {} | {} | {} | {spread} |",
            show(on),
            show(off),
            over(on, off)
        );
    }
    println!();
}
