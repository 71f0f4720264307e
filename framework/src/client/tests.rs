//! The manager's client against a small HTTP server: its requests show in the log.

use std::io;
use std::sync::{Arc, Mutex};

use http::{Response, StatusCode};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use tracing::Instrument as _;

use super::{HealthChecks, build_client};
use crate::metrics::Metrics;

/// What a subscriber wrote, for the test to read.
#[derive(Clone, Default)]
struct Written(Arc<Mutex<Vec<u8>>>);

impl io::Write for Written {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Serves one ConfigMap at its path and 404s the rest, over HTTP/1.1 on a free port.
async fn serve_one_config_map() -> String {
    let config_map = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": "settings", "namespace": "demo", "resourceVersion": "7" },
    })
    .to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let config_map = config_map.clone();
            let answer = hyper::service::service_fn(move |request: http::Request<_>| {
                let found = request.uri().path() == "/api/v1/namespaces/demo/configmaps/settings";
                let (status, body) = if found {
                    (StatusCode::OK, config_map.clone())
                } else {
                    (
                        StatusCode::NOT_FOUND,
                        r#"{"kind":"Status","code":404}"#.to_owned(),
                    )
                };
                let response = Response::builder().status(status);
                let response = response.header("content-type", "application/json");
                async move { response.body(Full::new(Bytes::from(body))) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), answer);
            tokio::spawn(connection);
        }
    });
    format!("http://{address}")
}

#[tokio::test]
async fn every_request_shows_as_a_debug_line_in_the_span_it_was_made_in() {
    let written = Written::default();
    let log = written.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("kube_client=debug,kubeward=info")
        .with_ansi(false)
        .with_writer(move || log.clone())
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    let config = kube::Config::new(serve_one_config_map().await.parse().unwrap());
    let metrics = Metrics::new(&prometheus::Registry::new()).unwrap();
    let client = build_client(config, HealthChecks::default(), &metrics).unwrap();
    let api = Api::<ConfigMap>::namespaced(client, "demo");
    let reconcile = tracing::info_span!("reconcile", object = "settings");
    api.get("settings")
        .instrument(reconcile.clone())
        .await
        .unwrap();
    let missing = api.get("missing").instrument(reconcile).await;
    assert!(missing.is_err(), "the server has no such ConfigMap");

    let log = String::from_utf8(written.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("HTTP{")).collect();
    assert_eq!(lines.len(), 2, "one line per request: {log}");
    assert!(
        lines[0].contains("reconcile{object=\"settings\"}:HTTP{")
            && lines[0].contains("GET /api/v1/namespaces/demo/configmaps/settings 200"),
        "the request, in the reconcile's span, with its status: {}",
        lines[0]
    );
    assert!(
        lines[1].contains("GET /api/v1/namespaces/demo/configmaps/missing 404")
            && lines[1].contains("otel.status_code"),
        "a failed request is marked as an error: {}",
        lines[1]
    );
}
