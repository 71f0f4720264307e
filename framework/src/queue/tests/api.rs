//! The queue's behaviour, one rule at a time, in paused time.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::{Instant, advance, sleep};

use super::try_get;
use crate::cache::ObjectKey;
use crate::queue::rate_limiter::ExponentialBackoff;
use crate::queue::{AddOptions, Done, Priority, QueueHooks, WorkQueue};

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);

#[tokio::test(start_paused = true)]
async fn duplicates_are_merged() {
    let q = WorkQueue::new();
    q.add(1);
    q.add(2);
    q.add(1);
    q.add(1);
    assert_eq!(q.len(), 2);
    assert_eq!(try_get(&q), Some(Some(1)));
    assert_eq!(try_get(&q), Some(Some(2)));
    assert_eq!(try_get(&q), None);
    assert_eq!(q.num_processing(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_key_added_while_processed_comes_back_after_done() {
    let q = WorkQueue::new();
    q.add("a");
    assert_eq!(try_get(&q), Some(Some("a")));
    q.add("a");
    q.add("a");
    // Never handed out while it is being processed.
    assert_eq!(q.len(), 0);
    assert_eq!(try_get(&q), None);
    q.done(&"a");
    assert_eq!(q.len(), 1);
    assert_eq!(try_get(&q), Some(Some("a")));
    q.done(&"a");
    assert_eq!(try_get(&q), None);
    assert_eq!(q.num_processing(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_stray_done_changes_nothing() {
    let q = WorkQueue::new();
    q.add(7);
    q.done(&7);
    q.done(&8);
    assert_eq!(q.len(), 1);
    assert_eq!(try_get(&q), Some(Some(7)));
}

#[tokio::test(start_paused = true)]
async fn done_says_whether_the_key_left_came_back_or_waits_for_a_delay() {
    let q = WorkQueue::new();
    q.add("a");
    assert_eq!(try_get(&q), Some(Some("a")));
    assert_eq!(q.done(&"a"), Done::Removed);
    assert_eq!(q.len(), 0);

    q.add("a");
    assert_eq!(try_get(&q), Some(Some("a")));
    q.add("a");
    assert_eq!(q.done(&"a"), Done::Ready);
    assert_eq!(try_get(&q), Some(Some("a")));
    q.add_after("a", SEC);
    assert_eq!(q.done(&"a"), Done::Delayed);
    assert_eq!((q.len(), q.num_delayed()), (0, 1));

    assert_eq!(
        q.done(&"a"),
        Done::NotProcessing,
        "a delayed key is not being processed"
    );
    assert_eq!(q.done(&"b"), Done::NotProcessing, "an unknown key");
    assert_eq!(q.num_delayed(), 1, "a stray done leaves the key as it was");
}

#[tokio::test(start_paused = true)]
async fn object_keys_go_through_the_queue_by_their_kept_hash() {
    let q = WorkQueue::new();
    let key = ObjectKey::new(Some("shop"), "web-1");
    q.add(key.clone());
    // Built again from the strings: equal, and merged with the first.
    q.add(ObjectKey::new(Some("shop"), "web-1"));
    q.add(ObjectKey::new(None, "shop/web-1"));
    assert_eq!(
        q.len(),
        2,
        "a cluster-scoped key with the same text is another key"
    );
    assert_eq!(try_get(&q), Some(Some(key.clone())));
    assert_eq!(
        q.done(&ObjectKey::new(Some("shop"), "web-1")),
        Done::Removed
    );
}

#[tokio::test(start_paused = true)]
async fn get_waits_for_an_add() {
    let q = WorkQueue::new();
    let worker = tokio::spawn({
        let q = q.clone();
        async move { q.get().await }
    });
    tokio::task::yield_now().await;
    assert!(!worker.is_finished());
    q.add(3);
    assert_eq!(worker.await.unwrap(), Some(3));
}

#[tokio::test(start_paused = true)]
async fn delays_are_respected_and_the_earliest_wins() {
    let q = WorkQueue::new();
    q.add_after(1, 10 * SEC);
    q.add_after(1, 5 * SEC);
    q.add_after(1, 7 * SEC);
    assert_eq!(q.num_delayed(), 1);
    advance(Duration::from_millis(4_999)).await;
    assert_eq!(try_get(&q), None);
    advance(MS).await;
    assert_eq!(try_get(&q), Some(Some(1)));
    // An immediate add makes a delayed key ready now; a delayed add of a ready key changes
    // nothing.
    q.add_after(2, SEC);
    q.add(2);
    q.add_after(2, SEC);
    assert_eq!(try_get(&q), Some(Some(2)));
    assert_eq!(try_get(&q), None);
    // The key is not handed out again when its old delay runs out.
    q.done(&2);
    advance(2 * SEC).await;
    assert_eq!(try_get(&q), None);
    assert_eq!(q.num_delayed(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_delayed_add_while_processed_waits_for_done_and_the_delay() {
    let q = WorkQueue::new();
    q.add(1);
    assert_eq!(try_get(&q), Some(Some(1)));
    q.add_after(1, 3 * SEC);
    advance(SEC).await;
    q.done(&1);
    assert_eq!(try_get(&q), None);
    assert_eq!(q.num_delayed(), 1);
    advance(2 * SEC).await;
    assert_eq!(try_get(&q), Some(Some(1)));
}

#[tokio::test(start_paused = true)]
async fn a_sleeping_worker_wakes_when_a_delay_runs_out() {
    let q = WorkQueue::new();
    let start = Instant::now();
    q.add_after(1, 3 * SEC);
    let worker = tokio::spawn({
        let q = q.clone();
        async move { (q.get().await, start.elapsed()) }
    });
    // A shorter delay added while the worker sleeps towards the longer one wakes it earlier.
    sleep(MS).await;
    q.add_after(2, SEC);
    assert_eq!(worker.await.unwrap(), (Some(2), SEC + MS));
    assert_eq!(q.get().await, Some(1));
    assert_eq!(start.elapsed(), 3 * SEC);
}

#[tokio::test(start_paused = true)]
async fn rate_limited_adds_back_off_until_forgotten() {
    let q = WorkQueue::builder()
        .rate_limiter(ExponentialBackoff::new(5 * MS, 1000 * SEC))
        .build();
    for (failures, delay) in [(1, 5 * MS), (2, 10 * MS), (3, 20 * MS)] {
        q.add_rate_limited("k");
        assert_eq!(q.num_requeues(&"k"), failures);
        advance(delay.saturating_sub(MS)).await;
        assert_eq!(try_get(&q), None, "before {delay:?}");
        advance(MS).await;
        assert_eq!(try_get(&q), Some(Some("k")));
        q.done(&"k");
    }
    q.forget(&"k");
    assert_eq!(q.num_requeues(&"k"), 0);
    q.add_rate_limited("k");
    advance(5 * MS).await;
    assert_eq!(try_get(&q), Some(Some("k")));
}

#[tokio::test(start_paused = true)]
async fn forget_and_done_finishes_the_key_and_clears_its_failures() {
    let q = WorkQueue::builder()
        .rate_limiter(ExponentialBackoff::new(5 * MS, 1000 * SEC))
        .build();
    q.add_rate_limited("k");
    q.add_rate_limited("k");
    advance(10 * MS).await;
    assert_eq!(try_get(&q), Some(Some("k")));
    assert_eq!(q.num_requeues(&"k"), 2);
    assert_eq!(q.forget_and_done(&"k"), Done::Removed);
    assert_eq!(q.num_requeues(&"k"), 0);
    assert_eq!(q.num_processing(), 0);
    // A worker asking for the key again later (`Action::requeue_after`) adds it while it is
    // processed: it waits for its delay, with no failures counted.
    q.add_rate_limited("k");
    advance(5 * MS).await;
    assert_eq!(try_get(&q), Some(Some("k")));
    q.add_after("k", SEC);
    assert_eq!(q.forget_and_done(&"k"), Done::Delayed);
    assert_eq!(q.num_requeues(&"k"), 0);
}

#[tokio::test(start_paused = true)]
async fn rate_limited_with_a_delay_takes_the_shorter() {
    let q = WorkQueue::builder()
        .rate_limiter(ExponentialBackoff::new(SEC, 1000 * SEC))
        .build();
    q.add_with(1, AddOptions::new().rate_limited().after(100 * MS));
    q.add_with(2, AddOptions::new().rate_limited().after(10 * SEC));
    advance(100 * MS).await;
    assert_eq!(try_get(&q), Some(Some(1)));
    assert_eq!(try_get(&q), None);
    advance(900 * MS).await;
    assert_eq!(try_get(&q), Some(Some(2)));
}

#[tokio::test(start_paused = true)]
async fn higher_priorities_first_and_a_waiting_key_keeps_its_highest() {
    let q = WorkQueue::builder().strict_priority().build();
    q.add_with(1, AddOptions::new().priority(Priority::LOW));
    q.add(2);
    q.add_with(3, AddOptions::new().priority(Priority(5)));
    q.add_with(4, AddOptions::new().priority(Priority::LOW));
    // Raised: 1 goes first. Lowered: no effect.
    q.add_with(1, AddOptions::new().priority(Priority(10)));
    q.add_with(3, AddOptions::new().priority(Priority::LOW));
    let order: Vec<_> = std::iter::from_fn(|| try_get(&q).flatten()).collect();
    assert_eq!(order, [1, 3, 2, 4]);
}

#[tokio::test(start_paused = true)]
async fn shutdown_hands_out_what_is_ready_then_none() {
    let q = WorkQueue::new();
    q.add(1);
    q.add(2);
    q.add_after(3, SEC);
    assert_eq!(try_get(&q), Some(Some(1)));
    q.add(1); // added again while being processed
    q.shutdown();
    assert!(q.is_shutting_down());
    q.add(4); // ignored
    q.add_rate_limited(5); // ignored
    assert_eq!(q.num_delayed(), 0, "delayed keys are dropped");
    assert_eq!(try_get(&q), Some(Some(2)));
    // 1 is still to come once done.
    assert_eq!(try_get(&q), None);
    q.done(&1);
    assert_eq!(try_get(&q), Some(Some(1)));
    assert_eq!(try_get(&q), Some(None));
    q.done(&1);
    q.done(&2);
    advance(2 * SEC).await;
    assert_eq!(try_get(&q), Some(None));
    assert_eq!(q.num_requeues(&5), 0);
}

#[tokio::test(start_paused = true)]
async fn shutdown_wakes_sleeping_workers() {
    let q: WorkQueue<u8> = WorkQueue::new();
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    tokio::task::yield_now().await;
    q.shutdown();
    for w in workers {
        assert_eq!(w.await.unwrap(), None);
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_with_drain_waits_for_the_workers() {
    let q = WorkQueue::new();
    q.add(1);
    q.add(2);
    assert_eq!(try_get(&q), Some(Some(1)));
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shutdown_with_drain().await }
    });
    sleep(SEC).await;
    assert!(!drain.is_finished());
    q.done(&1);
    sleep(SEC).await;
    assert!(!drain.is_finished(), "2 is still ready");
    assert_eq!(try_get(&q), Some(Some(2)));
    q.done(&2);
    drain.await.unwrap();
    assert_eq!(try_get(&q), Some(None));
    // Draining a drained queue returns at once.
    q.shutdown_with_drain().await;
}

#[tokio::test(start_paused = true)]
async fn a_plain_shutdown_releases_a_drain_that_is_waiting_as_a_forced_shutdown() {
    let q = WorkQueue::new();
    q.add(1);
    q.add(2);
    assert_eq!(try_get(&q), Some(Some(1)));
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shutdown_with_drain().await }
    });
    sleep(SEC).await;
    assert!(!drain.is_finished(), "1 is still being processed");
    q.shutdown();
    tokio::time::timeout(SEC, drain)
        .await
        .expect("the forced shutdown released the drain")
        .unwrap();
    // Ready keys are still handed out after a forced shutdown, as in client-go.
    assert_eq!(try_get(&q), Some(Some(2)));
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_get_loses_nothing() {
    let q = WorkQueue::new();
    // Cancelled while waiting.
    assert_eq!(try_get(&q), None);
    // Cancelled after being woken: the wake-up passes to the next sleeper.
    let mut first = Box::pin(q.get());
    assert!(futures::poll!(first.as_mut()).is_pending());
    let second = tokio::spawn({
        let q = q.clone();
        async move { q.get().await }
    });
    tokio::task::yield_now().await;
    q.add(9);
    drop(first);
    assert_eq!(second.await.unwrap(), Some(9));
    q.done(&9);
    q.add(10);
    assert_eq!(q.get().await, Some(10));
}

#[tokio::test(start_paused = true)]
async fn clones_share_the_queue() {
    let q = WorkQueue::new();
    let r = q.clone();
    q.add(1);
    assert_eq!(r.len(), 1);
    assert_eq!(try_get(&r), Some(Some(1)));
    assert_eq!(q.num_processing(), 1);
    assert!(format!("{q:?}").contains("processing: 1"));
}

#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<String>>);

impl QueueHooks for Recorder {
    fn depth(&self, priority: Priority, depth: usize) {
        self.0.lock().push(format!("depth {} {depth}", priority.0));
    }
    fn add(&self, priority: Priority) {
        self.0.lock().push(format!("add {}", priority.0));
    }
    fn queue_duration(&self, priority: Priority, waited: Duration) {
        self.0
            .lock()
            .push(format!("queued {} {waited:?}", priority.0));
    }
    fn work_duration(&self, worked: Duration) {
        self.0.lock().push(format!("worked {worked:?}"));
    }
    fn unfinished_work(&self, total: Duration) {
        self.0.lock().push(format!("unfinished {total:?}"));
    }
    fn longest_running_processor(&self, longest: Duration) {
        self.0.lock().push(format!("longest {longest:?}"));
    }
    fn retry(&self) {
        self.0.lock().push("retry".to_owned());
    }
}

#[tokio::test(start_paused = true)]
async fn hooks_see_every_measurement() {
    let hooks = Arc::new(Recorder::default());
    let q = WorkQueue::builder()
        .hooks(hooks.clone())
        .rate_limiter(ExponentialBackoff::new(SEC, 1000 * SEC))
        .build();
    q.add("a");
    q.add("a"); // merged: not counted
    q.add_with("b", AddOptions::new().priority(Priority::LOW));
    advance(2 * SEC).await;
    assert_eq!(try_get(&q), Some(Some("a")));
    advance(SEC).await;
    assert_eq!(try_get(&q), Some(Some("b")));
    advance(SEC).await;
    q.update_unfinished_work();
    q.done(&"a");
    q.add_rate_limited("a");
    advance(SEC).await;
    assert_eq!(q.len(), 1);
    let events = std::mem::take(&mut *hooks.0.lock());
    assert_eq!(
        events,
        [
            "add 0",
            "depth 0 1",
            "add -100",
            "depth -100 1",
            "queued 0 2s",
            "depth 0 0",
            "queued -100 3s",
            "depth -100 0",
            "unfinished 3s", // a for 2 s, b for 1 s
            "longest 2s",
            "worked 2s",
            "retry",
            "add 0", // when its delay ran out
            "depth 0 1",
        ]
    );
}

#[test]
fn queues_are_send_and_sync() {
    fn check<T: Send + Sync + Clone + 'static>() {}
    check::<WorkQueue<String>>();
    check::<WorkQueue<(String, u64)>>();
}

#[test]
fn a_drained_burst_gives_its_room_back_and_the_queue_still_works() {
    let q = WorkQueue::new();
    for key in 0..10_000_u32 {
        q.add(key);
    }
    let grown = q.key_capacity();
    assert!(grown >= 10_000, "the table held the burst ({grown})");
    while let Some(Some(key)) = try_get(&q) {
        q.done(&key);
    }
    assert!(
        q.key_capacity() <= 2 * crate::spare_capacity::KEPT,
        "{} slots kept after draining",
        q.key_capacity()
    );
    q.add(7);
    q.add(7);
    assert_eq!(try_get(&q), Some(Some(7)));
    q.done(&7);
    assert_eq!(try_get(&q), None, "nothing is left, and a get would wait");
}
