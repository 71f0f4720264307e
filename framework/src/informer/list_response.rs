//! Reads a list response whole, waiting at most the idle timeout for each part of it.
//!
//! A list that keeps arriving is never cut off, however long it takes (the list of a million
//! objects in one request, after its pages expired, takes minutes); one that stops arriving is.

use std::time::Duration;

use bytes::BytesMut;
use http_body_util::BodyExt as _;
use kube::client::Body;
use serde::de::DeserializeOwned;

use super::watch_lines::{Idle, refusal};

/// Sends the list `request` and decodes its whole body as `T`; a response that is not a success
/// is the server's `Status`. Waiting longer than `idle` for the response, or for the next chunk
/// of its body, is [`Idle`].
pub(crate) async fn read<T: DeserializeOwned>(
    client: &kube::Client,
    request: http::Request<Vec<u8>>,
    idle: Duration,
) -> Result<Result<T, kube::Error>, Idle> {
    let response = match tokio::time::timeout(idle, client.send(request.map(Body::from))).await {
        Err(_) => return Err(Idle),
        Ok(Err(err)) => return Ok(Err(err)),
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    let mut body = response.into_body();
    if status.is_client_error() || status.is_server_error() {
        return Ok(Err(refusal(status, body).await));
    }
    let mut text = BytesMut::new();
    loop {
        match tokio::time::timeout(idle, body.frame()).await {
            Err(_) => return Err(Idle),
            Ok(None) => break,
            Ok(Some(Err(err))) => return Ok(Err(err)),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    text.extend_from_slice(&data);
                }
            }
        }
    }
    Ok(serde_json::from_slice(&text).map_err(kube::Error::SerdeError))
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use bytes::Bytes;
    use futures::StreamExt as _;
    use http_body_util::StreamBody;
    use hyper::body::Frame;
    use serde_json::Value;

    use super::*;

    const IDLE: Duration = Duration::from_secs(10);

    /// A client whose every response is `code` with a body of `parts`, each sent after `gap`.
    fn client(code: u16, parts: &'static [&'static str], gap: Duration) -> kube::Client {
        let service = tower::service_fn(move |_request: http::Request<Body>| async move {
            let chunks = futures::stream::iter(parts).then(move |part| async move {
                tokio::time::sleep(gap).await;
                Ok::<_, Infallible>(Frame::data(Bytes::from_static(part.as_bytes())))
            });
            let response = http::Response::builder()
                .status(code)
                .body(StreamBody::new(chunks))
                .expect("invariant: a status code and a body make a response");
            Ok::<_, Infallible>(response)
        });
        kube::Client::new(service, "default")
    }

    fn list_request() -> http::Request<Vec<u8>> {
        http::Request::get("/api/v1/configmaps")
            .body(Vec::new())
            .expect("invariant: a path makes a request")
    }

    const LIST: &[&str] = &[
        r#"{"kind":"ConfigMapList","#,
        r#""items":[{"a":1},"#,
        r#"{"b":2}]}"#,
    ];

    #[tokio::test(start_paused = true)]
    async fn a_list_that_keeps_arriving_is_read_however_long_it_takes() {
        // Three gaps of two thirds of the idle timeout: twice the timeout in all.
        let started = tokio::time::Instant::now();
        let list: Value = read(&client(200, LIST, IDLE * 2 / 3), list_request(), IDLE)
            .await
            .expect("no gap reaches the idle timeout")
            .expect("the list is valid JSON");
        assert_eq!(list["items"].as_array().map(Vec::len), Some(2), "{list}");
        assert!(started.elapsed() >= IDLE * 2, "{:?}", started.elapsed());
    }

    #[tokio::test(start_paused = true)]
    async fn a_list_that_stops_arriving_is_idle() {
        let read = read::<Value>(&client(200, LIST, IDLE * 3 / 2), list_request(), IDLE).await;
        assert!(matches!(read, Err(Idle)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_list_is_the_servers_status() {
        const GONE: &[&str] = &[
            r#"{"kind":"Status","status":"Failure","reason":"Expired","#,
            r#""code":410}"#,
        ];
        let read = read::<Value>(&client(410, GONE, Duration::ZERO), list_request(), IDLE).await;
        match read {
            Ok(Err(kube::Error::Api(status))) => {
                assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
            }
            other => panic!(
                "expected the server's 410, got {:?}",
                other.map(|r| r.map(|_: Value| ()))
            ),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_is_not_json_is_a_decode_error() {
        let read = read::<Value>(
            &client(200, &["{\"items\": ["], Duration::ZERO),
            list_request(),
            IDLE,
        )
        .await;
        assert!(
            matches!(read, Ok(Err(kube::Error::SerdeError(_)))),
            "{read:?}"
        );
    }
}
