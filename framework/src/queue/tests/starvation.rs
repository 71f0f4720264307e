//! Starvation: a steady stream of normal-priority keys, more than the worker can handle, and one
//! low-priority key. With aging the low key is processed within the bound; with strict
//! priorities (controller-runtime's behaviour) it never is.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::{Instant, sleep};

use crate::queue::{AddOptions, Priority, WorkQueue};

const LOW_KEY: u64 = u64::MAX;
/// A new normal key this often...
const ARRIVAL: Duration = Duration::from_millis(5);
/// ...and each key takes this long to process: twice as many arrive as one worker can handle.
const WORK: Duration = Duration::from_millis(10);

/// Runs the stream for `run` with one worker; returns when the low key was handed out (since
/// the start) and the order in which keys were handed out.
async fn stream(
    queue: WorkQueue<u64>,
    low_keys: u64,
    run: Duration,
) -> (Option<Duration>, Vec<u64>) {
    let start = Instant::now();
    for k in 0..low_keys {
        queue.add_with(LOW_KEY - k, AddOptions::new().priority(Priority::LOW));
    }
    // Normal keys are ready before the worker starts.
    queue.add(0);
    let producer = tokio::spawn({
        let queue = queue.clone();
        async move {
            let mut next = 1;
            while start.elapsed() < run {
                sleep(ARRIVAL).await;
                queue.add(next);
                next += 1;
            }
            queue.shutdown();
        }
    });
    let low_at = Arc::new(Mutex::new(None));
    let order = Arc::new(Mutex::new(Vec::new()));
    let worker = tokio::spawn({
        let (queue, low_at, order) = (queue.clone(), low_at.clone(), order.clone());
        async move {
            while let Some(key) = queue.get().await {
                if key == LOW_KEY {
                    low_at.lock().get_or_insert(start.elapsed());
                }
                order.lock().push(key);
                sleep(WORK).await;
                queue.done(&key);
            }
        }
    });
    producer.await.unwrap();
    worker.await.unwrap();
    let low_at = *low_at.lock();
    let order = std::mem::take(&mut *order.lock());
    (low_at, order)
}

#[tokio::test(start_paused = true)]
async fn a_low_priority_key_is_processed_within_the_aging_bound() {
    let aging = Duration::from_secs(10);
    let queue = WorkQueue::builder().aging(aging).build();
    let (low_at, _) = stream(queue, 1, Duration::from_secs(30)).await;
    let low_at = low_at.expect("the low-priority key was processed");
    // Priorities still work: normal keys were always ready, so the low key waited for aging...
    assert!(low_at >= aging, "processed at {low_at:?}, before aging");
    // ...and no longer: nothing became ready before it, so it goes at the first `get` after it
    // is overdue, i.e. once the key being processed then is done.
    assert!(
        low_at <= aging + WORK,
        "processed at {low_at:?}, bound {:?}",
        aging + WORK
    );
}

#[tokio::test(start_paused = true)]
async fn strict_priorities_starve_the_low_key() {
    let queue = WorkQueue::builder().strict_priority().build();
    let (low_at, order) = stream(queue, 1, Duration::from_secs(30)).await;
    // Over 30 s of overload the low key never got a turn (the shutdown drained the rest of the
    // normal backlog, so it is the very last key handed out).
    assert_eq!(order.last(), Some(&LOW_KEY));
    assert!(low_at.unwrap() > Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn overdue_keys_take_every_other_turn() {
    // 100 low keys and the overloading stream: once the low keys are overdue they alternate
    // with normal keys, so live changes keep half the worker.
    let aging = Duration::from_secs(2);
    let queue = WorkQueue::builder().aging(aging).build();
    let (_, order) = stream(queue, 100, Duration::from_secs(8)).await;
    let is_low = |k: &u64| *k > LOW_KEY - 100;
    // Until the low keys are overdue (2 s at 10 ms a key: 200 turns), only normal keys.
    assert!(
        order[..195].iter().all(|k| !is_low(k)),
        "{:?}",
        &order[..200]
    );
    let first_low = order.iter().position(is_low).unwrap();
    assert!(
        (195..=201).contains(&first_low),
        "first low key at turn {first_low}"
    );
    // Then strictly alternating until the 100 low keys are done.
    let window = &order[first_low..first_low + 200];
    for (i, key) in window.iter().enumerate() {
        assert_eq!(
            is_low(key),
            i % 2 == 0,
            "turn {} of {window:?}",
            first_low + i
        );
    }
    assert_eq!(order.iter().filter(|k| is_low(k)).count(), 100);
}
