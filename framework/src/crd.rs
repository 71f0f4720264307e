//! Describes custom resources to `kubectl`: the CustomResourceDefinition of a derived kind.
//!
//! kube's `CustomResource` derive writes the CRD; [`polish`] finishes it the way `kubectl` users
//! expect: `kubectl explain` opens with the spec struct's doc comment and can explain `status`,
//! and a kind with status conditions lists its condition (`Ready` unless the controller names
//! another), `Reason` (and with `-o wide` `Message`) columns. `#[derive(Controller)]` implements [`Definition`] with it. A kind in several
//! versions gets them all in one definition, [`with_versions`], converted by a webhook.

mod versions;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinitionVersion, JSONSchemaProps,
    JSONSchemaPropsOrArray,
};

pub use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
/// kube's trait behind `Kind::crd()`, re-exported so generated code can name it through kubeward.
pub use kube::CustomResourceExt;
pub use versions::{
    CONVERSION_PATH, convert_with_webhook, stored_in, webhook_service, with_versions,
};

/// A kind's CustomResourceDefinition as the operator installs it: kube's, [polished](polish).
///
/// `#[derive(Controller)]` implements it for the kind; the manager's `crd` and `manifests`
/// subcommands print and write it.
#[doc(alias = "crd")]
#[doc(alias = "CustomResourceDefinition")]
pub trait Definition {
    /// The CustomResourceDefinition.
    fn definition() -> CustomResourceDefinition;
}

/// How kube's derive describes a kind when it has no `#[kube(doc = "...")]`.
const KUBE_DEFAULT_DESCRIPTION: &str = "Auto-generated derived type for ";

/// Finishes a CustomResourceDefinition made by kube's `CustomResource` derive, in every version:
///
/// - the top-level description is `description` (the spec struct's doc comment), else the `spec`
///   property's description, instead of kube's "Auto-generated derived type for ..." (an
///   explicit `#[kube(doc = "...")]` is kept);
/// - the `status` property is not `nullable`: the apiserver leaves nullable properties out of
///   the `OpenAPI` it publishes (for `OpenAPI` v2 it drops their type and properties), so
///   `kubectl explain kind.status` would find nothing under it. A `status: null` is then pruned
///   instead of stored, which means the same;
/// - when the status has `conditions` (with `type` and `status`) and no column is named after
///   `condition` (the condition the controller reports on, `Ready` by default; the part after a
///   `domain/` prefix), the columns `condition`, `Reason` and `Message` (the last shown by `-o
///   wide` only) are added before `Age`, and `Age` is added when missing.
///
/// Nothing else changes: names, short names, categories and the user's own columns stay.
#[must_use]
pub fn polish(
    mut crd: CustomResourceDefinition,
    description: Option<&str>,
    condition: &str,
) -> CustomResourceDefinition {
    let description = description.map(str::trim).filter(|d| !d.is_empty());
    for version in &mut crd.spec.versions {
        if let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        {
            describe(schema, description);
            if let Some(status) = property_mut(schema, "status") {
                status.nullable = None;
            }
        }
        add_condition_columns(version, condition);
    }
    crd
}

/// Sets the top-level description, unless the user wrote one with `#[kube(doc = "...")]`.
fn describe(schema: &mut JSONSchemaProps, description: Option<&str>) {
    let written = schema
        .description
        .as_deref()
        .is_some_and(|d| !d.starts_with(KUBE_DEFAULT_DESCRIPTION));
    if written {
        return;
    }
    schema.description = description.map(str::to_owned).or_else(|| {
        schema
            .properties
            .as_ref()
            .and_then(|p| p.get("spec"))
            .and_then(|spec| spec.description.clone())
    });
}

fn property_mut<'a>(
    schema: &'a mut JSONSchemaProps,
    name: &str,
) -> Option<&'a mut JSONSchemaProps> {
    schema.properties.as_mut()?.get_mut(name)
}

fn property<'a>(schema: &'a JSONSchemaProps, name: &str) -> Option<&'a JSONSchemaProps> {
    schema.properties.as_ref()?.get(name)
}

