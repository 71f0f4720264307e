//! Work-queue throughput: kubeward's `WorkQueue` against kube-runtime's `scheduler` and a bare
//! `HashSet` + `VecDeque`, on add + get + done with heavy duplication. Prints markdown tables.
//!
//! Run with `cargo bench -p kubeward --bench queue` (or `scripts/bench queue`).
//!
//! # Workload
//!
//! 1,000,000 adds over 100,000 keys, each key added 10 times. The adds come in 100 bursts of
//! 10,000: a burst touches 1,000 keys, each 10 times in shuffled order (an object updated
//! several times in quick succession), and the producer yields to the scheduler between bursts.
//! Workers take keys and finish them at once (no work), so the queue itself is all that is
//! measured. A run ends when every add has been made and every key processed after its last add;
//! the time is for the whole run, reported per add. "keys processed" shows how many adds were
//! merged: 100,000 means every burst was fully deduplicated, 1,000,000 none.
//!
//! Runtimes: "current-thread" is a single-threaded tokio runtime (producer and workers interleave
//! at the burst yields, deterministically); "multi-thread" is tokio's multi-threaded runtime with
//! 2 worker threads (the machines this project runs on have 2 cores), where the producer races
//! the workers.
//!
//! # The three contenders
//!
//! - **kubeward**: one producer task calls `add` for each key; N worker tasks loop on
//!   `get().await` / `done`. After the last burst the producer calls `shutdown_with_drain`.
//! - **kube-runtime**: `kube::runtime::scheduler` is a `Stream` that reads `ScheduleRequest`s
//!   from an input stream and emits each key once, at its `run_at` (the earliest wins). Its input
//!   is the same bursts as a stream of `ScheduleRequest { message: key, run_at }` with `run_at` =
//!   now (read once per burst), returning `Pending` once between bursts (the producer yielding),
//!   polled by the scheduler in the consumer's task: that is how kube-runtime's controller feeds
//!   it (its trigger streams are polled by the scheduler in one task), and it is the scheduler's
//!   best case: no channel, no second task. (Fed from a separate producer task through a
//!   `futures` unbounded channel instead, it measured slower still.) One consumer task drains
//!   the scheduler: it is a single-consumer stream and kube-runtime's controller runs every
//!   reconcile from that one task, so with zero-cost work the 4- and 8-worker rows run the same
//!   single consumer (handing keys on to N tasks through channels would only add cost). The
//!   scheduler emits keys at its timer's 1 ms ticks; to end the run without dropping queued keys
//!   (it stops as soon as its input ends) its input never ends but yields a sentinel key due 1 ms
//!   after the final burst, and the time stops at the last real key processed (or at the end of
//!   the input, if the consumer kept up).
//! - **floor**: single-threaded, no runtime: per burst, `if set.insert(k) { deque.push_back(k) }`
//!   for each add, then pop every key off the deque and remove it from the set. No processing
//!   state, no lock, no waking: what deduplication alone costs. "floor" is std's `HashSet` as it
//!   comes (`SipHash`); "foldhash floor" is the same with foldhash, the hasher the queue uses, so
//!   its ratio is the queue's own overhead (mostly the lock: two atomic operations per call,
//!   against a few nanoseconds for a foldhash lookup of a u64).
//!
//! Each configuration runs 5 rounds after a warm-up, the contenders taking turns within a round
//! so that a load spike on a shared machine hits all of them; the tables show the medians, and
//! the ratios are medians of the per-round ratios. Every row gives ns per add and ns per key
//! processed for both sides, and the keys each processed: kube-runtime's scheduler emits on its
//! 1 ms tick, kubeward's workers take a key when they are woken, and each merges the adds made
//! before it hands the key out.
//! The u64 table is the workload (with the floors on its current-thread row); the String
//! table uses `namespace/name` keys on the multi-threaded runtime with 1, 4 and 8 workers, where
//! every add also clones its key out of the pre-built sequence, for both sides; the `ObjectKey`
//! table queues the same names as `cache::ObjectKey`, whose clone is one atomic increment.
//!
//! `KUBEWARD_BENCH_QUICK=1` (`scripts/bench --quick`) runs 2,000 keys, one round and fewer rows:
//! it checks that the bench runs, not its figures.
//!
//! `QUEUE_BENCH_PROFILE=<workers>[mt][s]` runs only kubeward (20 runs; `mt`: multi-threaded
//! runtime, `s`: String keys) and prints the median, for use under a profiler.
#![allow(clippy::print_stdout, reason = "a bench binary that prints its tables")]
#![allow(missing_docs, unreachable_pub)]

