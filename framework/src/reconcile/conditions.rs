//! Keeps a list of status conditions the way apimachinery's `meta.SetStatusCondition` does.

use std::fmt;
use std::ops::Deref;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// The status of a [`Condition`]: `True`, `False` or `Unknown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConditionStatus {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// Whether the condition holds is not known.
    Unknown,
}

impl ConditionStatus {
    /// The value as Kubernetes writes it: `"True"`, `"False"` or `"Unknown"`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }
}

impl From<bool> for ConditionStatus {
    fn from(holds: bool) -> Self {
        if holds { Self::True } else { Self::False }
    }
}

impl fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Makes k8s-openapi's [`Condition`] the way a reconcile reports one: `Condition::new(...)`
/// (the prelude brings it into scope).
pub trait NewCondition {
    /// A condition of `type_` with `status`, `reason` (`CamelCase`) and `message`, stamped now.
    ///
    /// [`Conditions::set`] keeps the stamp of an existing condition whose status stays the same.
    /// Its `observed_generation` is left open: [`Context::patch_status`](crate::controller::Context::patch_status)
    /// fills it with the generation of the object it writes (set it yourself to say otherwise).
    #[must_use]
    fn new(
        type_: &str,
        status: impl Into<ConditionStatus>,
        reason: &str,
        message: impl Into<String>,
    ) -> Self;
}

impl NewCondition for Condition {
    fn new(
        type_: &str,
        status: impl Into<ConditionStatus>,
        reason: &str,
        message: impl Into<String>,
    ) -> Self {
        Condition {
            type_: type_.to_owned(),
            status: status.into().as_str().to_owned(),
            reason: reason.to_owned(),
            message: message.into(),
            observed_generation: None,
            last_transition_time: now(),
        }
    }
}

/// The status conditions of an object: a field of a custom resource's status.
///
/// Holds `metav1.Condition`s (k8s-openapi's [`Condition`]) at most one per type, and its JSON
/// schema carries apimachinery's validation (see the [module docs](super)), so a CRD whose
/// status has a `conditions: Conditions` field rejects malformed conditions. Reads as a slice.
#[doc(alias = "SetStatusCondition")]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Conditions(Vec<Condition>);

impl Conditions {
    /// Sets `condition` in place of the one of its type, as apimachinery's
    /// `meta.SetStatusCondition`: a new type is added as given; for an existing one,
    /// `lastTransitionTime` changes (to `condition`'s) only when the status changes, while
    /// reason, message and observedGeneration are always updated. A list read from an object
    /// may hold several conditions of one type (an older API server accepts them); setting the
    /// type leaves exactly one, the first, so that `kubectl wait` and every reader see the one
    /// set. Returns whether anything changed.
    pub fn set(&mut self, condition: Condition) -> bool {
        let Some(first) = self.0.iter().position(|c| c.type_ == condition.type_) else {
            self.0.push(condition);
            return true;
        };
        let before = self.0.len();
        let mut seen = 0;
        self.0.retain(|c| {
            let duplicate = c.type_ == condition.type_ && seen > 0;
            seen += usize::from(c.type_ == condition.type_);
            !duplicate
        });
        let mut changed = self.0.len() != before;
        let existing = &mut self.0[first];
        if existing.status != condition.status {
            existing.status = condition.status;
            existing.last_transition_time = condition.last_transition_time;
            changed = true;
        }
        for (old, new) in [
            (&mut existing.reason, condition.reason),
            (&mut existing.message, condition.message),
        ] {
            if *old != new {
                *old = new;
                changed = true;
            }
        }
        if existing.observed_generation != condition.observed_generation {
            existing.observed_generation = condition.observed_generation;
            changed = true;
        }
        changed
    }

    /// The condition of `type_`.
    #[doc(alias = "FindStatusCondition")]
    #[must_use]
    pub fn find(&self, type_: &str) -> Option<&Condition> {
        self.0.iter().find(|c| c.type_ == type_)
    }

    /// Whether the condition of `type_` is there with status `True`.
    #[doc(alias = "IsStatusConditionTrue")]
    #[must_use]
    pub fn is_true(&self, type_: &str) -> bool {
        self.has_status(type_, ConditionStatus::True)
    }

