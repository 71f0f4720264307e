//! Keeps what the controllers added declare: each one's name (unique in a manager), CRD and RBAC
//! rules, and its ring; the command line's subcommands (feature `cli`) read the manifests.
#![cfg_attr(
    not(feature = "cli"),
    allow(dead_code, reason = "only the command line's subcommands read it")
)]

use super::{Error, Manager, Result};
use crate::crd::CustomResourceDefinition;
use crate::rbac::PolicyRule;

/// What the controllers added so far declare, for the command line's `crd`, `manifests` and
/// `shards` subcommands.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    /// Each controller's CRD and rules.
    pub(crate) controllers: Vec<ControllerManifests>,
    /// The controller rings and their kinds.
    #[cfg(feature = "sharding")]
    pub(crate) rings: Vec<super::ring::RecordedRing>,
}

/// What one controller puts in the manifests: its CRD (for a custom resource) and RBAC rules.
#[derive(Debug)]
pub(crate) struct ControllerManifests {
    pub(crate) controller: String,
    pub(crate) crd: Option<CustomResourceDefinition>,
    pub(crate) rbac: Option<Vec<PolicyRule>>,
}

impl Manager {
    /// Keeps a controller's name, CRD and rules.
    ///
    /// # Errors
    /// [`Error::InvalidController`] when another controller of this manager has the name
    /// (names label metrics and Events, so two controllers sharing one could not be told apart).
    pub(crate) fn record_controller(
        &self,
        controller: &str,
        crd: Option<CustomResourceDefinition>,
        rbac: Option<Vec<PolicyRule>>,
    ) -> Result<()> {
        let controllers = &mut self.recorded.lock().controllers;
        if controllers.iter().any(|c| c.controller == controller) {
            return Err(Error::InvalidController {
                name: controller.to_owned(),
                reason: "another controller of this manager has this name; give each a name of \
                         its own with Controller::name"
                    .to_owned(),
            });
        }
        controllers.push(ControllerManifests {
            controller: controller.to_owned(),
            crd,
            rbac,
        });
        Ok(())
    }

    /// What the controllers added so far declare; the manager keeps none of it after.
    pub(crate) fn take_recorded(&self) -> Recorded {
        std::mem::take(&mut *self.recorded.lock())
    }
}
