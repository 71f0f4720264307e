//! The processes of one run of the example operator: one unsharded replica, or N shards of its ring.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::ListParams;
use kubeward::testing::{ControlPlane, lease_holder, wait_for};
use kubeward_examples::configmap_generator::ConfigMapGenerator;

use crate::process::{Process, Spawn, sum};

/// The example operator's controller ring.
pub const RING: &str = "configmap-generator";

/// What one process of a settled fleet holds.
pub struct Holding {
    pub id: String,
    /// Generators in its cache (`kubeward_informer_store_objects` of its generator informer).
    pub generators: u64,
    /// Objects of the sharder's metadata caches (the leader's only).
    pub sharder_objects: u64,
    pub leader: bool,
}

/// The processes of one run.
pub struct Fleet {
    pub processes: Vec<Process>,
    sharded: bool,
    system: String,
}

impl Fleet {
    /// Starts `n` shards of the example operator named `<run>-<i>`, or one unsharded replica when
    /// `n` is 0.
    pub fn start(
        cp: &ControlPlane,
        (system, apps): (&str, &str),
        run: &str,
        n: usize,
        logs: &std::path::Path,
    ) -> anyhow::Result<Self> {
        let program = env!("CARGO_BIN_EXE_configmap_generator");
        let processes = (0..n.max(1))
            .map(|i| {
                Spawn {
                    program,
                    id: format!("{run}-{i}"),
                    ring: (n > 0).then_some(RING),
                    system,
                    apps,
                    env: &[],
                }
                .start(cp, logs)
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self {
            processes,
            sharded: n > 0,
            system: system.to_owned(),
        })
    }

    /// Waits until the processes' caches hold all `generators` between them, each cache only
    /// its own (every shard available to the sharder), every work queue is empty and every
    /// generator was reconciled at least once; returns what each holds.
    pub async fn settle(&self, cp: &ControlPlane, generators: u64) -> anyhow::Result<Vec<Holding>> {
        let what = format!(
            "{} processes to cache and reconcile {generators} generators between them",
            self.processes.len()
        );
        let calm = &AtomicUsize::new(0);
        let sharded = self.sharded;
        let settled = wait_for(Duration::from_secs(900), &what, || async move {
            let held = self.holdings().await.ok()?;
            let cached: u64 = held.iter().map(|(h, _)| h.generators).sum();
            let reconciled: f64 = held.iter().map(|(_, s)| s.reconciles).sum();
            let idle = held.iter().all(|(_, s)| s.queued == 0.0);
            let shards_seen = held.iter().map(|(_, s)| s.shards as usize).max();
            let ready = cached == generators
                && idle
                && reconciled >= generators as f64
                && (!sharded || shards_seen == Some(self.processes.len()));
            // Twice in a row, 50 ms apart: not a moment between a drain and an assignment.
            let times = if ready {
                calm.fetch_add(1, Ordering::Relaxed) + 1
            } else {
                calm.store(0, Ordering::Relaxed);
                0
            };
            (times >= 2).then_some(held)
        })
        .await
        .map_err(|e| anyhow::anyhow!("{e}\n{}", self.logs()))?;
        let leader = lease_holder(
            &Api::<Lease>::namespaced(cp.client(), &self.system),
            "sharder",
        )
        .await?
        .unwrap_or_default();
        Ok(settled
            .into_iter()
            .map(|(mut h, _)| {
                h.leader = leader.starts_with(&h.id);
                h
            })
            .collect())
    }

    async fn holdings(&self) -> anyhow::Result<Vec<(Holding, Signals)>> {
        let mut held = Vec::new();
        for process in &self.processes {
            let page = process.metrics().await?;
            let store = "kubeward_informer_store_objects";
            // A shard's cache selects its shard label; the sharder's metadata caches do not.
            let selector = kubeward::sharding::shard_label(RING);
            let (mine, sharder) = page
                .lines()
                .filter(|l| l.starts_with(store) && !l.contains("/leases"))
                .fold((0.0, 0.0), |(mine, sharder), l| {
                    let v = l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
                    let v = v.unwrap_or(0.0);
                    if !l.contains("configmapgenerators") {
                        // The generated ConfigMaps: the shard's own, or the sharder's.
                        (
                            mine,
                            if l.contains(&selector) {
                                sharder
                            } else {
                                sharder + v
                            },
                        )
                    } else if !self.sharded || l.contains(&selector) {
                        (mine + v, sharder)
                    } else {
                        (mine, sharder + v)
                    }
                });
            let sharder = if self.sharded { sharder } else { 0.0 };
            held.push((
                Holding {
                    id: process.id.clone(),
                    generators: mine as u64,
                    sharder_objects: sharder as u64,
                    leader: false,
                },
                Signals {
                    reconciles: sum(
                        &page,
                        "controller_runtime_reconcile_total",
                        &[&format!("controller=\"{RING}\"")],
                    ),
                    queued: sum(&page, "workqueue_depth", &[]),
                    shards: sum(&page, "kubeward_sharder_shards", &[]),
                },
            ));
        }
        Ok(held)
    }

    /// The processes' log tails.
    pub fn logs(&self) -> String {
        self.processes
            .iter()
            .map(Process::log)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Stops every process with SIGTERM.
    pub async fn stop(self) -> anyhow::Result<()> {
        for process in self.processes {
            process.stop().await?;
        }
        Ok(())
    }
}

/// What a process's metrics say about its progress.
struct Signals {
    reconciles: f64,
    queued: f64,
    shards: f64,
}

/// The generators of `api` not labelled with one of `shards` (for an unsharded run: none).
pub async fn unassigned(api: &Api<ConfigMapGenerator>, shards: &[String]) -> anyhow::Result<usize> {
    let label = kubeward::sharding::shard_label(RING);
    let list = api.list_metadata(&ListParams::default()).await?;
    Ok(list
        .items
        .iter()
        .filter(|g| {
            let shard = g.metadata.labels.as_ref().and_then(|l| l.get(&label));
            !shard.is_some_and(|s| shards.contains(s))
        })
        .count())
}
