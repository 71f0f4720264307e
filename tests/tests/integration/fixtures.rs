//! Set-ups that many tests share.

use kubeward::informer::CacheScope;
use kubeward::manager::Config;

/// A manager's configuration that watches (caches and reconciles) only the test's namespace.
pub(crate) fn watching(namespace: impl Into<String>) -> Config {
    Config::default().cache(CacheScope::default().namespaces([namespace.into()]))
}
