//! The `plan` command: plans with the operator's manager, prints the plan, exits with its code.

use std::io::Write as _;

use super::PlanOutput;
use crate::manager::{Error, Manager, Result};
use crate::plan::{NOTHING_TO_DO, Options};

/// Plans with `manager` (see [`Manager::plan`]), prints the plan as `output` says, and ends the
/// process with the plan's exit code unless it is 0.
pub(super) async fn plan(
    manager: Manager,
    selector: Option<String>,
    output: PlanOutput,
) -> Result<()> {
    let mut options = Options::default();
    if let Some(selector) = selector {
        options = options.selector(selector);
    }
    let plan = manager.plan(options).await?;
    let text = match output {
        PlanOutput::Text => plan.to_string(),
        PlanOutput::Json => format!("{:#}\n", plan.to_json()),
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| Error::Manifests {
            action: "printing the plan".to_owned(),
            source: Some(e.into()),
        })?;
    let code = plan.exit_code();
    if code != NOTHING_TO_DO {
        std::process::exit(code);
    }
    Ok(())
}
