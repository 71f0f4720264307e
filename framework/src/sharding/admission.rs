//! Assigns objects to a shard as they are created: the ring's mutating admission webhook.
//!
//! Every replica of a shard with secure webhook serving serves it, one webhook per kind of the
//! ring. The API server calls it on CREATE, and on UPDATE of an object without the ring's shard
//! label (an object a shard just handed back, or one created before the webhook existed); it
//! adds the shard label the sharder would set ([`decide`] on the ring key of [`object_key`] or
//! [`controller_key`](super::controller_key)) in the same request, so a new object is never
//! unassigned. It only reads the ring's view of the shard Leases, kept on every replica; with no
//! shard available, or no key (a main-kind object named by `generateName`, an owned object
//! without a controller owner), it admits the object as it is and the sharder assigns it later.
//! It never reassigns an object that has a shard label: the sharder drains those.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::core::PartialObjectMeta;
use kube::core::admission::AdmissionRequest;

use super::SharderMetrics;
use super::key::KeyOf;
use super::ring_watch::Ring;
use super::{Decision, decide, drain_label, shard_label};
use crate::informer::Watchable;
use crate::webhook::{Admissible, Admission, Defaulter, FailurePolicy, Verdict};

/// How long the API server waits for the webhook: short, as an object it could not label is
/// still admitted and assigned by the sharder.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The assignment webhook for objects of `K` in `ring`, keyed by `key_of`, at
/// `/shard-RING-GROUP-VERSION-KIND` (kubebuilder's path with the verb `shard-RING`); each
/// assignment counts in `kubeward_sharder_assignments_total{by="webhook"}`.
pub(crate) fn admission<K: Watchable>(
    ring: &str,
    view: Ring,
    metrics: SharderMetrics,
    key_of: KeyOf,
) -> Admission {
    let label = shard_label(ring);
    let assign = Assign {
        shard_label: label.clone(),
        drain_label: drain_label(ring),
        view,
        key_of,
        metrics,
    };
    let group = K::group(&()).replace('.', "-");
    let (version, kind) = (K::version(&()), K::kind(&()).to_ascii_lowercase());
    Admission::defaulter::<PartialObjectMeta<K>>(assign)
        .at(format!("/shard-{ring}-{group}-{version}-{kind}"))
        .name(format!("{kind}-{version}.shard-{ring}.kubeward.io"))
        .failure_policy(FailurePolicy::Ignore)
        .timeout(TIMEOUT)
        .object_selector(LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: label,
                operator: "DoesNotExist".into(),
                values: None,
            }]),
            match_labels: None,
        })
}

/// Sets the shard label of an object without one to the shard the ring puts it on.
struct Assign {
    shard_label: String,
    drain_label: String,
    view: Ring,
    key_of: KeyOf,
    metrics: SharderMetrics,
}

