//! The command-line front end (feature `cli`): controller-runtime's flags, the client
//! configuration and logging they name, and the subcommands an operator runs instead of itself.
//!
//! [`Operator::from_args`] is an operator's `main` in one line: it parses [`Flags`], installs
//! logging, finds the cluster and builds the [`Manager`](crate::manager::Manager) (which the
//! operator derefs to, for adding controllers); [`Operator::run`] then runs the manager, or the
//! [`Command`] the command line named.

mod command;
mod duration;
mod flags;
mod kubeconfig;
mod logging;
mod manifests;
mod offline;
mod operator;
mod plan;
#[cfg(feature = "sharding")]
mod rings;
#[cfg(feature = "sharding")]
mod shard_flags;
#[cfg(feature = "webhooks")]
mod webhook_flags;
mod why;

pub use self::command::{Command, PlanOutput};
pub use self::flags::{Flags, LogFormat};
pub use self::logging::init_logging;
pub use self::operator::Operator;
#[cfg(feature = "sharding")]
pub use self::shard_flags::ShardFlags;
#[cfg(feature = "webhooks")]
pub use self::webhook_flags::WebhookFlags;
