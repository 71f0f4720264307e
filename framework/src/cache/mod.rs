//! Caches Kubernetes objects in memory, keyed by namespace/name, with named indexes.

mod change;
mod compact;
mod error;
mod hot;
mod index;
mod key;
mod slot;
mod store;

pub use change::{Change, Deleted};
pub use compact::compact_store;
pub(crate) use compact::{Decode, compact_store_with};
pub use error::{Error, Result};
pub use index::{IndexFn, NAMESPACE_INDEX};
pub use key::ObjectKey;
pub use store::{Relist, Store, Writer, store};