/// The schema of one status condition, when the status has a `conditions` list of objects with
/// `type` and `status`.
fn condition_schema(version: &CustomResourceDefinitionVersion) -> Option<&JSONSchemaProps> {
    let root = version.schema.as_ref()?.open_api_v3_schema.as_ref()?;
    let conditions = property(property(root, "status")?, "conditions")?;
    let Some(JSONSchemaPropsOrArray::Schema(item)) = &conditions.items else {
        return None;
    };
    (property(item, "type").is_some() && property(item, "status").is_some()).then_some(&**item)
}

fn add_condition_columns(version: &mut CustomResourceDefinitionVersion, condition: &str) {
    let Some(item) = condition_schema(version) else {
        return;
    };
    let name = condition.rsplit('/').next().unwrap_or(condition);
    let path = format!(".status.conditions[?(@.type==\"{condition}\")]");
    let column = |title: &str, field: &str, priority: i32, description: String| {
        CustomResourceColumnDefinition {
            name: title.into(),
            type_: "string".into(),
            json_path: format!("{path}.{field}"),
            description: Some(description),
            priority: (priority != 0).then_some(priority),
            ..CustomResourceColumnDefinition::default()
        }
    };
    let mut added = vec![column(
        name,
        "status",
        0,
        format!("Whether the {condition} condition is True, False or Unknown"),
    )];
    if property(item, "reason").is_some() {
        let description = format!("The {condition} condition's reason");
        added.push(column("Reason", "reason", 0, description));
    }
    if property(item, "message").is_some() {
        let description = format!("The {condition} condition's message");
        added.push(column("Message", "message", 1, description));
    }
    let columns = version
        .additional_printer_columns
        .get_or_insert_with(Vec::new);
    if columns.iter().any(|c| c.name.eq_ignore_ascii_case(name)) {
        return;
    }
    if let Some(age) = columns.iter().position(is_age) {
        columns.splice(age..age, added);
    } else {
        columns.extend(added);
        columns.push(CustomResourceColumnDefinition {
            name: "Age".into(),
            type_: "date".into(),
            json_path: ".metadata.creationTimestamp".into(),
            ..CustomResourceColumnDefinition::default()
        });
    }
}

fn is_age(column: &CustomResourceColumnDefinition) -> bool {
    column.name.eq_ignore_ascii_case("age") || column.json_path == ".metadata.creationTimestamp"
}

#[cfg(test)]
mod tests {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    use super::*;

