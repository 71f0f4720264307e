//! Rewrites the marked regions of a file the tool and its user share: the lines between
//! `// kubeward:scaffold:NAME` and `// kubeward:scaffold:NAME:end` are the tool's, every other
//! line is the user's (kubebuilder's `+kubebuilder:scaffold` markers).

use anyhow::bail;

/// The start of a region's marker line; the region's name follows.
const MARKER: &str = "// kubeward:scaffold:";

/// `existing`, the file `path` of a project, with each region of `fresh` (the file as the tool
/// writes it now) in place of the region of the same name; the lines outside are kept.
///
/// # Errors
/// A marker of a region of `fresh` is missing from `existing`, or is there twice: one line that
/// names the file and the marker.
pub(crate) fn carry(path: &str, fresh: &str, existing: &str) -> anyhow::Result<String> {
    let regions = regions(fresh);
    let mut out = String::with_capacity(existing.len());
    let mut lines = existing.lines();
    let mut done: Vec<&str> = Vec::new();
    while let Some(line) = lines.next() {
        out.push_str(line);
        out.push('\n');
        let Some((name, body)) = regions.iter().find(|(name, _)| is_start(line, name)) else {
            continue;
        };
        if done.contains(name) {
            bail!(
                "{path} has the marker `{MARKER}{name}` twice: cargo kubeward writes between one \
                 `{MARKER}{name}` and one `{MARKER}{name}:end` line; nothing was changed"
            );
        }
        let end = format!("{MARKER}{name}:end");
        if !lines.by_ref().any(|l| l.trim() == end) {
            bail!(
                "{path} has `{MARKER}{name}` but no `{end}` line after it: put the marker back \
                 where the region ends; nothing was changed"
            );
        }
        out.push_str(body);
        let indent = &line[..line.len() - line.trim_start().len()];
        out.push_str(indent);
        out.push_str(&end);
        out.push('\n');
        done.push(*name);
    }
    if let Some((name, _)) = regions.iter().find(|(name, _)| !done.contains(name)) {
        bail!(
            "{path} has no `{MARKER}{name}` line: cargo kubeward writes between it and \
             `{MARKER}{name}:end` (see a new project's {path}); put both back, nothing was changed"
        );
    }
    Ok(out)
}

/// Whether `text` has a marker line of any region.
pub(crate) fn has_markers(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with(MARKER))
}

/// The regions of `text`: each name with the lines between its markers.
fn regions(text: &str) -> Vec<(&str, String)> {
    let mut regions = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line.trim().strip_prefix(MARKER) else {
            continue;
        };
        if name.ends_with(":end") {
            continue;
        }
        let end = format!("{MARKER}{name}:end");
        let mut body = String::new();
        for inner in lines.by_ref().take_while(|l| l.trim() != end) {
            body.push_str(inner);
            body.push('\n');
        }
        regions.push((name, body));
    }
    regions
}

/// Whether `line` opens the region `name`.
fn is_start(line: &str, name: &str) -> bool {
    line.trim()
        .strip_prefix(MARKER)
        .is_some_and(|rest| rest == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRESH: &str = "//! Doc.\n\
        // kubeward:scaffold:modules\n\
        pub mod api;\n\
        pub mod controller;\n\
        // kubeward:scaffold:modules:end\n\
        fn f() {\n    \
            // kubeward:scaffold:calls\n    \
            a();\n    \
            // kubeward:scaffold:calls:end\n\
        }\n";

    #[test]
    fn the_regions_are_rewritten_and_every_other_line_is_kept() -> anyhow::Result<()> {
        let existing = "//! My doc.\nmod util;\n\
            // kubeward:scaffold:modules\n\
            pub mod api;\n\
            // kubeward:scaffold:modules:end\n\
            fn f() {\n    \
                mine();\n    \
                // kubeward:scaffold:calls\n    \
                // kubeward:scaffold:calls:end\n\
            }\n";
        let out = carry("src/lib.rs", FRESH, existing)?;
        assert_eq!(
            out,
            "//! My doc.\nmod util;\n\
            // kubeward:scaffold:modules\n\
            pub mod api;\n\
            pub mod controller;\n\
            // kubeward:scaffold:modules:end\n\
            fn f() {\n    \
                mine();\n    \
                // kubeward:scaffold:calls\n    \
                a();\n    \
                // kubeward:scaffold:calls:end\n\
            }\n"
        );
        assert_eq!(
            carry("src/lib.rs", FRESH, &out)?,
            out,
            "a second run changes nothing"
        );
        Ok(())
    }

    #[test]
    fn a_missing_marker_is_refused_in_one_line_naming_the_file() {
        let existing = FRESH.replace("    // kubeward:scaffold:calls\n", "");
        let error = carry("src/lib.rs", FRESH, &existing)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("src/lib.rs has no `// kubeward:scaffold:calls` line"),
            "{error}"
        );
        assert!(!error.contains('\n'), "{error}");
        let existing = FRESH.replace("// kubeward:scaffold:modules:end\n", "");
        let error = carry("src/lib.rs", FRESH, &existing)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("no `// kubeward:scaffold:modules:end` line"),
            "{error}"
        );
    }
}
