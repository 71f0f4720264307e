//! A new value of the reconcile-requested-at annotation gets one reconcile through a
//! `generation_changed` predicate.

use kubeward::controller::RECONCILE_REQUESTED_ANNOTATION;
use kubeward::testing::ControlPlane;

use super::Running;

#[tokio::test]
async fn each_new_reconcile_request_reconciles_once_through_a_generation_predicate()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let running = Running::start(cp, "pause-requested").await?;
    running.create("web", "v1").await?;
    running.generated("web", "v1").await?;
    running.past_the_witness().await?;
    let before = running.reconciles("web");

    // The predicate drops an annotation change: the control.
    let adds = running.adds();
    running.annotate("web", "team", Some("a")).await?;
    running
        .annotate("web", RECONCILE_REQUESTED_ANNOTATION, Some("t1"))
        .await?;
    running.queued_after(adds).await?;
    running.past_the_witness().await?;
    running
        .annotate("web", RECONCILE_REQUESTED_ANNOTATION, Some("t2"))
        .await?;
    running.past_the_witness().await?;

    let requested: Vec<Option<String>> = running.seen("web")[before..]
        .iter()
        .map(|s| s.requested.clone())
        .collect();
    assert_eq!(
        requested,
        [Some("t1".to_owned()), Some("t2".to_owned())],
        "one reconcile per request, none for the other annotation"
    );
    running.stop().await
}