    /// Asks for a gizmo.
    #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "test.kubeward.dev",
        version = "v1",
        kind = "Gizmo",
        namespaced,
        status = "GizmoStatus",
        shortname = "gz",
        category = "tools",
        printcolumn = r#"{"name":"Size","type":"integer","jsonPath":".spec.size"}"#
    )]
    struct GizmoSpec {
        /// How big.
        size: u32,
    }

    /// What happened to the gizmo.
    #[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
    struct GizmoStatus {
        /// The latest observations.
        #[serde(default)]
        conditions: Vec<Condition>,
    }

    #[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
    struct Condition {
        #[serde(rename = "type")]
        type_: String,
        status: String,
        reason: String,
        message: String,
    }

    // No doc comment: the description stays empty.
    #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
    #[kube(group = "test.kubeward.dev", version = "v1", kind = "Plain")]
    struct PlainSpec {
        on: bool,
    }

    #[derive(CustomResource, Clone, Debug, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "test.kubeward.dev",
        version = "v1",
        kind = "Documented",
        doc = "Written by hand."
    )]
    struct DocumentedSpec {
        on: bool,
    }

    fn schema(crd: &CustomResourceDefinition) -> &JSONSchemaProps {
        crd.spec.versions[0]
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .expect("kube's derive writes a schema")
    }

    fn columns(crd: &CustomResourceDefinition) -> Vec<(String, String, Option<i32>)> {
        crd.spec.versions[0]
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| (c.name.clone(), c.json_path.clone(), c.priority))
            .collect()
    }

    #[test]
    fn the_description_is_the_doc_comment_and_never_kubes_placeholder() {
        assert!(
            schema(&Gizmo::crd())
                .description
                .as_deref()
                .is_some_and(|d| d.starts_with(KUBE_DEFAULT_DESCRIPTION)),
            "kube's derive still writes its placeholder, which this test replaces"
        );
        let polished = polish(Gizmo::crd(), Some("  Asks for a gizmo.\n"), "Ready");
        assert_eq!(
            schema(&polished).description.as_deref(),
            Some("Asks for a gizmo.")
        );
        let from_spec = polish(Gizmo::crd(), None, "Ready");
        assert_eq!(
            schema(&from_spec).description.as_deref(),
            Some("Asks for a gizmo.")
        );
        let nothing = polish(Plain::crd(), Some(" "), "Ready");
        assert_eq!(schema(&nothing).description, None);
    }

    #[test]
    fn a_description_written_with_kubes_doc_key_is_kept() {
        let polished = polish(Documented::crd(), Some("The spec's doc."), "Ready");
        assert_eq!(
            schema(&polished).description.as_deref(),
            Some("Written by hand.")
        );
    }

    #[test]
    fn the_status_is_no_longer_nullable_and_keeps_its_properties() {
        let status = |crd: &CustomResourceDefinition| {
            property(schema(crd), "status")
                .cloned()
                .expect("the kind has a status")
        };
        assert_eq!(status(&Gizmo::crd()).nullable, Some(true));
        let polished = status(&polish(Gizmo::crd(), None, "Ready"));
        assert_eq!(polished.nullable, None);
        assert_eq!(polished.properties, status(&Gizmo::crd()).properties);
    }

    #[test]
    fn conditions_add_ready_reason_message_and_age_after_the_users_columns() {
        let polished = polish(Gizmo::crd(), None, "Ready");
        let ready = ".status.conditions[?(@.type==\"Ready\")]";
        assert_eq!(
            columns(&polished),
            [
                ("Size".into(), ".spec.size".into(), None),
                ("Ready".into(), format!("{ready}.status"), None),
                ("Reason".into(), format!("{ready}.reason"), None),
                ("Message".into(), format!("{ready}.message"), Some(1)),
                ("Age".into(), ".metadata.creationTimestamp".into(), None),
            ]
        );
    }

    #[test]
    fn the_controllers_own_condition_names_the_columns_instead_of_ready() {
        let polished = polish(Gizmo::crd(), None, "example.com/Available");
        let available = ".status.conditions[?(@.type==\"example.com/Available\")]";
        assert_eq!(
            columns(&polished)[1..3],
            [
                ("Available".into(), format!("{available}.status"), None),
                ("Reason".into(), format!("{available}.reason"), None),
            ]
        );
        assert!(!columns(&polished).iter().any(|c| c.0 == "Ready"));
    }

    #[test]
    fn condition_columns_go_before_the_users_age_column() {
        let mut crd = Gizmo::crd();
        let age = CustomResourceColumnDefinition {
            name: "Age".into(),
            type_: "date".into(),
            json_path: ".metadata.creationTimestamp".into(),
            ..CustomResourceColumnDefinition::default()
        };
        crd.spec.versions[0]
            .additional_printer_columns
            .get_or_insert_with(Vec::new)
            .push(age);
        let names: Vec<String> = columns(&polish(crd, None, "Ready"))
            .into_iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(names, ["Size", "Ready", "Reason", "Message", "Age"]);
    }

    #[test]
    fn a_users_ready_column_and_a_kind_without_conditions_keep_their_columns() {
        let mut crd = Gizmo::crd();
        crd.spec.versions[0].additional_printer_columns =
            Some(vec![CustomResourceColumnDefinition {
                name: "READY".into(),
                type_: "string".into(),
                json_path: ".status.ready".into(),
                ..CustomResourceColumnDefinition::default()
            }]);
        let names: Vec<String> = columns(&polish(crd, None, "Ready"))
            .into_iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(names, ["READY"]);
        assert_eq!(columns(&polish(Plain::crd(), None, "Ready")), []);
    }

    #[test]
    fn names_short_names_and_categories_are_left_alone() {
        let polished = polish(Gizmo::crd(), None, "Ready");
        assert_eq!(polished.spec.names, Gizmo::crd().spec.names);
        assert_eq!(
            polished.spec.names.categories.as_deref(),
            Some(&["tools".to_owned()][..]),
            "kube's `category` key fills the categories"
        );
        assert_eq!(polished.metadata, Gizmo::crd().metadata);
        assert_eq!(polished.spec.scope, Gizmo::crd().spec.scope);
    }
}
