//! The floor of the watch table: decoding the same watch events' bytes into the type, and
//! nothing else (no client, no cache, no queue, no reconcile).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::core::WatchEvent;

use super::{config_map, fake_with, fast};

/// The floor's two readings, each the fastest of three passes over the same lines.
pub(super) struct Decode {
    /// Each event decoded and its object kept, as any cache must keep it: the process's memory
    /// grows by every object, as it does for both controllers.
    pub(super) kept: Option<Duration>,
    /// Each event decoded and dropped at once, so that the allocator hands the next event the
    /// same warm memory: no cache can do this; shown for reference.
    pub(super) dropped: Option<Duration>,
}

/// Decodes the ADDED events of `fast()` freshly created ConfigMaps, each line as the fake API
/// server sends it; `None` readings if the fake refuses them.
pub(super) fn decode() -> Decode {
    let Some(lines) = lines() else {
        return Decode {
            kept: None,
            dropped: None,
        };
    };
    let fastest = |keep: bool| {
        (0..3)
            .map(|_| {
                let mut kept = Vec::with_capacity(if keep { lines.len() } else { 0 });
                let started = tokio::time::Instant::now();
                for line in &lines {
                    let event: WatchEvent<ConfigMap> = serde_json::from_slice(line).ok()?;
                    let event = Arc::new(black_box(event));
                    if keep {
                        kept.push(event);
                    }
                }
                let elapsed = started.elapsed();
                drop(kept);
                Some(elapsed)
            })
            .min()
            .flatten()
    };
    Decode {
        kept: fastest(true),
        dropped: fastest(false),
    }
}

/// The events' lines, as the fake (and the real server) writes them: the type first.
fn lines() -> Option<Vec<Vec<u8>>> {
    let fake = fake_with(&[]);
    (0..fast())
        .map(|i| {
            let stored = fake.seed(&config_map(format!("fast-{i}"))).ok()?;
            let mut line = br#"{"type":"ADDED","object":"#.to_vec();
            line.extend(serde_json::to_vec(&stored).ok()?);
            line.extend(b"}\n");
            Some(line)
        })
        .collect()
}
