//! The flags page lists every flag of `cli::Flags` with its variable and default.

use clap::CommandFactory as _;
use kubeward::cli::Flags;

use super::{code_rows, page, unquote};

#[test]
fn the_flags_page_lists_every_flag_with_its_environment_variable_and_default() {
    let rows = code_rows(&page("flags.md"), None);
    let mut command = Flags::command();
    command.build(); // fills in implied defaults, such as `false` for a switch
    let flags: Vec<_> = command
        .get_arguments()
        .filter(|a| a.get_long().is_some_and(|l| l != "help" && l != "version"))
        .cloned()
        .collect();
    // A default named after the program (the Lease's) reads PROGRAM in the book.
    let program = std::env::args_os()
        .next()
        .as_deref()
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_stem)
        .map(|stem| stem.to_string_lossy().to_lowercase().replace('_', "-"))
        .expect("the test binary has a name");
    let mut problems = Vec::new();
    for arg in &flags {
        let long = format!("--{}", arg.get_long().expect("filtered on a long name"));
        let env = arg
            .get_env()
            .map(|e| e.to_string_lossy().into_owned())
            .unwrap_or_default();
        let default = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(",")
            .replace(&program, "PROGRAM");
        let Some(row) = rows.iter().find(|r| unquote(&r[0]) == long) else {
            problems.push(format!("{long} is not in the table"));
            continue;
        };
        if row.get(1).map(|c| unquote(c)) != Some(env.as_str()) {
            problems.push(format!(
                "{long}: the book says {:?}, the code reads {env}",
                row.get(1)
            ));
        }
        let documented = row.get(2).map(String::as_str).unwrap_or_default();
        let expected = if default.is_empty() {
            "none".to_owned()
        } else {
            format!("`{default}`")
        };
        if documented != expected {
            problems.push(format!(
                "{long}: the book's default is {documented}, the code's {expected}"
            ));
        }
    }
    let flag_rows = rows.iter().filter(|r| r[0].starts_with("`--")).count();
    if flag_rows != flags.len() {
        problems.push(format!(
            "the table has {flag_rows} flags, the code {}",
            flags.len()
        ));
    }
    assert!(flags.len() >= 13, "clap's flags were not found");
    assert!(
        problems.is_empty(),
        "book/src/flags.md:\n{}",
        problems.join("\n")
    );
}
