//! The work queue: keys go in as often as events arrive, come out once, and are never handed to
//! two workers at the same time.
//!
//! [`WorkQueue`] has the semantics of client-go's `workqueue` (the rate-limiting, delaying queue
//! every Kubernetes controller uses) with controller-runtime's priorities, plus aging so that low
//! priorities are not starved.
//!
//! ```
//! use kubeward::queue::WorkQueue;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let queue = WorkQueue::new();
//! queue.add("default/web");
//! queue.add("default/web"); // merged with the first one
//! queue.add("default/db");
//!
//! let worker = {
//!     let queue = queue.clone();
//!     tokio::spawn(async move {
//!         let mut seen = Vec::new();
//!         while let Some(key) = queue.get().await {
//!             seen.push(key); // reconcile `key` here
//!             queue.forget(&key); // success: reset its backoff
//!             queue.done(&key);
//!         }
//!         seen
//!     })
//! };
//! queue.shutdown_with_drain().await;
//! assert_eq!(worker.await.unwrap(), ["default/web", "default/db"]);
//! # }
//! ```
//!
//! # Semantics
//!
//! A key is absent, *waiting* (ready, or delayed until some time), or *being processed* (handed
//! out by [`get`](WorkQueue::get), not yet [`done`](WorkQueue::done)).
//!
//! - [`add`](WorkQueue::add) of a waiting key merges with it: the key is handed out once. Adding
//!   a key that is being processed marks it to be handed out again after `done`, never while it
//!   is being processed, so no two workers ever hold the same key.
//! - [`get`](WorkQueue::get) waits for the next ready key; ready keys come out first in, first out
//!   within a priority. It is cancel safe.
//! - Delays: [`add_after`](WorkQueue::add_after) makes the key ready later; for a key already
//!   waiting, the earlier ready time wins (an immediate `add` of a delayed key makes it ready
//!   now).
//! - Rate limiting: [`add_rate_limited`](WorkQueue::add_rate_limited) delays the key by what its
//!   [`rate_limiter::RateLimiter`] says and counts a retry; [`forget`](WorkQueue::forget) resets it and
//!   [`num_requeues`](WorkQueue::num_requeues) reads it. The default limiter is client-go's
//!   `DefaultControllerRateLimiter`; see [`rate_limiter`] for the others.
//! - [`shutdown`](WorkQueue::shutdown): adds are ignored from then on and delayed keys are
//!   dropped (as in client-go); keys that are ready, or being processed and added again, are
//!   still handed out, and then `get` returns `None`.
//!   [`shutdown_with_drain`](WorkQueue::shutdown_with_drain) also waits until they have all been
//!   processed.
//!
//! All time is [`tokio::time`], so tests can pause and advance it.
//!
//! # Priorities and aging
//!
//! [`add_with`](WorkQueue::add_with) takes a [`Priority`]: events from the initial list and
//! resyncs go in at [`Priority::LOW`] so that live changes ([`Priority::NORMAL`]) go first. A
//! waiting key keeps the highest priority it was added with.
//!
//! Strict priorities starve: with a steady stream of normal keys that the workers cannot keep up
//! with, a low key waits forever (controller-runtime's priority queue, kubernetes-sigs/
//! controller-runtime#3496). So keys *age*: a key that has been ready for the aging limit
//! ([`DEFAULT_AGING`], 10 s, set with [`Builder::aging`]) is *overdue*, and while the key that
//! has been ready longest is overdue, every other `get` hands out that key regardless of priority.
//! The other turns still go by priority, so live changes keep at least half the workers even
//! behind a large overdue backlog.
//!
//! **The bound:** once a key has been ready for the aging limit, it is handed out within
//! `2n + 1` further `get`s, where `n` is the number of keys still waiting that became ready before
//! it. (Of any two consecutive `get`s at least one takes the key that has been ready longest, and
//! keys that become ready later never get ahead of it.) A low key added to a queue with no older
//! backlog is therefore processed at most one key after the aging limit, however many normal keys
//! keep coming. [`Builder::strict_priority`] turns aging off.
//!
//! # Metrics
//!
//! The queue reports depth, adds, time in queue, work duration, unfinished work, the longest
//! running processor and retries through [`QueueHooks`]; by default they are dropped.
//!
//! # Performance
//!
//! One [`parking_lot`] mutex guards all state: a hash table from key to its state, one FIFO per
//! priority, and a binary heap of delayed keys. Each call takes the lock once (`get` once when a
//! key is ready; `done` once, and it says what became of the key, [`Done`]). Keys are hashed
//! before the lock is taken, with foldhash, and never under it: the table, the FIFOs and the heap
//! keep each key's hash (so a `String` key is hashed once per call, and the table grows without
//! rehashing); a [`cache::ObjectKey`](crate::cache::ObjectKey) carries its hash, so hashing one
//! writes a single `u64`. An add of a key that is already waiting allocates nothing and hands its
//! key back to be dropped after unlocking; a new key costs one clone, made under the lock (an
//! atomic increment for an `ObjectKey`, an allocation for a `String`). Keys the queue lets go of are
//! dropped after unlocking, on the thread that lets go of them. Delayed keys move to the ready
//! FIFOs lazily, when someone next takes the lock to look (`get`, `len`), so there is no timer
//! task. The clock is only read when needed: for a delay, for aging once two priorities are in
//! use, and for durations if the hooks want them. A worker that finds nothing ready sleeps on a
//! tokio `Notify` at once (until the earliest delay, if any). An add signals only when a worker
//! sleeps and no wake-up is on its way yet, and a woken worker that takes a key passes the
//! wake-up on while keys are left ready: sleepers wake one at a time, as long as there is work,
//! instead of a burst of adds waking them all to contend for the lock. Woken from a task on
//! another runtime thread, a worker waits behind that task (tokio's LIFO slot) and then takes
//! what was added meanwhile without racing the adder for the lock key by key; that race, not
//! hashing or cloning, was what made multi-threaded runs slow (an adder and a worker parking on
//! the mutex in turn).
//!
//! `benches/queue.rs` runs add + get + done with heavy duplication (1,000,000 adds over 100,000
//! keys, in bursts of 10,000 adds of 1,000 keys) against kube-runtime's `scheduler`, with u64
//! keys and with `namespace/name` String keys, and prints ns per add and ns per key processed
//! for both, with the keys each processed (each merges the adds made before it hands a key out);
//! `scripts/bench queue` prints its tables, and the book's performance chapter shows one run.

mod delay;
mod done;
mod hooks;
mod locked;
mod priority;
pub mod rate_limiter;
mod work_queue;

#[cfg(test)]
mod tests;

pub use hooks::QueueHooks;
pub use priority::Priority;
// The limiters have one public path, `queue::rate_limiter::*`; the crate names the trait here.
pub use done::Done;
pub(crate) use rate_limiter::RateLimiter;
pub use work_queue::{AddOptions, Builder, DEFAULT_AGING, WorkQueue};
