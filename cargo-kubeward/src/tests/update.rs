//! `update` of a project made by an earlier template: what it rewrites, what it keeps and says.

use std::path::Path;

use super::{cargo_kubeward, project, snapshot};
use crate::project::{Project, hash};

/// Copies the folder `from` into `to`.
fn copy(from: &Path, to: &Path) -> anyhow::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let path = entry?.path();
        let target = to.join(path.file_name().unwrap_or_default());
        if path.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy(&path, &target)?;
        } else {
            std::fs::copy(&path, &target)?;
        }
    }
    Ok(())
}

/// `previous_template/` is what `cargo kubeward` 0.1.0 wrote before markers and recorded
/// hashes (`init memo-operator --group example.com`, `create api --version v1alpha1 --kind
/// Memo`, `create webhook --kind Memo --defaulting --validation`), less its chart and
/// `Cargo.toml`, which update does not need to find.
#[test]
fn update_brings_a_project_of_the_previous_template_to_this_one() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("memo-operator");
    std::fs::create_dir(&root)?;
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tests/previous_template");
    copy(&data, &root)?;
    let before = snapshot(&root);

    let printed = cargo_kubeward(&root, "update --dry-run")?;
    assert_eq!(snapshot(&root), before, "a dry run writes nothing");
    assert!(
        printed.contains("--- would create scripts/run\n"),
        "{printed}"
    );
    assert!(
        printed.contains("--- would replace src/lib.rs\n"),
        "{printed}"
    );
    assert!(
        printed.contains("--- would keep scripts/ci: differs from this version's, and the project does not record"),
        "{printed}"
    );

    let printed = cargo_kubeward(&root, "update")?;
    let files = snapshot(&root);
    assert!(printed.contains(" created scripts/run\n"), "{printed}");
    assert!(
        printed.contains("    kept scripts/ci: differs"),
        "{printed}"
    );
    assert!(
        printed.contains(" created charts/memo-operator/Chart.yaml\n"),
        "{printed}"
    );
    assert_eq!(files["scripts/ci"], before["scripts/ci"], "kept");
    assert_eq!(
        files["src/main.rs"], before["src/main.rs"],
        "unchanged template"
    );
    for mine in [
        "src/api/memo.rs",
        "src/controller/memo.rs",
        "tests/integration/memo.rs",
    ] {
        assert_eq!(files[mine], before[mine], "the user's {mine}");
    }
    let lib = &files["src/lib.rs"];
    assert!(lib.contains("// kubeward:scaffold:register\n"), "{lib}");
    assert!(lib.contains("webhook::memo::MemoValidator"), "{lib}");
    assert!(files["tests/integration/main.rs"].contains("// kubeward:scaffold:tests\nmod memo;\n"));

    let project = Project::parse(&files["KUBEWARD"])?;
    assert_eq!(project.kubeward.as_deref(), Some(env!("CARGO_PKG_VERSION")));
    assert_eq!(project.webhooks.len(), 1, "the kinds and webhooks are kept");
    assert_eq!(
        project.recorded("scripts/run"),
        Some(hash(&files["scripts/run"]).as_str())
    );
    assert_eq!(
        project.recorded("src/main.rs"),
        Some(hash(&files["src/main.rs"]).as_str())
    );
    assert_eq!(
        project.recorded("scripts/ci"),
        None,
        "what 0.1.0 wrote is not known"
    );

    // Taking this version's scripts/ci: delete it, update again.
    std::fs::remove_file(root.join("scripts/ci"))?;
    cargo_kubeward(&root, "update")?;
    let files = snapshot(&root);
    assert!(
        files["scripts/ci"].contains("kubeward/bin"),
        "this version's scripts/ci"
    );
    let printed = cargo_kubeward(&root, "update")?;
    let written: Vec<&str> = printed
        .lines()
        .filter(|l| l.starts_with(" updated ") || l.starts_with(" created "))
        .collect();
    assert!(written.is_empty(), "up to date: {printed}");
    assert!(printed.contains("nothing to update"), "{printed}");
    assert_eq!(snapshot(&root), files);
    Ok(())
}

/// A project made by a template whose `scripts/ci` and `README.md` differ from this version's:
/// the user changed the README, not scripts/ci, and added a module to `src/lib.rs`.
#[test]
fn update_rewrites_what_the_user_left_and_keeps_what_they_changed() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    cargo_kubeward(&root, "create api --version v1alpha1 --kind Memo")?;
    // The previous template's scripts/ci and README.md, recorded as what it wrote.
    let old_ci = "#!/usr/bin/env bash\ncargo test\n";
    let old_readme = "# memo-operator\n";
    std::fs::write(root.join("scripts/ci"), old_ci)?;
    let mut project = Project::read(&root)?;
    for (path, hash) in &mut project.files {
        match path.as_str() {
            "scripts/ci" => *hash = crate::project::hash(old_ci),
            "README.md" => *hash = crate::project::hash(old_readme),
            _ => {}
        }
    }
    project.kubeward = Some("0.0.9".to_owned());
    std::fs::write(root.join("KUBEWARD"), project.render())?;
    let mine = "# memo-operator\n\nMy operator.\n";
    std::fs::write(root.join("README.md"), mine)?;
    let lib = std::fs::read_to_string(root.join("src/lib.rs"))?;
    let lib = lib.replace(
        "use kubeward::manager::Manager;\n",
        "use kubeward::manager::Manager;\n\nmod util;\n",
    );
    std::fs::write(root.join("src/lib.rs"), &lib)?;

    let printed = cargo_kubeward(&root, "update")?;
    let files = snapshot(&root);
    assert!(printed.contains(" updated scripts/ci\n"), "{printed}");
    assert!(
        printed.contains("    kept README.md: changed since cargo kubeward wrote it"),
        "{printed}"
    );
    assert!(
        !printed.contains("src/lib.rs"),
        "nothing to change in its regions: {printed}"
    );
    assert!(
        files["scripts/ci"].contains("kubeward/bin"),
        "this version's scripts/ci"
    );
    assert_eq!(files["README.md"], mine);
    assert_eq!(files["src/lib.rs"], lib);
    let project = Project::parse(&files["KUBEWARD"])?;
    assert_eq!(project.kubeward.as_deref(), Some(env!("CARGO_PKG_VERSION")));
    assert_eq!(
        project.recorded("scripts/ci"),
        Some(hash(&files["scripts/ci"]).as_str())
    );
    assert_eq!(
        project.recorded("README.md"),
        Some(hash(old_readme).as_str())
    );
    Ok(())
}
