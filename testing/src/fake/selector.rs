//! Parses and matches label and field selectors.

use std::collections::BTreeSet;

use serde_json::Value;

use super::status::Failure;

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A field selector requirement: the field, the value and whether it must equal it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FieldRequirement {
    field: String,
    value: String,
    equal: bool,
}

/// The label and field selectors of a list or watch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Selector {
    labels: Vec<Requirement>,
    fields: Vec<FieldRequirement>,
}

impl Selector {
    /// Parses the `labelSelector` and `fieldSelector` query parameters.
    pub(crate) fn parse(labels: Option<&str>, fields: Option<&str>) -> Result<Self, Failure> {
        let labels = match labels {
            Some(text) => split_top_level(text)
                .into_iter()
                .filter(|part| !part.trim().is_empty())
                .map(|part| parse_requirement(part.trim()))
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let fields = match fields {
            Some(text) => text
                .split(',')
                .filter(|part| !part.trim().is_empty())
                .map(|part| parse_field(part.trim()))
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        Ok(Self { labels, fields })
    }

    /// Whether there are no requirements at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    /// Whether the object satisfies every requirement.
    pub(crate) fn matches(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        let label = |key: &str| labels.get(key).and_then(Value::as_str);
        let labels_match = self.labels.iter().all(|requirement| match requirement {
            Requirement::Equals(key, value) => label(key) == Some(value.as_str()),
            Requirement::NotEquals(key, value) => label(key) != Some(value.as_str()),
            Requirement::In(key, values) => label(key).is_some_and(|v| values.contains(v)),
            Requirement::NotIn(key, values) => !label(key).is_some_and(|v| values.contains(v)),
            Requirement::Exists(key) => label(key).is_some(),
            Requirement::DoesNotExist(key) => label(key).is_none(),
        });
        labels_match
            && self.fields.iter().all(|requirement| {
                let actual = match requirement.field.as_str() {
                    "metadata.name" => object["metadata"]["name"].as_str(),
                    _ => object["metadata"]["namespace"].as_str(),
                };
                (actual.unwrap_or_default() == requirement.value) == requirement.equal
            })
    }
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0_i32, 0);
    for (index, character) in text.char_indices() {
        match character {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn invalid(text: &str) -> Failure {
    Failure::bad_request(format!("unable to parse requirement: \"{text}\""))
}

fn parse_requirement(text: &str) -> Result<Requirement, Failure> {
    if let Some(key) = text.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(label_key(key.trim(), text)?));
    }
    if let Some((key, value)) = text.split_once("!=") {
        return Ok(Requirement::NotEquals(
            label_key(key.trim(), text)?,
            label_value(value.trim(), text)?,
        ));
    }
    if let Some((key, value)) = text.split_once("==").or_else(|| text.split_once('=')) {
        return Ok(Requirement::Equals(
            label_key(key.trim(), text)?,
            label_value(value.trim(), text)?,
        ));
    }
    let words: Vec<&str> = text.splitn(2, char::is_whitespace).collect();
    match words.as_slice() {
        [key] => Ok(Requirement::Exists(label_key(key, text)?)),
        [key, rest] => {
            let rest = rest.trim();
            let (negated, set) = if let Some(set) = rest.strip_prefix("notin") {
                (true, set)
            } else if let Some(set) = rest.strip_prefix("in") {
                (false, set)
            } else {
                return Err(invalid(text));
            };
            let set = set
                .trim()
                .strip_prefix('(')
                .and_then(|set| set.strip_suffix(')'))
                .ok_or_else(|| invalid(text))?;
            let values = set
                .split(',')
                .map(|value| label_value(value.trim(), text))
                .collect::<Result<_, _>>()?;
            let key = label_key(key, text)?;
            Ok(if negated {
                Requirement::NotIn(key, values)
            } else {
                Requirement::In(key, values)
            })
        }
        _ => Err(invalid(text)),
    }
}

/// `key` if it is a label key (a qualified name), as the real server's selector parser checks it.
fn label_key(key: &str, text: &str) -> Result<String, Failure> {
    match kubeward_core::names::qualified_name(key) {
        Ok(()) => Ok(key.to_owned()),
        Err(_) => Err(invalid(text)),
    }
}

/// `value` if it is a label value, as the real server's selector parser checks it.
fn label_value(value: &str, text: &str) -> Result<String, Failure> {
    match kubeward_core::names::label_value(value) {
        Ok(()) => Ok(value.to_owned()),
        Err(_) => Err(invalid(text)),
    }
}

fn parse_field(text: &str) -> Result<FieldRequirement, Failure> {
    let (field, value, equal) = if let Some((field, value)) = text.split_once("!=") {
        (field, value, false)
    } else if let Some((field, value)) = text.split_once("==").or_else(|| text.split_once('=')) {
        (field, value, true)
    } else {
        return Err(Failure::bad_request(format!(
            "invalid selector: '{text}'; can't understand '{text}'"
        )));
    };
    let field = field.trim();
    if field != "metadata.name" && field != "metadata.namespace" {
        return Err(Failure::bad_request(format!(
            "field label not supported: {field}"
        )));
    }
    Ok(FieldRequirement {
        field: field.to_owned(),
        value: value.trim().to_owned(),
        equal,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(labels: &Value) -> Value {
        json!({ "metadata": { "name": "a", "namespace": "ns", "labels": labels } })
    }

    fn matches(labels: &str, object: &Value) -> bool {
        Selector::parse(Some(labels), None).unwrap().matches(object)
    }

    #[test]
    fn every_label_operator_matches_like_the_real_server() {
        let tier_web = object(&json!({ "tier": "web", "env": "prod" }));
        let unlabelled = object(&json!({}));
        assert!(matches("tier=web", &tier_web));
        assert!(matches("tier==web", &tier_web));
        assert!(!matches("tier!=web", &tier_web));
        assert!(matches("tier!=web", &unlabelled));
        assert!(matches("tier in (db, web)", &tier_web));
        assert!(!matches("tier in (db)", &unlabelled));
        assert!(!matches("tier notin (db,web)", &tier_web));
        assert!(matches("tier notin (db,web)", &unlabelled));
        assert!(matches("tier", &tier_web));
        assert!(matches("!tier", &unlabelled));
        assert!(matches("tier in (web),env=prod", &tier_web));
        assert!(!matches("tier in (web),env=dev", &tier_web));
    }

    #[test]
    fn field_selectors_support_name_and_namespace_only() {
        let selector = Selector::parse(None, Some("metadata.name=a,metadata.namespace!=other"));
        assert!(selector.unwrap().matches(&object(&json!({}))));
        let unsupported = Selector::parse(None, Some("spec.nodeName=x")).unwrap_err();
        assert_eq!(unsupported.code, http::StatusCode::BAD_REQUEST);
    }

    #[test]
    fn a_malformed_label_selector_is_a_bad_request() {
        let failure = Selector::parse(Some("tier in web"), None).unwrap_err();
        assert_eq!(failure.code, http::StatusCode::BAD_REQUEST);
    }

    #[test]
    fn keys_and_values_the_real_server_refuses_are_bad_requests() {
        for selector in [
            "a/b/c=x",
            "-x",
            "!-x",
            "Example.com/x=y",
            "/x",
            "x=-y",
            "x!=a b",
            "x in (ok,-y)",
        ] {
            let failure = Selector::parse(Some(selector), None).expect_err(selector);
            assert_eq!(failure.code, http::StatusCode::BAD_REQUEST, "{selector}");
        }
        for selector in ["example.com/x=y", "x=", "x in (a,)", "X_1.y"] {
            assert!(Selector::parse(Some(selector), None).is_ok(), "{selector}");
        }
    }
}
