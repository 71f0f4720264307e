//! Names the status condition a controller reports failures on unless it names another.

/// The condition type failures are reported on, and the CRD's printer columns show, by default.
///
/// `#[derive(Controller)]` sets another one only when `condition = "..."` differs from it.
pub const DEFAULT: &str = "Ready";
