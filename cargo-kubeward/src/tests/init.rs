//! `init` in a new, an empty or the current folder, what it prints next, and `--help`.

use clap::CommandFactory as _;

use super::{cargo_kubeward, snapshot};
use crate::Cli;

#[test]
fn init_prints_the_commands_a_new_user_runs_next() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let out = cargo_kubeward(dir.path(), "init memo-operator --group example.com")?;
    let next = out
        .split_once("next:\n")
        .map(|(_, next)| next)
        .ok_or_else(|| anyhow::anyhow!("no next steps in {out}"))?;
    let commands: Vec<&str> = next
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .collect();
    assert_eq!(
        commands,
        [
            "cd memo-operator",
            "cargo kubeward create api --version v1alpha1 --kind Memo",
            "cargo test",
        ]
    );
    Ok(())
}

#[test]
fn init_writes_into_an_existing_empty_folder() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::create_dir(dir.path().join("memo-operator"))?;
    cargo_kubeward(dir.path(), "init memo-operator --group example.com")?;
    let files = snapshot(&dir.path().join("memo-operator"));
    assert!(files["KUBEWARD"].contains("name = memo-operator"));
    Ok(())
}

#[test]
fn init_dot_makes_the_project_in_the_current_folder_named_after_it() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("note-operator");
    std::fs::create_dir(&root)?;
    let out = cargo_kubeward(&root, "init . --group example.com")?;
    let files = snapshot(&root);
    assert!(files["KUBEWARD"].contains("name = note-operator"));
    assert!(files.contains_key("charts/note-operator/Chart.yaml"));
    assert!(!out.contains("cd "), "already in the project: {out}");
    Ok(())
}

#[test]
fn init_refuses_a_folder_that_is_not_empty_in_one_line_naming_it() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("memo-operator");
    std::fs::create_dir(&root)?;
    std::fs::write(root.join("notes.txt"), "mine")?;
    for (cwd, folder) in [(dir.path(), "memo-operator"), (root.as_path(), ".")] {
        let error = cargo_kubeward(cwd, &format!("init {folder} --group example.com"))
            .expect_err("a folder with a file in it");
        let line = format!("{error:#}");
        assert!(
            line.contains(&root.display().to_string()) && line.contains("not an empty folder"),
            "{line}"
        );
        assert!(!line.contains('\n'), "one line: {line}");
        assert_eq!(
            snapshot(&root).into_keys().collect::<Vec<_>>(),
            ["notes.txt"]
        );
    }
    Ok(())
}

#[test]
fn create_webhook_help_says_what_conversion_makes() {
    let mut cli = Cli::command();
    let help = cli
        .find_subcommand_mut("create")
        .and_then(|create| create.find_subcommand_mut("webhook"))
        .expect("`create webhook` is a command")
        .render_long_help()
        .to_string();
    assert!(!help.contains("not generated"), "{help}");
    assert!(
        help.contains("converter between the kind's versions"),
        "{help}"
    );
}

#[test]
fn init_vendored_builds_against_the_folder_in_place_of_the_registry() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let crates = dir.path().join("vendor");
    let kubeward = crates.join(format!("kubeward-{}", env!("CARGO_PKG_VERSION")));
    std::fs::create_dir_all(&kubeward)?;
    std::fs::write(kubeward.join("Cargo.toml"), "")?;
    cargo_kubeward(
        dir.path(),
        "init memo-operator --group example.com --vendored vendor",
    )?;
    let files = snapshot(&dir.path().join("memo-operator"));
    let config = &files[".cargo/config.toml"];
    assert!(config.contains("replace-with = \"kubeward-vendored\""));
    assert!(config.contains(&format!(
        "directory = \"{}\"",
        crates.canonicalize()?.display()
    )));
    assert!(files["Cargo.toml"].contains(&format!("kubeward = \"{}\"", env!("CARGO_PKG_VERSION"))));
    Ok(())
}

#[test]
fn init_vendored_refuses_a_folder_without_this_kubeward() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    std::fs::create_dir(dir.path().join("vendor"))?;
    let error = cargo_kubeward(
        dir.path(),
        "init memo-operator --group example.com --vendored vendor",
    )
    .expect_err("a folder without kubeward is refused");
    assert!(
        format!("{error:#}").contains("holds no kubeward-"),
        "{error:#}"
    );
    assert!(!dir.path().join("memo-operator").exists());
    Ok(())
}
