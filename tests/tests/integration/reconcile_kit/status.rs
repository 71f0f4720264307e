//! `ctx.patch_status` and `Conditions` against the API server: hand edits are corrected, the
//! transition time follows apimachinery, and the CRD schema rejects malformed conditions.

use kube::Api;
use kube::api::{Patch, PatchParams};
use kubeward::reconcile::Condition;

use super::*;

/// Replaces the conditions of bundle `web` by hand, keeping everything else.
async fn edit_conditions(bundles: &Api<Bundle>, conditions: Vec<Condition>) -> anyhow::Result<()> {
    let mut bundle = bundles.get("web").await?;
    bundle.status.get_or_insert_default().conditions = conditions.into();
    bundles
        .replace_status("web", &PostParams::default(), &bundle)
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_condition_edited_by_hand_is_corrected_with_a_new_transition_time() -> anyhow::Result<()>
{
    let cp = ControlPlane::shared().await?;
    let (ns, bundles) = namespace(cp, "kit-status").await?;
    let running = Running::start(cp.client(), &ns);
    // No children: the controller's Ready message is empty.
    let ready = create_ready(&bundles, &bundle("web", &[])).await?;
    let first = ready
        .status
        .as_ref()
        .and_then(|s| s.conditions.find("Ready"))
        .cloned();
    let first = first.expect("Ready is set");

    // Same generation, same observedGeneration: only the condition is wrong.
    let mut edited = first.clone();
    edited.status = "False".into();
    edited.reason = "HandEdited".into();
    edited.last_transition_time = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::from_second(first.last_transition_time.0.as_second() + 3600)?,
    );
    edit_conditions(&bundles, vec![edited.clone()]).await?;
    let corrected = wait_ready(&bundles, "web").await?;
    let again = corrected
        .status
        .as_ref()
        .and_then(|s| s.conditions.find("Ready"))
        .cloned();
    let again = again.expect("Ready is set");
    assert_eq!(again.observed_generation, ready.metadata.generation);
    assert_ne!(
        again.last_transition_time, edited.last_transition_time,
        "False → True is a transition: the time is the correction's, not the edit's"
    );
    assert!(
        running.kit.done.lock().iter().any(|d| d.wrote_status),
        "the correction was a status write"
    );

    // True stays True with another reason: the reason is put back, the time is kept.
    let mut reworded = again.clone();
    reworded.reason = "HandEdited".into();
    edit_conditions(&bundles, vec![reworded]).await?;
    let kept = wait_ready(&bundles, "web").await?;
    let kept = kept
        .status
        .as_ref()
        .and_then(|s| s.conditions.find("Ready"))
        .cloned();
    assert_eq!(
        kept.map(|c| c.last_transition_time),
        Some(again.last_transition_time),
        "no transition: the time stays"
    );
    running.stop().await
}

#[tokio::test]
async fn the_api_server_rejects_a_malformed_condition() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let (_ns, bundles) = namespace(cp, "kit-invalid").await?;
    bundles
        .create(&PostParams::default(), &bundle("web", &[]))
        .await?;
    let bad = serde_json::json!({ "status": { "conditions": [{
        "type": "Ready", "status": "Yes", "lastTransitionTime": "yesterday",
        "reason": "not a reason!", "message": "",
    }] } });
    let refused = bundles
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&bad))
        .await
        .expect_err("the CRD's schema refuses the condition");
    let kube::Error::Api(status) = &refused else {
        panic!("expected the API server's answer, got {refused:?}");
    };
    assert_eq!(status.code, 422, "{status:?}");
    for field in [
        "status.conditions.status: Unsupported value: \"Yes\"",
        "status.conditions.lastTransitionTime: Invalid value: \"yesterday\"",
        "status.conditions.reason: Invalid value: \"not a reason!\"",
    ] {
        assert!(
            status.message.contains(field),
            "{field} is named in: {}",
            status.message
        );
    }
    Ok(())
}
