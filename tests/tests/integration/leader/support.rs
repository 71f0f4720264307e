//! Candidates, recorded terms and the fenced worker shared by the leader-election tests.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};
use kubeward::leader::{Config, LeaderElector, Leadership};
use kubeward::testing::wait_for;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub(super) const LEASE: Duration = Duration::from_secs(2);
pub(super) const DEADLINE: Duration = Duration::from_millis(1500);
pub(super) const RETRY: Duration = Duration::from_millis(300);
pub(super) const GRACE: Duration = Duration::from_millis(500);
/// Added to computed bounds: the acquire jitter (up to 0.2 retry periods) and a few request
/// round trips to kube-apiserver on a busy two-core machine.
pub(super) const SLACK: Duration = Duration::from_millis(500);
pub(super) const LEASE_NAME: &str = "election";
pub(super) const FENCE: &str = "fence";

pub(super) fn config() -> Config {
    Config::default()
        .lease_duration(LEASE)
        .renew_deadline(DEADLINE)
        .retry_period(RETRY)
        .health_grace(GRACE)
}

/// One recorded term: who led, from when, until when (`None` while open).
#[derive(Clone, Debug)]
pub(super) struct Recorded {
    pub(super) identity: Arc<str>,
    pub(super) started_at: Instant,
    pub(super) ended_at: Option<Instant>,
}

/// Every term of every candidate in a test, by local monotonic time.
#[derive(Clone, Default)]
pub(super) struct Terms(pub(super) Arc<Mutex<Vec<Recorded>>>);

impl Terms {
    pub(super) fn all(&self) -> Vec<Recorded> {
        self.0
            .lock()
            .expect("no panics while holding the lock")
            .clone()
    }

    /// The terms of `identity`, in order.
    pub(super) fn of(&self, identity: &str) -> Vec<Recorded> {
        self.all()
            .into_iter()
            .filter(|t| &*t.identity == identity)
            .collect()
    }

    /// Closes terms left open by killed candidates: they end at their renew deadline.
    pub(super) fn close_killed(&self, killed: &Leadership) {
        let Some(term) = killed.status().term else {
            return;
        };
        let identity = killed.identity();
        for recorded in self
            .0
            .lock()
            .expect("no panics while holding the lock")
            .iter_mut()
        {
            if recorded.identity == identity && recorded.started_at == term.started_at {
                recorded.ended_at = Some(term.end());
            }
        }
    }

    /// Fails if two terms overlap or one is still open.
    pub(super) fn assert_no_overlap(&self) {
        let terms = self.all();
        for (i, a) in terms.iter().enumerate() {
            let a_end = a
                .ended_at
                .unwrap_or_else(|| panic!("term still open: {a:?}"));
            for b in &terms[i + 1..] {
                let b_end = b
                    .ended_at
                    .unwrap_or_else(|| panic!("term still open: {b:?}"));
                assert!(
                    !(a.started_at < b_end && b.started_at < a_end),
                    "terms overlap: {a:?} and {b:?}"
                );
            }
        }
    }
}

/// Which counter value each candidate tried to write, and when the write began.
#[derive(Clone, Default)]
pub(super) struct Attempts(pub(super) Arc<Mutex<HashMap<Attempt, Instant>>>);

/// A writer's identity and the counter value it tried to write.
pub(super) type Attempt = (Arc<str>, u64);

/// One replica: an elector task and, optionally, a worker writing through the fence.
pub(super) struct Candidate {
    pub(super) identity: Arc<str>,
    pub(super) leadership: Leadership,
    pub(super) election: JoinHandle<()>,
    pub(super) stop: oneshot::Sender<()>,
    pub(super) worker: Option<JoinHandle<()>>,
}

impl Candidate {
    pub(super) fn start(client: Client, ns: &str, terms: &Terms) -> anyhow::Result<Self> {
        let (started, stopped) = (terms.clone(), terms.clone());
        let elector = LeaderElector::new(client, ns, LEASE_NAME, config())?;
        let identity: Arc<str> = elector.identity().into();
        let (start_id, stop_id) = (identity.clone(), identity.clone());
        let elector = elector
            .on_started_leading(move |term| {
                started
                    .0
                    .lock()
                    .expect("no panics while holding the lock")
                    .push(Recorded {
                        identity: start_id.clone(),
                        started_at: term.started_at,
                        ended_at: None,
                    });
            })
            .on_stopped_leading(move |term| {
                let mut terms = stopped.0.lock().expect("no panics while holding the lock");
                if let Some(recorded) = terms
                    .iter_mut()
                    .find(|t| t.identity == stop_id && t.started_at == term.started_at)
                {
                    recorded.ended_at = Some(term.end());
                }
            });
        let leadership = elector.leadership();
        let (stop, on_stop) = oneshot::channel::<()>();
        let election = tokio::spawn(elector.run(async {
            on_stop.await.ok();
        }));
        Ok(Self {
            identity,
            leadership,
            election,
            stop,
            worker: None,
        })
    }

    pub(super) fn with_fenced_worker(
        mut self,
        configmaps: Api<ConfigMap>,
        attempts: &Attempts,
    ) -> Self {
        self.worker = Some(tokio::spawn(fenced_worker(
            self.leadership.clone(),
            configmaps,
            attempts.clone(),
        )));
        self
    }

