//! Informer tests that run the reflector against the fake API server.

mod relist;
mod traps;
mod wire;
