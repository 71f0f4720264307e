//! A million ConfigMaps in one replica, listed in pages from the local control plane (etcd +
//! kube-apiserver 1.20, which serves no streaming lists): the paginated rows of `scale.rs`.
//!
//! Run with `scripts/bench informer_scale_control_plane` (`cargo bench -p kubeward
//! --all-features --bench informer_memory -- scale-control-plane`; `KUBEWARD_BIN` names the
//! binaries). It starts the control plane with room in etcd for the objects, creates them (the
//! ConfigMap of `fixtures.rs`, its managedFields recorded by the server), then syncs each cache in
//! a child process (`child.rs`) with the control plane's kubeconfig.

use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use kubeward::testing::ControlPlane;
use tokio::time::Instant;

use crate::child::{self, HOT, Measured, Source, settle};
use crate::fixtures::Fixture;
use crate::scale::{CACHES, mb, objects};

/// etcd's backend quota: 8 GiB (its default, 2 GiB, holds about a million of these objects with
/// their history before compaction, so creating them would stop at `mvcc: database space
/// exceeded`).
const ETCD_QUOTA: &str = "--quota-backend-bytes=8589934592";
/// kube-apiserver's compaction: none. By default it compacts etcd's history every 5 minutes,
/// and a paginated list of a million objects takes longer, so its continue token expires (410)
/// before the last page: kube-runtime's reflector then starts the pages over, forever, and
/// kubeward's lists again in one request (the fallback its `pagination` test checks). Without
/// compaction both rows are paginated lists, as the table says.
const NO_COMPACTION: &str = "--etcd-compaction-interval=0";
/// Creates in flight at once, over the client's pool of connections.
const CONCURRENT_CREATES: usize = 128;
/// The field manager of the creates: the operator of the fixture's managedFields.
const MANAGER: &str = "web-operator";

/// Starts the control plane, creates the ConfigMaps, runs one child per paginated cache and
/// prints the table.
pub(crate) fn run() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let fixture = Fixture::config_map()?;
        let cp = ControlPlane::start_with_flags(&[ETCD_QUOTA], &[NO_COMPACTION]).await?;
        let client = cp.client();
        let created = Instant::now();
        create(&client, &fixture).await?;
        eprintln!(
            "informer_scale_control_plane: created {} ConfigMaps in {:.0?}",
            objects(),
            created.elapsed()
        );
        let json = served_size(&client, &fixture).await?;
        let source = Source::Kubeconfig(cp.kubeconfig().to_owned());
        let mut rows = Vec::new();
        for (name, what) in CACHES.iter().filter(|(name, _)| !name.ends_with("-stream")) {
            let measured = child::run(name, &source).await.with_context(|| {
                format!("{what}; kube-apiserver: {}", cp.apiserver_log_tail(10))
            })?;
            eprintln!(
                "informer_scale_control_plane: {what}: synced in {:.1?}",
                measured.synced
            );
            rows.push((*what, measured));
        }
        print(json, &rows);
        Ok(())
    })
}

/// Creates the fixture's namespace and [`objects`] copies of its ConfigMap,
/// [`CONCURRENT_CREATES`] at a time, reporting progress on stderr.
async fn create(client: &Client, fixture: &Fixture) -> anyhow::Result<()> {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(fixture.namespace.clone()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await?;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &fixture.namespace);
    let params = PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    };
    let done = AtomicUsize::new(0);
    let step = (objects() / 20).max(1);
    let started = Instant::now();
    futures::stream::iter(0..objects())
        .map(|i| {
            let (api, params, done) = (&api, &params, &done);
            async move {
                let mut object: ConfigMap = serde_json::from_str(&fixture.object(i, 1))?;
                // What the server sets: it records its own managedFields entry for `MANAGER`.
                let meta = &mut object.metadata;
                (meta.uid, meta.resource_version, meta.creation_timestamp) = (None, None, None);
                meta.managed_fields = None;
                api.create(params, &object).await?;
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                if n % step == 0 {
                    let rate = n as f64 / started.elapsed().as_secs_f64();
                    eprintln!(
                        "informer_scale_control_plane: created {n} of {} ({rate:.0}/s)",
                        objects()
                    );
                }
                anyhow::Ok(())
            }
        })
        .buffer_unordered(CONCURRENT_CREATES)
        .try_collect::<()>()
        .await
        .with_context(|| format!("creating {} ConfigMaps", objects()))
}

/// Bytes of JSON of one ConfigMap as the server sends it (managedFields included).
async fn served_size(client: &Client, fixture: &Fixture) -> anyhow::Result<usize> {
    let api = Api::<ConfigMap>::namespaced(client.clone(), &fixture.namespace);
    let object = api.get(&Fixture::name(0)).await?;
    Ok(serde_json::to_vec(&object)?.len())
}

fn print(json: usize, rows: &[(&str, Measured)]) {
    let n = objects();
    println!("## Many objects in one replica: paginated lists from the local control plane\n");
    println!(
        "{n} ConfigMaps of {:.1} KB of JSON each (the fixture of the fake's table, managedFields \
         recorded by the server; kubeward strips them, kube-runtime keeps them by default), \
         listed in pages of 500 from etcd by a local kube-apiserver 1.20 (no streaming lists) \
         running on the same machine; each cache syncs in a fresh process (two runtime \
         threads) and keeps watching for {settle:?}. Resident memory is the whole process's: \
         peak (`VmHWM`) and after settling; heap is the live bytes its allocator counted then. \
         Compact stores keep {HOT} objects decoded.\n",
        json as f64 / 1024.0,
        settle = settle(),
    );
    println!(
        "| cache | time to synced | peak resident | settled resident | settled resident vs \
         kube-runtime | heap settled | heap peak − settled |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    let ratio = |m: &Measured| m.settled as f64 / rows[0].1.settled.max(1) as f64;
    for (what, m) in rows {
        println!(
            "| {what} | {:.1} s | {} | {} | {:.2}× | {} | {} |",
            m.synced.as_secs_f64(),
            mb(m.peak),
            mb(m.settled),
            ratio(m),
            mb(m.heap),
            mb(m.heap_peak.saturating_sub(m.heap)),
        );
    }
    println!();
    if let [_, default, compact] = rows {
        println!(
            "Goals: the default store at most 0.5× kube-runtime's resident memory ({:.2}×); a \
             compact store at most 1 GB ({} resident).\n",
            ratio(&default.1),
            mb(compact.1.settled),
        );
    }
}
