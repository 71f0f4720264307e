//! Inputs `#[derive(Controller)]` accepts, built with the workspace and run as tests.
//!
//! They live here rather than in trybuild's `pass` cases: with only rejected inputs, trybuild
//! checks its own copy of the dependencies instead of building it (minutes in a clean clone).

// The inputs are written as an operator's crate writes them: `pub` types in a library.
#![allow(unreachable_pub)]

#[path = "accepted/every_key.rs"]
mod every_key;
#[path = "accepted/least_input.rs"]
mod least_input;
#[path = "accepted/metadata_only.rs"]
mod metadata_only;
#[path = "accepted/owns_without_finalizer.rs"]
mod owns_without_finalizer;
#[path = "accepted/versions_and_storage.rs"]
mod versions_and_storage;
