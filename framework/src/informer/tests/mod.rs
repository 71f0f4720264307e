//! Informer tests that run the reflector against the fake API server.

mod backlog;
mod cooperation;
mod namespaces;
mod pagination;
mod relist;
mod streaming;
mod traps;
mod wire;
