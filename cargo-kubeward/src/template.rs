//! Renders the templates kept in `templates/`: `@@name@@` placeholders replaced by values.
//!
//! Plain replacement, not a template engine: the chart's own templates are full of Helm's
//! `{{ }}`, and the Rust ones need no loops (the files that list kinds are written in code, see
//! `registry`).

/// `template` with each `@@key@@` replaced by its value.
///
/// # Panics
/// If a placeholder is left: every template names only the values its caller passes (a broken
/// invariant of the templates, caught by the unit tests).
pub(crate) fn render(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = template.to_owned();
    for (key, value) in values {
        out = out.replace(&format!("@@{key}@@"), value);
    }
    if let Some(at) = out.find("@@") {
        let rest = &out[at..];
        let end = rest.char_indices().nth(40).map_or(rest.len(), |(i, _)| i);
        panic!("a template placeholder has no value: {}", &rest[..end]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_replaced_and_helm_braces_are_left_alone() {
        let out = render(
            "{{ .Values.x }} @@name@@-@@name@@ @@group@@",
            &[("name", "a"), ("group", "g")],
        );
        assert_eq!(out, "{{ .Values.x }} a-a g");
    }

    #[test]
    #[should_panic(expected = "a template placeholder has no value: @@kind@@")]
    fn a_placeholder_without_a_value_is_a_broken_template() {
        render("@@kind@@", &[]);
    }
}