    /// Whether the condition of `type_` is there with status `False`.
    #[doc(alias = "IsStatusConditionFalse")]
    #[must_use]
    pub fn is_false(&self, type_: &str) -> bool {
        self.has_status(type_, ConditionStatus::False)
    }

    /// Removes the condition of `type_`; returns whether there was one.
    #[doc(alias = "RemoveStatusCondition")]
    pub fn remove(&mut self, type_: &str) -> bool {
        let before = self.0.len();
        self.0.retain(|c| c.type_ != type_);
        self.0.len() != before
    }

    fn has_status(&self, type_: &str, status: ConditionStatus) -> bool {
        self.find(type_)
            .is_some_and(|c| c.status == status.as_str())
    }
}

impl Deref for Conditions {
    type Target = [Condition];

    fn deref(&self) -> &[Condition] {
        &self.0
    }
}

impl From<Vec<Condition>> for Conditions {
    fn from(conditions: Vec<Condition>) -> Self {
        let mut list = Self::default();
        for condition in conditions {
            list.set(condition);
        }
        list
    }
}

impl From<Conditions> for Vec<Condition> {
    fn from(conditions: Conditions) -> Self {
        conditions.0
    }
}

impl<'a> IntoIterator for &'a Conditions {
    type Item = &'a Condition;
    type IntoIter = std::slice::Iter<'a, Condition>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// Now, to the second: what the API server keeps of a `metav1.Time`.
pub(super) fn now() -> Time {
    let now = Timestamp::now();
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn setting_a_type_held_twice_leaves_exactly_one_of_it() {
        let read: Conditions = serde_json::from_value(serde_json::json!([
            { "type": "Ready", "status": "False", "reason": "Old", "message": "",
              "lastTransitionTime": "2020-01-01T00:00:00Z" },
            { "type": "Synced", "status": "True", "reason": "Ok", "message": "",
              "lastTransitionTime": "2020-01-01T00:00:00Z" },
            { "type": "Ready", "status": "False", "reason": "Older", "message": "",
              "lastTransitionTime": "2019-01-01T00:00:00Z" },
        ]))
        .expect("a condition list");
        let mut conditions = read.clone();
        assert!(conditions.set(stamped("Ready", ConditionStatus::True, "Fine", 5)));
        let ready: Vec<&Condition> = conditions.iter().filter(|c| c.type_ == "Ready").collect();
        assert_eq!(ready.len(), 1, "{conditions:?}");
        assert_eq!(
            (ready[0].status.as_str(), ready[0].reason.as_str()),
            ("True", "Fine")
        );
        assert_eq!(conditions.len(), 2, "Synced stays");
        // The same value once more changes nothing; the duplicate alone is a change.
        assert!(!conditions.set(stamped("Ready", ConditionStatus::True, "Fine", 6)));
        let mut same = read;
        assert!(same.set(stamped("Ready", ConditionStatus::False, "Old", 7)));
        assert_eq!(same.iter().filter(|c| c.type_ == "Ready").count(), 1);
    }

    fn at(second: i64) -> Time {
        Time(Timestamp::from_second(second).expect("a small second count is a valid timestamp"))
    }

    fn stamped(type_: &str, status: ConditionStatus, reason: &str, second: i64) -> Condition {
        Condition {
            last_transition_time: at(second),
            ..Condition::new(type_, status, reason, "")
        }
    }

    #[test]
    fn a_new_type_is_added_with_the_time_it_was_given() {
        let mut list = Conditions::default();
        assert!(list.set(stamped("Ready", ConditionStatus::False, "Starting", 10)));
        let ready = list.find("Ready").expect("Ready was just set");
        assert_eq!(ready.last_transition_time, at(10));
        assert!(list.is_false("Ready") && !list.is_true("Ready"));
    }

    #[test]
    fn the_same_status_with_another_reason_keeps_the_transition_time() {
        let mut list = Conditions::default();
        list.set(stamped("Ready", ConditionStatus::True, "Up", 10));
        assert!(list.set(stamped("Ready", ConditionStatus::True, "StillUp", 20)));
        let ready = list.find("Ready").expect("Ready is set");
        assert_eq!(
            (ready.reason.as_str(), &ready.last_transition_time),
            ("StillUp", &at(10))
        );
    }

    #[test]
    fn setting_an_identical_condition_changes_nothing() {
        let mut list = Conditions::default();
        list.set(stamped("Ready", ConditionStatus::True, "Up", 10));
        let before = list.clone();
        assert!(!list.set(stamped("Ready", ConditionStatus::True, "Up", 99)));
        assert_eq!(list, before);
    }

    #[test]
    fn an_observed_generation_change_alone_is_a_change() {
        let mut list = Conditions::default();
        list.set(stamped("Ready", ConditionStatus::True, "Up", 10));
        let mut next = stamped("Ready", ConditionStatus::True, "Up", 20);
        next.observed_generation = Some(2);
        assert!(list.set(next));
        assert_eq!(
            list.find("Ready").map(|c| c.observed_generation),
            Some(Some(2))
        );
    }

    #[test]
    fn removing_reports_whether_the_type_was_there() {
        let mut list = Conditions::default();
        list.set(stamped("Ready", ConditionStatus::True, "Up", 10));
        list.set(stamped("Degraded", ConditionStatus::False, "Fine", 10));
        assert!(list.remove("Ready"));
        assert!(!list.remove("Ready"));
        assert_eq!(list.len(), 1);
        assert!(!list.is_true("Ready") && !list.is_false("Ready"));
    }

    #[test]
    fn unknown_is_neither_true_nor_false() {
        let mut list = Conditions::default();
        list.set(Condition::new(
            "Ready",
            ConditionStatus::Unknown,
            "Pending",
            "waiting",
        ));
        assert!(!list.is_true("Ready") && !list.is_false("Ready"));
    }

    #[test]
    fn conditions_serialize_as_a_plain_list_with_second_precision_times() {
        let mut list = Conditions::default();
        list.set(stamped("Ready", true.into(), "Up", 0));
        let json = serde_json::to_value(&list).expect("conditions serialize");
        assert_eq!(
            json,
            serde_json::json!([{
                "type": "Ready", "status": "True", "reason": "Up", "message": "",
                "lastTransitionTime": "1970-01-01T00:00:00Z"
            }])
        );
        let back: Conditions = serde_json::from_value(json).expect("conditions deserialize");
        assert_eq!(back, list);
    }

    fn any_status() -> impl Strategy<Value = ConditionStatus> {
        prop_oneof![
            Just(ConditionStatus::True),
            Just(ConditionStatus::False),
            Just(ConditionStatus::Unknown),
        ]
    }

    proptest! {
        /// The model: the transition time is the time of the latest set whose status differed
        /// from the status before it (or the first set of the type).
        #[test]
        fn the_transition_time_is_that_of_the_last_status_change(
            steps in prop::collection::vec((any_status(), "[A-Z][a-z]{0,3}"), 1..20),
        ) {
            let mut list = Conditions::default();
            let mut model: Option<(ConditionStatus, i64)> = None;
            for (second, (status, reason)) in (0_i64..).zip(steps) {
                list.set(stamped("Ready", status, &reason, second));
                model = match model {
                    Some((previous, since)) if previous == status => Some((status, since)),
                    _ => Some((status, second)),
                };
                let (status, since) = model.expect("set at least once");
                let ready = list.find("Ready").expect("Ready was set");
                prop_assert_eq!(&ready.status, status.as_str());
                prop_assert_eq!(&ready.reason, &reason);
                prop_assert_eq!(&ready.last_transition_time, &at(since));
                prop_assert_eq!(list.len(), 1);
            }
        }

        /// `set` reports a change exactly when the list differs afterwards.
        #[test]
        fn set_says_changed_exactly_when_the_list_changed(
            first in (any_status(), "[A-Z][a-z]{0,2}", 0_i64..3),
            second in (any_status(), "[A-Z][a-z]{0,2}", 0_i64..3),
        ) {
            let mut list = Conditions::default();
            let mut initial = stamped("Ready", first.0, &first.1, 1);
            initial.observed_generation = Some(first.2);
            list.set(initial);
            let before = list.clone();
            let mut next = stamped("Ready", second.0, &second.1, 2);
            next.observed_generation = Some(second.2);
            let changed = list.set(next);
            prop_assert_eq!(changed, list != before);
        }
    }
}
