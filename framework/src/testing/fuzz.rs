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

/// The fuzz targets by name, as `fuzz/fuzz_targets/NAME.rs` and `corpus/NAME/` (shipped with the
/// crate; `fuzz/corpus` links to it) call them.
pub const TARGETS: &[(&str, Target)] = &[
    ("watch_stream", watch_stream),
    ("list_page", list_page),
    ("selectors", selectors),
    ("flags", flags),
    ("admission_review", admission_review),
    ("conversion_review", conversion_review),
    ("admission_http", admission_http),
    ("conversion_http", conversion_http),
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

/// The lines of the text as command-line arguments of [`Flags`](crate::cli::Flags) (so
/// the duration and bind-address values among them), and the configuration they describe.
pub fn flags(data: &[u8]) {
    use clap::Parser as _;
    let text = String::from_utf8_lossy(data);
    let args = std::iter::once("operator").chain(text.lines());
    if let Ok(flags) = crate::cli::Flags::try_parse_from(args) {
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

/// The largest body the routers of the HTTP targets read: small, so that fuzzed bodies also
/// take the refusal (413) and drain paths.
const FUZZ_BODY_LIMIT: usize = 2048;

/// An `AdmissionReview` request through the webhook server's router, the service its TLS
/// connections run, without a socket: the first byte picks HTTP/1.1 or HTTP/2 (bit 0), the
/// validator or the defaulter of ConfigMaps (bit 1), and whether the body (the other bytes)
/// arrives whole or in frames of `8 × (byte >> 2)` bytes. The answer must be clear: 200 with a
/// review, or a 4xx whose body says why.
pub fn admission_http(data: &[u8]) {
    let _ = admission_http_status(data);
}

/// [`admission_http`], with the answer's status (none for no bytes).
fn admission_http_status(data: &[u8]) -> Option<http::StatusCode> {
    let routes = [
        Admission::validator::<ConfigMap>(Allow).route,
        Admission::defaulter::<ConfigMap>(Label).route,
    ];
    let (&first, body) = data.split_first()?;
    let path = routes[usize::from(first >> 1 & 1)].path.clone();
    Some(through_router(&routes, &path, first, body))
}

/// A `ConversionReview` request through the webhook server's router to a converter of
/// ConfigMaps at `/convert` (the route the manager mounts); the first byte as in
/// [`admission_http`], but for bit 1.
pub fn conversion_http(data: &[u8]) {
    let _ = conversion_http_status(data);
}

/// [`conversion_http`], with the answer's status (none for no bytes).
fn conversion_http_status(data: &[u8]) -> Option<http::StatusCode> {
    let converters: std::sync::Arc<[Converter]> =
        [Converter::with_hub::<ConfigMap>().build()].into();
    let route = crate::webhook::Route::new(crate::crd::CONVERSION_PATH, move |body: Bytes| {
        let (status, body) = answer_body(&converters, &body);
        let mut response = http::Response::new(Bytes::from(body));
        *response.status_mut() = status;
        std::future::ready(response)
    });
    let (&first, body) = data.split_first()?;
    Some(through_router(
        &[route],
        crate::crd::CONVERSION_PATH,
        first,
        body,
    ))
}

/// Posts `body` to `path` of a router of `routes`, framed as `shape` says (see
/// [`admission_http`]), and checks that the answer is clear; its status.
fn through_router(
    routes: &[crate::webhook::Route],
    path: &str,
    shape: u8,
    body: &[u8],
) -> http::StatusCode {
    use http_body_util::{BodyExt as _, StreamBody};
    use hyper::body::Frame;
    let webhooks = crate::webhook::Router::new(routes, FUZZ_BODY_LIMIT, Duration::from_secs(1));
    let version = if shape & 1 == 0 {
        http::Version::HTTP_11
    } else {
        http::Version::HTTP_2
    };
    let frame_size = usize::from(shape >> 2) * 8;
    let frames: Vec<Bytes> = if frame_size == 0 {
        vec![Bytes::copy_from_slice(body)]
    } else {
        body.chunks(frame_size)
            .map(Bytes::copy_from_slice)
            .collect()
    };
    let frames = futures::stream::iter(
        frames
            .into_iter()
            .map(|frame| Ok::<_, std::convert::Infallible>(Frame::data(frame))),
    );
    let request = http::Request::post(path)
        .version(version)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(StreamBody::new(frames))
        .expect("invariant: a POST with a static path and header builds");
    let (status, answer) = runtime().block_on(async {
        let response = webhooks.answer(request).await;
        let status = response.status();
        let Ok(answer) = response.into_body().collect().await;
        (status, answer.to_bytes())
    });
    assert_clear(status, &answer);
    status
}

/// Panics unless `status` and `body` are a clear answer: 200 with a review (a JSON object with
/// a `response`), or a 4xx whose JSON body holds a message (the router's `error`, or the
/// review's `status` or `result` message).
fn assert_clear(status: http::StatusCode, body: &[u8]) {
    let answer: serde_json::Value = serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("a {status} answer that is not JSON ({e}): {body:?}"));
    let response = &answer["response"];
    if status == http::StatusCode::OK {
        assert!(
            response.is_object(),
            "a 200 answer without a review: {answer}"
        );
        return;
    }
    assert!(status.is_client_error(), "a {status} answer: {answer}");
    let message = [
        &answer["error"],
        &response["status"]["message"],
        &response["result"]["message"],
    ]
    .into_iter()
    .find_map(serde_json::Value::as_str);
    assert!(
        message.is_some_and(|m| !m.is_empty()),
        "a {status} answer that does not say why: {answer}"
    );
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
    use super::{TARGETS, admission_http_status, assert_clear, conversion_http_status};

    /// The seeds of the HTTP targets through the router, by expected status: the targets reach
    /// the review handlers (200), the body limit (413) and the handlers' refusals (400).
    #[test]
    fn the_http_targets_answer_their_seeds_through_the_router() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
        let seeds = [
            ("admission_http/create_validator_http1", 200),
            (
                "admission_http/create_defaulter_http2_in_8_byte_frames",
                200,
            ),
            (
                "admission_http/bad_object_defaulter_http1_in_16_byte_frames",
                200,
            ),
            ("admission_http/over_the_limit_http2", 413),
            ("conversion_http/review_http1", 200),
            ("conversion_http/review_http2_in_8_byte_frames", 200),
            ("conversion_http/odd_http1", 400),
            (
                "conversion_http/over_the_limit_http1_in_64_byte_frames",
                413,
            ),
        ];
        for (seed, expected) in seeds {
            let data = std::fs::read(root.join(seed)).unwrap();
            let status = if seed.starts_with("admission") {
                admission_http_status(&data)
            } else {
                conversion_http_status(&data)
            };
            assert_eq!(status.map(|s| s.as_u16()), Some(expected), "{seed}");
        }
    }

    #[test]
    fn an_unclear_answer_fails_the_http_targets() {
        for (status, body) in [
            (500, r#"{"error":"boom"}"#),
            (400, r#"{"error":""}"#),
            (413, "too large"),
            (200, r#"{"error":"no review"}"#),
        ] {
            let status = http::StatusCode::from_u16(status).unwrap();
            let check = std::panic::catch_unwind(|| assert_clear(status, body.as_bytes()));
            assert!(check.is_err(), "{status} {body} passed as clear");
        }
    }

    /// Every file of every target's corpus in `corpus/`, through its target: the inputs
    /// the fuzzer kept (and the crashes it found, once fixed) stay tested on stable.
    #[test]
    fn every_fuzz_corpus_replays_without_a_panic() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
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
