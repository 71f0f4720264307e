//! The objects the benchmark caches, and list pages of them as the API server sends them.

use serde_json::Value;

/// Objects per list page: 500, or 50 with `KUBEWARD_BENCH_QUICK=1`.
pub(crate) fn page_size() -> usize {
    if quick() { 50 } else { 500 }
}

/// Objects per store: 10,000, or 100 with `KUBEWARD_BENCH_QUICK=1` (`scripts/bench --quick`,
/// which checks that the bench runs, not its figures, in a debug build).
pub(crate) fn objects() -> usize {
    if quick() { 100 } else { 10_000 }
}

/// Whether `KUBEWARD_BENCH_QUICK` asks for the reduced workload.
pub(crate) fn quick() -> bool {
    std::env::var_os("KUBEWARD_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0")
}

/// A ConfigMap as an operator writes it with server-side apply: a few settings, the operator's
/// labels, an owner reference to its custom resource, and the managedFields entry the API
/// server records for that apply.
const CONFIG_MAP: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web-prod-settings","namespace":"shop","uid":"00000000-0000-0000-0000-000000000000","resourceVersion":"1","creationTimestamp":"2026-11-20T10:00:00Z","labels":{"app.kubernetes.io/name":"web","app.kubernetes.io/instance":"web-prod","app.kubernetes.io/managed-by":"web-operator"},"ownerReferences":[{"apiVersion":"shop.example.com/v1","kind":"WebApp","name":"web-prod","uid":"6a1f3e2c-7b8d-4e9f-a0b1-c2d3e4f5a6b7","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"web-operator","operation":"Apply","apiVersion":"v1","time":"2026-11-20T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:CACHE_TTL":{},"f:FEATURE_FLAGS":{},"f:LOG_LEVEL":{},"f:UPSTREAM_URL":{}},"f:metadata":{"f:labels":{"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/managed-by":{},"f:app.kubernetes.io/name":{}},"f:ownerReferences":{"k:{\"uid\":\"6a1f3e2c-7b8d-4e9f-a0b1-c2d3e4f5a6b7\"}":{}}}}}]},"data":{"CACHE_TTL":"300s","FEATURE_FLAGS":"checkout-v2,search-suggest","LOG_LEVEL":"info","UPSTREAM_URL":"http://catalog.shop.svc.cluster.local:8080"}}"#;

/// One kind of object: its JSON with placeholders for what varies per copy.
pub(crate) struct Fixture {
    /// `Pods` or `ConfigMaps`.
    pub(crate) plural: &'static str,
    list_kind: &'static str,
    /// Every copy's namespace.
    pub(crate) namespace: String,
    template: String,
}

impl Fixture {
    /// The realistic Pod the benchmarks share (several containers, status, managedFields),
    /// kept beside this file so that the benchmark runs from a clean clone.
    pub(crate) fn pod() -> anyhow::Result<Self> {
        Self::new("Pods", "PodList", include_str!("realistic-pod.json"))
    }

    /// The realistic ConfigMap above.
    pub(crate) fn config_map() -> anyhow::Result<Self> {
        Self::new("ConfigMaps", "ConfigMapList", CONFIG_MAP)
    }

    fn new(plural: &'static str, list_kind: &'static str, text: &str) -> anyhow::Result<Self> {
        let mut object: Value = serde_json::from_str(text)?;
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        object["metadata"]["name"] = "@NAME@".into();
        object["metadata"]["uid"] = "@UID@".into();
        object["metadata"]["resourceVersion"] = "@RV@".into();
        Ok(Self {
            plural,
            list_kind,
            namespace,
            template: serde_json::to_string(&object)?,
        })
    }

    /// The same objects as the server sends them to a metadata-only informer
    /// (`PartialObjectMetadata`: type fields and metadata only).
    pub(crate) fn metadata_only(&self) -> anyhow::Result<Self> {
        let object: Value = serde_json::from_str(&self.template)?;
        let partial = serde_json::json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadata",
            "metadata": object["metadata"],
        });
        Ok(Self {
            plural: self.plural,
            list_kind: "PartialObjectMetadataList",
            namespace: self.namespace.clone(),
            template: serde_json::to_string(&partial)?,
        })
    }

    /// The name of object `i`.
    pub(crate) fn name(i: usize) -> String {
        format!("web-7d4f4bd8dc-{i:05}")
    }

    /// The compact JSON of object `i` at resourceVersion generation `generation`.
    pub(crate) fn object(&self, i: usize, generation: u64) -> String {
        self.template
            .replace("@NAME@", &Self::name(i))
            .replace("@UID@", &format!("3f1c2d7e-8b9a-4c1d-9e2f-{i:012}"))
            .replace("@RV@", &(generation * 100_000 + i as u64).to_string())
    }

    /// Bytes of JSON per object, as the server sends it.
    pub(crate) fn json_size(&self) -> usize {
        self.object(0, 1).len()
    }

    /// The JSON text of list page `page` of `size` objects, each at resourceVersion
    /// `generation`.
    pub(crate) fn page(&self, page: usize, size: usize, generation: u64) -> String {
        let mut text = String::with_capacity(size * (self.template.len() + 16) + 64);
        text.push_str(r#"{"kind":""#);
        text.push_str(self.list_kind);
        text.push_str(r#"","apiVersion":"v1","metadata":{},"items":["#);
        for i in page * size..(page + 1) * size {
            if i > page * size {
                text.push(',');
            }
            text.push_str(&self.object(i, generation));
        }
        text.push_str("]}");
        text
    }
}
