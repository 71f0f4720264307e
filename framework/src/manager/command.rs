//! Prints or writes an operator's manifests instead of running it: the `crd` and `manifests`
//! subcommands, with what `crate::manifests` makes of the controllers added.

use std::io::Write as _;
use std::path::PathBuf;

use super::program::program;
use super::{Error, Manager, Result};
use crate::crd::CustomResourceDefinition;
use crate::manifests::{Recorded, crds_yaml, default_chart, write_chart};
use crate::rbac::PolicyRule;

/// What an operator does instead of running: print or write the manifests of the controllers
/// added to its [`Manager`]. [`Manager::run`] does it and returns without starting anything, so
/// it needs no cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Subcommand))]
#[non_exhaustive]
pub enum Command {
    /// Print the CustomResourceDefinition of every controller as YAML and exit.
    Crd,
    /// Write the CRDs and the controllers' merged RBAC rules into a Helm chart
    /// (`files/crd.yaml` and `files/rbac-rules.yaml`) and exit.
    Manifests {
        /// The chart's folder [default: charts/NAME, NAME being this program's name with `-`
        /// for `_`]
        chart: Option<PathBuf>,
    },
    /// Print each shard of a controller ring (`--leader-election-namespace` holds their
    /// Leases): its state (ready, expired, uncertain, dead, orphaned), Lease holder, last
    /// renewal, and how many objects of each of the ring's kinds it holds; then exit.
    #[cfg(feature = "sharding")]
    Shards {
        /// The ring [default: every ring of the operator's controllers]
        ring: Option<String>,
    },
}

impl Command {
    /// Whether the command reads a cluster (`shards`), where the others only print or write
    /// manifests.
    #[cfg(feature = "cli")]
    #[cfg_attr(
        not(feature = "sharding"),
        expect(clippy::unused_self, reason = "no shards")
    )]
    pub(crate) fn needs_cluster(&self) -> bool {
        #[cfg(feature = "sharding")]
        if matches!(self, Self::Shards { .. }) {
            return true;
        }
        false
    }
}

impl Manager {
    /// Keeps a controller's CRD and rules for the subcommand, when one was given.
    pub(crate) fn record_manifests(
        &self,
        controller: &str,
        crd: Option<CustomResourceDefinition>,
        rbac: Option<Vec<PolicyRule>>,
    ) {
        if self.command.is_some() {
            self.manifests.lock().push(Recorded {
                controller: controller.to_owned(),
                crd,
                rbac,
            });
        }
    }

    /// Carries out `command` for the controllers added so far.
    #[cfg_attr(
        not(feature = "sharding"),
        expect(clippy::unused_async, reason = "only `shards` reads")
    )]
    pub(super) async fn run_command(&self, command: &Command) -> Result<()> {
        let mut recorded = std::mem::take(&mut *self.manifests.lock());
        match command {
            Command::Crd => {
                for r in &mut recorded {
                    r.crd = r.crd.take().map(|crd| self.servable(crd));
                }
                let yaml = crds_yaml(&recorded)?;
                std::io::stdout()
                    .write_all(yaml.as_bytes())
                    .map_err(|e| failed("printing the CRDs", e))
            }
            Command::Manifests { chart } => {
                // The chart serves the conversion webhook, or turns it off, by its values.
                #[cfg(feature = "webhooks")]
                for r in &mut recorded {
                    r.crd = r.crd.take().map(|crd| self.point_conversion(crd));
                }
                let chart = chart.clone().unwrap_or_else(|| default_chart(&program()));
                #[cfg(feature = "webhooks")]
                let webhooks = self.webhooks_yaml()?;
                #[cfg(not(feature = "webhooks"))]
                let webhooks = None;
                Ok(write_chart(&chart, &program(), &recorded, webhooks)?)
            }
            #[cfg(feature = "sharding")]
            Command::Shards { ring } => self.print_rings(ring.as_deref()).await,
        }
    }
}

impl Manager {
    /// `crd` as this operator can serve it, for the `crd` command. When this manager serves the
    /// CRD's conversions, its conversion webhook points here.
    /// Otherwise nothing could convert between its versions, so, as the chart does without
    /// webhooks, it has no conversion webhook and serves only the stored version; a warning
    /// names the versions left unserved.
    #[cfg_attr(not(feature = "webhooks"), allow(clippy::unused_self))]
    pub(super) fn servable(&self, mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
        let name = crd.metadata.name.clone().unwrap_or_default();
        #[cfg(feature = "webhooks")]
        if self.serves_conversions(&name) {
            return self.point_conversion(crd);
        }
        let Some(conversion) = (crd.spec.conversion.as_mut()).filter(|c| c.webhook.is_some())
        else {
            return crd;
        };
        "None".clone_into(&mut conversion.strategy);
        conversion.webhook = None;
        let mut unserved = Vec::new();
        for version in (crd.spec.versions.iter_mut()).filter(|v| !v.storage && v.served) {
            version.served = false;
            unserved.push(version.name.clone());
        }
        if !unserved.is_empty() {
            tracing::warn!(
                crd = name,
                "versions {} are not served: this operator serves no conversion webhook for them \
                 (Manager::add_conversion, with a webhook port)",
                unserved.join(", ")
            );
        }
        crd
    }

    /// The webhook configurations of the added admission webhooks as YAML documents (without a
    /// `caBundle`: cert-manager's CA injector fills it in), if there are any.
    #[cfg(feature = "webhooks")]
    fn webhooks_yaml(&self) -> Result<Option<String>> {
        let webhooks = self.webhooks.lock().clone();
        let (validating, mutating) = crate::webhook::configurations(
            &self.webhook_configuration_prefix(),
            &webhooks,
            &self.webhook_endpoint(),
            None,
        );
        let mut documents = Vec::new();
        if let Some(configuration) = validating {
            documents.push(serde_norway::to_string(&configuration));
        }
        if let Some(configuration) = mutating {
            documents.push(serde_norway::to_string(&configuration));
        }
        if documents.is_empty() {
            return Ok(None);
        }
        let documents = documents
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| failed("serializing the webhook configurations", e))?;
        let header = crate::rbac::comment(&format!(
            "GENERATED by `{} manifests` from the admission webhooks of the operator; do not edit.",
            program()
        ));
        Ok(Some(format!("{header}{}", documents.join("---\n"))))
    }
}

fn failed(
    action: impl Into<String>,
    source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> Error {
    Error::Manifests {
        action: action.into(),
        source: Some(source.into()),
    }
}

impl From<crate::manifests::Error> for Error {
    fn from(e: crate::manifests::Error) -> Self {
        Self::Manifests {
            action: e.action,
            source: e.source,
        }
    }
}
