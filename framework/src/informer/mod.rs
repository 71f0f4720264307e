//! Informers: list and watch a resource into a cache and tell handlers about every change.
//!
//! A [`Factory`] shares one [`SharedInformer`] per resource, namespace and selectors; each informer
//! runs one reflector (paginated list, then watch, relist on `410 Gone`), keeps a
//! [`Store`](crate::cache::Store) and fans every change out to its [`EventHandler`]s, each
//! through its own coalescing buffer.

mod buffer;
mod config;
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
