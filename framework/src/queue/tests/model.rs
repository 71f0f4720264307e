//! Model-based property test: random operations from several simulated workers, checked step by
//! step against a plain reference model, in paused time.
//!
//! The model keeps, per key, when it is ready (and at which priority) or which worker holds it
//! and whether it was added again meanwhile. After every operation the queue must agree with it:
//!
//! - `get` returns only a key the model says is ready (delays respected, no key handed to two
//!   workers at once, duplicates merged: a merged duplicate would come out a second time), and
//!   returns *something* whenever the model has a ready key (nothing lost);
//! - with strict priorities it returns a key of the highest ready priority; with aging, a key of
//!   lower priority only while some ready key is overdue;
//! - `len`, `num_processing`, `num_delayed` and `num_requeues` match;
//! - at the end, with every delay run out, the workers drain exactly the model's keys.

use std::collections::HashMap;
use std::time::Duration;

use proptest::prelude::*;
use tokio::time::Instant;

use super::try_get;
use crate::queue::rate_limiter::ExponentialBackoff;
use crate::queue::{AddOptions, Priority, WorkQueue};

const KEYS: u8 = 6;
const WORKERS: usize = 3;
const AGING: Duration = Duration::from_millis(40);
const BACKOFF_BASE: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

#[derive(Clone, Debug)]
enum Op {
    Add {
        key: u8,
        priority: Priority,
        delay_ms: u64,
    },
    AddRateLimited {
        key: u8,
        priority: Priority,
    },
    Get {
        worker: usize,
    },
    Done {
        worker: usize,
    },
    StrayDone {
        key: u8,
    },
    Forget {
        key: u8,
    },
    Advance {
        ms: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let priority = || {
        prop_oneof![
            Just(Priority::LOW),
            Just(Priority::NORMAL),
            Just(Priority(5))
        ]
    };
    let delay = prop_oneof![3 => Just(0_u64), 2 => 1..60_u64, 1 => 60..2_000_u64];
    prop_oneof![
        6 => (0..KEYS, priority(), delay).prop_map(|(key, priority, delay_ms)| Op::Add { key, priority, delay_ms }),
        2 => (0..KEYS, priority()).prop_map(|(key, priority)| Op::AddRateLimited { key, priority }),
        5 => (0..WORKERS).prop_map(|worker| Op::Get { worker }),
        4 => (0..WORKERS).prop_map(|worker| Op::Done { worker }),
        1 => (0..KEYS).prop_map(|key| Op::StrayDone { key }),
        1 => (0..KEYS).prop_map(|key| Op::Forget { key }),
        3 => prop_oneof![4 => 1..30_u64, 1 => 30..1_500_u64].prop_map(|ms| Op::Advance { ms }),
    ]
}

/// When a key is due and at which priority it waits.
#[derive(Clone, Copy, Debug)]
struct Due {
    at: Instant,
    priority: Priority,
    /// When it became ready, for the aging check (its time if delayed).
    since: Instant,
}

#[derive(Debug, Default)]
struct Model {
    /// Keys waiting (ready or delayed).
    waiting: HashMap<u8, Due>,
    /// Keys being processed: the worker, and the requeue if added meanwhile.
    processing: HashMap<u8, (usize, Option<Due>)>,
    failures: HashMap<u8, u32>,
    held: [Option<u8>; WORKERS],
    shut: bool,
}

impl Model {
    fn add(&mut self, key: u8, priority: Priority, delay: Duration, now: Instant) {
        if self.shut {
            return;
        }
        let at = now + delay;
        let new = Due {
            at,
            priority,
            since: at,
        };
        let merge = |old: Option<Due>| match old {
            None => new,
            Some(old) => Due {
                at: old.at.min(at),
                priority: old.priority.max(priority),
                // A raised priority moves the key to the back of its new level.
                since: if priority > old.priority {
                    now.max(old.at.min(at))
                } else {
                    old.at.min(at)
                },
            },
        };
        if let Some((_, requeue)) = self.processing.get_mut(&key) {
            *requeue = Some(merge(*requeue));
        } else {
            let old = self.waiting.get(&key).copied();
            self.waiting.insert(key, merge(old));
        }
    }

    fn ready(&self, now: Instant) -> impl Iterator<Item = (&u8, &Due)> {
        self.waiting.iter().filter(move |(_, d)| d.at <= now)
    }

    fn pending_requeues(&self) -> bool {
        self.processing.values().any(|(_, r)| r.is_some())
    }

    fn shutdown(&mut self, now: Instant) {
        if self.shut {
            return;
        }
        self.shut = true;
        self.waiting.retain(|_, d| d.at <= now);
        for (_, requeue) in self.processing.values_mut() {
            if requeue.is_some_and(|d| d.at > now) {
                *requeue = None;
            }
        }
    }

