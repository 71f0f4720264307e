//! Serves an operator's HTTP endpoints, `/healthz`, `/readyz` and `/metrics` (plain, or over HTTPS
//! to authorized scrapers), and its webhooks, as runnables every replica runs.
//!
//! [`Endpoints`] says where each is served; added to a manager, it binds its addresses at once
//! (so a taken port is an error of `Manager::add`), answers from the manager's probes and
//! registry, starts before the controllers and stops after them, so probes and metrics answer
//! while in-flight work drains. The command line adds one from `--metrics-bind-address` and
//! `--health-probe-bind-address` (controller-runtime's `metricsserver` and `healthz`).
//!
//! The webhook server (feature `webhooks`; controller-runtime's `webhook.Server`) becomes one of
//! the manager's runnables with the first webhook, route or conversion added to it
//! (`Manager::add_webhook`, `add_conversion`, ...): it serves them on every replica, leader or
//! not, as `manager::Config::webhook` says.

mod answer;
#[cfg(feature = "webhooks")]
mod conversions;
mod endpoints;
mod reconciles;
#[cfg(feature = "tls")]
mod secure;
#[cfg(feature = "webhooks")]
mod webhook_server;
#[cfg(feature = "webhooks")]
mod webhook_set;
#[cfg(feature = "webhooks")]
mod webhooks;

pub use self::endpoints::{BindAddress, Endpoints};
