//! The webhook server over real HTTPS: bad input gets a clear error and the server keeps serving.

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use k8s_openapi::api::core::v1::ConfigMap;
use tokio_util::sync::CancellationToken;

use super::Server;
use crate::tls::client::{Sender, connect, connector};
use crate::webhook::{Admission, Config, Validator};

struct Allow;
impl Validator<ConfigMap> for Allow {}

/// A self-signed server with a ConfigMap validator on a free port, speaking HTTP/2 too, and its CA.
pub(super) async fn start(stop: &CancellationToken) -> (std::net::SocketAddr, String) {
    let config = Config::default().port(0).self_signed(true).http2(true);
    let webhook = Admission::validator::<ConfigMap>(Allow);
    let server = Server::bind(
        &config,
        &["localhost".into(), "127.0.0.1".into()],
        &[webhook.route],
    )
    .await
    .unwrap();
    let addr = server.local_addr().unwrap();
    let ca = server.generated_ca().unwrap().to_owned();
    tokio::spawn(server.serve(None, stop.clone()));
    (
        std::net::SocketAddr::from(([127, 0, 0, 1], addr.port())),
        ca,
    )
}

fn post(path: &str, content_type: Option<&str>, body: Vec<u8>) -> Request<Full<Bytes>> {
    let mut request = Request::post(format!("https://localhost{path}"));
    if let Some(content_type) = content_type {
        request = request.header(http::header::CONTENT_TYPE, content_type);
    }
    request.body(Full::new(Bytes::from(body))).unwrap()
}

pub(super) const REVIEW: &str = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"},"name":"cm","operation":"CREATE","userInfo":{},"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}}}"#;

#[tokio::test]
async fn bad_requests_get_clear_errors_and_the_server_keeps_serving() {
    let stop = CancellationToken::new();
    let (addr, ca) = start(&stop).await;
    for alpn in [&b"h2"[..], b"http/1.1"] {
        let client = connector(&ca, &[alpn], true);
        let path = "/validate--v1-configmap";
        let json = Some("application/json");
        let cases = [
            (
                post(path, Some("text/plain"), REVIEW.into()),
                415,
                "Content-Type text/plain is not supported",
            ),
            (
                post(path, None, REVIEW.into()),
                415,
                "Content-Type none is not supported",
            ),
            (
                post(path, json, vec![b' '; 3 * 1024 * 1024 + 1]),
                413,
                "larger than 3145728 bytes",
            ),
            (
                post(path, json, b"{\"request\": 1".to_vec()),
                400,
                "cannot decode the AdmissionReview",
            ),
            (
                post("/nowhere", json, REVIEW.into()),
                404,
                "no webhook at /nowhere",
            ),
            (
                Request::get(format!("https://localhost{path}"))
                    .body(Full::default())
                    .unwrap(),
                405,
                "GET is not allowed",
            ),
            (
                post(path, Some("application/json; charset=utf-8"), REVIEW.into()),
                200,
                "\"allowed\":true",
            ),
        ];
        // A connection per request: HTTP/1.1 closes one whose body was refused unread (413).
        for (request, status, text) in cases {
            let stream = connect(&client, addr, "localhost").await.unwrap();
            let mut sender = Sender::start(stream).await.unwrap();
            let answer = tokio::time::timeout(Duration::from_secs(10), sender.send(request))
                .await
                .unwrap()
                .unwrap();
            let body = String::from_utf8_lossy(answer.body()).into_owned();
            assert_eq!(answer.status(), status, "{body}");
            assert!(body.contains(text), "{status}: {body}");
        }
    }
    stop.cancel();
}

/// The status of one valid review posted on a new connection through `client` to `host`.
async fn review_status(
    client: &tokio_rustls::TlsConnector,
    addr: std::net::SocketAddr,
    host: &str,
) -> http::StatusCode {
    let stream = connect(client, addr, host).await.unwrap();
    Sender::start(stream)
        .await
        .unwrap()
        .send(post(
            "/validate--v1-configmap",
            Some("application/json"),
            REVIEW.into(),
        ))
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn a_client_without_sni_or_alpn_is_served_with_the_default_certificate() {
    let stop = CancellationToken::new();
    let (addr, ca) = start(&stop).await;
    let status = review_status(&connector(&ca, &[], false), addr, "127.0.0.1").await;
    assert_eq!(status, 200);
    stop.cancel();
}

#[tokio::test]
async fn garbage_and_plain_http_on_the_port_end_their_connection_and_the_server_keeps_serving() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    let stop = CancellationToken::new();
    let (addr, ca) = start(&stop).await;
    for garbage in [
        &b"\x00\xff garbage that is no TLS record\r\n\r\n"[..],
        b"POST /validate--v1-configmap HTTP/1.1\r\nHost: localhost\r\n\r\n",
    ] {
        let mut raw = tokio::net::TcpStream::connect(addr).await.unwrap();
        raw.write_all(garbage).await.unwrap();
        // The server ends the connection (at most with a TLS alert): read until it closes.
        let mut answer = Vec::new();
        let closed =
            tokio::time::timeout(Duration::from_secs(10), raw.read_to_end(&mut answer)).await;
        assert!(closed.is_ok(), "the server kept a garbage connection open");
        assert!(
            !String::from_utf8_lossy(&answer).contains("HTTP/1.1 200"),
            "{answer:?}"
        );
    }
    let status = review_status(&connector(&ca, &[], true), addr, "localhost").await;
    assert_eq!(status, 200, "the server still serves");
    stop.cancel();
}

#[tokio::test]
async fn a_cert_dir_without_a_certificate_is_an_error_that_names_the_folder_and_the_fixes() {
    let empty = tempfile::tempdir().expect("a temporary folder");
    let config = Config::default().port(0).cert_dir(empty.path());
    let webhook = Admission::validator::<ConfigMap>(Allow);
    let Err(error) = Server::bind(&config, &["localhost".into()], &[webhook.route]).await else {
        panic!("a folder without tls.crt and tls.key cannot serve");
    };
    let line = crate::error::chain(&error);
    assert!(line.contains(&empty.path().display().to_string()), "{line}");
    assert!(
        line.contains("--webhook-self-signed") && line.contains("cert-manager"),
        "{line}"
    );
}
