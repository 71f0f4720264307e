//! Keeps an operator's health and readiness checks, and answers whether it is healthy and ready.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use http::StatusCode;
use parking_lot::Mutex;

/// A named probe: `Ok` when healthy (or ready), `Err(reason)` otherwise.
pub type Check = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The health and readiness checks, and whether shutdown has begun.
#[derive(Default)]
pub(crate) struct Probes {
    health: Mutex<Vec<(String, Check)>>,
    ready: Mutex<Vec<(String, Check)>>,
    shutting_down: AtomicBool,
}

impl std::fmt::Debug for Probes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Probes")
            .field(
                "health",
                &self
                    .health
                    .lock()
                    .iter()
                    .map(|(n, _)| n.clone())
                    .collect::<Vec<_>>(),
            )
            .field(
                "ready",
                &self
                    .ready
                    .lock()
                    .iter()
                    .map(|(n, _)| n.clone())
                    .collect::<Vec<_>>(),
            )
            .field("shutting_down", &self.shutting_down)
            .finish()
    }
}

impl Probes {
    pub(crate) fn add_health(&self, name: String, check: Check) {
        self.health.lock().push((name, check));
    }

    pub(crate) fn add_ready(&self, name: String, check: Check) {
        self.ready.lock().push((name, check));
    }

    pub(crate) fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    pub(crate) fn healthz(&self) -> (StatusCode, String) {
        report(&self.health.lock(), None)
    }

    pub(crate) fn readyz(&self) -> (StatusCode, String) {
        let shutting_down = self
            .shutting_down
            .load(Ordering::SeqCst)
            .then_some("shutting down");
        report(&self.ready.lock(), shutting_down)
    }
}

/// 200 `ok` when every check passes; 503 listing each failing check otherwise.
fn report(checks: &[(String, Check)], extra_failure: Option<&str>) -> (StatusCode, String) {
    let mut failures: Vec<String> = checks
        .iter()
        .filter_map(|(name, check)| check().err().map(|why| format!("[-] {name}: {why}")))
        .collect();
    failures.extend(extra_failure.map(|why| format!("[-] {why}")));
    if failures.is_empty() {
        (StatusCode::OK, "ok".into())
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, failures.join("\n") + "\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing(why: &'static str) -> Check {
        Arc::new(move || Err(why.to_owned()))
    }

    #[test]
    fn readyz_names_every_failing_check_and_shutdown() {
        let probes = Probes::default();
        probes.add_ready("informers".into(), failing("ConfigMap cache not synced"));
        probes.add_ready("fine".into(), Arc::new(|| Ok(())));
        probes.begin_shutdown();
        let (status, body) = probes.readyz();
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body,
            "[-] informers: ConfigMap cache not synced\n[-] shutting down\n"
        );
    }

    #[test]
    fn healthz_is_ok_when_every_check_passes() {
        let probes = Probes::default();
        probes.add_health("ping".into(), Arc::new(|| Ok(())));
        assert_eq!(probes.healthz(), (StatusCode::OK, "ok".to_owned()));
    }
}
