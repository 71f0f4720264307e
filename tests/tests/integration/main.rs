//! Integration tests against a real local control plane (etcd + kube-apiserver).

mod book;
mod chart;
mod control_plane;
mod controller;
mod conversion;
mod derive;
mod events;
mod fake;
mod fixtures;
mod garbage;
mod generator;
mod informer;
mod kubectl;
mod leader;
mod manager;
mod metrics;
mod pause;
mod rbac;
mod reconcile_kit;
mod reliability;
mod scope;
mod shard_leases;
mod shard_scaling;
mod sharding;
mod triggers;
mod webhook;
