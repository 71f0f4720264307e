//! Multi-threaded stress: 8 workers, 1,000,000 adds over 10,000 keys from 2 producers (and a
//! smaller run where some adds are delayed).
//!
//! Checked: no key is ever held by two workers at once, and for every key its last add is
//! followed by a completed processing of that key. Each producer bumps a global version and
//! records it as the key's latest *before* calling `add`; a worker records the version it sees
//! when it gets the key. Recording before adding is what makes the check sound: if the worker
//! sees a version whose `add` has not happened yet, that `add` finds the key being processed
//! and the queue must hand it out again after `done`, when the worker sees it once more.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crate::queue::WorkQueue;

const WORKERS: usize = 8;
const PRODUCERS: usize = 2;
const KEYS: usize = 10_000;
const ADDS: usize = 1_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_workers_a_million_adds() {
    stress(ADDS, 0).await;
}

/// The same with every fifth add delayed by 1–3 ms: workers also sleep towards deadlines and
/// race the adds that wake them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_workers_with_delays() {
    stress(ADDS / 5, 5).await;
}

/// `adds` adds; one in `delay_every` is an `add_after` of 1–3 ms (0: none).
async fn stress(adds: usize, delay_every: u64) {
    let queue: WorkQueue<usize> = WorkQueue::new();
    let added: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
    let seen: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
    let busy: Arc<Vec<AtomicBool>> = Arc::new((0..KEYS).map(|_| AtomicBool::new(false)).collect());
    let version = Arc::new(AtomicU64::new(1));
    let processed = Arc::new(AtomicUsize::new(0));

    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (queue, added, seen, busy, processed) = (
                queue.clone(),
                added.clone(),
                seen.clone(),
                busy.clone(),
                processed.clone(),
            );
            tokio::spawn(async move {
                let mut n = 0_u64;
                while let Some(key) = queue.get().await {
                    assert!(
                        !busy[key].swap(true, Ordering::AcqRel),
                        "key {key} held twice"
                    );
                    let version = added[key].load(Ordering::Acquire);
                    n += 1;
                    // Vary the timing a little: sometimes let others run while holding the key.
                    if (n + w as u64).is_multiple_of(64) {
                        tokio::task::yield_now().await;
                    }
                    busy[key].store(false, Ordering::Release);
                    seen[key].fetch_max(version, Ordering::AcqRel);
                    processed.fetch_add(1, Ordering::Relaxed);
                    queue.done(&key);
                }
            })
        })
        .collect();

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (queue, added, version) = (queue.clone(), added.clone(), version.clone());
            tokio::spawn(async move {
                // A per-producer xorshift: keys in a scattered, repeating order.
                let mut x = 0x2545_F491_4F6C_DD1D_u64 ^ (p as u64 + 1);
                for i in 0..adds / PRODUCERS {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let key = usize::try_from(x % KEYS as u64).unwrap();
                    let v = version.fetch_add(1, Ordering::Relaxed);
                    added[key].fetch_max(v, Ordering::AcqRel);
                    if delay_every > 0 && x.is_multiple_of(delay_every) {
                        queue.add_after(key, Duration::from_millis(1 + x % 3));
                    } else {
                        queue.add(key);
                    }
                    if i % 1_000 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();

    for p in producers {
        p.await.unwrap();
    }
    // Shutting down drops delayed keys: let the last delays run out first.
    while queue.num_delayed() > 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    tokio::time::timeout(Duration::from_secs(60), queue.shutdown_with_drain())
        .await
        .expect("drained in time");
    for w in workers {
        w.await.unwrap();
    }

    let mut missed = Vec::new();
    for key in 0..KEYS {
        let last_add = added[key].load(Ordering::Acquire);
        if last_add > seen[key].load(Ordering::Acquire) {
            missed.push(key);
        }
    }
    assert!(
        missed.is_empty(),
        "keys not processed after their last add: {missed:?}"
    );
    let processed = processed.load(Ordering::Relaxed);
    assert!(
        processed >= KEYS,
        "every key was added, so every key was processed"
    );
    assert!(processed <= adds);
    assert_eq!(queue.len(), 0);
    assert_eq!(queue.num_processing(), 0);
}
