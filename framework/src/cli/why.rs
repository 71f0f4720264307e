//! The `why` subcommand: fetches one object's flight recorder from a running replica
//! (`/debug/reconciles` on its metrics port) and prints it as a timeline.
//!
//! It reaches the replica at the address `--from` names: a port-forward
//! (`kubectl port-forward deploy/NAME 8443`, then `--from https://127.0.0.1:8443`) or any
//! address the metrics port is reachable at; secure metrics take a bearer token that may `get`
//! `/metrics` and the CA of their certificate.

use std::fmt::Write as _;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::controller::History;
use crate::controller::record::{Ended, Reconciled, TriggerRecord, WriteRecord};
use crate::manager::{Error, Result};

/// How long the whole exchange with the replica may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// What `why` asks for.
#[derive(Debug)]
pub(super) struct Why<'a> {
    /// `KIND/NAMESPACE/NAME` or `KIND/NAME`.
    pub(super) object: &'a str,
    /// `http://HOST:PORT` or `https://HOST:PORT`.
    pub(super) from: &'a str,
    pub(super) token: Option<&'a str>,
    /// The CA of a secure metrics certificate, PEM.
    pub(super) ca_file: Option<&'a std::path::Path>,
}

/// The answer's body, as `serving::reconciles` writes it.
#[derive(serde::Deserialize)]
struct Body {
    controllers: Vec<History>,
}

impl Why<'_> {
    /// Fetches the object's history and returns it as printable text.
    pub(super) async fn timeline(&self) -> Result<String> {
        let (kind, path) = address(self.object)?;
        let target = format!("/debug/reconciles/{path}?kind={kind}");
        let (status, body) = tokio::time::timeout(TIMEOUT, self.fetch(&target))
            .await
            .map_err(|_| {
                failed(
                    format!("{} did not answer within {TIMEOUT:?}", self.from),
                    None,
                )
            })??;
        match status {
            200 | 404 => {}
            _ => {
                return Err(failed(
                    format!("{} answered {status}: {}", self.from, body.trim()),
                    None,
                ));
            }
        }
        let body: Body = serde_json::from_str(&body).map_err(|e| {
            failed(
                format!("reading the answer of {}", self.from),
                Some(e.into()),
            )
        })?;
        Ok(render(kind, &path, &body.controllers))
    }

    async fn fetch(&self, target: &str) -> Result<(u16, String)> {
        let (secure, host) = match (
            self.from.strip_prefix("https://"),
            self.from.strip_prefix("http://"),
        ) {
            (Some(host), _) => (true, host),
            (_, Some(host)) => (false, host),
            _ => {
                return Err(failed(
                    format!(
                        "--from {}: expected http://HOST:PORT or https://HOST:PORT",
                        self.from
                    ),
                    None,
                ));
            }
        };
        let host = host.trim_end_matches('/');
        let authorization = self
            .token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "GET {target} HTTP/1.0\r\nHost: {host}\r\nAccept: application/json\r\n{authorization}\r\n"
        );
        let tcp = TcpStream::connect(host)
            .await
            .map_err(|e| failed(format!("connecting to {host}"), Some(e.into())))?;
        let answer = if secure {
            self.over_tls(host, tcp, &request).await?
        } else {
            exchange(tcp, &request).await?
        };
        parse(&answer)
    }

    #[cfg(feature = "tls")]
    async fn over_tls(&self, host: &str, tcp: TcpStream, request: &str) -> Result<Vec<u8>> {
        use std::sync::Arc;

        use rustls::pki_types::pem::PemObject as _;
        use rustls::pki_types::{CertificateDer, ServerName};

        let Some(ca_file) = self.ca_file else {
            return Err(failed(
                "an https address needs --ca-file, the CA of the metrics certificate",
                None,
            ));
        };
        let mut roots = rustls::RootCertStore::empty();
        let ca = CertificateDer::from_pem_file(ca_file)
            .map_err(|e| failed(format!("reading {}", ca_file.display()), Some(e.into())))?;
        roots
            .add(ca)
            .map_err(|e| failed(format!("trusting {}", ca_file.display()), Some(e.into())))?;
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| failed("setting up TLS", Some(e.into())))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
        let name = ServerName::try_from(name.trim_matches(['[', ']']).to_owned())
            .map_err(|e| failed(format!("{host} names no server"), Some(e.into())))?;
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|e| failed(format!("the TLS handshake with {host}"), Some(e.into())))?;
        exchange(tls, request).await
    }

    #[cfg(not(feature = "tls"))]
    #[expect(clippy::unused_async, reason = "the same shape with and without TLS")]
    async fn over_tls(&self, _: &str, _: TcpStream, _: &str) -> Result<Vec<u8>> {
        let what = if self.ca_file.is_some() {
            "https (and --ca-file) needs kubeward's `tls` feature"
        } else {
            "https needs kubeward's `tls` feature"
        };
        Err(failed(what, None))
    }
}

