//! A paused generator is neither reconciled nor repaired; resumed, it is repaired at once.

use kube::api::{Patch, PatchParams};
use kubeward::controller::PAUSED_ANNOTATION;
use kubeward::testing::ControlPlane;

use super::{ADMIN, Running};

#[tokio::test]
async fn a_paused_generator_is_not_reconciled_nor_its_configmap_repaired_until_it_resumes()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let running = Running::start(cp, "pause-stops").await?;
    running.create("web", "v1").await?;
    running.generated("web", "v1").await?;

    running
        .annotate("web", PAUSED_ANNOTATION, Some("true"))
        .await?;
    let paused = running
        .paused_condition("web", "True", "PausedByAnnotation")
        .await?;
    assert!(
        paused.message.contains(ADMIN),
        "the condition names who paused: {:?}",
        paused.message
    );
    running.paused_objects(1.0).await?;
    let before = running.reconciles("web");

    // A new spec and a hand edit of the owned ConfigMap: both queue the generator's key.
    let changed = running
        .patch("web", serde_json::json!({ "spec": { "content": "v2" } }))
        .await?;
    let adds = running.adds();
    let tamper = serde_json::json!({ "data": { "content": "tampered" } });
    running
        .config_maps
        .patch(
            "web-generated",
            &PatchParams::default(),
            &Patch::Merge(&tamper),
        )
        .await?;
    running.queued_after(adds).await?;
    running.past_the_witness().await?;
    assert_eq!(
        running.reconciles("web"),
        before,
        "a paused generator was reconciled: {:?}",
        running.seen("web")
    );
    let cm = running.config_maps.get("web-generated").await?;
    assert_eq!(
        cm.data.and_then(|d| d.get("content").cloned()).as_deref(),
        Some("tampered"),
        "the hand edit stays while paused"
    );
    let status = running
        .generators
        .get("web")
        .await?
        .status
        .unwrap_or_default();
    assert_ne!(
        status.observed_generation, changed.metadata.generation,
        "the status does not claim the paused generation was observed"
    );

    // Resumed: one reconcile repairs the ConfigMap with the new spec.
    let resumed = tokio::time::Instant::now();
    running.annotate("web", PAUSED_ANNOTATION, None).await?;
    running.generated("web", "v2").await?;
    let took = resumed.elapsed();
    running.paused_condition("web", "False", "Resumed").await?;
    running.paused_objects(0.0).await?;
    running.past_the_witness().await?;
    let seen = running.seen("web");
    assert_eq!(seen.len(), before + 1, "resuming reconciled once: {seen:?}");
    assert_eq!(
        seen.last().and_then(|s| s.generation),
        changed.metadata.generation
    );
    assert!(
        took < std::time::Duration::from_secs(5),
        "repaired {took:?} after the resume"
    );
    eprintln!("repaired {took:?} after the resume");
    running.stop().await
}
