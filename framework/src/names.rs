//! Checks names as the API server does, with the rules `#[derive(Controller)]` checks them by.
//!
//! The rules live in `kubeward-core`, shared with the derive, so a name it accepts at compile time
//! is one the builder accepts at run time. Each check answers why a name is refused, in words a
//! user can act on.

pub(crate) use kubeward_core::names::{
    DNS_SUBDOMAIN_MAX, dns_label, dns_subdomain, domain_qualified_name, label_value,
    qualified_name, short_dns_subdomain,
};
