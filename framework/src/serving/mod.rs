//! Serves an operator's HTTP endpoints, `/healthz`, `/readyz` and `/metrics` (plain, or over HTTPS
//! to authorized scrapers), as a runnable every replica runs.
//!
//! [`Endpoints`] says where each is served; added to a manager, it binds its addresses at once
//! (so a taken port is an error of `Manager::add`), answers from the manager's probes and
//! registry, starts before the controllers and stops after them, so probes and metrics answer
//! while in-flight work drains. The command line adds one from `--metrics-bind-address` and
//! `--health-probe-bind-address` (controller-runtime's `metricsserver` and `healthz`).

mod answer;
mod endpoints;
#[cfg(feature = "tls")]
mod secure;

pub use self::endpoints::{BindAddress, Endpoints};