    /// Shuts down gracefully: the elector releases the Lease and returns.
    pub(super) async fn release(self) -> anyhow::Result<Leadership> {
        self.stop.send(()).ok();
        tokio::time::timeout(DEADLINE + SLACK, self.election)
            .await
            .map_err(|_| {
                anyhow::anyhow!(
                    "the elector did not return within the renew deadline after shutdown"
                )
            })??;
        if let Some(worker) = self.worker {
            tokio::time::timeout(DEADLINE + SLACK, worker)
                .await
                .map_err(|_| {
                    anyhow::anyhow!("the worker did not stop after its elector stopped")
                })??;
        }
        Ok(self.leadership)
    }

    /// Dies without releasing, like a killed process.
    pub(super) fn kill(self) -> Leadership {
        self.election.abort();
        if let Some(worker) = self.worker {
            worker.abort();
        }
        self.leadership
    }
}

/// While leading, increments the fence `ConfigMap`'s counter under a resourceVersion
/// precondition and appends its identity to the log.
pub(super) async fn fenced_worker(
    mut leadership: Leadership,
    configmaps: Api<ConfigMap>,
    attempts: Attempts,
) {
    let identity = leadership.identity();
    while leadership.leading().await.is_ok() {
        while leadership.is_leader() {
            if let Ok(mut fence) = configmaps.get(FENCE).await {
                let data = fence.data.get_or_insert_with(Default::default);
                let next = data
                    .get("counter")
                    .and_then(|c| c.parse::<u64>().ok())
                    .unwrap_or(0)
                    + 1;
                let log = data.entry("log".to_owned()).or_default();
                log.push_str(&identity);
                log.push(' ');
                data.insert("counter".to_owned(), next.to_string());
                if !leadership.is_leader() {
                    break;
                }
                attempts
                    .0
                    .lock()
                    .expect("no panics while holding the lock")
                    .insert((identity.clone(), next), Instant::now());
                // A conflict means someone else wrote in between: fine, that is the fence working.
                let _ = configmaps
                    .replace(FENCE, &PostParams::default(), &fence)
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

pub(super) async fn create_fence(configmaps: &Api<ConfigMap>) -> anyhow::Result<()> {
    let fence = ConfigMap {
        metadata: ObjectMeta {
            name: Some(FENCE.into()),
            ..ObjectMeta::default()
        },
        data: Some(
            [
                ("counter".to_owned(), "0".to_owned()),
                ("log".to_owned(), String::new()),
            ]
            .into(),
        ),
        ..ConfigMap::default()
    };
    configmaps.create(&PostParams::default(), &fence).await?;
    Ok(())
}

pub(super) async fn fence_counter(configmaps: &Api<ConfigMap>) -> u64 {
    let fence = configmaps.get(FENCE).await.ok();
    fence
        .and_then(|f| f.data?.get("counter")?.parse().ok())
        .unwrap_or(0)
}

/// Waits until exactly one of `candidates` leads; returns its index.
pub(super) async fn leader_among(
    candidates: &[Candidate],
    within: Duration,
    what: &str,
) -> anyhow::Result<usize> {
    Ok(wait_for(within, what, || async {
        let leading: Vec<usize> = (0..candidates.len())
            .filter(|i| candidates[*i].leadership.is_leader())
            .collect();
        assert!(
            leading.len() <= 1,
            "two candidates lead at once: {leading:?}"
        );
        leading.first().copied()
    })
    .await?)
}

/// When `identity` started its first term, waiting for it to lead within `within`.
pub(super) async fn term_start(
    terms: &Terms,
    identity: &str,
    within: Duration,
    what: &str,
) -> anyhow::Result<Instant> {
    Ok(wait_for(within, what, || async {
        terms.of(identity).first().map(|t| t.started_at)
    })
    .await?)
}

pub(super) async fn lease(api: &Api<Lease>) -> anyhow::Result<(Option<String>, i32)> {
    let spec = api.get(LEASE_NAME).await?.spec.unwrap_or_default();
    Ok((
        spec.holder_identity.filter(|h| !h.is_empty()),
        spec.lease_transitions.unwrap_or(0),
    ))
}

/// Counts, every 10 ms, how many of `all` believe they lead; returns the most seen at once.
pub(super) fn sample_leaders(
    all: Arc<Mutex<Vec<Leadership>>>,
) -> (oneshot::Sender<()>, JoinHandle<usize>) {
    let (stop, mut stopped) = oneshot::channel::<()>();
    let sampler = tokio::spawn(async move {
        let mut most = 0;
        loop {
            let leading = all
                .lock()
                .expect("no panics while holding the lock")
                .iter()
                .filter(|l| l.is_leader())
                .count();
            most = most.max(leading);
            tokio::select! {
                _ = &mut stopped => return most,
                () = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
        }
    });
    (stop, sampler)
}

/// Waits until `leadership` has renewed at least once after taking the Lease.
pub(super) async fn renewed(leadership: &Leadership) -> anyhow::Result<()> {
    Ok(
        wait_for(DEADLINE, "the leader to renew its Lease", || async {
            let term = leadership.status().term?;
            (term.renewed_at > term.started_at).then_some(())
        })
        .await?,
    )
}
