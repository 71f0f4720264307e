//! The commands on a temporary folder: what they write, what they refuse, and that a refusal
//! or a dry run writes nothing.

use std::collections::BTreeMap;
use std::path::Path;

use super::run;

mod first_hour;
mod init;
mod update;

/// Runs `cargo kubeward ARGS` in `cwd`; its output.
fn cargo_kubeward(cwd: &Path, args: &str) -> anyhow::Result<String> {
    let mut out = Vec::new();
    let args = ["cargo-kubeward", "kubeward"]
        .into_iter()
        .chain(args.split_whitespace())
        .map(Into::into);
    run(args, cwd, &mut out)?;
    Ok(String::from_utf8(out)?)
}

/// Every file under `root` with its content.
fn snapshot(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, files: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, files);
            } else {
                let name = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .display()
                    .to_string();
                files.insert(name, std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(root, root, &mut files);
    files
}

fn project(dir: &Path) -> anyhow::Result<std::path::PathBuf> {
    cargo_kubeward(dir, "init memo-operator --group example.com")?;
    Ok(dir.join("memo-operator"))
}

#[test]
fn init_makes_the_project_and_every_file_is_rendered() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    let files = snapshot(&root);
    for file in [
        "KUBEWARD",
        "Cargo.toml",
        "README.md",
        "Dockerfile",
        "scripts/ci",
        "src/main.rs",
        "src/lib.rs",
        "tests/integration/main.rs",
        "examples/control_plane.rs",
        "charts/memo-operator/Chart.yaml",
        "charts/memo-operator/values.yaml",
        "charts/memo-operator/templates/deployment.yaml",
    ] {
        assert!(
            files.contains_key(file),
            "init wrote no {file}: {:?}",
            files.keys()
        );
    }
    assert!(
        files["Cargo.toml"].contains(&format!("kubeward = \"{}\"", env!("CARGO_PKG_VERSION"))),
        "released kubeward, of the tool's version, by default"
    );
    assert!(files["src/main.rs"].contains("memo_operator::register(&manager)?;"));
    assert!(files.values().all(|f| !f.contains("@@")));
    Ok(())
}

#[test]
fn a_second_init_is_refused_and_changes_nothing() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    let before = snapshot(&root);
    let error = cargo_kubeward(dir.path(), "init memo-operator --group other.io").unwrap_err();
    assert!(error.to_string().contains("not an empty folder"), "{error}");
    assert_eq!(snapshot(&root), before);
    Ok(())
}

#[test]
fn create_api_registers_the_kind_without_touching_main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    let main = std::fs::read_to_string(root.join("src/main.rs"))?;
    cargo_kubeward(&root, "create api --version v1alpha1 --kind Memo")?;
    cargo_kubeward(&root, "create api --version v1 --kind Note")?;
    let files = snapshot(&root);
    assert_eq!(files["src/main.rs"], main);
    let lib = &files["src/lib.rs"];
    for registered in [
        "Memo::controller(",
        "MemoReconciler",
        "Note::controller(",
        "NoteReconciler",
    ] {
        assert!(
            lib.contains(registered),
            "src/lib.rs registers no {registered}:\n{lib}"
        );
    }
    assert!(files.contains_key("config/samples/example.com_v1alpha1_memo.yaml"));
    assert!(files["tests/integration/main.rs"].contains("mod memo;\nmod note;\n"));
    assert!(
        files["KUBEWARD"].contains("api = example.com v1alpha1 Memo\napi = example.com v1 Note\n")
    );
    Ok(())
}

#[test]
fn create_keeps_the_lines_the_user_added_outside_the_marked_regions() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    cargo_kubeward(&root, "create api --version v1alpha1 --kind Memo")?;
    let lib = std::fs::read_to_string(root.join("src/lib.rs"))?;
    let mine = lib.replace(
        "use kubeward::manager::Manager;\n",
        "use kubeward::manager::Manager;\n\nmod util;\n",
    );
    std::fs::write(root.join("src/lib.rs"), &mine)?;
    let tests = std::fs::read_to_string(root.join("tests/integration/main.rs"))?;
    std::fs::write(
        root.join("tests/integration/main.rs"),
        format!("{tests}\nmod upgrade;\n"),
    )?;

    cargo_kubeward(&root, "create api --version v1 --kind Note")?;
    cargo_kubeward(&root, "create webhook --kind Memo --validation")?;
    let files = snapshot(&root);
    let lib = &files["src/lib.rs"];
    assert!(lib.contains("\nmod util;\n"), "{lib}");
    assert!(
        lib.contains("pub mod note;") && lib.contains("NoteReconciler"),
        "{lib}"
    );
    assert!(lib.contains("webhook::memo::MemoValidator"), "{lib}");
    let tests = &files["tests/integration/main.rs"];
    assert!(tests.contains("mod memo;\nmod note;\n"), "{tests}");
    assert!(tests.ends_with("\nmod upgrade;\n"), "{tests}");
    Ok(())
}

