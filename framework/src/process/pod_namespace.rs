//! Finds the namespace of the pod the manager runs in.

/// The namespace of the pod this runs in, else the client's default namespace.
pub(crate) fn pod_namespace(client: &kube::Client) -> String {
    std::env::var("POD_NAMESPACE")
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace").ok()
        })
        .map(|ns| ns.trim().to_owned())
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| client.default_namespace().to_owned())
}
