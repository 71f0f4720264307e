//! Recognises the watch events of objects a controller wrote itself, so that they do not
//! reconcile again.
//!
//! Every write a controller makes goes through one tracker: owned objects it applies
//! (`ctx.apply`), the status it writes (`ctx.patch_status`) and its own failure reports on the
//! object's status. A reconcile that wrote knows the state it wrote: the watch event that brings
//! exactly that state back (same uid, same resourceVersion) is no reason to reconcile a second
//! time. The event can arrive before the write's response does, so while a
//! write of an object is in flight, its events are held; when the response comes, the one that
//! carries the written state is dropped and the others trigger as usual. Any change by anyone
//! else has another resourceVersion and triggers; a write that fails or is cancelled releases
//! what was held; a forgotten write only costs one extra reconcile. Each event dropped so is a
//! `debug` line and counts in `kubeward_own_write_echoes_suppressed_total`, so a controller that
//! waits for the echo of its own write (as a port of a controller-runtime operator may) shows why
//! it stalls.
//!
//! A handler's buffer may coalesce several changes of one object into one event (see
//! `informer::Hints`): such an event may hide someone else's change behind our written state,
//! so it is never dropped ([`OwnWrites::trigger_coalesced`]), though it still uses up the
//! written state it carries.

use std::collections::{HashMap, HashSet, VecDeque};

use kube::api::ObjectMeta;
use parking_lot::Mutex;

use super::intake::Intake;
use super::why::Trigger;
use crate::cache::ObjectKey;
use crate::metrics::EchoMetrics;

/// How many written states are remembered; the oldest are forgotten first.
const CAPACITY: usize = 4096;

/// Which object a write is for: its kind, namespace and name.
pub(crate) type Target = (String, Option<String>, String);