#[test]
fn a_missing_marker_is_refused_in_one_line_naming_the_file() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    let lib = std::fs::read_to_string(root.join("src/lib.rs"))?;
    let lib = lib.replace("    // kubeward:scaffold:register\n", "");
    std::fs::write(root.join("src/lib.rs"), lib)?;
    let before = snapshot(&root);
    let error = cargo_kubeward(&root, "create api --version v1alpha1 --kind Memo").unwrap_err();
    let line = format!("{error:#}");
    assert!(
        line.starts_with("src/lib.rs has no `// kubeward:scaffold:register` line"),
        "{line}"
    );
    assert!(!line.contains('\n'), "one line: {line}");
    assert_eq!(snapshot(&root), before, "nothing was changed");
    Ok(())
}

#[test]
fn creating_a_kind_twice_is_refused_and_changes_nothing() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    cargo_kubeward(&root, "create api --version v1alpha1 --kind Memo")?;
    let before = snapshot(&root);
    let error = cargo_kubeward(&root, "create api --version v1alpha1 --kind Memo").unwrap_err();
    assert!(
        error
            .to_string()
            .contains("has Memo example.com/v1alpha1 already"),
        "{error}"
    );
    let error = cargo_kubeward(&root, "create webhook --kind Note --validation").unwrap_err();
    assert!(
        error.to_string().contains("no custom resource Note"),
        "{error}"
    );
    cargo_kubeward(&root, "create webhook --kind Memo --validation")?;
    let after_webhook = snapshot(&root);
    let error = cargo_kubeward(&root, "create webhook --kind Memo --defaulting").unwrap_err();
    assert!(
        error.to_string().contains("has admission webhooks already"),
        "{error}"
    );
    assert_eq!(snapshot(&root), after_webhook);
    assert_ne!(after_webhook, before);
    Ok(())
}

#[test]
fn create_outside_a_project_is_refused() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"other\"\n",
    )?;
    let error = cargo_kubeward(dir.path(), "create api --version v1 --kind Memo").unwrap_err();
    assert!(
        error
            .to_string()
            .contains("not a project made by `cargo kubeward init`"),
        "{error}"
    );
    assert_eq!(snapshot(dir.path()).len(), 1);
    Ok(())
}

#[test]
fn a_dry_run_prints_the_files_and_writes_nothing() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let printed = cargo_kubeward(
        dir.path(),
        "init memo-operator --group example.com --dry-run",
    )?;
    assert!(printed.contains("--- would create src/main.rs\n"));
    assert!(printed.ends_with("--- dry run: nothing was written\n"));
    assert!(snapshot(dir.path()).is_empty());

    let root = project(dir.path())?;
    let before = snapshot(&root);
    let printed = cargo_kubeward(&root, "create api --version v1alpha1 --kind Memo --dry-run")?;
    assert!(printed.contains("--- would create src/api/memo.rs\n"));
    assert!(printed.contains("--- would replace src/lib.rs\n"));
    assert_eq!(snapshot(&root), before);
    Ok(())
}

#[test]
fn create_webhook_turns_on_the_feature_and_the_chart_values() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    cargo_kubeward(&root, "create api --version v1alpha1 --kind Memo")?;
    cargo_kubeward(
        &root,
        "create webhook --kind Memo --defaulting --validation",
    )?;
    let files = snapshot(&root);
    assert!(files["Cargo.toml"].contains(&format!(
        "kubeward = {{ version = \"{}\", features = [\"webhooks\"] }}",
        env!("CARGO_PKG_VERSION")
    )));
    assert!(files["charts/memo-operator/values.yaml"].contains("webhooks:\n  # -- Serve"));
    assert!(
        files["charts/memo-operator/values.yaml"]
            .contains("\n  enabled: true\n  # -- Container port of the webhook server.")
    );
    let lib = &files["src/lib.rs"];
    assert!(
        lib.contains("manager.add_validator::<api::memo::Memo>(webhook::memo::MemoValidator)?;")
    );
    assert!(
        lib.contains("manager.add_defaulter::<api::memo::Memo>(webhook::memo::MemoDefaulter)?;")
    );
    assert!(files["tests/integration/main.rs"].contains("\"--webhook-port\", \"0\""));
    let error = cargo_kubeward(&root, "create webhook --kind Memo --conversion").unwrap_err();
    assert!(error.to_string().contains("nothing to convert"), "{error}");
    Ok(())
}

