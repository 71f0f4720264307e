//! Plans what an operator would do: every object reconciled once, every write a dry run.
//!
//! [`Manager::plan`](crate::manager::Manager::plan) (the `plan` command of an operator built
//! with `cli::Operator`) answers "what would this version do to the objects already in the
//! cluster?" before it runs for real, Terraform-style:
//!
//! 1. The manager's client has a switch (a wrapper around every client the manager
//!    hands out, so also the one a reconciler took at start-up): once planning, every create,
//!    update, patch and delete is sent with `dryRun=All`. Admission, defaulting and validation
//!    run on the API server; nothing persists. The answer goes back to the reconciler as if the
//!    write had happened, and is noted with the live object, read from the API server next to
//!    the write.
//! 2. The informers start and fill; no Lease is taken (leader election is not run) and no
//!    worker runs. Each controller reconciles every cached object of its kind once (or those a
//!    label selector names), paused objects left alone, with its usual concurrency.
//! 3. The noted writes become the [`Plan`]: per object a create, an update with the fields that
//!    would change (a diff against the live object, leaving out `managedFields`,
//!    `resourceVersion`, `generation`, condition timestamps and observed generations), or a
//!    delete. A write that changes nothing is left out. Writes the API server refused are
//!    listed apart; failed reconciles make the plan fail.
//!
//! Writes that depend on earlier writes in the same pass: a read of one object through the
//! client (a GET) after the pass wrote it is answered with the dry-run result (the overlay),
//! and several writes of one object merge into one change. What the overlay cannot do: the
//! informers' caches and lists show the cluster as it is, so a reconcile that reads its own
//! write back from the cache does not see it; a write on top of an object only the plan created
//! is refused by the API server (404), and listed as refused; and a chain that needs a second
//! reconcile (a watch event of the first write) is planned only to its first step.
//!
//! Events are sent as dry runs too (and counted, not listed). A manager that planned stays a
//! planning one: writes still on their way when the plan ends must stay dry, so it is consumed.

mod change;
mod diff;
pub(crate) mod dry_run;
mod options;
pub(crate) mod planner;
mod report;

pub use self::change::{Action, Change, FieldChange};
pub use self::options::Options;
pub use self::report::{CHANGES, FAILED, Failure, NOTHING_TO_DO, Plan, Refusal};
