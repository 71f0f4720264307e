//! Keeps what an operator's manifests are made of: each controller's CRD and RBAC rules, its rings.
//!
//! Only the command line's subcommands read it (feature `cli`).
#![cfg_attr(
    not(feature = "cli"),
    allow(dead_code, reason = "only the command line's subcommands read it")
)]

#[cfg(feature = "sharding")]
use kube::api::ApiResource;

use super::Manager;
use crate::crd::CustomResourceDefinition;
use crate::rbac::PolicyRule;
#[cfg(feature = "sharding")]
use crate::sharding::KindSharder;

/// What the controllers added so far declare, for the command line's `crd`, `manifests` and
/// `shards` subcommands.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    /// Each controller's CRD and rules.
    pub(crate) controllers: Vec<ControllerManifests>,
    /// The controller rings and their kinds.
    #[cfg(feature = "sharding")]
    pub(crate) rings: Vec<RecordedRing>,
}

/// What one controller puts in the manifests: its CRD (for a custom resource) and RBAC rules.
#[derive(Debug)]
pub(crate) struct ControllerManifests {
    pub(crate) controller: String,
    pub(crate) crd: Option<CustomResourceDefinition>,
    pub(crate) rbac: Option<Vec<PolicyRule>>,
}

/// A controller ring of the operator and the kinds its controllers shard.
#[cfg(feature = "sharding")]
#[derive(Debug)]
pub(crate) struct RecordedRing {
    pub(crate) ring: String,
    /// Each kind, and whether it is the ring's main kind.
    pub(crate) kinds: Vec<(ApiResource, bool)>,
}

impl Manager {
    /// Keeps a controller's CRD and rules.
    pub(crate) fn record_manifests(
        &self,
        controller: &str,
        crd: Option<CustomResourceDefinition>,
        rbac: Option<Vec<PolicyRule>>,
    ) {
        self.recorded.lock().controllers.push(ControllerManifests {
            controller: controller.to_owned(),
            crd,
            rbac,
        });
    }

    /// Keeps the ring of a controller whose kinds are `kinds` (none for a controller that
    /// cannot be sharded).
    #[cfg(feature = "sharding")]
    pub(crate) fn record_ring(&self, ring: &str, kinds: &[KindSharder]) {
        if kinds.is_empty() {
            return;
        }
        let rings = &mut self.recorded.lock().rings;
        let kinds = kinds.iter().map(|k| k.resource.clone());
        match rings.iter_mut().find(|r| r.ring == ring) {
            Some(known) => known.kinds.extend(kinds),
            None => rings.push(RecordedRing {
                ring: ring.to_owned(),
                kinds: kinds.collect(),
            }),
        }
    }

    /// What the controllers added so far declare; the manager keeps none of it after.
    pub(crate) fn take_recorded(&self) -> Recorded {
        std::mem::take(&mut *self.recorded.lock())
    }
}