use std::collections::{HashSet, VecDeque};
use std::fmt::Write as _;
use std::hash::BuildHasher;
use std::hash::Hash;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::scheduler::{ScheduleRequest, scheduler};
use kubeward::cache::ObjectKey;
use kubeward::queue::WorkQueue;
use tokio::runtime::Runtime;
use tokio::time::Instant;

const REPEATS: usize = 10;
const BURST_KEYS: u64 = 1_000;

/// `KUBEWARD_BENCH_QUICK=1` (`scripts/bench --quick`): 2,000 keys, one round and no warm-up,
/// fewer rows: checks that the bench runs (in a debug build), not its figures.
fn quick() -> bool {
    std::env::var_os("KUBEWARD_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Distinct keys in a run.
fn keys() -> u64 {
    if quick() { 2_000 } else { 100_000 }
}

/// Measured rounds per row (after one warm-up round).
fn runs() -> usize {
    if quick() { 1 } else { 5 }
}

/// A small deterministic generator, so that every contender gets the same sequence.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The adds, burst by burst.
fn workload<K>(key: impl Fn(u64) -> K) -> Vec<Vec<K>> {
    let mut rng = SplitMix(0x5EED);
    (0..keys() / BURST_KEYS)
        .map(|burst| {
            let mut ids: Vec<u64> = (burst * BURST_KEYS..(burst + 1) * BURST_KEYS)
                .flat_map(|id| std::iter::repeat_n(id, REPEATS))
                .collect();
            for i in (1..ids.len()).rev() {
                let j = usize::try_from(rng.next() % (i as u64 + 1)).unwrap_or(0);
                ids.swap(i, j);
            }
            ids.into_iter().map(&key).collect()
        })
        .collect()
}

/// One run's wall time and the number of keys handed to workers.
#[derive(Clone, Copy)]
struct Run {
    time: Duration,
    processed: usize,
}

fn median(mut runs: Vec<Run>) -> Run {
    runs.sort_by_key(|r| r.time);
    runs[runs.len() / 2]
}

trait Key: Hash + Eq + Clone + Send + Sync + Unpin + 'static {}
impl<K: Hash + Eq + Clone + Send + Sync + Unpin + 'static> Key for K {}

fn kubeward<K: Key>(rt: &Runtime, bursts: &Arc<Vec<Vec<K>>>, workers: usize) -> Run {
    rt.block_on(async {
        let queue: WorkQueue<K> = WorkQueue::new();
        let start = Instant::now();
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let queue = queue.clone();
                tokio::spawn(async move {
                    let mut processed = 0;
                    while let Some(key) = queue.get().await {
                        black_box(&key);
                        processed += 1;
                        queue.done(&key);
                    }
                    processed
                })
            })
            .collect();
        let producer = {
            let queue = queue.clone();
            let bursts = Arc::clone(bursts);
            tokio::spawn(async move {
                for burst in bursts.iter() {
                    for key in burst {
                        queue.add(key.clone());
                    }
                    tokio::task::yield_now().await;
                }
                queue.shutdown_with_drain().await;
            })
        };
        producer.await.expect("producer");
        let mut processed = 0;
        for h in handles {
            processed += h.await.expect("worker");
        }
        Run {
            time: start.elapsed(),
            processed,
        }
    })
}

