//! Names the reporting instance: the pod the operator runs in, or else the host.

/// The longest `reportingInstance` Kubernetes accepts.
pub(crate) const MAX_INSTANCE: usize = 128;

/// This process's reporting instance: `POD_NAME` (set by the chart through the downward API),
/// else the host name (`/proc/sys/kernel/hostname`, then `HOSTNAME`), else `unknown`.
pub(crate) fn current() -> String {
    choose(&[
        std::env::var("POD_NAME").ok(),
        std::fs::read_to_string("/proc/sys/kernel/hostname").ok(),
        std::env::var("HOSTNAME").ok(),
    ])
}

/// The first candidate that is not blank, trimmed and cut to [`MAX_INSTANCE`] characters.
pub(crate) fn choose(candidates: &[Option<String>; 3]) -> String {
    let chosen = candidates
        .iter()
        .flatten()
        .map(|c| c.trim())
        .find(|c| !c.is_empty())
        .unwrap_or("unknown");
    clamp(chosen, MAX_INSTANCE)
}

/// `text` cut to at most `max` bytes, at a character boundary.
pub(crate) fn clamp(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pod_name_wins_over_the_host_name() {
        let chosen = choose(&[
            Some("operator-7d9f-x2x".into()),
            Some("node-1\n".into()),
            Some("node-1".into()),
        ]);
        assert_eq!(chosen, "operator-7d9f-x2x");
    }

    #[test]
    fn without_a_pod_name_the_host_name_is_used_without_its_newline() {
        assert_eq!(choose(&[None, Some("node-1\n".into()), None]), "node-1");
        assert_eq!(choose(&[Some(" ".into()), None, Some("box".into())]), "box");
        assert_eq!(choose(&[None, None, None]), "unknown");
    }

    #[test]
    fn a_long_instance_is_cut_at_a_character_boundary() {
        let long = "é".repeat(100);
        let chosen = choose(&[Some(long), None, None]);
        assert_eq!(chosen.len(), MAX_INSTANCE);
        assert_eq!(clamp("abc", 2), "ab");
        assert_eq!(clamp("aé", 2), "a");
    }
}
