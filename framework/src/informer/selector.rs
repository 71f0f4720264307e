//! Checks label and field selectors against the API server's syntax before any request is sent.
//!
//! A bad selector would otherwise surface only as a 400 on every list, retried forever; checking
//! at start turns it into one clear error naming the selector.

use crate::names;

/// Why a selector does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(String);

/// Checks a label selector: comma-separated requirements `key`, `!key`, `key=value`,
/// `key==value`, `key!=value`, `key in (v1,v2)`, `key notin (v1,v2)`, `key>n`, `key<n`, with
/// keys `[prefix/]name` and values as Kubernetes labels allow them.
pub(crate) fn check_labels(selector: &str) -> Result<(), SelectorError> {
    if selector.trim().is_empty() {
        return Ok(());
    }
    for requirement in split_outside_parentheses(selector)? {
        check_requirement(requirement.trim())?;
    }
    Ok(())
}

/// Whether `labels` satisfy the label selector (checked as [`check_labels`] does), as the API
/// server would select them: every requirement holds.
pub(crate) fn labels_match(
    selector: &str,
    labels: &std::collections::BTreeMap<String, String>,
) -> Result<bool, SelectorError> {
    check_labels(selector)?;
    if selector.trim().is_empty() {
        return Ok(true);
    }
    Ok(split_outside_parentheses(selector)?
        .into_iter()
        .all(|requirement| holds(requirement.trim(), labels)))
}

/// Whether one checked requirement holds for `labels`.
fn holds(requirement: &str, labels: &std::collections::BTreeMap<String, String>) -> bool {
    if let Some(key) = requirement.strip_prefix('!') {
        return !labels.contains_key(key.trim());
    }
    for op in ["!=", "==", "=", ">", "<"] {
        if let Some((key, value)) = requirement.split_once(op) {
            let (have, value) = (labels.get(key.trim()), value.trim());
            let number = |v: &str| v.parse::<i64>().ok();
            return match op {
                "!=" => have.is_none_or(|h| h != value),
                ">" => have.and_then(|h| number(h)) > number(value),
                "<" => have
                    .and_then(|h| number(h))
                    .zip(number(value))
                    .is_some_and(|(h, v)| h < v),
                _ => have.is_some_and(|h| h == value),
            };
        }
    }
    let mut words = requirement.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default();
    let rest = words.next().unwrap_or_default().trim_start();
    let have = labels.get(key);
    let Some((notin, set)) = (rest.strip_prefix("notin").map(|s| (true, s)))
        .or_else(|| rest.strip_prefix("in").map(|s| (false, s)))
    else {
        return have.is_some();
    };
    let values = set.trim().trim_start_matches('(').trim_end_matches(')');
    let listed = have.is_some_and(|h| values.split(',').any(|v| v.trim() == h));
    if notin { !listed } else { listed }
}

/// Checks a field selector: comma-separated `field=value`, `field==value` or `field!=value`
/// (a `\` escapes `,`, `=` and `!` in values).
pub(crate) fn check_fields(selector: &str) -> Result<(), SelectorError> {
    if selector.trim().is_empty() {
        return Ok(());
    }
    for term in split_unescaped(selector) {
        let term = term.trim();
        if term.is_empty() {
            return Err(fail("an empty requirement (a stray comma?)"));
        }
        let (field, value) = ["!=", "==", "="]
            .iter()
            .find_map(|op| split_unescaped_at(term, op))
            .ok_or_else(|| fail(format!("{term:?} has no operator (=, == or !=)")))?;
        if field.trim().is_empty() {
            return Err(fail(format!("{term:?} names no field")));
        }
        if ["=", "!"]
            .iter()
            .any(|op| split_unescaped_at(value, op).is_some())
        {
            return Err(fail(format!("{term:?} has more than one operator")));
        }
    }
    Ok(())
}

fn fail(reason: impl Into<String>) -> SelectorError {
    SelectorError(reason.into())
}

/// One label requirement, e.g. `tier in (web,api)`.
fn check_requirement(requirement: &str) -> Result<(), SelectorError> {
    if requirement.is_empty() {
        return Err(fail("an empty requirement (a stray comma?)"));
    }
    if let Some(key) = requirement.strip_prefix('!') {
        return check_key(key.trim());
    }
    for op in ["!=", "==", "=", ">", "<"] {
        if let Some((key, value)) = requirement.split_once(op) {
            check_key(key.trim())?;
            let value = value.trim();
            if op == ">" || op == "<" {
                return value.parse::<i64>().map(drop).map_err(|_| {
                    fail(format!(
                        "{requirement:?}: {op} needs an integer, not {value:?}"
                    ))
                });
            }
            return check_value(value);
        }
    }
    let mut words = requirement.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default();
    let rest = words.next().unwrap_or_default().trim_start();
    if rest.is_empty() {
        return check_key(key);
    }
    check_key(key)?;
    let set = ["notin", "in"]
        .iter()
        .find_map(|op| rest.strip_prefix(op))
        .ok_or_else(|| {
            fail(format!(
                "{requirement:?}: expected =, ==, !=, in, notin, > or < after {key:?}"
            ))
        })?;
    let values = set
        .trim()
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| {
            fail(format!(
                "{requirement:?}: the values must be in parentheses"
            ))
        })?;
    if values.trim().is_empty() {
        return Err(fail(format!("{requirement:?}: the set of values is empty")));
    }
    values.split(',').try_for_each(|v| check_value(v.trim()))
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name.
fn check_key(key: &str) -> Result<(), SelectorError> {
    names::qualified_name(key).map_err(|why| fail(format!("key {key:?}: {why}")))
}