/// `KIND/NAMESPACE/NAME` as the kind and `NAMESPACE/NAME`; `KIND/NAME` as the kind and `NAME`.
fn address(object: &str) -> Result<(&str, String)> {
    let parts: Vec<&str> = object.split('/').collect();
    match parts.as_slice() {
        [kind, name] if !kind.is_empty() && !name.is_empty() => Ok((kind, (*name).to_owned())),
        [kind, namespace, name] if [kind, namespace, name].iter().all(|p| !p.is_empty()) => {
            Ok((kind, format!("{namespace}/{name}")))
        }
        _ => Err(failed(
            format!(
                "{object}: expected KIND/NAMESPACE/NAME, or KIND/NAME for a cluster-scoped object"
            ),
            None,
        )),
    }
}

async fn exchange(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    request: &str,
) -> Result<Vec<u8>> {
    let io = |e: std::io::Error| failed("talking to the replica", Some(e.into()));
    stream.write_all(request.as_bytes()).await.map_err(io)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.map_err(io)?;
    Ok(answer)
}

/// The status and body of an HTTP/1.x answer.
fn parse(answer: &[u8]) -> Result<(u16, String)> {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| failed("the replica's answer has no end of headers", None))?;
    let status = (head.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| failed("the replica's answer has no status line", None))?;
    Ok((status, body.to_owned()))
}

/// The timeline of `kind` `path` as `controllers` recorded it; one line when none did.
pub(super) fn render(kind: &str, path: &str, controllers: &[History]) -> String {
    if controllers.iter().all(|c| c.reconciles.is_empty()) {
        return format!(
            "no reconcile of {kind} {path} recorded: this replica's controllers never reconciled it (or it was deleted, or they run elsewhere)\n"
        );
    }
    let mut out = String::new();
    for history in controllers {
        let n = history.reconciles.len();
        let _ = writeln!(
            out,
            "{} {path}: the last {n} reconcile{} by controller {}, oldest first",
            history.kind,
            if n == 1 { "" } else { "s" },
            history.controller
        );
        for reconciled in &history.reconciles {
            line(&mut out, reconciled);
        }
    }
    out
}

fn line(out: &mut String, r: &Reconciled) {
    let _ = writeln!(
        out,
        "{}  queued {} ms, ran {} ms: {}",
        time(r.started_ms),
        r.queued_ms,
        r.ran_ms,
        ended(&r.result)
    );
    let mut triggers: Vec<String> = r.triggers.iter().map(trigger).collect();
    if r.more_triggers > 0 {
        triggers.push(format!("{} more", r.more_triggers));
    }
    let _ = writeln!(
        out,
        "    because: {}",
        if triggers.is_empty() {
            "-".to_owned()
        } else {
            triggers.join("; ")
        }
    );
    for w in &r.writes {
        let _ = writeln!(out, "    wrote:   {}", write(w));
    }
}