impl<K: Admissible> Defaulter<K> for Assign {
    async fn default(&self, object: &mut K, request: &AdmissionRequest<K>) -> Verdict {
        let meta = object.meta();
        let labels = meta.labels.as_ref();
        if labels.is_some_and(|l| l.contains_key(&self.shard_label)) {
            return Verdict::allow();
        }
        let draining = labels.is_some_and(|l| l.contains_key(&self.drain_label));
        // On CREATE the object may not carry its namespace yet; the request does.
        let mut keyed = meta.clone();
        if keyed.namespace.is_none() {
            keyed.namespace.clone_from(&request.namespace);
        }
        let Some(key) = (self.key_of)(&keyed) else {
            return Verdict::allow();
        };
        let view = std::sync::Arc::clone(&self.view.borrow());
        let Decision::Assign(shard) =
            decide(None, draining, view.ring.shard_for(&key), &view.available)
        else {
            return Verdict::allow();
        };
        let labels = object
            .meta_mut()
            .labels
            .get_or_insert_with(Default::default);
        labels.remove(&self.drain_label);
        self.metrics.assigned_by_webhook(&shard);
        labels.insert(self.shard_label.clone(), shard);
        Verdict::allow()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use base64::Engine as _;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::{Value, json};
    use tokio::sync::watch;

    use super::super::ring_watch::View;
    use super::super::{HashRing, controller_key, object_key};
    use super::*;

    fn view(shards: &[&str]) -> Ring {
        let (_, rx) = watch::channel(Arc::new(View {
            available: shards.iter().map(|s| (*s).to_owned()).collect(),
            ring: HashRing::new(shards.iter().copied()),
        }));
        rx
    }

    fn metrics() -> SharderMetrics {
        SharderMetrics::new(
            &crate::metrics::Metrics::new(&prometheus::Registry::new()).unwrap(),
            "gen",
        )
    }

    fn own(meta: &kube::core::ObjectMeta) -> Option<String> {
        Some(object_key::<ConfigMap>(
            meta.namespace.as_deref(),
            meta.name.as_deref()?,
        ))
    }

    /// Posts a CREATE review of `object` in namespace `shop` and returns the object as the
    /// answer's patch leaves it.
    async fn admit(webhook: &Admission, mut object: Value) -> Value {
        let review = json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "u1", "operation": "CREATE", "namespace": "shop", "name": "cm",
                "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                "resource": {"group": "", "version": "v1", "resource": "configmaps"},
                "userInfo": {"username": "admin"}, "object": object.clone(),
            }
        });
        let answer = (webhook.route.handler)(serde_json::to_vec(&review).unwrap().into()).await;
        let review: Value = serde_json::from_slice(answer.body()).unwrap();
        assert_eq!(review["response"]["allowed"], true, "{review}");
        if let Some(patch) = review["response"]["patch"].as_str() {
            let patch = base64::engine::general_purpose::STANDARD
                .decode(patch)
                .unwrap();
            let patch: json_patch::Patch = serde_json::from_slice(&patch).unwrap();
            json_patch::patch(&mut object, &patch).unwrap();
        }
        object
    }

    #[tokio::test]
    async fn a_new_object_gets_the_shard_the_ring_gives_its_key_and_nothing_else_changes() {
        let webhook = admission::<ConfigMap>("gen", view(&["a", "b", "c"]), metrics(), own);
        assert_eq!(webhook.path(), "/shard-gen--v1-configmap");
        // No namespace in the object: the request's is part of the key.
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "labels": {"app": "x"}}, "data": {"k": "v"}});
        let admitted = admit(&webhook, object).await;
        let ring = HashRing::new(["a", "b", "c"]);
        let shard = ring.shard_for("/ConfigMap/shop/cm").unwrap();
        assert_eq!(
            admitted["metadata"]["labels"],
            json!({"app": "x", "shard.alpha.sharding.timebertt.dev/gen": shard})
        );
        assert_eq!(admitted["data"], json!({"k": "v"}));
        assert_eq!(admitted["metadata"].get("namespace"), None);
    }

    #[tokio::test]
    async fn an_owned_object_goes_with_its_controller_owner_and_a_labelled_one_is_left_alone() {
        let webhook =
            admission::<ConfigMap>("gen", view(&["a", "b", "c"]), metrics(), controller_key);
        let owned = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm",
            "ownerReferences": [{"apiVersion": "kubeward.dev/v1", "kind": "Gen", "name": "g",
                "uid": "x", "controller": true}]}});
        let admitted = admit(&webhook, owned).await;
        let shard = HashRing::new(["a", "b", "c"])
            .shard_for("kubeward.dev/Gen/shop/g")
            .map(str::to_owned);
        assert_eq!(
            admitted["metadata"]["labels"]["shard.alpha.sharding.timebertt.dev/gen"].as_str(),
            shard.as_deref()
        );
        let labelled = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm",
            "labels": {"shard.alpha.sharding.timebertt.dev/gen": "gone"}}});
        assert_eq!(admit(&webhook, labelled.clone()).await, labelled);
    }

    #[tokio::test]
    async fn with_no_shard_or_no_key_the_object_is_admitted_as_it_is() {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}});
        let none = admission::<ConfigMap>("gen", view(&[]), metrics(), own);
        assert_eq!(admit(&none, object.clone()).await, object);
        let generated = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"generateName": "cm-"}});
        let some = admission::<ConfigMap>("gen", view(&["a"]), metrics(), own);
        assert_eq!(admit(&some, generated.clone()).await, generated);
    }

    #[tokio::test]
    async fn a_malformed_review_is_refused_with_the_reason() {
        let webhook = admission::<ConfigMap>("gen", view(&["a"]), metrics(), own);
        let answer = (webhook.route.handler)(b"{\"request\": 7}".to_vec().into()).await;
        assert_eq!(answer.status(), http::StatusCode::BAD_REQUEST);
        let review: Value = serde_json::from_slice(answer.body()).unwrap();
        let message = review["response"]["status"]["message"].as_str().unwrap();
        assert!(
            message.contains("cannot decode the AdmissionReview"),
            "{message}"
        );
    }
}
