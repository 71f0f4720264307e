//! Integration tests against a real local control plane (etcd + kube-apiserver).

mod chart;
mod control_plane;
mod fake;
mod informer;
mod leader;
