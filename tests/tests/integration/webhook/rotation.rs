//! cert-manager rotates the serving certificate while the API server sends admission requests:
//! none of them fails.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use kubeward::testing::{ControlPlane, presents, wait_for};
use kubeward::tls::Authority;
use kubeward::webhook;
use parking_lot::Mutex;

use super::{
    MAX_VALUE, config_map, manager, refusal, remove_configurations, validator_in,
    wait_until_validated,
};

/// Clients sending admission requests at once.
const WRITERS: usize = 4;
/// Requests the stream must have answered after the new certificate is served.
const AFTER_ROTATION: usize = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_the_certificate_during_a_stream_of_admission_requests_fails_none()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("webhook-rotation").await?;
    let dir = tempfile::tempdir()?;
    let ca = Authority::generate("rotation test CA")?;
    let hosts = ["127.0.0.1", "localhost"];
    ca.issue(&hosts)?.write_to(dir.path())?;
    let config = webhook::Config::default()
        .cert_dir(dir.path())
        .ca_bundle(ca.certificate_pem())
        .reload_period(Duration::from_millis(50));
    let (manager, port) = manager(cp.client(), &ns, config).await?;
    manager.add_webhook(validator_in(&ns))?;
    let stop = manager.shutdown_token();
    let run = tokio::spawn(manager.run());
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    wait_until_validated(&api).await?;

    // Each writer alternates an object the validator admits and one it refuses; anything else
    // (a TLS or connection error, a wrong verdict) is a failure.
    let answered = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let done = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for writer in 0..WRITERS {
        let (api, answered, failures, done) = (
            api.clone(),
            Arc::clone(&answered),
            Arc::clone(&failures),
            Arc::clone(&done),
        );
        writers.push(tokio::spawn(async move {
            let mut n = 0;
            while !done.load(Ordering::SeqCst) {
                n += 1;
                let long = n % 2 == 0;
                let value = if long {
                    "v".repeat(MAX_VALUE + 1)
                } else {
                    "ok".into()
                };
                let cm = config_map(&format!("stream-{writer}-{n}"), &value);
                let refused = refusal(&api, &cm, &PostParams::default()).await;
                let expected = match (&refused, long) {
                    (None, false) => true,
                    (Some(message), true) => message.contains("at most 16 are allowed"),
                    _ => false,
                };
                if !expected {
                    failures.lock().push(format!("{cm:?}: {refused:?}"));
                }
                answered.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    let count = || answered.load(Ordering::SeqCst);
    wait_for(
        Duration::from_secs(30),
        "the stream to be under way",
        || async { (count() >= 20).then_some(()) },
    )
    .await?;

    let rotated = ca.issue(&hosts)?;
    rotated.write_to(dir.path())?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    wait_for(
        Duration::from_secs(10),
        "new handshakes to present the rotated certificate",
        || async {
            presents(
                addr,
                "127.0.0.1",
                ca.certificate_pem(),
                rotated.certificate_pem(),
            )
            .await
            .ok()
            .filter(|presented| *presented)
        },
    )
    .await?;
    let at_rotation = count();
    wait_for(
        Duration::from_secs(60),
        "the stream to go on after the rotation",
        || async { (count() >= at_rotation + AFTER_ROTATION).then_some(()) },
    )
    .await?;
    done.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.await?;
    }
    let failures = failures.lock().clone();
    assert!(
        failures.is_empty(),
        "{} of {} requests failed: {failures:#?}",
        failures.len(),
        count()
    );

    stop.cancel();
    run.await??;
    remove_configurations(&cp.client(), &ns).await;
    Ok(())
}