    fn done(&mut self, key: u8) {
        let (_, requeue) = self
            .processing
            .remove(&key)
            .expect("held keys are processing");
        if let Some(mut due) = requeue {
            // The queue counts it as ready from `done` (or its time, if later); `at` is never
            // later than that, which keeps the aging check on the safe side.
            due.since = due.at;
            self.waiting.insert(key, due);
        }
    }
}

fn backoff(failures: u32) -> Duration {
    BACKOFF_BASE
        .checked_mul(1 << failures.min(20))
        .map_or(BACKOFF_MAX, |d| d.min(BACKOFF_MAX))
}

/// Checks one `get` by `worker` against the model and applies it.
fn check_get(
    q: &WorkQueue<u8>,
    model: &mut Model,
    worker: usize,
    strict: bool,
    now: Instant,
) -> Result<(), TestCaseError> {
    let got = try_get(q);
    let ready: Vec<(u8, Due)> = model.ready(now).map(|(k, d)| (*k, *d)).collect();
    match got {
        Some(Some(key)) => {
            let due = ready.iter().find(|(k, _)| *k == key).map(|(_, d)| *d);
            prop_assert!(
                due.is_some(),
                "got {key} which is not ready; model {model:?}"
            );
            let due = due.unwrap();
            let top = ready.iter().map(|(_, d)| d.priority).max().unwrap();
            if strict {
                prop_assert_eq!(due.priority, top, "strict priority; ready {:?}", ready);
            } else if due.priority < top {
                let overdue = ready
                    .iter()
                    .any(|(_, d)| now.saturating_duration_since(d.since) >= AGING);
                prop_assert!(
                    overdue,
                    "{} of priority {:?} before {:?} with nothing overdue",
                    key,
                    due.priority,
                    top
                );
            }
            model.waiting.remove(&key);
            model.processing.insert(key, (worker, None));
            model.held[worker] = Some(key);
        }
        Some(None) => {
            prop_assert!(model.shut, "closed before shutdown");
            prop_assert!(ready.is_empty(), "closed with ready keys {:?}", ready);
            prop_assert!(!model.pending_requeues(), "closed with requeues to come");
        }
        None => {
            prop_assert!(
                ready.is_empty(),
                "nothing handed out though ready: {:?}",
                ready
            );
            prop_assert!(!model.shut || model.pending_requeues(), "should be closed");
        }
    }
    Ok(())
}

fn check_counts(q: &WorkQueue<u8>, model: &Model, now: Instant) -> Result<(), TestCaseError> {
    prop_assert_eq!(q.len(), model.ready(now).count());
    prop_assert_eq!(q.num_processing(), model.processing.len());
    prop_assert_eq!(
        q.num_delayed(),
        model.waiting.len() - model.ready(now).count()
    );
    for key in 0..KEYS {
        prop_assert_eq!(
            q.num_requeues(&key),
            model.failures.get(&key).copied().unwrap_or(0)
        );
    }
    Ok(())
}

fn run(ops: &[Op], shutdown_at: Option<usize>, strict: bool) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let builder =
            WorkQueue::builder().rate_limiter(ExponentialBackoff::new(BACKOFF_BASE, BACKOFF_MAX));
        let q = if strict {
            builder.strict_priority()
        } else {
            builder.aging(AGING)
        }
        .build();
        let mut model = Model::default();
        for (i, op) in ops.iter().enumerate() {
            let now = Instant::now();
            if shutdown_at == Some(i) {
                q.shutdown();
                model.shutdown(now);
            }
            match *op {
                Op::Add {
                    key,
                    priority,
                    delay_ms,
                } => {
                    let delay = Duration::from_millis(delay_ms);
                    q.add_with(key, AddOptions::new().priority(priority).after(delay));
                    model.add(key, priority, delay, now);
                }
                Op::AddRateLimited { key, priority } => {
                    q.add_with(key, AddOptions::new().priority(priority).rate_limited());
                    if !model.shut {
                        let failures = model.failures.entry(key).or_default();
                        let delay = backoff(*failures);
                        *failures += 1;
                        model.add(key, priority, delay, now);
                    }
                }
                Op::Get { worker } => {
                    if model.held[worker].is_none() {
                        check_get(&q, &mut model, worker, strict, now)?;
                    }
                }
                Op::Done { worker } => {
                    if let Some(key) = model.held[worker].take() {
                        q.done(&key);
                        model.done(key);
                    }
                }
                Op::StrayDone { key } => {
                    if !model.processing.contains_key(&key) {
                        q.done(&key);
                    }
                }
                Op::Forget { key } => {
                    q.forget(&key);
                    model.failures.remove(&key);
                }
                Op::Advance { ms } => tokio::time::advance(Duration::from_millis(ms)).await,
            }
            check_counts(&q, &model, Instant::now())?;
        }

        // Let every delay run out, finish what is held, and drain: exactly the model's keys come
        // out, each once it is ready.
        tokio::time::advance(Duration::from_secs(10)).await;
        let now = Instant::now();
        for worker in 0..WORKERS {
            if let Some(key) = model.held[worker].take() {
                q.done(&key);
                model.done(key);
            }
        }
        while model.ready(now).next().is_some() {
            check_get(&q, &mut model, 0, strict, now)?;
            let key = model.held[0].take().expect("a key was handed out");
            q.done(&key);
            model.done(key);
        }
        prop_assert!(
            model.waiting.is_empty() && model.processing.is_empty(),
            "{model:?}"
        );
        check_get(&q, &mut model, 0, strict, now)?;
        q.shutdown();
        prop_assert_eq!(try_get(&q), Some(None));
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn queue_matches_the_model(
        ops in prop::collection::vec(op(), 1..120),
        shutdown_at in prop::option::weighted(0.4, 0..120_usize),
        strict in any::<bool>(),
    ) {
        run(&ops, shutdown_at, strict)?;
    }
}
