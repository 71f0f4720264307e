//! The webhook server against slow and idle clients on its real TLS port: every such connection
//! is closed within its timeout, good requests are answered meanwhile, and the serving process's
//! file descriptors return to their baseline.

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

/// Set in the environment of the serving process: this test binary, started again to run only
/// [`serving_process`], so that its file descriptors are the server's alone (this process also
/// holds the clients' and those of the unit tests running beside it).
const SERVE: &str = "KUBEWARD_TEST_SLOW_CLIENTS_SERVER";

/// The webhook server of `slow_and_idle_…` in a process of its own: prints `port N`, its CA
/// (`ca` lines) and `ready`, serves until its standard input closes, then prints the closes it
/// counted (`closed REASON N`).
#[test]
#[ignore = "the serving process of slow_and_idle_clients_…, which starts it"]
fn serving_process() {
    use std::io::{Read as _, Write as _};
    if std::env::var_os(SERVE).is_none() {
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let config = Config::default()
            .port(0)
            .self_signed(true)
            .tls_handshake_timeout(TIMEOUT)
            .read_header_timeout(TIMEOUT)
            .read_timeout(TIMEOUT)
            .idle_timeout(TIMEOUT)
            .max_connections(4 * EACH + 50)
            .http2(true);
        let webhook = Admission::validator::<ConfigMap>(Allow);
        let server = Server::bind(&config, &["localhost".into()], &[webhook.route])
            .await
            .unwrap();
        let mut out = std::io::stdout().lock();
        // On a line of its own: the test harness has just printed the test's name.
        writeln!(out, "\nport {}", server.local_addr().unwrap().port()).unwrap();
        for line in server.generated_ca().unwrap().lines() {
            writeln!(out, "ca {line}").unwrap();
        }
        writeln!(out, "ready").unwrap();
        out.flush().unwrap();
        drop(out);
        let registry = Registry::new();
        let metrics = Metrics::new(&registry).unwrap();
        let stop = CancellationToken::new();
        tokio::spawn(server.serve(Some(metrics.webhook()), stop.clone()));
        let until_stdin_closes = || std::io::stdin().read_to_end(&mut Vec::new());
        let _ = tokio::task::spawn_blocking(until_stdin_closes).await;
        stop.cancel();
        let mut out = std::io::stdout().lock();
        for reason in ["handshake_timeout", "read_header_timeout", "read_timeout"] {
            let closed = metrics
                .connections_closed
                .with_label_values(&["webhook", reason]);
            writeln!(out, "closed {reason} {}", closed.get()).unwrap();
        }
    });
}

/// The open file descriptors of process `pid`.
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// The serving process, killed when dropped.
struct ServingProcess {
    child: std::process::Child,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl ServingProcess {
    /// Starts it; its port and CA.
    fn start() -> (Self, u16, String) {
        use std::io::BufRead as _;
        let test = "webhook::server::slow_clients::serving_process";
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                test,
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(SERVE, "1")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let (mut port, mut ca) = (0, String::new());
        for line in (&mut stdout).lines() {
            let line = line.unwrap();
            if let Some(number) = line.strip_prefix("port ") {
                port = number.parse().unwrap();
            } else if let Some(pem) = line.strip_prefix("ca ") {
                ca.push_str(pem);
                ca.push('\n');
            } else if line == "ready" {
                break;
            }
        }
        assert!(port > 0, "the serving process printed no port");
        (Self { child, stdout }, port, ca)
    }

    /// Its open file descriptors.
    fn open_files(&self) -> usize {
        open_files(self.child.id())
    }

    /// Closes its standard input, so it stops; the closes it counted, by reason.
    fn stop(mut self) -> std::collections::BTreeMap<String, u64> {
        use std::io::BufRead as _;
        drop(self.child.stdin.take());
        let mut closed = std::collections::BTreeMap::new();
        for line in (&mut self.stdout).lines() {
            let line = line.unwrap();
            let mut words = line.split_whitespace();
            if let (Some("closed"), Some(reason), Some(count)) =
                (words.next(), words.next(), words.next())
            {
                closed.insert(reason.to_owned(), count.parse().unwrap());
            }
        }
        closed
    }
}

impl Drop for ServingProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
    let (server, port, ca) = tokio::task::spawn_blocking(ServingProcess::start)
        .await
        .unwrap();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let baseline = server.open_files();
    // The most descriptors it holds while the slow clients connect: the first of them may
    // already be closed when the last connects, on a busy machine.
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(baseline));
    let sampler = tokio::spawn({
        let (peak, pid) = (std::sync::Arc::clone(&peak), server.child.id());
        async move {
            let mut every = tokio::time::interval(Duration::from_millis(10));
            loop {
                every.tick().await;
                peak.fetch_max(open_files(pid), std::sync::atomic::Ordering::Relaxed);
            }
        }
    });

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

    sampler.abort();
    let opened = peak.load(std::sync::atomic::Ordering::Relaxed);
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
        "the serving process's file descriptors back to their baseline",
        || async {
            let now = server.open_files();
            (now <= baseline).then_some(now)
        },
    )
    .await
    .unwrap();
    assert!(
        opened >= baseline + EACH,
        "the slow clients held at most {opened} descriptors, {baseline} before: not the server's"
    );
    let closed = tokio::task::spawn_blocking(|| server.stop()).await.unwrap();
    let closed = |reason: &str| closed.get(reason).copied().unwrap_or_default();
    assert_eq!(closed("handshake_timeout"), EACH as u64);
    assert_eq!(closed("read_header_timeout"), 2 * EACH as u64);
    assert_eq!(closed("read_timeout"), EACH as u64);
    eprintln!(
        "serving process's file descriptors: {baseline} before, at most {opened} with the slow clients, \
         {back} after; {answered} good requests answered meanwhile; slowest close by kind: \
         {slowest:?}"
    );
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