#[test]
fn a_second_version_is_converted_to_the_first_by_the_conversion_webhook() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    cargo_kubeward(&root, "create api --version v1alpha1 --kind Memo")?;
    let before = snapshot(&root);
    let error = cargo_kubeward(&root, "create webhook --kind Memo --conversion").unwrap_err();
    assert!(error.to_string().contains("nothing to convert"), "{error}");
    assert_eq!(snapshot(&root), before);

    cargo_kubeward(&root, "create api --version v1beta1 --kind Memo")?;
    let files = snapshot(&root);
    assert!(files["src/api/memo.rs"].contains(
        "#[controller(versions(crate::api::memo_v1beta1::Memo))]\npub struct MemoSpec {"
    ));
    assert!(files["src/api/memo_v1beta1.rs"].contains("impl Convertible<hub::Memo> for Memo {"));
    assert!(files["src/lib.rs"].contains("pub mod memo_v1beta1;"));
    assert!(files["KUBEWARD"].contains("version = example.com v1beta1 Memo\n"));
    let error = cargo_kubeward(&root, "create api --version v1 --kind Memo").unwrap_err();
    assert!(
        error.to_string().contains("has a second version already"),
        "{error}"
    );

    cargo_kubeward(&root, "create webhook --kind Memo --conversion")?;
    let error = cargo_kubeward(&root, "create webhook --kind Memo --conversion").unwrap_err();
    assert!(
        error.to_string().contains("conversion webhook already"),
        "{error}"
    );
    let files = snapshot(&root);
    assert!(files["src/lib.rs"].contains("manager.add_conversion(api::memo::Memo::converter())?;"));
    assert!(
        !files.contains_key("src/webhook/memo.rs"),
        "no admission webhook was asked for"
    );
    assert!(files["Cargo.toml"].contains("features = [\"webhooks\"]"));
    Ok(())
}

#[test]
fn a_controller_of_an_existing_kind_names_its_k8s_openapi_type() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    cargo_kubeward(
        &root,
        "create api --group apps --version v1 --kind Deployment --resource=false --controller",
    )?;
    let files = snapshot(&root);
    assert!(
        files["src/controller/deployment.rs"]
            .contains("use k8s_openapi::api::apps::v1::Deployment;")
    );
    assert!(files["src/lib.rs"].contains("manager.add(controller::deployment::controller())?;"));
    assert!(!files.contains_key("src/api/deployment.rs"));
    Ok(())
}

/// The book's "Start a new operator" page shows what the tool generates: each block after a
/// `<!-- file: PATH -->` line is that file, and the block after `<!-- files -->` lists them all.
#[test]
fn the_book_page_shows_the_files_the_tool_generates() -> anyhow::Result<()> {
    let page = Path::new(env!("CARGO_MANIFEST_DIR")).join("../book/src/start-a-new-operator.md");
    let Ok(page) = std::fs::read_to_string(&page) else {
        // A packaged cargo-kubeward has no book beside it; in the repository the page is there.
        assert!(
            !Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../book/src")
                .exists(),
            "the book has no start-a-new-operator.md"
        );
        return Ok(());
    };
    let dir = tempfile::tempdir()?;
    let root = project(dir.path())?;
    cargo_kubeward(&root, "create api --version v1alpha1 --kind Memo")?;
    cargo_kubeward(&root, "create api --version v1 --kind Note")?;
    cargo_kubeward(
        &root,
        "create webhook --kind Memo --defaulting --validation",
    )?;
    cargo_kubeward(&root, "create api --version v1beta1 --kind Memo")?;
    cargo_kubeward(&root, "create webhook --kind Memo --conversion")?;
    let files = snapshot(&root);

    let mut lines = page.lines();
    let mut shown = 0;
    while let Some(line) = lines.next() {
        let marker = line.trim();
        let Some(what) = marker
            .strip_prefix("<!-- ")
            .and_then(|m| m.strip_suffix(" -->"))
        else {
            continue;
        };
        anyhow::ensure!(
            lines.next().is_some_and(|l| l.starts_with("```")),
            "{marker}: no block"
        );
        let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        if what == "files" {
            let listed: Vec<&str> = block;
            let generated: Vec<&str> = files.keys().map(String::as_str).collect();
            assert_eq!(listed, generated, "the page's list of files");
        } else if let Some(path) = what.strip_prefix("file: ") {
            let generated = files
                .get(path)
                .ok_or_else(|| anyhow::anyhow!("the page shows {path}, which is not generated"))?;
            assert_eq!(block.join("\n"), generated.trim_end(), "the page's {path}");
        }
        shown += 1;
    }
    assert!(shown >= 8, "only {shown} marked blocks on the page");
    Ok(())
}
