//! The event recorder on the control plane: valid names, aggregation, new notes, failures, RBAC.

use crate::fixtures::watching;
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding, RoleRef, Subject};
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client, Resource, ResourceExt};
use kubeward::events::Recorder;
use kubeward::manager::Manager;
use kubeward::metrics::Metrics;
use kubeward::rbac::Rules;
use kubeward::testing::{ControlPlane, events_about, install_definition, wait_for};
use kubeward_examples::by_hand::{FINALIZER, controller_without_macro};
use kubeward_examples::configmap_generator::{ConfigMapGenerator, ConfigMapGeneratorSpec};
use kubeward_tests::metric_sum;
use prometheus::Registry;

const CONTROLLER: &str = "events-test";

/// A recorder counting in a registry of its own.
fn counted_recorder(client: Client) -> anyhow::Result<(Recorder, Registry)> {
    let registry = Registry::new();
    let metrics = Metrics::new(&registry)?;
    Ok((
        Recorder::new(client, CONTROLLER).metrics(&metrics),
        registry,
    ))
}

/// `kubeward_events_total{result}` of the one recorder counting in `registry`.
// Counters of whole events, far below 2^53: the conversion is exact.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn events_total(registry: &Registry, result: &str) -> u64 {
    metric_sum(registry, "kubeward_events_total", ("result", result), |m| {
        m.get_counter().get_value()
    }) as u64
}

/// Waits until `kubeward_events_total{result}` reads `n`: the writer counts a write once its
/// response is in, which can be a moment after the API server already lists the Event.
async fn counted(registry: &Registry, result: &str, n: u64) -> anyhow::Result<()> {
    let what = format!("kubeward_events_total{{result=\"{result}\"}} to read {n}");
    Ok(wait_for(Duration::from_secs(10), &what, || async {
        (events_total(registry, result) == n).then_some(())
    })
    .await?)
}

async fn config_map(client: Client, ns: &str, name: &str) -> anyhow::Result<ConfigMap> {
    let api: Api<ConfigMap> = Api::namespaced(client, ns);
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    Ok(api.create(&PostParams::default(), &cm).await?)
}

/// Waits until the Events about `obj` satisfy `check`, and returns them.
async fn wait_for_events(
    client: Client,
    obj: &ConfigMap,
    what: &str,
    check: impl Fn(&[Event]) -> bool,
) -> anyhow::Result<Vec<Event>> {
    Ok(wait_for(Duration::from_secs(30), what, || async {
        let events = events_about(client.clone(), obj).await.ok()?;
        check(&events).then_some(events)
    })
    .await?)
}

fn count(event: &Event) -> i32 {
    event.series.as_ref().map_or(1, |s| s.count)
}

