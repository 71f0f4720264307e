//! Feeds untrusted bytes to the informer's parsers, for the fuzz targets and their replay.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Frame;
use k8s_openapi::api::core::v1::ConfigMap;

use super::decode::Decoder;
use super::transforms::Transforms;
use super::watch_lines::WatchLines;
use super::{Config, Stats};

/// Splits `data` into the chunks of a watch body (the first byte says how long each is), reads
/// its lines as the reflector does, gathering backlog batches as decoding ahead does, and
/// decodes every line as a ConfigMap watch event, with a default and with a compact store.
pub(crate) fn watch_stream(data: &[u8]) {
    let (&step, rest) = data.split_first().unwrap_or((&0, &[]));
    let step = usize::from(step % 64) + 1;
    let frames: Vec<Result<Frame<Bytes>, std::io::Error>> = rest
        .chunks(step)
        .map(|chunk| Ok(Frame::data(Bytes::copy_from_slice(chunk))))
        .collect();
    let body = http_body_util::StreamBody::new(futures::stream::iter(frames));
    let decoders = decoders();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("invariant: a current-thread runtime can be built");
    runtime.block_on(async {
        let mut lines = WatchLines::new(body);
        let mut batch = Vec::new();
        loop {
            lines.gather(&mut batch, 4, 1024).await;
            for line in batch.drain(..) {
                decode_line(&decoders, &line);
            }
            match lines.next(Duration::from_millis(20)).await {
                Ok(Some(line)) => decode_line(&decoders, &line),
                Ok(None) | Err(_) => break,
            }
        }
        let _ = lines.failure();
    });
}

/// Decodes `data` as a list page: every item of its `items` as a ConfigMap.
pub(crate) fn list_page(data: &[u8]) {
    let Ok(serde_json::Value::Object(mut page)) = serde_json::from_slice(data) else {
        return;
    };
    let Some(serde_json::Value::Array(items)) = page.remove("items") else {
        return;
    };
    let decoders = decoders();
    for item in items {
        for decoder in &decoders {
            let _ = decoder.decode(item.clone());
        }
    }
}

/// Checks `data` as a label selector and as a field selector.
pub(crate) fn selectors(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = super::selector::check_labels(&text);
    let _ = super::selector::check_fields(&text);
}

fn decoders() -> [Decoder<ConfigMap>; 2] {
    let plain = Config::default();
    let compact = Config {
        compact_hot: Some(1),
        ..Config::default()
    };
    [&plain, &compact].map(|config| {
        Decoder::new(
            "/api/v1/configmaps",
            config,
            Arc::new(Transforms::new(true)),
            Arc::new(Stats::default()),
        )
    })
}

fn decode_line(decoders: &[Decoder<ConfigMap>], line: &[u8]) {
    for decoder in decoders {
        let _ = decoder.event(line, false);
        let _ = decoder.event(line, true);
    }
}
