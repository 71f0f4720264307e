//! The webhook server against slow and idle clients on its real TLS port: every such connection
//! is closed within its timeout, good requests are answered meanwhile, and the server's sockets
//! return to none.

use std::net::SocketAddr;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use prometheus::Registry;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Server;
use crate::metrics::Metrics;
use crate::testing::wait_for;
use crate::tls::client::{Sender, connect, connector};
use crate::webhook::{Admission, Config, Validator};

struct Allow;
impl Validator<ConfigMap> for Allow {}

/// Every timeout of the server under test; short, so the test takes seconds.
const TIMEOUT: Duration = Duration::from_secs(2);
/// How much later than its timeout a connection may close: timers, scheduling and the 400
/// handshakes this test makes on two busy cores.
const SLACK: Duration = Duration::from_secs(3);
/// Connections of each kind: TCP without a TLS handshake; TLS sending nothing; TLS sending half
/// a request header; TLS sending headers and then a body a byte at a time.
const EACH: usize = 100;

const REVIEW: &str = r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"","version":"v1","kind":"ConfigMap"},"resource":{"group":"","version":"v1","resource":"configmaps"},"name":"cm","operation":"CREATE","userInfo":{},"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}}}"#;

/// The server's own sockets on `port` (local port `port`, not listening, not yet closed by the
/// server), read from `/proc/net/tcp` and `tcp6`: the file descriptors it holds for clients.
/// Counted by port because the other unit tests share this process's descriptor table.
fn server_sockets(port: u16) -> usize {
    let port = format!("{port:04X}");
    let mut sockets = 0;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let table = std::fs::read_to_string(table).unwrap_or_default();
        sockets += table
            .lines()
            .skip(1)
            .filter(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                // 01 ESTABLISHED, 08 CLOSE_WAIT (the peer closed, the server has not yet).
                fields.len() > 3
                    && fields[1].rsplit(':').next() == Some(port.as_str())
                    && matches!(fields[3], "01" | "08")
            })
            .count();
    }
    sockets
}

/// Reads from `stream` until the server closes it; how long that took from `since`.
async fn closed_after(mut stream: impl tokio::io::AsyncRead + Unpin, since: Instant) -> Duration {
    let mut sink = vec![0; 4096];
    let limit = TIMEOUT + SLACK + Duration::from_secs(10);
    let read_to_end = async { while stream.read(&mut sink).await.is_ok_and(|n| n > 0) {} };
    tokio::time::timeout(limit, read_to_end)
        .await
        .expect("the server never closed a slow connection");
    since.elapsed()
}