/// The scheduler's input: the bursts as a stream, returning `Pending` once between bursts (the
/// producer yielding) and never ending after the sentinel (the scheduler would stop at once).
struct Requests<K> {
    bursts: Arc<Vec<Vec<K>>>,
    burst: usize,
    next: usize,
    run_at: Instant,
    sentinel: Option<K>,
    finished: Arc<parking_lot::Mutex<Option<Instant>>>,
}

impl<K: Key> futures::Stream for Requests<K> {
    type Item = ScheduleRequest<K>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = self.get_mut();
        if let Some(burst) = this.bursts.get(this.burst) {
            if this.next == 0 {
                this.run_at = Instant::now();
            }
            if let Some(key) = burst.get(this.next) {
                this.next += 1;
                return Poll::Ready(Some(ScheduleRequest {
                    message: key.clone(),
                    run_at: this.run_at,
                }));
            }
            this.burst += 1;
            this.next = 0;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if let Some(sentinel) = this.sentinel.take() {
            *this.finished.lock() = Some(Instant::now());
            return Poll::Ready(Some(ScheduleRequest {
                message: sentinel,
                run_at: this.run_at + Duration::from_millis(1),
            }));
        }
        Poll::Pending
    }
}

fn kube_runtime<K: Key>(rt: &Runtime, bursts: &Arc<Vec<Vec<K>>>, sentinel: &K) -> Run {
    rt.block_on(async {
        let finished = Arc::new(parking_lot::Mutex::new(None));
        let start = Instant::now();
        let requests = Requests {
            bursts: Arc::clone(bursts),
            burst: 0,
            next: 0,
            run_at: start,
            sentinel: Some(sentinel.clone()),
            finished: Arc::clone(&finished),
        };
        let sentinel = sentinel.clone();
        let flag = Arc::clone(&finished);
        let consumer = tokio::spawn(async move {
            let mut scheduled = std::pin::pin!(scheduler(requests));
            let mut processed = 0;
            let mut last = start;
            while let Some(key) = scheduled.next().await {
                if key == sentinel {
                    break;
                }
                black_box(&key);
                processed += 1;
                // Only the keys after the last burst need a timestamp.
                if flag.lock().is_some() {
                    last = Instant::now();
                }
            }
            (processed, last)
        });
        let (processed, last) = consumer.await.expect("consumer");
        let finished = finished.lock().expect("all bursts were read");
        Run {
            time: last.max(finished) - start,
            processed,
        }
    })
}

fn floor<K: Key, S: BuildHasher + Default>(bursts: &[Vec<K>]) -> Run {
    let start = Instant::now();
    let mut set: HashSet<K, S> = HashSet::default();
    let mut deque: VecDeque<K> = VecDeque::new();
    let mut processed = 0;
    for burst in bursts {
        for key in burst {
            let key = key.clone();
            if !set.contains(&key) {
                set.insert(key.clone());
                deque.push_back(key);
            }
        }
        while let Some(key) = deque.pop_front() {
            set.remove(&key);
            black_box(&key);
            processed += 1;
        }
    }
    Run {
        time: start.elapsed(),
        processed,
    }
}

fn current_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
}

fn multi_thread() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("runtime")
}

fn per_add(run: Run) -> f64 {
    run.time.as_nanos() as f64 / (keys() as f64 * REPEATS as f64)
}

/// Nanoseconds per key handed out: kube-runtime's scheduler merges more adds (it emits on its
/// 1 ms tick), so it hands out fewer keys for the same adds.
fn per_processed(run: Run) -> f64 {
    run.time.as_nanos() as f64 / run.processed.max(1) as f64
}

/// The median of each column over interleaved rounds, so that a load spike hits all of them.
struct Row {
    ours: Run,
    theirs: Run,
    floors: Option<(Run, Run)>,
    /// Per add: kube-runtime's time / kubeward's.
    vs_theirs: f64,
    /// Per processed key: kube-runtime's time per key / kubeward's.
    vs_theirs_processed: f64,
    vs_floors: Option<(f64, f64)>,
}

