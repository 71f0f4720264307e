//! The `WebApp` example operator under simulation: apps created, scaled and one deleted at seeded
//! moments while the seed's faults run; then every app left reaches its fixed point (its
//! finalizer, a Deployment sized from its spec and a Service, both owned by it, `Available`
//! saying how many replicas are available, for its generation) and the deleted one is gone with
//! everything it owned (its cleanup pruned them, then its finalizer came off), within five
//! virtual minutes; a pass that reconciles every app again writes nothing.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt as _};
use kubeward::cache::ObjectKey;
use kubeward::testing::sim::{Faults, Simulation, World};
use kubeward_examples::webapp::{WebApp, WebAppSpec, WebApps};

use crate::simulated::{converge_and_rest, until_written};

const APPS: u64 = 3;
const FINALIZER: &str = "apps.kubeward.dev/cleanup";

/// Whether `object` has `app` as its controller owner.
fn owned_by(object: &impl Resource, app: &WebApp) -> bool {
    object
        .owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && Some(&o.uid) == app.uid().as_ref())
}

/// Whether each app left is at its fixed point, and `deleted` (if any) is gone with what it
/// owned.
fn fixed_point(world: &World, deleted: Option<&str>) -> Result<(), String> {
    let fake = world.fake();
    let apps = fake.list::<WebApp>().map_err(|e| e.to_string())?;
    for app in &apps {
        let name = app.name_any();
        if Some(name.as_str()) == deleted {
            return Err(format!("{name} was deleted and is still there"));
        }
        if !app.finalizers().iter().any(|f| f == FINALIZER) {
            return Err(format!("{name} has no finalizer"));
        }
        let deployment = fake
            .get::<Deployment>("ns", &name)
            .map_err(|e| e.to_string())?
            .ok_or(format!("{name} has no Deployment"))?;
        let replicas = deployment.spec.replicas;
        if replicas != Some(app.spec.replicas) || !owned_by(&deployment, app) {
            return Err(format!(
                "{name}'s Deployment: {replicas:?} replicas, or not its own"
            ));
        }
        let service = fake
            .get::<Service>("ns", &name)
            .map_err(|e| e.to_string())?
            .ok_or(format!("{name} has no Service"))?;
        if !owned_by(&service, app) {
            return Err(format!("{name}'s Service is not its own"));
        }
        let status = app.status.clone().unwrap_or_default();
        let available = status.conditions.find(WebApp::CONDITION);
        let expected = format!("0 of {} replicas available", app.spec.replicas);
        if available.is_none_or(|c| c.message != expected) {
            return Err(format!("{name}'s Available condition is {available:?}"));
        }
        if status.observed_generation != app.metadata.generation {
            return Err(format!("{name}'s status describes an older generation"));
        }
    }
    if let Some(gone) = deleted {
        let deployment = fake
            .get::<Deployment>("ns", gone)
            .map_err(|e| e.to_string())?;
        let service = fake.get::<Service>("ns", gone).map_err(|e| e.to_string())?;
        if deployment.is_some() || service.is_some() {
            return Err(format!("{gone}'s cleanup left its Deployment or Service"));
        }
    }
    let left = APPS - u64::from(deleted.is_some());
    (apps.len() as u64 == left)
        .then_some(())
        .ok_or(format!("{} apps, {left} expected", apps.len()))
}

async fn webapps(world: World) {
    let fake = world.fake();
    fake.register_crd::<WebApp>();
    fake.register::<Deployment>();
    fake.register::<Service>();
    fake.register::<Event>();
    let api: Api<WebApp> = Api::namespaced(world.client("workload"), "ns");
    let doomed = format!("web-{}", world.random(0..APPS));
    let deleted_at = world.random(0..8);
    let workload = async {
        for n in 0..APPS {
            let spec = WebAppSpec {
                image: "registry.invalid/web:1".into(),
                replicas: i32::try_from(world.random(1..4)).unwrap_or(1),
                port: 8080,
            };
            let app = WebApp::new(&format!("web-{n}"), spec);
            until_written(async || api.create(&PostParams::default(), &app).await).await;
        }
        for step in 0..8 {
            tokio::time::sleep(Duration::from_millis(world.random(0..3000))).await;
            if step == deleted_at {
                until_written(async || api.delete(&doomed, &DeleteParams::default()).await).await;
                continue;
            }
            let name = format!("web-{}", world.random(0..APPS));
            if step > deleted_at && name == doomed {
                continue;
            }
            let scale = serde_json::json!({ "spec": { "replicas": world.random(1..6) } });
            let (params, patch) = (PatchParams::default(), Patch::Merge(&scale));
            until_written(async || api.patch(&name, &params, &patch).await).await;
        }
    };
    let every_app_left = || {
        (0..APPS)
            .map(|n| format!("web-{n}"))
            .filter(|name| *name != doomed)
            .map(|name| ObjectKey::new(Some("ns"), &name))
            .collect()
    };
    let fixed = || fixed_point(&world, Some(&doomed));
    converge_and_rest(
        &world,
        WebApp::controller(WebApps),
        workload,
        fixed,
        every_app_left,
    )
    .await;
}

#[test]
fn the_webapp_operator_converges_cleans_up_and_rests_under_seeded_faults() {
    let runs = Simulation::new()
        .faults(Faults::default())
        .seeds(0..20)
        .check(webapps);
    for run in &runs {
        let rested = run.log().contains("quiet pass wrote nothing");
        assert!(rested, "seed {} never reached its quiet pass", run.seed());
    }
}
