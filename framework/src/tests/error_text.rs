//! One failure reads the same in every log line and Event, whichever path reports it.

use crate::error::chain;

fn forbidden() -> kube::Error {
    kube::Error::Api(
        kube::core::Status::failure(
            "configmaps is forbidden: User \"system:serviceaccount:shop:web\" cannot list \
             resource \"configmaps\" in API group \"\" in the namespace \"shop\"",
            "Forbidden",
        )
        .with_code(403)
        .boxed(),
    )
}

#[test]
fn a_403_reads_the_same_from_a_reconcile_and_from_a_reflector() {
    // What a reflector logs for a refused list or watch (`reflector.rs` renders it so).
    let reflector = chain(&forbidden());
    assert_eq!(
        reflector,
        "403 Forbidden: configmaps is forbidden: User \"system:serviceaccount:shop:web\" cannot \
         list resource \"configmaps\" in API group \"\" in the namespace \"shop\""
    );
    // What a controller logs and writes in its Event, for a reconciler returning the kube error
    // itself, or a `kubeward::Error` holding it.
    let direct = crate::controller::Error::Reconcile(forbidden());
    let held = crate::controller::Error::Reconcile(crate::Error::from(forbidden()));
    for reconcile in [chain(&direct), chain(&held)] {
        assert_eq!(reconcile, format!("reconcile failed: {reflector}"));
    }
}

#[test]
fn an_unreachable_server_reads_the_same_from_a_reconcile_and_from_a_reflector() {
    let refused = || {
        kube::Error::Service(Box::new(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "connection refused",
        )))
    };
    let reflector = chain(&refused());
    assert_eq!(reflector, "ServiceError: connection refused");
    let reconcile = crate::controller::Error::Reconcile(refused());
    assert_eq!(chain(&reconcile), format!("reconcile failed: {reflector}"));
}