/// The object of kind `kind` that `meta` describes, as a write [`Target`].
pub(crate) fn target_of(kind: &str, meta: &ObjectMeta) -> Target {
    (
        kind.to_owned(),
        meta.namespace.clone(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// The owned objects a controller's reconciles are writing or wrote, not yet seen back.
pub(crate) struct OwnWrites {
    intake: Intake,
    echoes: EchoMetrics,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for OwnWrites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnWrites").finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Inner {
    /// (uid, resourceVersion) of written states whose events have not come yet.
    written: HashSet<(String, String)>,
    order: VecDeque<(String, String)>,
    /// Writes in flight, with the events of their object that came meanwhile.
    in_flight: HashMap<Target, InFlight>,
}

#[derive(Default)]
struct InFlight {
    writes: usize,
    /// What the finished writes of this flight wrote.
    ours: HashSet<(String, String)>,
    /// Events held: their (uid, resourceVersion), the keys they would trigger and as what,
    /// and whether they stand for several changes (then never dropped).
    held: Vec<Held>,
}

/// An event held: its state, the keys it triggers and as what, whether it stands for several.
type Held = ((String, String), Vec<ObjectKey>, Trigger, bool);

/// A write in flight; dropping it unfinished (an error, a cancelled reconcile) releases the
/// events held for it.
pub(crate) struct Ticket<'a> {
    writes: &'a OwnWrites,
    target: Option<Target>,
}

impl OwnWrites {
    /// Own writes of a controller whose owners' keys go into `intake`; the events it drops count
    /// in `echoes`.
    pub(crate) fn new(intake: Intake, echoes: EchoMetrics) -> Self {
        Self {
            intake,
            echoes,
            inner: Mutex::default(),
        }
    }

    /// Starts a write of `target`: its events are held until the ticket is finished or dropped.
    pub(crate) fn begin(&self, target: Target) -> Ticket<'_> {
        self.inner
            .lock()
            .in_flight
            .entry(target.clone())
            .or_default()
            .writes += 1;
        Ticket {
            writes: self,
            target: Some(target),
        }
    }

    /// Handles an event of `target` in state `meta` that would trigger `keys`: dropped when it
    /// brings back a state the controller wrote, held while a write of `target` is in flight,
    /// queued otherwise.
    pub(crate) fn trigger(
        &self,
        target: &Target,
        meta: &ObjectMeta,
        keys: Vec<ObjectKey>,
        trigger: Trigger,
    ) {
        self.observe(target, meta, keys, trigger, false);
    }

    /// Handles an event that stands for several changes of `target`, the last in state `meta`:
    /// as [`Self::trigger`], but never dropped, since a change by someone else may be among
    /// those it stands for.
    pub(crate) fn trigger_coalesced(
        &self,
        target: &Target,
        meta: &ObjectMeta,
        keys: Vec<ObjectKey>,
        trigger: Trigger,
    ) {
        self.observe(target, meta, keys, trigger, true);
    }

    fn observe(
        &self,
        target: &Target,
        meta: &ObjectMeta,
        keys: Vec<ObjectKey>,
        trigger: Trigger,
        several: bool,
    ) {
        let state = state(meta);
        let mut inner = self.inner.lock();
        if let Some(state) = &state
            && inner.written.remove(state)
        {
            inner.order.retain(|s| s != state);
            if !several {
                drop(inner);
                self.suppressed(target, &state.1);
                return;
            }
        } else if let Some(flight) = inner.in_flight.get_mut(target)
            && let Some(state) = state
        {
            if several || !flight.ours.contains(&state) {
                flight.held.push((state, keys, trigger, several));
            } else {
                drop(inner);
                self.suppressed(target, &state.1);
            }
            return;
        }
        drop(inner);
        for key in keys {
            self.intake.add(key, trigger.clone());
        }
    }

    fn finish(&self, target: &Target, wrote: Option<&ObjectMeta>) {
        let written = wrote.and_then(state);
        let (echoes, released) = self.land(target, written.as_ref());
        if let Some((_, version)) = &written {
            for _ in 0..echoes {
                self.suppressed(target, version);
            }
        }
        for (key, trigger) in released {
            self.intake.add(key, trigger);
        }
    }

    /// Ends a write of `target` that left it in the state `written` (none if it failed): drops
    /// the held events that bring that state back and returns how many, with the keys of the
    /// other held events when it was the last write of `target` in flight.
    fn land(
        &self,
        target: &Target,
        written: Option<&(String, String)>,
    ) -> (usize, Vec<(ObjectKey, Trigger)>) {
        let mut inner = self.inner.lock();
        let Some(flight) = inner.in_flight.get_mut(target) else {
            return (0, Vec::new());
        };
        flight.writes -= 1;
        let (mut seen, mut echoes) = (false, 0);
        if let Some(written) = written {
            flight.ours.insert(written.clone());
            seen = flight.held.iter().any(|(state, ..)| state == written);
            let before = flight.held.len();
            flight
                .held
                .retain(|(state, _, _, several)| *several || state != written);
            echoes = before - flight.held.len();
        }
        if flight.writes > 0 {
            return (echoes, Vec::new());
        }
        let Some(flight) = inner.in_flight.remove(target) else {
            return (echoes, Vec::new());
        };
        if let Some(written) = written.filter(|_| !seen) {
            remember(&mut inner, written.clone());
        }
        drop(inner);
        let released = (flight.held.into_iter())
            .flat_map(|(_, keys, trigger, _)| keys.into_iter().map(move |k| (k, trigger.clone())));
        (echoes, released.collect())
    }

    /// Whether `meta` is a state the controller wrote whose watch event has not come yet: an
    /// apply answered with it changed nothing, though a cache that lags shows an older state.
    pub(crate) fn wrote(&self, meta: &ObjectMeta) -> bool {
        state(meta).is_some_and(|state| self.inner.lock().written.contains(&state))
    }

    /// Reports an event of `target` at `version` dropped as the echo of the controller's write.
    fn suppressed(&self, target: &Target, version: &str) {
        let (kind, namespace, name) = target;
        tracing::debug!(
            controller = %self.echoes.controller,
            kind = %kind,
            namespace = namespace.as_deref().unwrap_or_default(),
            object = %name,
            resource_version = %version,
            "dropped the watch event of our own write: no reconcile"
        );
        self.echoes.suppressed.inc();
    }
}

impl Ticket<'_> {
    /// The write succeeded and the object is now in the state `meta` describes.
    pub(crate) fn finish(mut self, meta: &ObjectMeta) {
        if let Some(target) = self.target.take() {
            self.writes.finish(&target, Some(meta));
        }
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if let Some(target) = self.target.take() {
            self.writes.finish(&target, None);
        }
    }
}

