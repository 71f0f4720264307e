//! The example operator's admission webhooks: a validator that keeps a generator's `content`
//! small enough for a ConfigMap, and a defaulter that labels generators with their team.

use kube::core::admission::AdmissionRequest;
use kubeward::webhook::{Defaulter, Validator, Verdict};

use crate::configmap_generator::ConfigMapGenerator;

/// The largest `content` the validator admits: a ConfigMap holds at most 1 MiB in all, and the
/// generated one has other fields too.
pub const MAX_CONTENT: usize = 512 * 1024;
/// The label the defaulter sets when a generator has none.
pub const TEAM_LABEL: &str = "demo.kubeward.dev/team";
/// The team of generators that name none.
pub const DEFAULT_TEAM: &str = "unassigned";

// ANCHOR: validator
/// Refuses generators whose `content` would not fit in the generated ConfigMap.
#[derive(Clone, Copy, Debug, Default)]
pub struct ContentLimit;

impl Validator<ConfigMapGenerator> for ContentLimit {
    async fn validate_create(
        &self,
        cmg: &ConfigMapGenerator,
        _: &AdmissionRequest<ConfigMapGenerator>,
    ) -> Verdict {
        check_content(cmg)
    }

    async fn validate_update(
        &self,
        _old: &ConfigMapGenerator,
        cmg: &ConfigMapGenerator,
        _: &AdmissionRequest<ConfigMapGenerator>,
    ) -> Verdict {
        check_content(cmg)
    }
}

/// Denies a `content` over [`MAX_CONTENT`] bytes; warns about an empty one.
pub fn check_content(cmg: &ConfigMapGenerator) -> Verdict {
    match cmg.spec.content.len() {
        0 => Verdict::allow().warn("spec.content is empty: the ConfigMap will hold nothing"),
        n if n > MAX_CONTENT => Verdict::deny(format!(
            "spec.content is {n} bytes; at most {MAX_CONTENT} fit in the generated ConfigMap"
        )),
        _ => Verdict::allow(),
    }
}
// ANCHOR_END: validator

// ANCHOR: defaulter
/// Labels generators with [`TEAM_LABEL`]` = `[`DEFAULT_TEAM`] when they name no team.
#[derive(Clone, Copy, Debug, Default)]
pub struct TeamLabel;

impl Defaulter<ConfigMapGenerator> for TeamLabel {
    async fn default(
        &self,
        cmg: &mut ConfigMapGenerator,
        _: &AdmissionRequest<ConfigMapGenerator>,
    ) -> Verdict {
        let labels = cmg.metadata.labels.get_or_insert_with(Default::default);
        labels
            .entry(TEAM_LABEL.to_owned())
            .or_insert_with(|| DEFAULT_TEAM.to_owned());
        Verdict::allow()
    }
}
// ANCHOR_END: defaulter

#[cfg(test)]
mod tests {
    use super::*;
    use crate::configmap_generator::ConfigMapGeneratorSpec;

    fn generator(content: &str) -> ConfigMapGenerator {
        ConfigMapGenerator::new(
            "g",
            ConfigMapGeneratorSpec {
                content: content.to_owned(),
            },
        )
    }

    #[test]
    fn content_over_the_limit_is_denied_and_empty_content_warned_about() {
        let verdict = check_content(&generator(&"x".repeat(MAX_CONTENT + 1)));
        assert_eq!(
            verdict.denial(),
            Some("spec.content is 524289 bytes; at most 524288 fit in the generated ConfigMap")
        );
        assert!(check_content(&generator(&"x".repeat(MAX_CONTENT))).is_allowed());
        let empty = check_content(&generator(""));
        assert!(empty.is_allowed());
        assert_eq!(empty.warnings().len(), 1);
    }
}
