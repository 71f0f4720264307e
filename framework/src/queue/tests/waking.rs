//! How sleeping workers are woken: one wake-up on its way at a time, passed on by the worker that
//! receives it while keys are left ready.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Barrier;

use crate::queue::WorkQueue;

const SEC: Duration = Duration::from_secs(1);

/// Spawns `n` workers that each take one key, wait at `barrier` holding it, and finish it.
fn holding_workers(
    q: &WorkQueue<u32>,
    n: usize,
    barrier: &Arc<Barrier>,
) -> Vec<tokio::task::JoinHandle<Option<u32>>> {
    (0..n)
        .map(|_| {
            let (q, barrier) = (q.clone(), Arc::clone(barrier));
            tokio::spawn(async move {
                let key = q.get().await?;
                barrier.wait().await;
                q.done(&key);
                Some(key)
            })
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_burst_of_adds_sends_one_wake_up_however_many_workers_sleep() {
    let q = WorkQueue::new();
    let barrier = Arc::new(Barrier::new(1));
    let workers = holding_workers(&q, 4, &barrier);
    tokio::task::yield_now().await;
    assert_eq!(q.sleepers_and_wake_ups(), (4, 0), "all four workers sleep");
    for key in 0..100 {
        q.add(key);
    }
    // Waking all four for a burst would have them contend for the lock key by key.
    assert_eq!(q.sleepers_and_wake_ups(), (4, 1));
    // The woken worker passes the wake-up on: the four take four keys.
    let mut taken: Vec<u32> = Vec::new();
    for w in workers {
        let key = tokio::time::timeout(SEC, w)
            .await
            .expect("each sleeping worker is woken while keys are ready")
            .unwrap();
        taken.push(key.expect("a key"));
    }
    taken.sort_unstable();
    assert_eq!(taken, [0, 1, 2, 3]);
    assert_eq!(q.len(), 96);
}

#[tokio::test(start_paused = true)]
async fn keys_added_at_once_reach_as_many_sleeping_workers_as_there_are_keys() {
    let q = WorkQueue::new();
    // The workers hold their keys until all three hold one: one wake-up that was not passed on
    // would leave a key ready and a worker asleep, and the barrier would never open.
    let barrier = Arc::new(Barrier::new(3));
    let workers = holding_workers(&q, 3, &barrier);
    tokio::task::yield_now().await;
    for key in [7, 8, 9] {
        q.add(key);
    }
    let mut taken = Vec::new();
    for w in workers {
        let key = tokio::time::timeout(SEC, w)
            .await
            .expect("three keys ready wake all three sleeping workers")
            .unwrap();
        taken.push(key.expect("a key"));
    }
    taken.sort_unstable();
    assert_eq!(taken, [7, 8, 9]);
}

#[tokio::test(start_paused = true)]
async fn a_key_added_while_a_worker_is_busy_wakes_a_sleeping_one() {
    let q = WorkQueue::new();
    let barrier = Arc::new(Barrier::new(2));
    let workers = holding_workers(&q, 2, &barrier);
    tokio::task::yield_now().await;
    q.add(1);
    tokio::task::yield_now().await;
    assert_eq!(q.num_processing(), 1, "one worker holds 1 and waits");
    // The busy worker will not come back for it: the other must be woken.
    q.add(2);
    for w in workers {
        tokio::time::timeout(SEC, w)
            .await
            .expect("the key added while the other worker was busy was taken")
            .unwrap();
    }
}
