//! Names the cluster a Manager works with: a client built already, or the configuration to build one.

/// What [`Manager::new`](super::Manager::new) connects with: a [`kube::Client`] you built, or a
/// [`kube::Config`] from which the manager builds its own, counted and health-checked, client.
#[derive(Clone)]
#[non_exhaustive]
pub enum Connection {
    /// A client built already (a test's, or one with your own layers); its requests are not
    /// counted in the manager's `rest_client_*` families.
    Client(kube::Client),
    /// A client configuration (`kube::Config::infer().await?`, a kubeconfig's).
    Config(Box<kube::Config>),
}

impl From<kube::Client> for Connection {
    fn from(client: kube::Client) -> Self {
        Self::Client(client)
    }
}

impl From<kube::Config> for Connection {
    fn from(config: kube::Config) -> Self {
        Self::Config(Box::new(config))
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Client(_) => f.write_str("Connection::Client"),
            Self::Config(config) => f
                .debug_tuple("Connection::Config")
                .field(&config.cluster_url)
                .finish(),
        }
    }
}
