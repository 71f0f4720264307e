//! Runnable kubeward programs (in `src/bin/`) and the example operator they share.

pub mod by_hand;
pub mod configmap_generator;
pub mod configmap_generator_v1alpha1;
pub mod database;
pub mod database_objects;
pub mod label_everything;
pub mod reconcile_kit;
pub mod triggers;
pub mod webapp;
pub mod webapp_objects;
pub mod webhooks;