/// Sends a request's headers on `stream`, then its body a byte every 200 ms; how long after the
/// headers the server answered 408 and closed.
async fn slow_body(
    mut stream: impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
) -> Duration {
    let head = "POST /validate--v1-configmap HTTP/1.1\r\nHost: localhost\r\n\
                Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    let since = Instant::now();
    let (mut read, mut write) = tokio::io::split(stream);
    let writer = tokio::spawn(async move {
        let mut interval = tokio::time::interval(Duration::from_millis(200));
        loop {
            interval.tick().await;
            if write.write_all(b" ").await.is_err() || write.flush().await.is_err() {
                break;
            }
        }
    });
    let mut answer = Vec::new();
    let limit = TIMEOUT + SLACK + Duration::from_secs(10);
    let _ = tokio::time::timeout(limit, read.read_to_end(&mut answer)).await;
    writer.abort();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    since.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_clients_are_closed_within_their_timeouts_while_good_requests_are_answered() {
    let stop = CancellationToken::new();
    let config = Config::default()
        .port(0)
        .self_signed(true)
        .tls_handshake_timeout(TIMEOUT)
        .read_header_timeout(TIMEOUT)
        .read_timeout(TIMEOUT)
        .idle_timeout(TIMEOUT)
        .max_connections(4 * EACH + 50);
    let webhook = Admission::validator::<ConfigMap>(Allow);
    let server = Server::bind(&config, &["localhost".into()], &[webhook.route])
        .await
        .unwrap();
    let port = server.local_addr().unwrap().port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let ca = server.generated_ca().unwrap().to_owned();
    let registry = Registry::new();
    let metrics = Metrics::new(&registry).unwrap();
    tokio::spawn(server.serve(Some(metrics.webhook()), stop.clone()));
    let baseline = server_sockets(port);

    let h1 = connector(&ca, &[b"http/1.1"], true);
    let h2 = connector(&ca, &[b"h2"], true);
    let mut slow = tokio::task::JoinSet::new();
    for i in 0..EACH {
        let tcp = TcpStream::connect(addr).await.unwrap();
        slow.spawn(async move { ("no handshake", closed_after(tcp, Instant::now()).await) });
        let idle = connect(if i % 2 == 0 { &h1 } else { &h2 }, addr, "localhost")
            .await
            .unwrap();
        slow.spawn(async move { ("idle", closed_after(idle, Instant::now()).await) });
        let mut partial = connect(&h1, addr, "localhost").await.unwrap();
        let since = Instant::now();
        partial
            .write_all(b"POST /validate--v1-configmap HTTP/1.1\r\nHost: localhost\r\nContent-Ty")
            .await
            .unwrap();
        slow.spawn(async move { ("half a header", closed_after(partial, since).await) });
        let trickle = connect(&h1, addr, "localhost").await.unwrap();
        slow.spawn(async move { ("slow body", slow_body(trickle).await) });
    }
    let opened = server_sockets(port);

    // Good requests, each on a new connection, while the slow ones are held open.
    let client = connector(&ca, &[b"h2", b"http/1.1"], true);
    let mut answered = 0;
    let good_until = Instant::now() + TIMEOUT;
    while Instant::now() < good_until {
        let stream = connect(&client, addr, "localhost").await.unwrap();
        let request = http::Request::post("https://localhost/validate--v1-configmap")
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(http_body_util::Full::new(bytes::Bytes::from_static(
                REVIEW.as_bytes(),
            )))
            .unwrap();
        let send = async { Sender::start(stream).await.unwrap().send(request).await };
        let answer = tokio::time::timeout(Duration::from_secs(5), send)
            .await
            .expect("a good request waited behind the slow clients")
            .unwrap();
        assert_eq!(answer.status(), 200);
        answered += 1;
    }

    let mut slowest = std::collections::BTreeMap::new();
    while let Some(closed) = slow.join_next().await {
        let (kind, after) = closed.unwrap();
        let max = slowest.entry(kind).or_insert(after);
        *max = (*max).max(after);
        assert!(
            after <= TIMEOUT + SLACK,
            "a connection with {kind} closed after {after:?}, not within {TIMEOUT:?} (+{SLACK:?})"
        );
    }
    let back = wait_for(
        Duration::from_secs(10),
        "the server's sockets back to baseline",
        || async {
            let now = server_sockets(port);
            (now <= baseline).then_some(now)
        },
    )
    .await
    .unwrap();
    let closed = |reason: &str| {
        metrics
            .connections_closed
            .with_label_values(&["webhook", reason])
            .get()
    };
    assert_eq!(closed("handshake_timeout"), EACH as u64);
    assert_eq!(closed("read_header_timeout"), 2 * EACH as u64);
    assert_eq!(closed("read_timeout"), EACH as u64);
    eprintln!(
        "server sockets: {baseline} before, {opened} with the slow clients, {back} after; \
         {answered} good requests answered meanwhile; slowest close by kind: {slowest:?}"
    );
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_over_the_limit_is_closed_on_accept_and_counted() {
    let stop = CancellationToken::new();
    let config = Config::default()
        .port(0)
        .self_signed(true)
        .max_connections(2);
    let webhook = Admission::validator::<ConfigMap>(Allow);
    let server = Server::bind(&config, &["localhost".into()], &[webhook.route])
        .await
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], server.local_addr().unwrap().port()));
    let ca = server.generated_ca().unwrap().to_owned();
    let registry = Registry::new();
    let metrics = Metrics::new(&registry).unwrap();
    tokio::spawn(server.serve(Some(metrics.webhook()), stop.clone()));
    let h1 = connector(&ca, &[b"http/1.1"], true);
    let _first = connect(&h1, addr, "localhost").await.unwrap();
    let _second = connect(&h1, addr, "localhost").await.unwrap();
    let third = connect(&h1, addr, "localhost").await;
    assert!(
        third.is_err(),
        "a third connection was served over a limit of two"
    );
    assert_eq!(
        metrics
            .connections_closed
            .with_label_values(&["webhook", "max_connections"])
            .get(),
        1
    );
    stop.cancel();
}
