//! Says how often and how badly a simulated API server misbehaves; the seed says when.

use rand::RngExt as _;
use rand::rngs::Xoshiro256PlusPlus;
use tokio::time::Duration;

use super::schedule::{Kind, Schedule};

/// How a [`Simulation`](super::Simulation)'s API server misbehaves: the rates and bounds its
/// seed draws from. Latency and delivery delay go on all run long (a healthy cluster has them
/// too); failed requests and broken watches stop at [`World::stop_faults`](super::World::stop_faults).
#[derive(Clone, Debug)]
#[must_use]
pub struct Faults {
    latency: Duration,
    failure_rate: f64,
    delivery_delay: Duration,
    watch_break_rate: f64,
    watch_life: Duration,
    outage_rate: f64,
    outage_length: Duration,
}

impl Default for Faults {
    /// Requests take up to 20 ms and one in ten fails; watch events arrive up to 500 ms late;
    /// three watches in ten break (dropped, or expired with 410 Gone) within 30 s of opening.
    fn default() -> Self {
        Self {
            latency: Duration::from_millis(20),
            failure_rate: 0.1,
            delivery_delay: Duration::from_millis(500),
            watch_break_rate: 0.3,
            watch_life: Duration::from_secs(30),
            outage_rate: 0.0,
            outage_length: Duration::ZERO,
        }
    }
}

impl Faults {
    /// No latency, no delay, no failure: the fake as it is, for a run's deterministic log alone.
    pub fn none() -> Self {
        Self {
            latency: Duration::ZERO,
            failure_rate: 0.0,
            delivery_delay: Duration::ZERO,
            watch_break_rate: 0.0,
            watch_life: Duration::ZERO,
            outage_rate: 0.0,
            outage_length: Duration::ZERO,
        }
    }

    /// Each request waits up to `latency` (virtual time, uniform) before the fake sees it.
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// The share of requests (0 to 1) that fail: writes with 409 Conflict, any request with 429
    /// and `Retry-After: 1`, 500, a 504 timeout (for writes, after the fake applied them: the
    /// answer is lost, not the write) or a reset connection, each as likely.
    pub fn failure_rate(mut self, rate: f64) -> Self {
        self.failure_rate = rate.clamp(0.0, 1.0);
        self
    }

    /// Each watch event waits up to `delay` after the one before it on the same watch: events
    /// arrive late and watches drift apart, but one watch never reorders its events.
    pub fn delivery_delay(mut self, delay: Duration) -> Self {
        self.delivery_delay = delay;
        self
    }

    /// The share of watches (0 to 1) that break within `within` of opening: half end as a
    /// dropped connection does, half with a 410 Gone `ERROR` event.
    pub fn watch_breaks(mut self, rate: f64, within: Duration) -> Self {
        self.watch_break_rate = rate.clamp(0.0, 1.0);
        self.watch_life = within;
        self
    }

    /// The share of requests (0 to 1) that begin an outage, as an API server that restarts: for
    /// a time drawn up to `length`, every request is refused (its connection reset) and every
    /// open watch ends as a dropped connection does. None by default; none after
    /// [`World::stop_faults`](super::World::stop_faults).
    pub fn outages(mut self, rate: f64, length: Duration) -> Self {
        self.outage_rate = rate.clamp(0.0, 1.0);
        self.outage_length = length;
        self
    }

    /// Whether a request (while faults go on, and no outage is on) begins an outage, how long
    /// it lasts and its fault number; draws nothing from `rng` when outages are off, so that
    /// runs without them keep their logs.
    pub(crate) fn outage(
        &self,
        rng: &mut Xoshiro256PlusPlus,
        schedule: &Schedule,
    ) -> Option<(Duration, u64)> {
        (self.outage_rate > 0.0 && rng.random_bool(self.outage_rate))
            .then(|| draw(rng, self.outage_length))
            .and_then(|length| schedule.decide(Kind::Outage).map(|number| (length, number)))
    }