fn state(meta: &ObjectMeta) -> Option<(String, String)> {
    Some((meta.uid.clone()?, meta.resource_version.clone()?))
}

fn remember(inner: &mut Inner, state: (String, String)) {
    if inner.written.insert(state.clone()) {
        inner.order.push_back(state);
    }
    while inner.order.len() > CAPACITY {
        if let Some(oldest) = inner.order.pop_front() {
            inner.written.remove(&oldest);
        }
    }
}

#[cfg(test)]
mod tests {
    use prometheus::IntCounter;

    use super::*;
    use crate::controller::intake::Opened;
    use crate::metrics::Metrics;
    use crate::queue::WorkQueue;

    fn meta(uid: &str, version: &str) -> ObjectMeta {
        ObjectMeta {
            uid: Some(uid.into()),
            resource_version: Some(version.into()),
            ..ObjectMeta::default()
        }
    }

    fn target() -> Target {
        ("ConfigMap".into(), Some("ns".into()), "child".into())
    }

    fn modified() -> Trigger {
        Trigger::event(
            crate::controller::why::Reason::Owned,
            crate::controller::why::EventType::Modified,
            None,
        )
    }

    fn owner() -> Vec<ObjectKey> {
        vec![ObjectKey::new(Some("ns"), "owner")]
    }

    /// Own writes feeding a queue, the queue, and the open term that keeps it fed.
    fn setup() -> (OwnWrites, WorkQueue<ObjectKey>, Opened) {
        let (writes, queue, opened, _) = setup_counted();
        (writes, queue, opened)
    }

    /// As [`setup`], with the counter of the events dropped as echoes.
    fn setup_counted() -> (OwnWrites, WorkQueue<ObjectKey>, Opened, IntCounter) {
        let intake = Intake::default();
        let queue = WorkQueue::builder().build();
        let opened = intake.open(queue.clone());
        let echoes = Metrics::new(&prometheus::Registry::new())
            .expect("invariant: a new registry holds no metric family yet")
            .echoes("demo");
        let suppressed = echoes.suppressed.clone();
        (OwnWrites::new(intake, echoes), queue, opened, suppressed)
    }

    #[test]
    fn the_event_of_a_written_state_is_dropped_whether_it_comes_before_or_after_the_response() {
        let (writes, queue, _term) = setup();
        // The response first, then the event.
        writes.begin(target()).finish(&meta("a", "7"));
        writes.trigger(&target(), &meta("a", "7"), owner(), modified());
        // The event first, while the write is in flight, then the response.
        let ticket = writes.begin(target());
        writes.trigger(&target(), &meta("a", "8"), owner(), modified());
        ticket.finish(&meta("a", "8"));
        assert_eq!(
            queue.len(),
            0,
            "both events were the controller's own writes"
        );
    }

    #[test]
    fn changes_by_others_trigger_even_when_held_during_a_write() {
        let (writes, queue, _term) = setup();
        writes.begin(target()).finish(&meta("a", "7"));
        writes.trigger(&target(), &meta("a", "8"), owner(), modified());
        assert_eq!(queue.len(), 1, "a later state is someone else's");
        let ticket = writes.begin(target());
        writes.trigger(
            &target(),
            &meta("a", "9"),
            vec![ObjectKey::new(Some("ns"), "nine")],
            modified(),
        );
        writes.trigger(
            &target(),
            &meta("a", "10"),
            vec![ObjectKey::new(Some("ns"), "ten")],
            modified(),
        );
        assert_eq!(queue.len(), 1, "held while the write is in flight");
        ticket.finish(&meta("a", "10"));
        assert_eq!(
            queue.len(),
            2,
            "the held change by another (9) is queued, the written state (10) is not"
        );
    }

