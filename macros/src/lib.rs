//! Derives the controller wiring for kubeward custom resources.
//!
//! The `#[derive(Controller)]` macro lands with its own issue; this crate holds its place in the workspace.
