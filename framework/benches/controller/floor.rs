//! The floor of the watch table: decoding the same watch events' bytes into the type, and
//! nothing else (no client, no cache, no queue, no reconcile).

use std::hint::black_box;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::core::WatchEvent;

use super::{config_map, fake_with, fast};

/// The fastest of three passes decoding the ADDED events of `fast()` freshly created
/// ConfigMaps, each line as the fake API server sends it; `None` if the fake refuses them.
pub(super) fn decode() -> Option<Duration> {
    let fake = fake_with(&[]);
    let lines: Vec<Vec<u8>> = (0..fast())
        .map(|i| {
            let stored = fake.seed(&config_map(format!("fast-{i}"))).ok()?;
            // As the fake (and the real server) writes it: the type first.
            let mut line = br#"{"type":"ADDED","object":"#.to_vec();
            line.extend(serde_json::to_vec(&stored).ok()?);
            line.extend(b"}\n");
            Some(line)
        })
        .collect::<Option<_>>()?;
    (0..3)
        .map(|_| {
            let started = tokio::time::Instant::now();
            for line in &lines {
                let event: WatchEvent<ConfigMap> = serde_json::from_slice(line).ok()?;
                black_box(event);
            }
            Some(started.elapsed())
        })
        .min()
        .flatten()
}
