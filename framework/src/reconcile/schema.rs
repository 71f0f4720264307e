//! Describes [`Conditions`] to the API server with apimachinery's validation of `metav1.Condition`.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use super::Conditions;

/// A condition type: `CamelCase`, optionally prefixed by a DNS subdomain and `/`.
const TYPE_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";
/// A reason: a letter, then letters, digits, `_`, `,` or `:`, not ending in `,` or `:`.
const REASON_PATTERN: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";

impl JsonSchema for Conditions {
    fn schema_name() -> Cow<'static, str> {
        "Conditions".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "kubeward::reconcile::Conditions".into()
    }

    /// Written inline: structural CRD schemas may not use `$ref`.
    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "The latest observations of the object's state, at most one per condition type.",
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
            "items": {
                "description": "One aspect of the object's state, as a Kubernetes metav1.Condition.",
                "type": "object",
                "required": ["type", "status", "lastTransitionTime", "reason", "message"],
                "properties": {
                    "type": {
                        "description": "What the condition is about, in CamelCase (e.g. Ready), optionally prefixed with a domain and a slash (example.com/Ready).",
                        "type": "string",
                        "maxLength": 316,
                        "pattern": TYPE_PATTERN,
                    },
                    "status": {
                        "description": "Whether the condition holds: True, False or Unknown.",
                        "type": "string",
                        "enum": ["True", "False", "Unknown"],
                    },
                    "observedGeneration": {
                        "description": "The metadata.generation of the object this condition was set for; older than the object's generation means the condition may be out of date.",
                        "type": "integer",
                        "format": "int64",
                        "minimum": 0,
                    },
                    "lastTransitionTime": {
                        "description": "When the status last changed (RFC 3339); unchanged while the status stays the same.",
                        "type": "string",
                        "format": "date-time",
                    },
                    "reason": {
                        "description": "Why the condition has its status: a CamelCase identifier for programs (e.g. ConfigMapApplied).",
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 1024,
                        "pattern": REASON_PATTERN,
                    },
                    "message": {
                        "description": "Details for humans; may be empty.",
                        "type": "string",
                        "maxLength": 32768,
                        // The local kube-apiserver 1.20 (built with Debian's go-openapi) refuses
                        // any empty string as "must be of type string: null" unless the field
                        // is nullable, and an empty message is valid. k8s-openapi's `Condition`
                        // always writes a string and reads a null as "".
                        "nullable": true,
                    },
                },
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use schemars::generate::SchemaSettings;

    use super::*;

    fn schema() -> serde_json::Value {
        let generator = SchemaSettings::openapi3()
            .with(|s| s.inline_subschemas = true)
            .into_generator();
        generator.into_root_schema_for::<Conditions>().to_value()
    }

    #[test]
    fn the_list_is_a_map_keyed_by_type() {
        let schema = schema();
        assert_eq!(schema["x-kubernetes-list-type"], "map");
        assert_eq!(
            schema["x-kubernetes-list-map-keys"],
            serde_json::json!(["type"])
        );
    }

    #[test]
    fn every_field_is_described_and_the_required_ones_are_metav1s() {
        let schema = schema();
        let items = &schema["items"];
        let properties = items["properties"]
            .as_object()
            .expect("items have properties");
        assert_eq!(properties.len(), 6);
        for (name, property) in properties {
            assert!(
                property["description"].is_string(),
                "{name} has no description"
            );
        }
        assert_eq!(
            items["required"],
            serde_json::json!(["type", "status", "lastTransitionTime", "reason", "message"])
        );
    }

    #[test]
    fn the_fields_carry_apimachinerys_validation() {
        let schema = schema();
        let field = |name: &str| schema["items"]["properties"][name].clone();
        assert_eq!(
            field("status")["enum"],
            serde_json::json!(["True", "False", "Unknown"])
        );
        assert_eq!(field("lastTransitionTime")["format"], "date-time");
        assert_eq!(field("reason")["pattern"], REASON_PATTERN);
        assert_eq!(
            (
                field("reason")["minLength"].clone(),
                field("reason")["maxLength"].clone()
            ),
            (1.into(), 1024.into())
        );
        assert_eq!(field("message")["maxLength"], 32768);
        assert_eq!(
            (
                field("type")["pattern"].clone(),
                field("type")["maxLength"].clone()
            ),
            (TYPE_PATTERN.into(), 316.into())
        );
        assert_eq!(field("observedGeneration")["minimum"], 0);
    }
}