#[tokio::test(flavor = "current_thread")]
async fn an_event_about_an_object_with_a_250_character_name_is_written_with_a_valid_name()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("events").await?;
    // 250 characters: kube's own recorder named its Event `<name>.<nanoseconds hex>`, over 253,
    // so the API refused it and a cleanup that published it could never finish.
    let long = "n".repeat(250);
    let obj = config_map(cp.client(), &ns, &long).await?;
    let (recorder, registry) = counted_recorder(cp.client())?;
    recorder
        .about(obj.object_ref(&()))
        .normal("Synced", "an object with a long name");
    let events = wait_for_events(cp.client(), &obj, "the Synced Event", |e| !e.is_empty()).await?;
    let event = &events[0];
    let name = event.metadata.name.as_deref().unwrap_or_default();
    assert!(name.len() <= 253, "{} characters: {name}", name.len());
    assert!(name.starts_with(&"n".repeat(200)), "{name}");
    assert_eq!(event.reason.as_deref(), Some("Synced"));
    assert_eq!(
        event.action.as_deref(),
        Some("Synced"),
        "the action defaults to the reason"
    );
    assert_eq!(event.note.as_deref(), Some("an object with a long name"));
    assert_eq!(event.type_.as_deref(), Some("Normal"));
    assert_eq!(event.reporting_controller.as_deref(), Some(CONTROLLER));
    assert_eq!(
        event.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some(long.as_str())
    );
    counted(&registry, "created", 1).await?;
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn twenty_identical_events_make_one_event_whose_series_counts_twenty() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("events").await?;
    let obj = config_map(cp.client(), &ns, "repeated").await?;
    let (recorder, registry) = counted_recorder(cp.client())?;
    for _ in 0..20 {
        recorder
            .about(obj.object_ref(&()))
            .action("Reconcile")
            .warning("Failed", "the backend refused the connection");
    }
    let events = wait_for_events(cp.client(), &obj, "one Event counting 20", |events| {
        events.iter().any(|e| count(e) == 20)
    })
    .await?;
    assert_eq!(events.len(), 1, "repeats made new Events: {events:#?}");
    let series = events[0]
        .series
        .as_ref()
        .expect("a count of 20 is a series");
    assert!(series.last_observed_time.0 >= events[0].event_time.as_ref().unwrap().0);
    assert_eq!(events[0].action.as_deref(), Some("Reconcile"));
    counted(&registry, "created", 1).await?;
    counted(&registry, "aggregated", 19).await?;

    // Later repeats count on (the Event exists, so this is a patch of its series).
    for _ in 0..5 {
        recorder
            .about(obj.object_ref(&()))
            .action("Reconcile")
            .warning("Failed", "the backend refused the connection");
    }
    let events = wait_for_events(cp.client(), &obj, "the Event counting 25", |events| {
        events.iter().any(|e| count(e) == 25)
    })
    .await?;
    assert_eq!(events.len(), 1, "{events:#?}");
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn a_repeat_of_an_event_deleted_meanwhile_is_written_anew_with_its_count()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("events").await?;
    let obj = config_map(cp.client(), &ns, "expiring").await?;
    let (recorder, registry) = counted_recorder(cp.client())?;
    recorder.about(obj.object_ref(&())).normal("Synced", "same");
    let first = wait_for_events(cp.client(), &obj, "the first Event", |e| e.len() == 1).await?;
    // As the API server does when an Event's hour is up.
    let events: Api<Event> = Api::namespaced(cp.client(), &ns);
    let first_name = first[0].metadata.name.clone().unwrap_or_default();
    events.delete(&first_name, &DeleteParams::default()).await?;
    recorder.about(obj.object_ref(&())).normal("Synced", "same");
    let again = wait_for_events(cp.client(), &obj, "a new Event counting 2", |events| {
        events.iter().any(|e| count(e) == 2)
    })
    .await?;
    assert_eq!(again.len(), 1, "{again:#?}");
    assert_ne!(again[0].metadata.name.as_deref(), Some(first_name.as_str()));
    assert_eq!(events_total(&registry, "failed"), 0);
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn a_changed_note_makes_a_new_event_showing_the_new_message() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("events").await?;
    let obj = config_map(cp.client(), &ns, "changing").await?;
    let (recorder, _registry) = counted_recorder(cp.client())?;
    let note = |g: u32| format!("applied ConfigMap changing for generation {g}");
    recorder
        .about(obj.object_ref(&()))
        .normal("Generated", note(1));
    wait_for_events(cp.client(), &obj, "the generation 1 Event", |e| {
        e.len() == 1
    })
    .await?;
    recorder
        .about(obj.object_ref(&()))
        .normal("Generated", note(2));
    let events = wait_for_events(cp.client(), &obj, "a generation 2 Event", |events| {
        events
            .iter()
            .any(|e| e.note.as_deref() == Some(note(2).as_str()))
    })
    .await?;
    let notes: Vec<_> = events.iter().filter_map(|e| e.note.clone()).collect();
    assert_eq!(notes, [note(1), note(2)], "oldest first, each once");
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn refused_events_neither_panic_nor_block_and_are_counted_as_failed() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("events").await?;

    // A namespace that does not exist: the API server refuses the create.
    let (recorder, registry) = counted_recorder(cp.client())?;
    let nowhere = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        namespace: Some("no-such-namespace".into()),
        name: Some("ghost".into()),
        ..ObjectReference::default()
    };
    let started = tokio::time::Instant::now();
    for i in 0..3 {
        recorder
            .about(nowhere.clone())
            .warning("Failed", format!("attempt {i}"));
    }
    // Handing over is synchronous and does no I/O: far below one API round trip.
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    wait_for(
        Duration::from_secs(30),
        "3 failed writes counted",
        || async { (events_total(&registry, "failed") == 3).then_some(()) },
    )
    .await?;
    assert_eq!(events_total(&registry, "created"), 0);

    // A user without any RBAC: 403, counted the same way.
    let obj = config_map(cp.client(), &ns, "guarded").await?;
    let (unprivileged, registry) = counted_recorder(cp.impersonating("nobody", &[]))?;
    unprivileged
        .about(obj.object_ref(&()))
        .normal("Synced", "not allowed to say so");
    wait_for(
        Duration::from_secs(30),
        "the forbidden write counted",
        || async { (events_total(&registry, "failed") == 1).then_some(()) },
    )
    .await?;
    assert!(events_about(cp.client(), &obj).await?.is_empty());
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn the_events_rule_is_enough_to_create_and_aggregate_and_the_instance_is_the_pod()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("events").await?;
    let obj = config_map(cp.client(), &ns, "permitted").await?;
    // Exactly what `Rules::events()` grants, bound to one user in this namespace.
    let role = Role {
        metadata: ObjectMeta {
            name: Some("events".into()),
            ..ObjectMeta::default()
        },
        rules: Some(Rules::new().events().build()),
    };
    Api::<Role>::namespaced(cp.client(), &ns)
        .create(&PostParams::default(), &role)
        .await?;
    let binding = RoleBinding {
        metadata: ObjectMeta {
            name: Some("events".into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Role".into(),
            name: "events".into(),
        },
        subjects: Some(vec![Subject {
            kind: "User".into(),
            name: "reporter".into(),
            ..Subject::default()
        }]),
    };
    Api::<RoleBinding>::namespaced(cp.client(), &ns)
        .create(&PostParams::default(), &binding)
        .await?;

    allowed(cp.client(), &ns, "reporter", "patch").await?;

    let (recorder, registry) = counted_recorder(cp.impersonating("reporter", &[]))?;
    // As the chart sets POD_NAME from the downward API.
    let recorder = recorder.with_instance("configmap-generator-7d9f-x2x");
    for _ in 0..3 {
        recorder
            .about(obj.object_ref(&()))
            .normal("Synced", "with the least RBAC");
    }
    let events = wait_for_events(cp.client(), &obj, "an Event counting 3", |events| {
        events.iter().any(|e| count(e) == 3)
    })
    .await?;
    assert_eq!(events_total(&registry, "failed"), 0);
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(
        events[0].reporting_instance.as_deref(),
        Some("configmap-generator-7d9f-x2x")
    );
    Ok(())
}

