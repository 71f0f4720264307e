//! Talks plain HTTP to an operator's endpoints on loopback: a free address, `GET`, a scrape.

use std::net::{SocketAddr, TcpListener};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::{Error, Result, io_error};

/// How long [`get`] waits for a whole answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// A loopback address whose port was free a moment ago, for an endpoint a test starts
/// (`BindAddress::On(free_addr()?)`).
///
/// # Errors
/// [`Error::Io`] when no port can be bound.
pub fn free_addr() -> Result<SocketAddr> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(io_error("finding a free loopback port"))
}

/// `GET path` on `addr` over HTTP/1.0 (the connection closes after one answer): its status,
/// headers and body.
///
/// # Errors
/// [`Error::Io`] when nothing listens or the answer is not HTTP; [`Error::Timeout`] when the whole
/// answer takes over 10 s.
pub async fn get(addr: SocketAddr, path: &str) -> Result<http::Response<String>> {
    let request = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    let action = format!("GET {path} from {addr}");
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await?;
        stream.write_all(request.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await?;
        Ok(answer)
    };
    let answer = tokio::time::timeout(ANSWER_TIMEOUT, exchange)
        .await
        .map_err(|_| Error::Timeout {
            what: format!("the answer to {action}"),
            timeout: ANSWER_TIMEOUT,
        })?
        .map_err(io_error(action.clone()))?;
    parse(&answer).map_err(|reason| Error::Io {
        action,
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, reason),
    })
}

/// The `/metrics` page of `addr`, in the Prometheus text format.
///
/// # Errors
/// As [`get`], and [`Error::Status`] when the endpoint answers other than 200.
pub async fn scrape(addr: SocketAddr) -> Result<String> {
    let response = get(addr, "/metrics").await?;
    if response.status() != http::StatusCode::OK {
        return Err(Error::Status {
            request: format!("GET /metrics from {addr}"),
            status: response.status().as_u16(),
            body: response.into_body(),
        });
    }
    Ok(response.into_body())
}

/// An HTTP/1.x answer: status line, headers, then the body up to the end of the connection.
fn parse(answer: &[u8]) -> std::result::Result<http::Response<String>, String> {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no end of headers in {text:?}"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| format!("no status in {status_line:?}"))?;
    let mut response = http::Response::builder().status(status);
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("not a header: {line:?}"))?;
        response = response.header(name.trim(), value.trim());
    }
    response
        .body(body.to_owned())
        .map_err(|e| format!("{e} in {head:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serves `answer` once on a free loopback port, after reading the request's head.
    async fn serve_once(answer: &'static str) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            while !head.ends_with(b"\r\n\r\n") {
                let mut byte = [0_u8; 1];
                stream.read_exact(&mut byte).await.unwrap();
                head.push(byte[0]);
            }
            stream.write_all(answer.as_bytes()).await.unwrap();
        });
        addr
    }

    #[tokio::test]
    async fn get_returns_the_status_headers_and_body_of_the_answer() {
        let addr = serve_once(
            "HTTP/1.0 503 Service Unavailable\r\ncontent-type: text/plain\r\n\r\nnot ready\n",
        )
        .await;
        let response = get(addr, "/readyz").await.unwrap();
        assert_eq!(response.status(), 503);
        assert_eq!(response.headers()["content-type"], "text/plain");
        assert_eq!(response.body(), "not ready\n");
    }

    #[tokio::test]
    async fn a_scrape_is_the_body_of_a_200_and_an_error_naming_any_other_status() {
        let addr = serve_once("HTTP/1.0 200 OK\r\n\r\nup 1\n").await;
        assert_eq!(scrape(addr).await.unwrap(), "up 1\n");
        let addr = serve_once("HTTP/1.0 404 Not Found\r\n\r\nno such page").await;
        let err = scrape(addr).await.unwrap_err();
        assert!(
            err.to_string().contains("GET /metrics from 127.0.0.1:")
                && err.to_string().contains("answered 404: no such page"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn nothing_listening_on_a_free_addr_is_an_io_error() {
        let addr = free_addr().unwrap();
        assert!(addr.ip().is_loopback());
        let err = get(addr, "/healthz").await.unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err}");
        assert!(err.to_string().contains("GET /healthz from"), "{err}");
    }

    #[test]
    fn an_answer_without_a_status_line_is_refused() {
        assert!(parse(b"hello\r\n\r\n").unwrap_err().contains("no status"));
        assert!(
            parse(b"HTTP/1.0 200 OK\r\n")
                .unwrap_err()
                .contains("no end of headers")
        );
    }
}
