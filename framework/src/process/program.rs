//! Names an operator's own objects after the program that runs it.

/// This program's name, as it was started (`configmap_generator`).
#[cfg(any(feature = "cli", feature = "webhooks"))]
pub(crate) fn program() -> String {
    std::env::args_os()
        .next()
        .as_deref()
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_stem)
        .map_or_else(
            || "operator".to_owned(),
            |s| s.to_string_lossy().into_owned(),
        )
}

/// [`program`] as a Kubernetes object name with room for a suffix: lower case, `-` for every
/// character a DNS label refuses (`configmap_generator` → `configmap-generator`), at most 50
/// characters, starting and ending with a letter or digit; `operator` if nothing is left.
#[cfg(any(feature = "cli", feature = "webhooks"))]
pub(crate) fn program_object_name() -> String {
    object_name(&program())
}

#[cfg(any(feature = "cli", feature = "webhooks", test))]
fn object_name(program: &str) -> String {
    let mapped: String = program
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => c,
            _ => '-',
        })
        .take(50)
        .collect();
    let trimmed = mapped.trim_matches('-');
    if trimmed.is_empty() {
        "operator".to_owned()
    } else {
        trimmed.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::object_name;

    #[test]
    fn a_program_name_becomes_a_dns_label_with_room_for_a_suffix() {
        assert_eq!(object_name("configmap_generator"), "configmap-generator");
        assert_eq!(object_name("My.Operator"), "my-operator");
        assert_eq!(object_name("__"), "operator");
        assert_eq!(object_name(&"x".repeat(80)).len(), 50);
        assert_eq!(object_name("_a_"), "a");
    }
}
