//! The serving certificate is reloaded from its files; new handshakes present the new one.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::client::TlsStream;
use tokio_util::sync::CancellationToken;

use super::ReloadingCertificate;
use crate::tls::client::{Sender, connect, connector, der, presented};
use crate::tls::{Authority, serve, server_config};

/// How long a test waits for the watcher to pick up new files (it polls every 20 ms).
const RELOAD_TIMEOUT: Duration = Duration::from_secs(10);

/// An HTTPS server answering `ok` with the certificate in `dir`, watched every 20 ms, speaking
/// HTTP/2 too when `http2` is on.
async fn start(
    dir: &std::path::Path,
    stop: &CancellationToken,
    http2: bool,
) -> std::net::SocketAddr {
    let certificate = Arc::new(ReloadingCertificate::from_dir(dir).unwrap());
    tokio::spawn(Arc::clone(&certificate).watch(Duration::from_millis(20), stop.clone()));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = service_fn(|_: Request<Incoming>| async {
        Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok"))))
    });
    tokio::spawn(serve(
        listener,
        server_config(certificate, http2),
        service,
        crate::tls::Limits {
            http2,
            ..crate::tls::Limits::default()
        },
        crate::tls::Closes::default(),
        stop.clone(),
    ));
    addr
}

fn get() -> Request<Full<Bytes>> {
    Request::get("https://localhost/")
        .body(Full::default())
        .unwrap()
}

/// Sends a GET on a new connection over `stream` and checks the server's `ok`.
async fn assert_answers_ok(stream: TlsStream<TcpStream>) {
    let answer = Sender::start(stream)
        .await
        .unwrap()
        .send(get())
        .await
        .unwrap();
    assert_eq!(answer.body().as_ref(), b"ok");
}

#[tokio::test]
async fn replacing_the_files_makes_new_handshakes_present_the_new_certificate_and_open_connections_keep_working()
 {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::generate("test CA").unwrap();
    let first = ca.issue(&["localhost"]).unwrap();
    first.write_to(dir.path()).unwrap();
    let stop = CancellationToken::new();
    let addr = start(dir.path(), &stop, true).await;
    let client = connector(ca.certificate_pem(), &[b"h2", b"http/1.1"], true);

    let open = connect(&client, addr, "localhost").await.unwrap();
    assert_eq!(presented(&open), der(first.certificate_pem()));
    let mut open = Sender::start(open).await.unwrap();

    let second = ca.issue(&["localhost"]).unwrap();
    second.write_to(dir.path()).unwrap();
    let deadline = tokio::time::Instant::now() + RELOAD_TIMEOUT;
    loop {
        let fresh = connect(&client, addr, "localhost").await.unwrap();
        if presented(&fresh) == der(second.certificate_pem()) {
            break;
        }
        assert_eq!(presented(&fresh), der(first.certificate_pem()));
        assert!(
            tokio::time::Instant::now() < deadline,
            "new handshakes present the rewritten certificate within {RELOAD_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let answer = open.send(get()).await.unwrap();
    assert_eq!(
        answer.body().as_ref(),
        b"ok",
        "the connection opened before the rotation still serves"
    );
    stop.cancel();
}

#[tokio::test]
async fn a_half_written_rotation_keeps_the_previous_certificate_until_the_key_matches() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::generate("test CA").unwrap();
    let first = ca.issue(&["localhost"]).unwrap();
    first.write_to(dir.path()).unwrap();
    let certificate = ReloadingCertificate::from_dir(dir.path()).unwrap();
    let second = ca.issue(&["localhost"]).unwrap();

    std::fs::write(dir.path().join(super::TLS_CRT), second.certificate_pem()).unwrap();
    let err = certificate.reload().unwrap_err();
    assert!(
        err.to_string()
            .contains("does not belong to the certificate"),
        "{err}"
    );
    assert_eq!(
        certificate.current().cert[0].to_vec(),
        der(first.certificate_pem())
    );
    assert!(
        !certificate.reload().unwrap(),
        "unchanged files are not tried again"
    );

    std::fs::write(dir.path().join(super::TLS_KEY), second.key_pem()).unwrap();
    assert!(certificate.reload().unwrap());
    assert_eq!(
        certificate.current().cert[0].to_vec(),
        der(second.certificate_pem())
    );
}

#[tokio::test]
async fn files_that_are_not_a_certificate_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(super::TLS_CRT), "not a certificate").unwrap();
    std::fs::write(dir.path().join(super::TLS_KEY), "not a key").unwrap();
    let err = ReloadingCertificate::from_dir(dir.path()).unwrap_err();
    assert!(
        err.to_string()
            .contains("no certificate in the certificate file"),
        "{err}"
    );
    let missing = ReloadingCertificate::from_dir(&dir.path().join("absent")).unwrap_err();
    assert!(missing.to_string().starts_with("reading "), "{missing}");
}

#[tokio::test]
async fn clients_without_sni_get_the_certificate_and_both_http_versions_are_served_with_http2_on() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::generate("test CA").unwrap();
    let pair = ca.issue(&["localhost", "127.0.0.1"]).unwrap();
    pair.write_to(dir.path()).unwrap();
    let stop = CancellationToken::new();
    let addr = start(dir.path(), &stop, true).await;
    for (alpn, expected) in [
        (&[b"h2".as_slice()][..], Some(b"h2".as_slice())),
        (&[b"http/1.1".as_slice()][..], Some(b"http/1.1".as_slice())),
        (&[][..], None),
    ] {
        let client = connector(ca.certificate_pem(), alpn, false);
        let stream = connect(&client, addr, "localhost").await.unwrap();
        assert_eq!(stream.get_ref().1.alpn_protocol(), expected);
        assert_eq!(presented(&stream), der(pair.certificate_pem()));
        assert_answers_ok(stream).await;
    }
    stop.cancel();
}

#[tokio::test]
async fn without_http2_a_client_gets_http1_and_one_that_insists_on_http2_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::generate("test CA").unwrap();
    ca.issue(&["localhost"])
        .unwrap()
        .write_to(dir.path())
        .unwrap();
    let stop = CancellationToken::new();
    let addr = start(dir.path(), &stop, false).await;

    // Offering both, the client is given HTTP/1.1 and answered.
    let both = connector(ca.certificate_pem(), &[b"h2", b"http/1.1"], true);
    let stream = connect(&both, addr, "localhost").await.unwrap();
    assert_eq!(
        stream.get_ref().1.alpn_protocol(),
        Some(b"http/1.1".as_slice())
    );
    assert_answers_ok(stream).await;

    // Offering HTTP/2 alone, the handshake fails: no protocol in common.
    let only_h2 = connector(ca.certificate_pem(), &[b"h2"], true);
    assert!(connect(&only_h2, addr, "localhost").await.is_err());

    // Naming no protocol and starting HTTP/2 anyway, the request is refused.
    let none = connector(ca.certificate_pem(), &[], true);
    let stream = connect(&none, addr, "localhost").await.unwrap();
    let attempt = tokio::time::timeout(Duration::from_secs(10), async move {
        let (sender, connection) = h2::client::handshake(stream).await?;
        tokio::spawn(connection);
        let request = Request::get("https://localhost/").body(()).unwrap();
        let (response, _) = sender.ready().await?.send_request(request, true)?;
        response.await
    })
    .await
    .expect("the server answers or closes within 10 s");
    assert!(
        attempt.is_err(),
        "an HTTP/2 request was answered: {attempt:?}"
    );
    stop.cancel();
}
