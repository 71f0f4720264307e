//! The objects the kube-runtime `Database` owns, spelled out as in `database_objects.rs`; not counted.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt as _;
use serde_json::json;

use crate::Database;

/// The StatefulSet running `db`'s image, sized from its spec, a volume of `storage` per pod.
pub(crate) fn stateful_set(db: &Database) -> StatefulSet {
    let name = db.name_any();
    let labels = json!({ "app.kubernetes.io/name": name });
    let container = json!({
        "name": "db", "image": db.spec.image,
        "ports": [{ "name": "db", "containerPort": 5432, "protocol": "TCP" }],
        "volumeMounts": [{ "name": "data", "mountPath": "/var/lib/db" }],
    });
    let volume = json!({
        "metadata": { "name": "data" },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": { "requests": { "storage": db.spec.storage } },
        },
    });
    from_json(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": { "name": name, "labels": labels },
        "spec": {
            "replicas": db.spec.replicas,
            "serviceName": name,
            "selector": { "matchLabels": labels },
            "template": { "metadata": { "labels": labels }, "spec": { "containers": [container] } },
            "volumeClaimTemplates": [volume],
        },
    }))
}

/// The headless Service that gives each of `db`'s pods a stable DNS name.
pub(crate) fn service(db: &Database) -> Service {
    let name = db.name_any();
    from_json(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": { "name": name },
        "spec": {
            "clusterIP": "None",
            "selector": { "app.kubernetes.io/name": name },
            "ports": [{ "name": "db", "port": 5432, "protocol": "TCP" }],
        },
    }))
}

/// `value` as a `K`: the literals above are valid objects, whatever the spec says.
fn from_json<K: serde::de::DeserializeOwned + Default>(value: serde_json::Value) -> K {
    serde_json::from_value(value).unwrap_or_default()
}
