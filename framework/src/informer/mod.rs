//! Informers: list and watch a resource into a cache and tell handlers about every change.
//!
//! A [`Factory`] shares one [`SharedInformer`] per resource, namespace and selectors; each informer
//! runs one reflector (paginated list, then watch, relist on `410 Gone`), keeps a
//! [`Store`](crate::cache::Store) and fans every change out to its [`EventHandler`]s, each
//! through its own coalescing buffer.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use k8s_openapi::api::core::v1::Pod;
//! use kubeward::informer::{Factory, handler_fns};
//!
//! # #[tokio::main]
//! # async fn main() -> anyhow::Result<()> {
//! let factory = Factory::new(kube::Client::try_default().await?);
//! let pods = factory.informer::<Pod>();
//! pods.add_index("node", |pod: &Pod| {
//!     pod.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect()
//! })?;
//! let _registration = pods.add_handler(
//!     handler_fns()
//!         .on_add(|pod: Arc<Pod>| tracing::info!(name = ?pod.metadata.name, "added"))
//!         .on_delete(|gone| tracing::info!(name = ?gone.object().metadata.name, "deleted")),
//! );
//! factory.start()?;
//! factory.wait_for_sync().await?;
//! let on_node_1 = pods.store().by_index("node", "node-1")?;
//! # drop(on_node_1);
//! factory.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod buffer;
mod config;
mod connectivity;
mod error;
mod factory;
mod handler;
mod listener;
mod reflector;
mod shared_informer;
mod stats;

pub use config::Config;
pub use error::{Error, Result};
pub use factory::Factory;
pub use handler::{EventHandler, HandlerFns, handler_fns};
pub use listener::Registration;
pub use shared_informer::SharedInformer;
pub use stats::Stats;
