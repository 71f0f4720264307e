//! Bodies over the webhook server's limit from clients that write the whole body before reading
//! the answer (curl, Python): each reads the 413, and the server keeps serving.

use std::future::poll_fn;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode, header};
use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncReadExt as _, AsyncWrite};
use tokio::io::{AsyncWriteExt as _, BufReader};
use tokio_util::sync::CancellationToken;

use super::tests::{REVIEW, start};
use crate::tls::DRAIN_LIMIT;
use crate::tls::client::{connect, connector};
use crate::webhook::router::BODY_LIMIT;

/// A body 1 MiB over the limit: within the drain bound, so read to its end before the answer.
const A_LITTLE_OVER: usize = BODY_LIMIT + (1 << 20);
/// A body 16 MiB over: past the drain bound, and more than the loopback socket buffers hold
/// while the server reads nothing, so a server that closes without reading on resets it.
const FAR_OVER: usize = BODY_LIMIT + DRAIN_LIMIT + (8 << 20);
/// How long the test waits for each answer: writing a body on two busy cores, with slack.
const ANSWER_WITHIN: Duration = Duration::from_secs(30);
const PATH: &str = "/validate--v1-configmap";
const REFUSAL: &str = "the request body is larger than 3145728 bytes";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http1_clients_that_write_a_whole_body_over_the_limit_before_reading_get_the_413() {
    // Issue 39: Python's http.client writes the whole body, then reads. A server that answers
    // 413 at the limit and closes with the rest unread resets the connection, and the client
    // sees the reset (Python: "EOF occurred in violation of protocol") instead of the 413.
    let stop = CancellationToken::new();
    let (addr, ca) = start(&stop).await;
    let h1 = connector(&ca, &[b"http/1.1"], true);
    for size in [A_LITTLE_OVER, FAR_OVER] {
        for chunked in [false, true] {
            let case = format!("{size} bytes, chunked {chunked}");
            let mut stream = BufReader::new(connect(&h1, addr, "localhost").await.unwrap());
            // Python reads nothing when its write fails; neither does this client.
            write_request(&mut stream, &vec![b' '; size], chunked)
                .await
                .unwrap_or_else(|e| panic!("{case}: the server broke off the body ({e})"));
            let (head, body) = tokio::time::timeout(ANSWER_WITHIN, read_response(&mut stream))
                .await
                .unwrap_or_else(|_| panic!("{case}: no answer within {ANSWER_WITHIN:?}"))
                .unwrap_or_else(|e| panic!("{case}: no answer ({e})"));
            assert!(head.starts_with("HTTP/1.1 413"), "{case}: {head}");
            assert!(body.contains(REFUSAL), "{case}: {body}");
            if size <= BODY_LIMIT + DRAIN_LIMIT {
                // Read to its end: the connection carries on.
                write_request(&mut stream, REVIEW.as_bytes(), false)
                    .await
                    .unwrap();
                let (head, _) = read_response(&mut stream).await.unwrap();
                assert!(
                    head.starts_with("HTTP/1.1 200"),
                    "{case}, next request: {head}"
                );
            } else {
                // Closed cleanly: TLS close_notify and a FIN, not a reset.
                let mut rest = Vec::new();
                let end = tokio::time::timeout(ANSWER_WITHIN, stream.read_to_end(&mut rest))
                    .await
                    .unwrap_or_else(|_| panic!("{case}: the connection was never closed"));
                assert!(end.is_ok(), "{case}: the connection ended with {end:?}");
            }
        }
    }
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http2_clients_that_write_a_whole_body_over_the_limit_before_reading_get_the_413() {
    // Issue 39: a server that drops the unread body before answering resets the stream with
    // CANCEL ("Stream error in the HTTP/2 framing layer" in curl); one that resets it with
    // NO_ERROR right after the answer still fails a client that writes its whole body before
    // reading, as curl 7.88 and this test's client do.
    let stop = CancellationToken::new();
    let (addr, ca) = start(&stop).await;
    let stream = connect(&connector(&ca, &[b"h2"], true), addr, "localhost")
        .await
        .unwrap();
    let (sender, connection) = h2::client::handshake(stream).await.unwrap();
    tokio::spawn(connection);
    for size in [A_LITTLE_OVER, FAR_OVER] {
        let post = post_whole_body(&sender, Bytes::from(vec![b' '; size]));
        let (status, body) = tokio::time::timeout(ANSWER_WITHIN, post)
            .await
            .unwrap_or_else(|_| panic!("{size} bytes: no answer within {ANSWER_WITHIN:?}"))
            .unwrap_or_else(|e| panic!("{size} bytes: {e}"));
        assert_eq!(
            status,
            StatusCode::PAYLOAD_TOO_LARGE,
            "{size} bytes: {body}"
        );
        assert!(body.contains(REFUSAL), "{size} bytes: {body}");
    }
    let (status, body) = post_whole_body(&sender, Bytes::from_static(REVIEW.as_bytes()))
        .await
        .unwrap();
    assert_eq!(
        status,
        StatusCode::OK,
        "the same connection, next request: {body}"
    );
    stop.cancel();
}

/// Writes a POST of `body` to the validator, `Content-Length` or chunked.
async fn write_request(
    stream: &mut (impl AsyncWrite + Unpin),
    body: &[u8],
    chunked: bool,
) -> std::io::Result<()> {
    let framing = if chunked {
        "Transfer-Encoding: chunked".to_owned()
    } else {
        format!("Content-Length: {}", body.len())
    };
    let head = format!(
        "POST {PATH} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         {framing}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await?;
    if chunked {
        for piece in body.chunks(64 * 1024) {
            let size = format!("{:x}\r\n", piece.len());
            stream.write_all(size.as_bytes()).await?;
            stream.write_all(piece).await?;
            stream.write_all(b"\r\n").await?;
        }
        stream.write_all(b"0\r\n\r\n").await?;
    } else {
        stream.write_all(body).await?;
    }
    stream.flush().await
}

/// Reads one HTTP/1.1 response: its head, and its body by `Content-Length`.
async fn read_response(
    stream: &mut (impl AsyncBufRead + Unpin),
) -> std::io::Result<(String, String)> {
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        if stream.read_line(&mut head).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await?;
    Ok((head, String::from_utf8_lossy(&body).into_owned()))
}

/// Posts `body` to the validator over HTTP/2 as curl does: the whole body is written (as fast
/// as flow control lets it) before the answer is looked at, and a reset of the stream while
/// writing is a failure, as it is in curl.
async fn post_whole_body(
    sender: &h2::client::SendRequest<Bytes>,
    mut body: Bytes,
) -> Result<(StatusCode, String), String> {
    let request = Request::post(format!("https://localhost{PATH}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CONTENT_LENGTH, body.len())
        .body(())
        .unwrap();
    let mut sender = sender.clone().ready().await.map_err(|e| e.to_string())?;
    let (answer, mut stream) = sender
        .send_request(request, body.is_empty())
        .map_err(|e| e.to_string())?;
    while !body.is_empty() {
        stream.reserve_capacity(body.len());
        let granted = match poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(Ok(granted)) => granted,
            Some(Err(e)) => return Err(format!("writing the body: {e}")),
            None => return Err("writing the body: the stream was closed".into()),
        };
        let piece = body.split_to(granted.min(body.len()));
        stream
            .send_data(piece, body.is_empty())
            .map_err(|e| format!("writing the body: {e}"))?;
    }
    let answer = answer.await.map_err(|e| format!("the answer: {e}"))?;
    let status = answer.status();
    let mut answer = answer.into_body();
    let mut text = Vec::new();
    while let Some(data) = answer.data().await {
        let data = data.map_err(|e| format!("the answer's body: {e}"))?;
        let _ = answer.flow_control().release_capacity(data.len());
        text.extend_from_slice(&data);
    }
    Ok((status, String::from_utf8_lossy(&text).into_owned()))
}