    /// What happens to one request, drawn from `rng`; `faulting` is false once faults stopped.
    /// Every fault drawn is numbered by `schedule`, and has no effect when it suppresses it.
    pub(crate) fn plan(
        &self,
        rng: &mut Xoshiro256PlusPlus,
        schedule: &Schedule,
        request: Request,
        faulting: bool,
    ) -> Plan {
        let latency = delay(rng, schedule, Kind::Latency, self.latency);
        let failure = (faulting && self.failure_rate > 0.0 && rng.random_bool(self.failure_rate))
            .then(|| {
                let choices: &[Injected] = if request == Request::Write {
                    &[
                        Injected::Conflict,
                        Injected::TooManyRequests,
                        Injected::Internal,
                        Injected::Timeout,
                        Injected::Reset,
                    ]
                } else {
                    &[
                        Injected::TooManyRequests,
                        Injected::Internal,
                        Injected::Timeout,
                        Injected::Reset,
                    ]
                };
                choices[rng.random_range(0..choices.len())]
            });
        // A watch whose drawn failure is suppressed opens, but draws no break: the random
        // stream stays as the unsuppressed run drew it.
        let watch = (request == Request::Watch).then(|| {
            let breaks = failure.is_none()
                && faulting
                && self.watch_break_rate > 0.0
                && rng.random_bool(self.watch_break_rate);
            let end = breaks.then(|| {
                let after = draw(rng, self.watch_life);
                let how = if rng.random_bool(0.5) {
                    End::Dropped
                } else {
                    End::Expired
                };
                (after, how)
            });
            WatchPlan {
                max_delay: self.delivery_delay,
                end: end.and_then(|(after, how)| {
                    schedule
                        .decide(Kind::Break)
                        .map(|number| (after, how, number))
                }),
            }
        });
        let failure = failure
            .and_then(|injected| schedule.decide(Kind::Failure).map(|n| (injected, Some(n))));
        Plan {
            latency,
            failure,
            watch,
        }
    }
}

/// A uniform duration from zero to `max`, in whole milliseconds.
pub(crate) fn draw(rng: &mut Xoshiro256PlusPlus, max: Duration) -> Duration {
    let millis = u64::try_from(max.as_millis()).unwrap_or(u64::MAX);
    if millis == 0 {
        return Duration::ZERO;
    }
    Duration::from_millis(rng.random_range(0..=millis))
}

/// A delay from zero to `max` with its fault number; zero when it is zero or `schedule`
/// suppresses it.
pub(crate) fn delay(
    rng: &mut Xoshiro256PlusPlus,
    schedule: &Schedule,
    kind: Kind,
    max: Duration,
) -> (Duration, Option<u64>) {
    let drawn = draw(rng, max);
    if drawn.is_zero() {
        return (drawn, None);
    }
    schedule
        .decide(kind)
        .map_or((Duration::ZERO, None), |number| (drawn, Some(number)))
}

/// What a request does, as far as faults go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// GET of one object or a list.
    Read,
    /// A watch.
    Watch,
    /// POST, PUT, PATCH or DELETE.
    Write,
}

/// What happens to one request.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The request's latency and its fault number (none for zero).
    pub(crate) latency: (Duration, Option<u64>),
    /// The failure injected and its fault number (none for a request an outage refuses).
    pub(crate) failure: Option<(Injected, Option<u64>)>,
    pub(crate) watch: Option<WatchPlan>,
}

/// A failure injected in place of (or, for a timed-out write, after) the fake's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Injected {
    /// 409 Conflict, as a write from a stale resourceVersion gets.
    Conflict,
    /// 429 with `Retry-After: 1`.
    TooManyRequests,
    /// 500.
    Internal,
    /// 504: the server gave up waiting; a write was applied all the same.
    Timeout,
    /// The connection reset before an answer; a write was not applied.
    Reset,
}

/// How a watch's events are delivered, and whether it breaks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WatchPlan {
    pub(crate) max_delay: Duration,
    /// When and how the watch breaks, and the fault number of its break.
    pub(crate) end: Option<(Duration, End, u64)>,
}

/// How a broken watch ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// The stream ends, as when the connection drops.
    Dropped,
    /// An `ERROR` event with 410 Gone, then the end.
    Expired,
}
