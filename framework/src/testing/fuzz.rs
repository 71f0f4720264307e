//! Entry points of the fuzz targets: each feeds arbitrary bytes to one input surface and must
//! never panic; `fuzz/` runs them under libFuzzer and the test suite replays their corpora.
//!
//! Every byte these surfaces parse comes from the network (the API server, webhook callers)
//! or from the user (flags, selectors).

use std::time::Duration;

use bytes::Bytes;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::core::admission::AdmissionRequest;

use crate::conversion::{Converter, answer_body};
use crate::webhook::{Admission, Defaulter, Validator};

/// A fuzz target: takes any bytes, never panics.
pub type Target = fn(&[u8]);

/// The fuzz targets by name, as `fuzz/fuzz_targets/NAME.rs` and `fuzz/corpus/NAME/` call them.
pub const TARGETS: &[(&str, Target)] = &[
    ("watch_stream", watch_stream),
    ("list_page", list_page),
    ("selectors", selectors),
    ("flags", flags),
    ("admission_review", admission_review),
    ("conversion_review", conversion_review),
    ("fake_api_server", fake_api_server),
];

/// A watch response body in chunks (the first byte sets their size), split into lines, gathered
/// in backlog batches and decoded as ConfigMap events, with and without a compact store.
pub fn watch_stream(data: &[u8]) {
    crate::informer::fuzz::watch_stream(data);
}

/// A list page whose `items` are decoded as ConfigMaps.
pub fn list_page(data: &[u8]) {
    crate::informer::fuzz::list_page(data);
}

/// The text as a label selector and as a field selector.
pub fn selectors(data: &[u8]) {
    crate::informer::fuzz::selectors(data);
}

/// The lines of the text as command-line arguments of [`Flags`](crate::manager::Flags) (so
/// the duration and bind-address values among them), and the configuration they describe.
pub fn flags(data: &[u8]) {
    use clap::Parser as _;
    let text = String::from_utf8_lossy(data);
    let args = std::iter::once("operator").chain(text.lines());
    if let Ok(flags) = crate::manager::Flags::try_parse_from(args) {
        let _ = flags.config();
    }
}

struct Allow;
impl Validator<ConfigMap> for Allow {}

struct Label;
impl Defaulter<ConfigMap> for Label {
    async fn default(
        &self,
        object: &mut ConfigMap,
        _: &AdmissionRequest<ConfigMap>,
    ) -> crate::webhook::Verdict {
        object
            .metadata
            .labels
            .get_or_insert_default()
            .insert("fuzzed".into(), "true".into());
        crate::webhook::Verdict::allow()
    }
}

/// The bytes as the body of an `AdmissionReview` posted to a ConfigMap validator and to a
/// ConfigMap defaulter (the routes' whole handling after the HTTP checks).
pub fn admission_review(data: &[u8]) {
    let routes = [
        Admission::validator::<ConfigMap>(Allow).route,
        Admission::defaulter::<ConfigMap>(Label).route,
    ];
    runtime().block_on(async {
        for route in &routes {
            let _ = (route.handler)(Bytes::copy_from_slice(data)).await;
        }
    });
}

/// The bytes as the body of a `ConversionReview` for a converter of ConfigMaps.
pub fn conversion_review(data: &[u8]) {
    let converter = Converter::with_hub::<ConfigMap>().build();
    let _ = answer_body(&[converter], data);
}

/// A request to the fake API server, with ConfigMaps registered: the first line is
/// `METHOD PATH?QUERY`, the rest the body. Its answer is read whole, or for 20 ms (a watch).
pub fn fake_api_server(data: &[u8]) {
    use http_body_util::BodyExt as _;
    let text = String::from_utf8_lossy(data);
    let (head, body) = text.split_once('\n').unwrap_or((&text, ""));
    let (method, path) = head.split_once(' ').unwrap_or(("GET", head));
    let Ok(request) = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body.as_bytes().to_vec())
    else {
        return;
    };
    runtime().block_on(async {
        let fake = super::FakeApiServer::new();
        fake.register::<ConfigMap>();
        let answer = async {
            let response = fake
                .client()
                .send(request.map(kube::client::Body::from))
                .await
                .ok()?;
            response.into_body().collect().await.ok()
        };
        let _ = tokio::time::timeout(Duration::from_millis(20), answer).await;
    });
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("invariant: a current-thread runtime can be built")
}

#[cfg(test)]
mod tests {
    use super::TARGETS;

    /// Every file of every target's corpus in `fuzz/corpus/`, through its target: the inputs
    /// the fuzzer kept (and the crashes it found, once fixed) stay tested on stable.
    #[test]
    fn every_fuzz_corpus_replays_without_a_panic() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
        let mut replayed = 0;
        for (name, target) in TARGETS {
            let dir = root.join(name);
            let entries = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("the corpus of {name} at {}: {e}", dir.display()));
            let mut files = 0;
            for entry in entries {
                let path = entry.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                let replay = std::panic::catch_unwind(|| target(&data));
                assert!(replay.is_ok(), "{name} panicked on {}", path.display());
                files += 1;
            }
            assert!(files > 0, "the corpus of {name} is empty");
            replayed += files;
        }
        assert!(replayed >= TARGETS.len());
    }
}
