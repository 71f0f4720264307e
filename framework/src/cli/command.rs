//! What an operator does instead of running: the `crd`, `manifests`, `plan` and `shards`
//! subcommands, with what `cli::manifests` makes of the controllers added.

use std::io::Write as _;
use std::path::PathBuf;

use super::manifests::{crds_yaml, default_chart, write_chart};
use crate::crd::CustomResourceDefinition;
use crate::manager::{Error, Manager, Result};
use crate::process::program::program;

/// What an operator does instead of running: print or write the manifests of the controllers
/// added to its [`Manager`], or plan. [`Operator::run`](super::Operator::run) does it and
/// returns without starting anything; only `plan` and `shards` read the cluster.
#[derive(Clone, Debug, PartialEq, Eq, clap::Subcommand)]
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
    /// Plan instead of running: start the informers, take no Lease, reconcile every object
    /// once with every write sent as a dry run (`dryRun=All`), and print what would be
    /// created, changed (with the fields) and deleted; nothing is written and no Event is
    /// recorded. Exit code 0 when nothing would change, 2 when something would, 1 when a
    /// reconcile failed.
    Plan {
        /// Reconcile only the objects this label selector names (kubectl's syntax, e.g.
        /// `app=web,tier!=db`)
        #[arg(short = 'l', long)]
        selector: Option<String>,
        /// `text` for people, `json` for machines
        #[arg(short = 'o', long, value_enum, default_value_t = PlanOutput::Text)]
        output: PlanOutput,
    },
    /// Print each shard of a controller ring (`--leader-election-namespace` holds their
    /// Leases): its state (ready, expired, uncertain, dead, orphaned), Lease holder, last
    /// renewal, and how many objects of each of the ring's kinds it holds; then exit.
    #[cfg(feature = "sharding")]
    Shards {
        /// The ring [default: every ring of the operator's controllers]
        ring: Option<String>,
    },
    /// Print the last reconciles of one object as a running replica's flight recorder has them
    /// (`/debug/reconciles` on its metrics port): why each ran, how long it queued and ran, how
    /// it ended and what it wrote; then exit.
    Why {
        /// The object: KIND/NAMESPACE/NAME, or KIND/NAME for a cluster-scoped one
        object: String,
        /// The replica's metrics address, `http://HOST:PORT` or `https://HOST:PORT` (for
        /// instance through `kubectl port-forward`)
        #[arg(long)]
        from: String,
        /// A bearer token that may `get` `/metrics`, for secure metrics
        #[arg(long, env = "KUBEWARD_WHY_TOKEN", hide_env_values = true)]
        token: Option<String>,
        /// The CA (PEM) of the secure metrics certificate, for an https address
        #[arg(long)]
        ca_file: Option<PathBuf>,
    },
}

/// How the `plan` command prints the plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
#[non_exhaustive]
pub enum PlanOutput {
    /// The plan for people: a block per object, then the summary line.
    #[default]
    Text,
    /// The plan as one JSON document (`kubeward::plan::Plan::to_json`).
    Json,
}

impl Command {
    /// Whether the command reads a cluster (`plan`, `shards`), where the others only print or
    /// write manifests.
    pub(crate) fn needs_cluster(&self) -> bool {
        if matches!(self, Self::Plan { .. }) {
            return true;
        }
        #[cfg(feature = "sharding")]
        if matches!(self, Self::Shards { .. }) {
            return true;
        }
        false
    }
}

impl Command {
    /// Carries out the command for the controllers added to `manager` so far; the shard Leases
    /// of `shards` are in `lease_namespace` (else the pod's namespace).
    #[cfg_attr(
        not(feature = "sharding"),
        expect(unused_variables, reason = "only `shards` reads the Lease namespace")
    )]
    pub(super) async fn run(&self, manager: &Manager, lease_namespace: Option<&str>) -> Result<()> {
        let mut recorded = manager.take_recorded();
        match self {
            Self::Crd => {
                for r in &mut recorded.controllers {
                    r.crd = r.crd.take().map(|crd| servable(manager, crd));
                }
                let yaml = crds_yaml(&recorded.controllers)?;
                std::io::stdout()
                    .write_all(yaml.as_bytes())
                    .map_err(|e| failed("printing the CRDs", e))
            }
            Self::Manifests { chart } => {
                // The chart serves the conversion webhook, or turns it off, by its values.
                #[cfg(feature = "webhooks")]
                for r in &mut recorded.controllers {
                    r.crd = r.crd.take().map(|crd| manager.point_conversion(crd));
                }
                let chart = chart.clone().unwrap_or_else(|| default_chart(&program()));
                #[cfg(feature = "webhooks")]
                let webhooks = webhooks_yaml(manager)?;
                #[cfg(not(feature = "webhooks"))]
                let webhooks = None;
                Ok(write_chart(
                    &chart,
                    &program(),
                    &recorded.controllers,
                    webhooks,
                )?)
            }
            // `Operator::run` plans, with the manager it owns.
            Self::Plan { .. } => Ok(()),
            Self::Why {
                object,
                from,
                token,
                ca_file,
            } => {
                let why = super::why::Why {
                    object,
                    from,
                    token: token.as_deref(),
                    ca_file: ca_file.as_deref(),
                };
                let timeline = why.timeline().await?;
                std::io::stdout()
                    .write_all(timeline.as_bytes())
                    .map_err(|e| failed("printing the timeline", e))
            }
            #[cfg(feature = "sharding")]
            Self::Shards { ring } => {
                super::rings::print_rings(
                    manager,
                    &recorded.rings,
                    ring.as_deref(),
                    lease_namespace,
                )
                .await
            }
        }
    }
}

/// `crd` as `manager` can serve it, for the `crd` command. When the manager serves the CRD's
/// conversions, its conversion webhook points there.
/// Otherwise nothing could convert between its versions, so, as the chart does without
/// webhooks, it has no conversion webhook and serves only the stored version; a warning
/// names the versions left unserved.
#[cfg_attr(
    not(feature = "webhooks"),
    expect(unused_variables, reason = "no conversions")
)]
fn servable(manager: &Manager, mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    let name = crd.metadata.name.clone().unwrap_or_default();
    #[cfg(feature = "webhooks")]
    if manager.serves_conversions(&name) {
        return manager.point_conversion(crd);
    }
    let Some(conversion) = (crd.spec.conversion.as_mut()).filter(|c| c.webhook.is_some()) else {
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
fn webhooks_yaml(manager: &Manager) -> Result<Option<String>> {
    let webhooks = manager.webhooks();
    let (validating, mutating) = crate::webhook::configurations(
        &manager.webhook_configuration_prefix(),
        &webhooks,
        &manager.webhook_endpoint(),
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

fn failed(
    action: impl Into<String>,
    source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
) -> Error {
    Error::Manifests {
        action: action.into(),
        source: Some(source.into()),
    }
}

impl From<super::manifests::Error> for Error {
    fn from(e: super::manifests::Error) -> Self {
        Self::Manifests {
            action: e.action,
            source: e.source,
        }
    }
}
