//! Prints or writes an operator's manifests instead of running it: the `crd` and `manifests` subcommands.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::program::program;
use super::{Error, Manager, Result};
use crate::crd::CustomResourceDefinition;
use crate::rbac::{self, PolicyRule};

/// The chart file the `manifests` subcommand writes the CRDs to, relative to the chart's folder.
const CRD_FILE: &str = "files/crd.yaml";
/// The chart file the `manifests` subcommand writes the RBAC rules to.
const RBAC_RULES_FILE: &str = "files/rbac-rules.yaml";
/// The chart file the `manifests` subcommand writes the webhook configurations to, when the
/// operator has admission webhooks.
const WEBHOOKS_FILE: &str = "files/webhooks.yaml";

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
    Shards {
        /// The ring [default: every ring of the operator's controllers]
        ring: Option<String>,
    },
}

/// What the manager keeps of an added controller while a [`Command`] waits for [`Manager::run`].
#[derive(Debug)]
pub(super) struct Recorded {
    controller: String,
    crd: Option<CustomResourceDefinition>,
    rbac: Option<Vec<PolicyRule>>,
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
                write_chart(&chart, &program(), &recorded, webhooks)
            }
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
        let header = rbac::comment(&format!(
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

fn refused(action: impl Into<String>) -> Error {
    Error::Manifests {
        action: action.into(),
        source: None,
    }
}

/// `charts/NAME`, NAME being `program` with `-` for `_` (Helm chart names use dashes).
fn default_chart(program: &str) -> PathBuf {
    Path::new("charts").join(program.replace('_', "-"))
}

/// The distinct CRDs of the recorded controllers, in the order they were added.
fn crds(recorded: &[Recorded]) -> Vec<&CustomResourceDefinition> {
    let mut seen = std::collections::HashSet::new();
    recorded
        .iter()
        .filter_map(|r| r.crd.as_ref())
        .filter(|crd| seen.insert(crd.metadata.name.clone()))
        .collect()
}

/// Every CRD as a YAML document, separated by `---`.
fn crds_yaml(recorded: &[Recorded]) -> Result<String> {
    let crds = crds(recorded);
    if crds.is_empty() {
        return Err(refused(
            "no controller of this operator has a CustomResourceDefinition: add controllers of \
             kinds with `#[derive(Controller)]` (or `Controller::crd`) before `Manager::run`",
        ));
    }
    let documents = crds
        .iter()
        .map(serde_norway::to_string)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| failed("serializing the CRDs", e))?;
    Ok(documents.join("---\n"))
}

/// Writes the CRDs and the merged rules into `chart`: both are made before either is written.
fn write_chart(
    chart: &Path,
    program: &str,
    recorded: &[Recorded],
    webhooks: Option<String>,
) -> Result<()> {
    if !chart.is_dir() {
        return Err(refused(format!(
            "the chart folder {} does not exist; name it: `{program} manifests CHART`",
            chart.display()
        )));
    }
    let without: Vec<&str> = recorded
        .iter()
        .filter(|r| r.rbac.is_none())
        .map(|r| r.controller.as_str())
        .collect();
    if recorded.is_empty() || !without.is_empty() {
        return Err(refused(format!(
            "no RBAC rules for the controllers {without:?}: add controllers before \
             `Manager::run`, and give hand-built ones `Controller::rbac_rules`"
        )));
    }
    let names: Vec<&str> = recorded.iter().map(|r| r.controller.as_str()).collect();
    let names = names.join(", ");
    let rules = rbac::merge(
        recorded
            .iter()
            .flat_map(|r| r.rbac.iter().flatten().cloned()),
    );
    let rules_header = format!(
        "GENERATED by `{program} manifests` from the RBAC rules of its\n\
         controllers ({names}); do not edit. Rules for leader election (Leases) are not\n\
         included: they belong to the manager, not to a controller."
    );
    let rules = rbac::rules_yaml(&rules_header, &rules)
        .map_err(|e| failed("serializing the RBAC rules", e))?;
    let crds = if crds(recorded).is_empty() {
        None
    } else {
        let header = rbac::comment(&format!(
            "GENERATED by `{program} manifests` from the CustomResourceDefinitions of its\n\
             controllers ({names}); do not edit."
        ));
        Some(format!("{header}{}", crds_yaml(recorded)?))
    };
    let files = chart.join("files");
    std::fs::create_dir_all(&files)
        .map_err(|e| failed(format!("creating {}", files.display()), e))?;
    let outputs = crds
        .map(|crds| (CRD_FILE, crds))
        .into_iter()
        .chain([(RBAC_RULES_FILE, rules)])
        .chain(webhooks.map(|yaml| (WEBHOOKS_FILE, yaml)));
    for (file, text) in outputs {
        let path = chart.join(file);
        std::fs::write(&path, text)
            .map_err(|e| failed(format!("writing {}", path.display()), e))?;
        tracing::info!(path = %path.display(), "wrote");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn crd(name: &str) -> CustomResourceDefinition {
        CustomResourceDefinition {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..CustomResourceDefinition::default()
        }
    }

    fn recorded(controller: &str, crd_name: Option<&str>, rules: bool) -> Recorded {
        Recorded {
            controller: controller.to_owned(),
            crd: crd_name.map(crd),
            rbac: rules.then(|| rbac::Rules::new().owned::<ConfigMap>().events().build()),
        }
    }

    #[test]
    fn the_default_chart_is_named_after_the_program_with_dashes() {
        assert_eq!(
            default_chart("configmap_generator"),
            Path::new("charts/configmap-generator")
        );
    }

    #[test]
    fn crds_print_once_each_as_separate_documents() -> Result<()> {
        let yaml = crds_yaml(&[
            recorded("a", Some("as.example.com"), true),
            recorded("b", None, true),
            recorded("c", Some("cs.example.com"), true),
            recorded("d", Some("as.example.com"), true),
        ])?;
        let names: Vec<String> = serde_norway::Deserializer::from_str(&yaml)
            .map(|d| {
                let crd: CustomResourceDefinition =
                    serde::Deserialize::deserialize(d).expect("a CRD document");
                crd.metadata.name.unwrap_or_default()
            })
            .collect();
        assert_eq!(names, ["as.example.com", "cs.example.com"]);
        assert!(matches!(
            crds_yaml(&[recorded("b", None, true)]),
            Err(Error::Manifests { .. })
        ));
        Ok(())
    }

    #[test]
    fn manifests_merge_the_rules_and_write_nothing_when_a_controller_has_none() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| failed("tempdir", e))?;
        let missing = write_chart(
            dir.path(),
            "op",
            &[
                recorded("a", Some("as.example.com"), true),
                recorded("b", None, false),
            ],
            None,
        );
        assert!(
            matches!(&missing, Err(Error::Manifests { action, .. }) if action.contains("[\"b\"]")),
            "{missing:?}"
        );
        assert!(!dir.path().join("files").exists(), "nothing was written");

        write_chart(
            dir.path(),
            "op",
            &[
                recorded("a", Some("as.example.com"), true),
                recorded("b", None, true),
            ],
            Some("# webhooks\n".into()),
        )?;
        let rules = std::fs::read_to_string(dir.path().join(RBAC_RULES_FILE))
            .map_err(|e| failed("reading", e))?;
        assert!(
            rules.starts_with("# GENERATED by `op manifests`"),
            "{rules}"
        );
        assert_eq!(rules.matches("- configmaps").count(), 1, "{rules}");
        let crds =
            std::fs::read_to_string(dir.path().join(CRD_FILE)).map_err(|e| failed("reading", e))?;
        assert!(crds.contains("name: as.example.com"), "{crds}");
        let webhooks = std::fs::read_to_string(dir.path().join(WEBHOOKS_FILE))
            .map_err(|e| failed("reading", e))?;
        assert_eq!(webhooks, "# webhooks\n");
        Ok(())
    }

    #[test]
    fn a_chart_folder_that_does_not_exist_is_refused() {
        let outcome = write_chart(
            Path::new("/nonexistent/chart"),
            "op",
            &[recorded("a", Some("as.example.com"), true)],
            None,
        );
        assert!(
            matches!(&outcome, Err(Error::Manifests { action, .. }) if action.contains("does not exist")),
            "{outcome:?}"
        );
    }
}