fn median_f64(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ratios(ours: &[Run], other: &[Run]) -> f64 {
    ratios_by(ours, other, per_add)
}

fn ratios_by(ours: &[Run], other: &[Run], per: fn(Run) -> f64) -> f64 {
    median_f64(
        ours.iter()
            .zip(other)
            .map(|(o, t)| per(*o) / per(*t))
            .collect(),
    )
}

fn row<K: Key>(
    rt: &Runtime,
    bursts: &Arc<Vec<Vec<K>>>,
    workers: usize,
    sentinel: &K,
    with_floor: bool,
) -> Row {
    if !quick() {
        // Warm-up round.
        let _ = (
            kubeward(rt, bursts, workers),
            kube_runtime(rt, bursts, sentinel),
        );
    }
    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    let mut std_floors = Vec::new();
    let mut fold_floors = Vec::new();
    for _ in 0..runs() {
        ours.push(kubeward(rt, bursts, workers));
        theirs.push(kube_runtime(rt, bursts, sentinel));
        if with_floor {
            std_floors.push(floor::<K, std::hash::RandomState>(bursts));
            fold_floors.push(floor::<K, hashbrown::DefaultHashBuilder>(bursts));
        }
    }
    Row {
        vs_theirs: 1.0 / ratios(&ours, &theirs),
        vs_theirs_processed: 1.0 / ratios_by(&ours, &theirs, per_processed),
        vs_floors: with_floor.then(|| (ratios(&ours, &std_floors), ratios(&ours, &fold_floors))),
        ours: median(ours),
        theirs: median(theirs),
        floors: with_floor.then(|| (median(std_floors), median(fold_floors))),
    }
}

/// One table: a row per `(workers, runtime)`; the floors for the current-thread row only.
fn table<K: Key>(
    title: &str,
    key: impl Fn(u64) -> K,
    sentinel: &K,
    rows: &[(usize, &str)],
) -> String {
    let bursts = Arc::new(workload(key));
    let mut out = String::new();
    let _ = writeln!(out, "### {title}\n");
    let _ = writeln!(
        out,
        "| workers | runtime | kubeward ns/add | kube-runtime ns/add | kubeward vs kube-runtime, per add | kubeward ns/key processed | kube-runtime ns/key processed | kubeward vs kube-runtime, per key processed | keys processed (kubeward / kube-runtime) |"
    );
    let _ = writeln!(
        out,
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    );
    let single = current_thread();
    let multi = multi_thread();
    let mut floors = Vec::new();
    for &(workers, flavour) in rows {
        let rt = if flavour == "current-thread" {
            &single
        } else {
            &multi
        };
        let r = row(rt, &bursts, workers, sentinel, flavour == "current-thread");
        if let (Some((std_floor, fold_floor)), Some((vs_std, vs_fold))) = (r.floors, r.vs_floors) {
            floors.push(format!(
                "| {workers} | {flavour} | {:.1} | {vs_std:.2}× | {:.1} | {vs_fold:.2}× | {} |",
                per_add(std_floor),
                per_add(fold_floor),
                std_floor.processed,
            ));
        }
        let _ = writeln!(
            out,
            "| {workers} | {flavour} | {:.1} | {:.1} | {:.2}× | {:.1} | {:.1} | {:.2}× | {} / {} |",
            per_add(r.ours),
            per_add(r.theirs),
            r.vs_theirs,
            per_processed(r.ours),
            per_processed(r.theirs),
            r.vs_theirs_processed,
            r.ours.processed,
            r.theirs.processed,
        );
    }
    if !floors.is_empty() {
        let _ = writeln!(
            out,
            "\nFloors: a bare `HashSet` + `VecDeque`, single-threaded, no runtime (\"vs\": kubeward's time / the floor's, lower is better).\n"
        );
        let _ = writeln!(
            out,
            "| workers | runtime | floor ns/add | kubeward vs floor | foldhash floor ns/add | kubeward vs foldhash floor | keys processed by the floors |"
        );
        let _ = writeln!(out, "| ---: | --- | ---: | ---: | ---: | ---: | ---: |");
        for line in floors {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

fn u64_key(id: u64) -> u64 {
    id.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn string_key(id: u64) -> String {
    format!("namespace-{}/object-{id}", id % 97)
}

/// The same names as [`string_key`], as the key type controllers queue (one `Arc`, hash kept).
fn object_key(id: u64) -> ObjectKey {
    ObjectKey::new(
        Some(&format!("namespace-{}", id % 97)),
        &format!("object-{id}"),
    )
}

fn main() {
    // `QUEUE_BENCH_PROFILE=<workers>[mt][s]`: only kubeward, 20 runs, for a profiler; `mt` for
    // the multi-threaded runtime, `s` for String keys.
    if let Ok(spec) = std::env::var("QUEUE_BENCH_PROFILE") {
        let (rest, strings) = spec
            .strip_suffix('s')
            .map_or((spec.as_str(), false), |r| (r, true));
        let (rt, workers) = match rest.strip_suffix("mt") {
            Some(w) => (multi_thread(), w.parse().unwrap_or(1)),
            None => (current_thread(), rest.parse().unwrap_or(1)),
        };
        let runs: Vec<Run> = if strings {
            let bursts = Arc::new(workload(string_key));
            (0..20).map(|_| kubeward(&rt, &bursts, workers)).collect()
        } else {
            let bursts = Arc::new(workload(u64_key));
            (0..20).map(|_| kubeward(&rt, &bursts, workers)).collect()
        };
        let mut ns: Vec<f64> = runs.iter().map(|r| per_add(*r)).collect();
        ns.sort_by(f64::total_cmp);
        let mut processed: Vec<usize> = runs.iter().map(|r| r.processed).collect();
        processed.sort_unstable();
        println!(
            "kubeward {spec}: median {:.1} ns/add, min {:.1}, max {:.1}; keys processed: median {}",
            ns[10], ns[0], ns[19], processed[10]
        );
        return;
    }
    let (adds, distinct) = (keys() * REPEATS as u64, keys());
    println!("## Work queue: add + get + done, {adds} adds over {distinct} keys\n");
    println!(
        "Bursts of {} adds (1,000 keys × 10); medians of {} interleaved rounds. \
         \"vs kube-runtime\": kube-runtime's time / kubeward's (higher is better), per add and \
         per key processed (each side merges the adds made before it hands a key out, \
         kube-runtime's scheduler on its 1 ms tick: the side that processes more keys for the same \
         adds pays for them).\n",
        BURST_KEYS * REPEATS as u64,
        runs()
    );
    let u64_rows: &[(usize, &str)] = if quick() {
        &[(1, "current-thread"), (1, "multi-thread")]
    } else {
        &[
            (1, "current-thread"),
            (1, "multi-thread"),
            (4, "multi-thread"),
            (8, "multi-thread"),
        ]
    };
    print!("{}", table("u64 keys", u64_key, &u64::MAX, u64_rows));
    println!();
    let string_rows: &[(usize, &str)] = if quick() {
        &[(4, "multi-thread")]
    } else {
        &[
            (1, "multi-thread"),
            (4, "multi-thread"),
            (8, "multi-thread"),
        ]
    };
    print!(
        "{}",
        table(
            "String keys (`namespace/name`)",
            string_key,
            &String::from("sentinel"),
            string_rows,
        )
    );
    println!();
    print!(
        "{}",
        table(
            "`ObjectKey` keys (the same names; what kubeward's controllers queue)",
            object_key,
            &ObjectKey::new(None, "sentinel"),
            string_rows,
        )
    );
}
