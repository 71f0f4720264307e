//! Informers: list and watch a resource into a cache and tell handlers about every change.
//!
//! Data flows one way, from the API server to the handlers; no stage calls back into the one
//! before it:
//!
//! ```text
//! kube-apiserver
//!    │ list (paginated) or streaming list (watch_list.rs) + watch (resourceVersion, bookmarks),
//!    │ relist on 410 Gone / errors with backoff
//!    ▼
//! Reflector (reflector.rs) ── progress: synced, resourceVersion, Stats
//!    │ each decoded, transformed object (transforms.rs); a backlog of watch events is
//!    │ decoded ahead on the blocking pool and applied in order (decode_ahead.rs)
//!    ▼
//! FanOut (fan_out.rs): updates the Store first (cache::Store: Arc<K> by key, named indexes),
//!    │                  then merges the change into every handler's coalescing buffer
//!    │                  (buffer.rs); two locks on the reflector's task, no handler code
//!    ▼
//! Listener (listener.rs): one delivery task per handler, which pops its buffer and calls
//!    │                    the handler (sink.rs): a slow handler delays only itself
//!    ├─► user event handlers (on_add / on_update / on_delete, resync)
//!    └─► controller triggers: predicates, own-writes filter, mappers, on the controller's
//!        own task ─► work queue ─► workers (see crate::controller)
//! ```
//!
//! A [`SharedInformer`] composes one reflector, one store and the fan-out to its
//! [`EventHandler`]s, and starts and stops them (one reflector per namespace when it covers a
//! [`CacheScope`]'s namespace set, all filling the one store). The [`Factory`] is the way to get
//! one: it shares one informer per type, namespaces and selectors between everyone who asks;
//! [`SharedInformer::new`] makes a private one.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use k8s_openapi::api::core::v1::Pod;
//! use kube::Api;
//! use kubeward::informer::{Factory, handler_fns};
//!
//! # #[tokio::main]
//! # async fn main() -> anyhow::Result<()> {
//! let client = kube::Client::try_default().await?;
//! let factory = Factory::new(client.clone());
//! let pods = factory.informer(Api::<Pod>::all(client));
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
mod cache_scope;
mod config;
pub(crate) mod connectivity;
mod decode;
mod decode_ahead;
mod error;
mod factory;
mod fan_out;
#[cfg(all(any(test, feature = "testing"), feature = "webhooks"))]
pub(crate) mod fuzz;
mod handler;
mod initial_events;
mod list_response;
mod listener;
mod not_served;
mod progress;
mod reflector;
mod registration;
pub(crate) mod selector;
mod shared_informer;
mod sink;
mod stats;
mod synced;
mod transforms;
mod watch_lines;
mod watch_list;
mod watchable;

#[cfg(test)]
mod tests;

pub use cache_scope::CacheScope;
pub use config::Config;
pub use error::{Error, Result};
pub use factory::Factory;
pub use handler::{EventHandler, HandlerFns, handler_fns};
pub use registration::Registration;
pub use selector::SelectorError;
pub use shared_informer::SharedInformer;
pub use stats::Stats;
pub use watch_list::WatchList;
pub use watchable::{Cacheable, Watchable};

pub(crate) use factory::Observed;
pub(crate) use sink::{Hints, change_fns};
pub(crate) use synced::Synced;