    #[test]
    fn a_write_that_fails_or_is_cancelled_releases_what_it_held() {
        let (writes, queue, _term) = setup();
        let ticket = writes.begin(target());
        writes.trigger(&target(), &meta("a", "3"), owner(), modified());
        assert_eq!(queue.len(), 0, "held while the write is in flight");
        drop(ticket);
        assert_eq!(
            queue.len(),
            1,
            "released when the write ends without a state"
        );
    }

    #[test]
    fn the_oldest_written_states_are_forgotten_beyond_the_capacity() {
        let (writes, queue, _term) = setup();
        for i in 0..=CAPACITY {
            writes.begin(target()).finish(&meta("a", &i.to_string()));
        }
        writes.trigger(&target(), &meta("a", "0"), owner(), modified());
        assert_eq!(
            queue.len(),
            1,
            "the oldest is forgotten, so its event triggers"
        );
        writes.trigger(
            &target(),
            &meta("a", &CAPACITY.to_string()),
            owner(),
            modified(),
        );
        assert_eq!(queue.len(), 1, "the newest is still known");
    }

    #[test]
    fn an_event_standing_for_several_changes_is_never_dropped_but_uses_up_our_state() {
        let (writes, queue, _term) = setup();
        // Someone's change (8) and our write (9) coalesced into one event carrying 9.
        writes.begin(target()).finish(&meta("a", "9"));
        writes.trigger_coalesced(&target(), &meta("a", "9"), owner(), modified());
        assert_eq!(queue.len(), 1, "another's change may hide behind our state");
        // The same while our write is in flight: held, then queued, not dropped.
        let ticket = writes.begin(target());
        writes.trigger_coalesced(
            &target(),
            &meta("a", "11"),
            vec![ObjectKey::new(Some("ns"), "eleven")],
            modified(),
        );
        assert_eq!(queue.len(), 1, "held while the write is in flight");
        ticket.finish(&meta("a", "11"));
        assert_eq!(queue.len(), 2, "released, not dropped, when the write ends");
        // Neither written state is remembered any more: a plain event carrying 9 or 11 again
        // would be someone else's.
        writes.trigger(
            &target(),
            &meta("a", "11"),
            vec![ObjectKey::new(Some("ns"), "x")],
            modified(),
        );
        assert_eq!(queue.len(), 3, "11 was seen, so it is not remembered");
    }

    #[test]
    fn every_dropped_echo_counts_and_a_change_by_another_does_not() {
        let (writes, queue, _term, suppressed) = setup_counted();
        // The echo after the response, the echo while the write is in flight, and the echo of
        // a state the flight already wrote: three events dropped, three counted.
        writes.begin(target()).finish(&meta("a", "7"));
        writes.trigger(&target(), &meta("a", "7"), owner(), modified());
        assert_eq!(suppressed.get(), 1, "the echo after the response");
        let ticket = writes.begin(target());
        writes.trigger(&target(), &meta("a", "8"), owner(), modified());
        assert_eq!(suppressed.get(), 1, "held, not yet known to be ours");
        let second = writes.begin(target());
        ticket.finish(&meta("a", "8"));
        assert_eq!(
            suppressed.get(),
            2,
            "the held echo, dropped at the response"
        );
        writes.trigger(&target(), &meta("a", "8"), owner(), modified());
        assert_eq!(suppressed.get(), 3, "an echo of a state this flight wrote");
        drop(second);
        assert_eq!(queue.len(), 0, "every event was an echo");
        // Someone else's change, and a coalesced event carrying our state: both queued.
        writes.trigger(
            &target(),
            &meta("a", "9"),
            vec![ObjectKey::new(Some("ns"), "nine")],
            modified(),
        );
        writes.begin(target()).finish(&meta("a", "10"));
        writes.trigger_coalesced(
            &target(),
            &meta("a", "10"),
            vec![ObjectKey::new(Some("ns"), "ten")],
            modified(),
        );
        assert_eq!(queue.len(), 2, "both trigger");
        assert_eq!(
            suppressed.get(),
            3,
            "neither was dropped, so neither counts"
        );
    }
}
