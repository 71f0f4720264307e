//! Integration tests against a real local control plane (etcd + kube-apiserver).

mod book;
mod chart;
mod control_plane;
mod derive;
mod controller;
mod fake;
mod informer;
mod leader;
mod manager;