fn ended(result: &Ended) -> String {
    match result {
        Ended::Ok => "ok".to_owned(),
        Ended::Requeue => "ok, requeue now".to_owned(),
        Ended::RequeueAfter { delay_ms } => format!("ok, requeue after {delay_ms} ms"),
        Ended::Error { message } => format!("error: {message}"),
        Ended::Timeout { message } => format!("timed out: {message}"),
        Ended::Panic { message } => format!("panicked: {message}"),
    }
}

fn trigger(t: &TriggerRecord) -> String {
    let mut text = String::new();
    if let Some(event) = t.event {
        let _ = write!(text, "{event:?} ");
    }
    match (&t.kind, &t.name) {
        (Some(kind), Some(name)) => {
            let object = t
                .namespace
                .as_ref()
                .map_or_else(|| name.clone(), |ns| format!("{ns}/{name}"));
            let _ = write!(text, "{kind} {object} ({})", t.reason);
        }
        _ => {
            let _ = write!(text, "{}", t.reason);
        }
    }
    if let Some(version) = &t.resource_version {
        let _ = write!(text, " @ {version}");
    }
    text
}

fn write(w: &WriteRecord) -> String {
    let object = w
        .namespace
        .as_ref()
        .map_or_else(|| w.name.clone(), |ns| format!("{ns}/{}", w.name));
    let verb = serde_json::to_value(w.verb)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let status = if w.status { " status" } else { "" };
    let mut text = format!("{verb} {}{status} {object} -> {}", w.kind, w.code);
    if let Some(diff) = &w.diff {
        let _ = write!(text, " {diff}");
    }
    text
}

/// `started_ms` as a UTC time, to the millisecond.
fn time(started_ms: u64) -> String {
    let at = i64::try_from(started_ms)
        .ok()
        .and_then(|ms| k8s_openapi::jiff::Timestamp::from_millisecond(ms).ok());
    at.map_or_else(|| started_ms.to_string(), |at| format!("{at:.3}"))
}

fn failed(action: impl Into<String>, source: Option<crate::manager::BoxError>) -> Error {
    Error::Manifests {
        action: action.into(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::Reason;
    use crate::controller::record::Verb;

    #[test]
    fn an_object_never_reconciled_is_one_line() {
        let text = render("Widget", "prod/web", &[]);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.starts_with("no reconcile of Widget prod/web recorded"),
            "{text}"
        );
    }

    #[test]
    fn a_reconcile_reads_as_its_time_result_triggers_and_writes() {
        let history = History {
            controller: "widget".into(),
            kind: "Widget".into(),
            reconciles: vec![Reconciled {
                started_ms: 1_767_225_600_000,
                queued_ms: 2,
                ran_ms: 31,
                result: Ended::Error {
                    message: "forbidden".into(),
                },
                triggers: vec![TriggerRecord {
                    reason: Reason::Owned,
                    event: Some(crate::controller::EventType::Modified),
                    kind: Some("ConfigMap".into()),
                    namespace: Some("prod".into()),
                    name: Some("web".into()),
                    resource_version: Some("12".into()),
                }],
                more_triggers: 0,
                writes: vec![WriteRecord {
                    verb: Verb::Apply,
                    kind: "ConfigMap".into(),
                    namespace: Some("prod".into()),
                    name: "web".into(),
                    status: false,
                    code: 403,
                    diff: None,
                }],
            }],
        };
        let text = render("Widget", "prod/web", &[history]);
        assert_eq!(
            text,
            "Widget prod/web: the last 1 reconcile by controller widget, oldest first\n\
             2026-01-01T00:00:00.000Z  queued 2 ms, ran 31 ms: error: forbidden\n    \
             because: Modified ConfigMap prod/web (owned object changed) @ 12\n    \
             wrote:   apply ConfigMap prod/web -> 403\n"
        );
    }

    #[test]
    fn an_address_needs_a_kind_and_a_name() {
        assert_eq!(
            address("Widget/prod/web").ok(),
            Some(("Widget", "prod/web".to_owned()))
        );
        assert_eq!(
            address("Namespace/team").ok(),
            Some(("Namespace", "team".to_owned()))
        );
        assert!(address("web").is_err());
        assert!(address("Widget//web").is_err());
    }
}
