//! A paused generator that is deleted keeps its finalizer (and its ConfigMap) until it resumes;
//! then its cleanup runs and it goes.

use kube::api::DeleteParams;
use kubeward::controller::PAUSED_ANNOTATION;
use kubeward::testing::{ControlPlane, wait_for};
use kubeward_examples::by_hand::FINALIZER;

use super::{REACT, Running};

#[tokio::test]
async fn a_deleted_paused_generator_waits_for_its_resume_before_its_cleanup_runs()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let running = Running::start(cp, "pause-deletion").await?;
    running.create("web", "v1").await?;
    running.generated("web", "v1").await?;
    running
        .annotate("web", PAUSED_ANNOTATION, Some("true"))
        .await?;
    running
        .paused_condition("web", "True", "PausedByAnnotation")
        .await?;

    let adds = running.adds();
    running
        .generators
        .delete("web", &DeleteParams::default())
        .await?;
    running.queued_after(adds).await?;
    running.past_the_witness().await?;
    let terminating = running.generators.get("web").await?;
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert!(
        terminating
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == FINALIZER),
        "the finalizer stays while paused"
    );
    assert!(
        running.counted.cleanups.lock().is_empty(),
        "no cleanup while paused"
    );
    assert!(
        running
            .config_maps
            .get_opt("web-generated")
            .await?
            .is_some(),
        "the owned ConfigMap stays while paused"
    );

    running.annotate("web", PAUSED_ANNOTATION, None).await?;
    wait_for(
        REACT,
        "generator web and its ConfigMap to be gone",
        || async {
            let gone = running.generators.get_opt("web").await.ok()?.is_none()
                && running
                    .config_maps
                    .get_opt("web-generated")
                    .await
                    .ok()?
                    .is_none();
            gone.then_some(())
        },
    )
    .await?;
    // At least once: a cleanup whose finalizer write met a conflict runs again (cleanups are
    // idempotent), as it would without a pause.
    let cleanups = running.counted.cleanups.lock().clone();
    assert!(
        !cleanups.is_empty() && cleanups.iter().all(|c| c == "web"),
        "the cleanup ran once resumed: {cleanups:?}"
    );
    running.stop().await
}
