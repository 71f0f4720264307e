//! The command-line front end (feature `cli`): controller-runtime's flags, the client
//! configuration they name, the logging they set up, and the client of a manager that only
//! prints or writes its manifests.

mod duration;
mod flags;
mod kubeconfig;
mod logging;
mod offline;
#[cfg(feature = "sharding")]
mod shard_flags;
#[cfg(feature = "webhooks")]
mod webhook_flags;

pub(super) use self::flags::exit_if_invalid;
pub use self::flags::{Flags, LogFormat};
pub(super) use self::kubeconfig::client_config;
pub use self::logging::init_logging;
pub(super) use self::offline::offline_client;
#[cfg(feature = "sharding")]
pub use self::shard_flags::ShardFlags;
#[cfg(feature = "webhooks")]
pub use self::webhook_flags::WebhookFlags;
