//! Posts bodies to the manager's `/convert` over HTTPS, trusting its CA, as the API server does.

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use tokio::net::TcpStream;

/// Posts `body` as `content_type` to `https://127.0.0.1:PORT/convert`; the status and the body.
async fn post(
    port: u16,
    ca_pem: &str,
    content_type: &str,
    body: Vec<u8>,
) -> anyhow::Result<(StatusCode, String)> {
    post_to(port, "/convert", ca_pem, content_type, body).await
}

/// Posts `body` as `content_type` to `https://127.0.0.1:PORT{path}`, trusting `ca_pem`; the
/// status and the body.
pub(crate) async fn post_to(
    port: u16,
    path: &str,
    ca_pem: &str,
    content_type: &str,
    body: Vec<u8>,
) -> anyhow::Result<(StatusCode, String)> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca_pem.as_bytes())?)?;
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1")?, tcp)
        .await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
    tokio::spawn(connection);
    let request = Request::post(path)
        .header(header::HOST, "127.0.0.1")
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(body)))?;
    let response = sender.send_request(request).await?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// The failure message of a `ConversionReview` answer.
fn failure_message(body: &str) -> String {
    let review: Value = serde_json::from_str(body).unwrap_or_default();
    assert_eq!(review["response"]["result"]["status"], "Failure", "{body}");
    review["response"]["result"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Malformed reviews, a review the converter cannot serve and a body of another type each get
/// a clear answer.
pub(super) async fn bad_bodies_are_answered_clearly(port: u16, ca_pem: &str) -> anyhow::Result<()> {
    let json_type = "application/json";
    let (status, body) = post(port, ca_pem, json_type, b"{not json".to_vec()).await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let message = failure_message(&body);
    assert!(
        message.starts_with("the body is not a ConversionReview: key must be a string"),
        "{message}"
    );

    let no_request = json!({ "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview" });
    let (status, body) = post(port, ca_pem, json_type, serde_json::to_vec(&no_request)?).await?;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        failure_message(&body),
        "the ConversionReview has no request"
    );

    let unknown_version = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": { "uid": "u-1", "desiredAPIVersion": "conversion.kubeward.dev/v9", "objects": [{
            "apiVersion": "conversion.kubeward.dev/v1alpha1", "kind": "Gadget",
            "metadata": { "name": "x", "namespace": "ns" }, "spec": {},
        }]},
    });
    let (status, body) = post(
        port,
        ca_pem,
        json_type,
        serde_json::to_vec(&unknown_version)?,
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        failure_message(&body),
        "object 1 of 1 (ns/x, conversion.kubeward.dev/v1alpha1): no conversion from \
         conversion.kubeward.dev/v1alpha1 to conversion.kubeward.dev/v9 is declared"
    );

    let (status, body) = post(port, ca_pem, "text/plain", b"hello".to_vec()).await?;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
    Ok(())
}
