//! The `KUBEWARD` file: what `cargo kubeward` generated in a project, read before each `create`.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, bail};

/// The file's name, at the project's root (like kubebuilder's `PROJECT`).
pub(crate) const FILE: &str = "KUBEWARD";

/// A project made by `cargo kubeward init`, with what its `create` commands added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Project {
    /// The crate's, binary's and chart's name.
    pub(crate) name: String,
    /// The API group of its custom resources.
    pub(crate) group: String,
    /// Its custom resources (`create api`), in the order they were created.
    pub(crate) apis: Vec<Kind>,
    /// Other versions of custom resources (`create api` of a kind the project has), each
    /// converted to its kind's first version, the hub.
    pub(crate) versions: Vec<Kind>,
    /// Controllers of kinds the API server already serves (`create api --resource=false`).
    pub(crate) controllers: Vec<Kind>,
    /// Kinds with admission webhooks (`create webhook`).
    pub(crate) webhooks: Vec<Webhook>,
    /// The version of `cargo kubeward` that made the project or last updated it; none in a
    /// project made before it was recorded.
    pub(crate) kubeward: Option<String>,
    /// The files the tool wrote whole and `update` rewrites, each with the hash of what it wrote
    /// (see [`hash`]): a file whose content has another hash was changed by its user.
    pub(crate) files: Vec<(String, String)>,
}

/// A kind: group, version and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Kind {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) name: String,
}

/// The admission webhooks of a custom resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Webhook {
    pub(crate) kind: String,
    pub(crate) defaulting: bool,
    pub(crate) validation: bool,
    pub(crate) conversion: bool,
}

impl Project {
    /// The crate's name in Rust code.
    pub(crate) fn crate_name(&self) -> String {
        self.name.replace('-', "_")
    }

    /// Whether any kind has webhooks.
    pub(crate) fn has_webhooks(&self) -> bool {
        !self.webhooks.is_empty()
    }

    /// Reads the project at `root`.
    pub(crate) fn read(root: &Path) -> anyhow::Result<Self> {
        let path = root.join(FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
                "{} has no {FILE} file: it is not a project made by `cargo kubeward init`, so \
                 nothing was changed (run `cargo kubeward` from the project's folder)",
                root.display()
            ),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        Self::parse(&text).with_context(|| format!("reading {}", path.display()))
    }

    /// The project a `KUBEWARD` file describes.
    pub(crate) fn parse(text: &str) -> anyhow::Result<Self> {
        let mut project = Self::default();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                bail!("line {}: expected `key = value`, found {line:?}", n + 1);
            };
            let words: Vec<&str> = value.split_whitespace().collect();
            match (key.trim(), words.as_slice()) {
                ("name", [name]) => (*name).clone_into(&mut project.name),
                ("kubeward", [version]) => project.kubeward = Some((*version).to_owned()),
                ("file", [path, hash]) => {
                    project.files.push(((*path).to_owned(), (*hash).to_owned()));
                }
                ("group", [group]) => (*group).clone_into(&mut project.group),
                ("api", [group, version, kind]) => {
                    project.apis.push(Kind::new(group, version, kind));
                }
                ("version", [group, version, kind]) => {
                    project.versions.push(Kind::new(group, version, kind));
                }
                ("controller", [group, version, kind]) => {
                    project.controllers.push(Kind::new(group, version, kind));
                }
                ("webhook", [kind, kinds @ ..]) => project.webhooks.push(Webhook {
                    kind: (*kind).to_owned(),
                    defaulting: kinds.contains(&"defaulting"),
                    validation: kinds.contains(&"validation"),
                    conversion: kinds.contains(&"conversion"),
                }),
                _ => bail!("line {}: unknown entry {line:?}", n + 1),
            }
        }
        if project.name.is_empty() || project.group.is_empty() {
            bail!("`name` and `group` are missing");
        }
        Ok(project)
    }

    /// The `KUBEWARD` file's text.
    pub(crate) fn render(&self) -> String {
        let mut out = String::from(
            "# Written by `cargo kubeward`: what it generated in this project, read by its next\n\
             # `create` commands. (`core` is the API group of Pods, ConfigMaps, ...)\n",
        );
        let _ = writeln!(out, "name = {}\ngroup = {}", self.name, self.group);
        if let Some(version) = &self.kubeward {
            let _ = writeln!(out, "kubeward = {version}");
        }
        for api in &self.apis {
            let _ = writeln!(out, "api = {} {} {}", api.group, api.version, api.name);
        }
        for v in &self.versions {
            let _ = writeln!(out, "version = {} {} {}", v.group, v.version, v.name);
        }
        for c in &self.controllers {
            let _ = writeln!(out, "controller = {} {} {}", c.group, c.version, c.name);
        }
        for w in &self.webhooks {
            let mut line = format!("webhook = {}", w.kind);
            if w.defaulting {
                line.push_str(" defaulting");
            }
            if w.validation {
                line.push_str(" validation");
            }
            if w.conversion {
                line.push_str(" conversion");
            }
            let _ = writeln!(out, "{line}");
        }
        if !self.files.is_empty() {
            out.push_str(
                "# The files `cargo kubeward` wrote whole, with a hash of what it wrote: `cargo\n\
                 # kubeward update` rewrites those you have not changed.\n",
            );
        }
        for (path, hash) in &self.files {
            let _ = writeln!(out, "file = {path} {hash}");
        }
        out
    }

    /// The hash recorded for the file `path`, if any.
    pub(crate) fn recorded(&self, path: &str) -> Option<&str> {
        self.files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, hash)| hash.as_str())
    }
}

/// A hash of a file's `content` that stays the same across builds and Rust versions (64-bit
/// FNV-1a, in hex): enough to tell whether a file was changed, not a defence against tampering.
pub(crate) fn hash(content: &str) -> String {
    let hash = content
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("{hash:016x}")
}

impl Kind {
    fn new(group: &str, version: &str, kind: &str) -> Self {
        Self {
            group: group.to_owned(),
            version: version.to_owned(),
            name: kind.to_owned(),
        }
    }

    /// The Rust module of the kind: `memo`.
    pub(crate) fn module(&self) -> String {
        crate::names::snake(&self.name)
    }

    /// The Rust module of another version of the kind: `memo_v1beta1`.
    pub(crate) fn version_module(&self) -> String {
        format!("{}_{}", self.module(), self.version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_reads_back_what_it_wrote() -> anyhow::Result<()> {
        let project = Project {
            name: "memo-operator".to_owned(),
            group: "example.com".to_owned(),
            apis: vec![Kind::new("example.com", "v1alpha1", "Memo")],
            versions: vec![Kind::new("example.com", "v1beta1", "Memo")],
            controllers: vec![Kind::new("apps", "v1", "Deployment")],
            webhooks: vec![Webhook {
                kind: "Memo".to_owned(),
                defaulting: true,
                validation: false,
                conversion: true,
            }],
            kubeward: Some("0.1.0".to_owned()),
            files: vec![("scripts/ci".to_owned(), hash("#!/usr/bin/env bash\n"))],
        };
        assert_eq!(Project::parse(&project.render())?, project);
        Ok(())
    }

    #[test]
    fn the_hash_of_a_file_is_fnv_1a() {
        // The published test vectors of 64-bit FNV-1a.
        assert_eq!(hash(""), "cbf29ce484222325");
        assert_eq!(hash("a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn an_unknown_entry_is_refused() {
        let error = Project::parse("name = a\ngroup = b.c\nkinds = Memo\n").unwrap_err();
        assert_eq!(error.to_string(), "line 3: unknown entry \"kinds = Memo\"");
    }
}