/// A label value: empty, or a name.
fn check_value(value: &str) -> Result<(), SelectorError> {
    names::label_value(value).map_err(|why| fail(format!("value {value:?}: {why}")))
}

/// Splits at commas outside parentheses; unbalanced parentheses are an error.
fn split_outside_parentheses(selector: &str) -> Result<Vec<&str>, SelectorError> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0_u32, 0);
    for (i, c) in selector.char_indices() {
        match c {
            '(' if depth == 0 => depth = 1,
            '(' => return Err(fail("nested parentheses")),
            ')' if depth == 1 => depth = 0,
            ')' => return Err(fail("a ')' without its '('")),
            ',' if depth == 0 => {
                parts.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth > 0 {
        return Err(fail("a '(' without its ')'"));
    }
    parts.push(&selector[start..]);
    Ok(parts)
}

/// Splits at commas not preceded by `\`.
fn split_unescaped(selector: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut escaped, mut start) = (false, 0);
    for (i, c) in selector.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            ',' if !escaped => {
                parts.push(&selector[start..i]);
                start = i + 1;
            }
            _ => escaped = false,
        }
    }
    parts.push(&selector[start..]);
    parts
}

/// Splits `term` at the first `op` not preceded by `\`.
fn split_unescaped_at<'a>(term: &'a str, op: &str) -> Option<(&'a str, &'a str)> {
    let mut escaped = false;
    for (i, c) in term.char_indices() {
        if !escaped && term[i..].starts_with(op) {
            return Some((&term[..i], &term[i + op.len()..]));
        }
        escaped = c == '\\' && !escaped;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_match_each_form_of_requirement_as_the_api_server_selects() {
        let labels: std::collections::BTreeMap<String, String> =
            [("app", "web"), ("tier", "front"), ("n", "3")]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
        let matches = |s: &str| labels_match(s, &labels).expect("a valid selector");
        for yes in [
            "",
            "app",
            "!db",
            "app=web",
            "app==web",
            "app!=api",
            "db!=x",
            "tier in (front,back)",
            "tier notin (back)",
            "db notin (x)",
            "n>2",
            "n<4",
            "app=web,tier=front",
        ] {
            assert!(matches(yes), "{yes}");
        }
        for no in [
            "db",
            "!app",
            "app=api",
            "app!=web",
            "tier in (back)",
            "tier notin (front)",
            "db in (x)",
            "n>3",
            "n<3",
            "x>1",
            "app=web,tier=back",
        ] {
            assert!(!matches(no), "{no}");
        }
        assert!(labels_match("app in (", &labels).is_err());
    }

    #[test]
    fn label_selectors_of_every_form_parse() {
        for selector in [
            "",
            "app",
            "!app",
            "app=web",
            "app==web",
            "app!=web",
            "tier in (web, api),!canary,env notin (dev)",
            "example.com/team=shop",
            "app=",
            "replicas>2,replicas<10",
            "a=b,c!=d,e in (x,y),!f",
        ] {
            assert_eq!(check_labels(selector), Ok(()), "{selector:?}");
        }
    }

    #[test]
    fn bad_label_selectors_say_what_is_wrong() {
        for (selector, reason) in [
            ("app=we b", "a label value is"),
            ("tier in (web", "without its ')'"),
            ("tier in web", "parentheses"),
            ("tier in ()", "empty"),
            ("tier within (a)", "expected"),
            ("-app=web", "starting and ending"),
            ("Bad_Prefix/app=web", "DNS subdomain"),
            ("a/b/c=web", "one `/`"),
            ("app=web,", "stray comma"),
            ("replicas>two", "integer"),
        ] {
            let error = check_labels(selector).expect_err(selector).to_string();
            assert!(error.contains(reason), "{selector:?}: {error}");
        }
    }

    #[test]
    fn field_selectors_take_equality_and_escapes_and_refuse_the_rest() {
        for selector in [
            "metadata.name=web",
            "status.phase!=Running,spec.nodeName==node-1",
            r"metadata.name=a\,b",
        ] {
            assert_eq!(check_fields(selector), Ok(()), "{selector:?}");
        }
        for (selector, reason) in [
            ("metadata.name", "no operator"),
            ("=web", "names no field"),
            ("metadata.name=a=b", "more than one operator"),
            ("metadata.name in (a)", "no operator"),
            ("a=b,,c=d", "stray comma"),
        ] {
            let error = check_fields(selector).expect_err(selector).to_string();
            assert!(error.contains(reason), "{selector:?}: {error}");
        }
    }
}
