//! Stamps the moment each watch event's bytes reach the client, keyed by a sequence number.
//!
//! A [`kube::Client`] whose responses pass through [`StampedBody`]: each data frame that hyper
//! hands up is scanned for `"seq":"<n>"` and the first arrival of every `n` is recorded, before
//! kube decodes the frame. kubeward's informer and kube-runtime's watcher read the same frames
//! through the same client type, so "arrival" means the same instant for both.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Request, Response};
use http_body::{Frame, SizeHint};
use kube::Client;
use kube::client::Body;
use parking_lot::Mutex;
use tokio::time::Instant;

/// When each sequence number was first seen on the wire.
#[derive(Debug, Default)]
pub struct Arrivals(Mutex<HashMap<u64, Instant>>);

impl Arrivals {
    fn saw(&self, data: &[u8]) {
        let now = Instant::now();
        let marker = br#""seq":""#;
        let mut seen = self.0.lock();
        let mut rest = data;
        while let Some(at) = rest.windows(marker.len()).position(|w| w == marker) {
            rest = &rest[at + marker.len()..];
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            let n = std::str::from_utf8(&rest[..digits])
                .ok()
                .and_then(|s| s.parse().ok());
            if let Some(n) = n {
                seen.entry(n).or_insert(now);
            }
        }
    }

    /// The first arrival of `seq`, if it arrived.
    pub fn of(&self, seq: u64) -> Option<Instant> {
        self.0.lock().get(&seq).copied()
    }
}

/// A client like `inner` whose response bodies stamp arrivals into `arrivals`.
pub fn client(inner: Client, arrivals: Arc<Arrivals>) -> Client {
    let namespace = inner.default_namespace().to_owned();
    Client::new(Stamping { inner, arrivals }, namespace)
}

#[derive(Clone)]
struct Stamping {
    inner: Client,
    arrivals: Arc<Arrivals>,
}

impl tower_service::Service<Request<Body>> for Stamping {
    type Response = Response<StampedBody>;
    type Error = kube::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let (inner, arrivals) = (self.inner.clone(), Arc::clone(&self.arrivals));
        Box::pin(async move {
            let response = inner.send(request).await?;
            Ok(response.map(|body| StampedBody { body, arrivals }))
        })
    }
}

/// A response body that records arrivals as its frames come in.
pub struct StampedBody {
    body: Body,
    arrivals: Arc<Arrivals>,
}

impl http_body::Body for StampedBody {
    type Data = Bytes;
    type Error = kube::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            self.arrivals.saw(data);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