/// Waits until RBAC lets `user` `verb` events in `ns` (the authorizer sees new bindings a little
/// after they are created).
async fn allowed(client: Client, ns: &str, user: &str, verb: &str) -> anyhow::Result<()> {
    let api: Api<SubjectAccessReview> = Api::all(client);
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.to_owned()),
            resource_attributes: Some(ResourceAttributes {
                group: Some("events.k8s.io".into()),
                resource: Some("events".into()),
                namespace: Some(ns.to_owned()),
                verb: Some(verb.to_owned()),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let what = format!("RBAC to let {user} {verb} events in {ns}");
    Ok(wait_for(Duration::from_secs(30), &what, || async {
        let answer = api.create(&PostParams::default(), &review).await.ok()?;
        answer.status.is_some_and(|s| s.allowed).then_some(())
    })
    .await?)
}

/// Issue 19: the cleanup of a generator with a 250-character name published an Event whose name
/// kube's recorder made too long, returned the refusal with `?`, and so never removed the
/// finalizer: the generator could not be deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generator_with_a_250_character_name_can_be_deleted() -> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    install_definition::<ConfigMapGenerator>(cp.client()).await?;
    let ns = cp.create_namespace("events").await?;
    let manager = Manager::new(cp.client(), watching(ns.clone()))?;
    manager.add(controller_without_macro())?;
    let token = manager.shutdown_token();
    let run = tokio::spawn(manager.run());

    let generators: Api<ConfigMapGenerator> = Api::namespaced(cp.client(), &ns);
    let long = "g".repeat(250);
    let generator = ConfigMapGenerator::new(
        &long,
        ConfigMapGeneratorSpec {
            content: "x".into(),
        },
    );
    let generator = generators
        .create(&PostParams::default(), &generator)
        .await?;
    wait_for(
        Duration::from_secs(30),
        "the finalizer on the generator",
        || async {
            let g = generators.get(&long).await.ok()?;
            g.finalizers().iter().any(|f| f == FINALIZER).then_some(())
        },
    )
    .await?;
    generators.delete(&long, &DeleteParams::default()).await?;
    wait_for(
        Duration::from_secs(30),
        "the generator to be gone",
        || async {
            generators
                .get_opt(&long)
                .await
                .ok()?
                .is_none()
                .then_some(())
        },
    )
    .await?;
    // Its ConfigMap's name (`<name>-generated`) is too long, so every reconcile failed and was
    // reported in an Event about the generator: an Event whose name had to be shortened. (It
    // never had a ConfigMap, so its cleanup reports no deletion.)
    wait_for(
        Duration::from_secs(30),
        "the ReconcileError Event about the generator",
        || async {
            let events = events_about(cp.client(), &generator).await.ok()?;
            events
                .iter()
                .any(|e| e.reason.as_deref() == Some("ReconcileError"))
                .then_some(())
        },
    )
    .await?;
    token.cancel();
    tokio::time::timeout(Duration::from_secs(30), run).await???;
    Ok(())
}
