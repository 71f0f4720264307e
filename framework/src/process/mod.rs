//! What the running process is: the program's name, and the namespace of the pod it runs in.

pub(crate) mod pod_namespace;
pub(crate) mod program;
