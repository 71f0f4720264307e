//! Integration tests against a real local control plane (etcd + kube-apiserver).

mod control_plane;
mod informer;
