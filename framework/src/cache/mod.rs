//! Caches Kubernetes objects in memory, keyed by namespace/name, with named indexes.

mod change;
mod error;
mod index;
mod key;
mod store;

pub use change::{Change, Deleted};
pub use error::{Error, Result};
pub use index::{IndexFn, NAMESPACE_INDEX};
pub use key::ObjectKey;
pub use store::{Relist, Store, Writer, store};
