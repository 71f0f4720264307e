//! One object a plan would write: created, updated (with the fields that would change) or deleted.

use serde::Serialize;
use serde_json::Value;

/// What a plan would do to one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Action {
    /// Create it: it does not exist yet.
    Create,
    /// Change the [fields](Change::fields) listed.
    Update,
    /// Delete it (or, with finalizers on it, mark it for deletion).
    Delete,
}

/// One object that a plan's dry-run writes would create, change or delete.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Change {
    /// What would be done.
    pub action: Action,
    /// The object's `apiVersion`, e.g. `v1`.
    pub api_version: String,
    /// The object's kind, e.g. `ConfigMap`.
    pub kind: String,
    /// Its namespace; `None` for a cluster-scoped object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// For an update, the fields that would change (managed fields, resourceVersion,
    /// generation, condition timestamps and observed generations left out); for a create, the
    /// fields the object would have, all new.
    pub fields: Vec<FieldChange>,
}

/// One field that would change: absent `before` is an addition, absent `after` a removal.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FieldChange {
    /// Where: `data.content`, `metadata.labels["app.kubernetes.io/name"]`,
    /// `status.conditions[type=Ready].status`.
    pub path: String,
    /// The live value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    /// The value after the write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
}

impl FieldChange {
    pub(crate) fn new(path: String, before: Option<Value>, after: Option<Value>) -> Self {
        Self {
            path,
            before,
            after,
        }
    }
}

impl Change {
    /// `namespace/name`, or the name of a cluster-scoped object.
    #[must_use]
    pub fn object(&self) -> String {
        match &self.namespace {
            Some(namespace) => format!("{namespace}/{}", self.name),
            None => self.name.clone(),
        }
    }
}
