//! Stands between a simulation's clients and its fake API server: delays requests, fails some,
//! and delays, drops and expires watches, as the seed decides; logs what passes.
//!
//! This is the simulation's one hook into the API server: the fake keeps to the API server's
//! rules, and everything a seed decides about the network happens here.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body::{Frame, SizeHint};
use serde_json::Value;
use tokio::time::{Duration, Sleep};
use tower_service::Service;

use super::faults::{End, Injected, Request as Kind, WatchPlan};
use super::world::Shared;
use crate::fake::ResponseBody;
use crate::fake::status::Failure;
use crate::fake::watch::{event_line, text};

/// The error of a request whose connection was reset.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A client's way to the fake API server in a simulation.
#[derive(Clone, Debug)]
pub(crate) struct Network {
    pub(crate) shared: Arc<Shared>,
    /// Names the client in the log (`a`, `replica-1`).
    pub(crate) client: Arc<str>,
}

/// The body of an answer in a simulation: the fake's, with a watch's events delayed.
#[derive(Debug)]
pub(crate) struct Body {
    inner: Option<ResponseBody>,
    delivery: Option<Box<Delivery>>,
}

/// How one watch's events reach its client.
#[derive(Debug)]
struct Delivery {
    shared: Arc<Shared>,
    /// Completes when an outage begins, which ends the watch.
    outage: NextOutage,
    /// `client watch#n`, for the log.
    label: String,
    max_delay: Duration,
    /// An event waiting out its delay.
    held: Option<Held>,
    /// When and how the watch breaks, and the break's fault number.
    end: Option<(Pin<Box<Sleep>>, End, u64)>,
    ended: bool,
}

/// A watch event waiting out its delay.
#[derive(Debug)]
struct Held {
    chunk: Bytes,
    sleep: Pin<Box<Sleep>>,
    /// The delay and its fault number, when it is one.
    late: Option<(Duration, u64)>,
}

impl Service<Request<kube::client::Body>> for Network {
    type Response = Response<Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<kube::client::Body>) -> Self::Future {
        let network = self.clone();
        Box::pin(async move { network.serve(request).await })
    }
}

impl Network {
    async fn serve(self, request: Request<kube::client::Body>) -> Result<Response<Body>, BoxError> {
        let kind = kind_of(&request);
        let what = format!(
            "{} {}",
            request.method(),
            request
                .uri()
                .path_and_query()
                .map_or("/", |path| path.as_str())
        );
        let (id, plan) = self.shared.plan(kind);
        let label = format!("{} #{id} {what}", self.client);
        let (latency, slow) = plan.latency;
        if let Some(number) = slow {
            self.shared.mark(format_args!(
                "fault {number}: {label} waits {} ms",
                latency.as_millis()
            ));
        }
        tokio::time::sleep(latency).await;
        let Some((injected, number)) = plan.failure else {
            return Ok(self.pass(request, label, plan.watch).await);
        };
        let log = |line: std::fmt::Arguments<'_>| match number {
            Some(number) => self.shared.fault(number, line),
            None => self.shared.log(line),
        };
        match injected {
            Injected::Reset => {
                log(format_args!("{label} -> connection reset"));
                Err("connection reset by the simulation".into())
            }
            Injected::Timeout if kind == Kind::Write => {
                // The write happens; its answer is lost.
                let answer = self.answer(request).await;
                let (status, object) = summary(&answer);
                log(format_args!(
                    "{label} -> {status} {object} lost, 504 instead"
                ));
                Ok(failed(Injected::Timeout))
            }
            injected => {
                let response = failed(injected);
                log(format_args!("{label} -> {} injected", response.status()));
                Ok(response)
            }
        }
    }

    /// Hands a request no failure stopped to the fake, and its answer back with the watch's
    /// delivery plan.
    async fn pass(
        &self,
        request: Request<kube::client::Body>,
        label: String,
        watch: Option<WatchPlan>,
    ) -> Response<Body> {
        let answer = self.answer(request).await;
        let (status, object) = summary(&answer);
        let line = format!("{label} -> {status} {object}");
        self.shared.log(format_args!("{}", line.trim_end()));
        let watch = watch.filter(|_| status.is_success());
        match watch {
            Some(plan) => {
                let watch_id = self.shared.next_watch();
                let (parts, body) = answer.into_parts();
                let delivery = Delivery::new(
                    Arc::clone(&self.shared),
                    format!("{} watch#{watch_id}", self.client),
                    plan,
                );
                Response::from_parts(
                    parts,
                    Body {
                        inner: Some(body),
                        delivery: Some(Box::new(delivery)),
                    },
                )
            }
            None => answer.map(|body| Body {
                inner: Some(body),
                delivery: None,
            }),
        }
    }

    async fn answer(&self, request: Request<kube::client::Body>) -> Response<ResponseBody> {
        let mut fake = self.shared.fake.clone();
        let answered: Result<_, Infallible> = fake.call(request).await;
        match answered {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

/// Whether a request reads, watches or writes.
fn kind_of<B>(request: &Request<B>) -> Kind {
    let watch = request.uri().query().is_some_and(|query| {
        query
            .split('&')
            .any(|pair| pair == "watch=true" || pair == "watch=1")
    });
    match *request.method() {
        Method::GET if watch => Kind::Watch,
        Method::GET | Method::HEAD => Kind::Read,
        _ => Kind::Write,
    }
}

/// The status of an answer and, for one object, its `namespace/name@resourceVersion`.
fn summary(answer: &Response<ResponseBody>) -> (StatusCode, String) {
    let object = answer
        .body()
        .full_bytes()
        .and_then(|bytes| serde_json::from_slice::<Value>(bytes).ok())
        .map(|json| describe(&json))
        .unwrap_or_default();
    (answer.status(), object)
}

/// `namespace/name@resourceVersion` of an object, `list@resourceVersion` of a list, or a
/// Status's reason.
fn describe(json: &Value) -> String {
    let metadata = &json["metadata"];
    let version = metadata["resourceVersion"].as_str().unwrap_or_default();
    if json["kind"] == "Status" {
        return json["reason"].as_str().unwrap_or_default().to_owned();
    }
    if json.get("items").is_some() {
        let count = json["items"].as_array().map_or(0, Vec::len);
        return format!("list of {count}@{version}");
    }
    let name = metadata["name"].as_str().unwrap_or_default();
    match metadata["namespace"].as_str() {
        Some(namespace) => format!("{namespace}/{name}@{version}"),
        None => format!("{name}@{version}"),
    }
}

/// The answer a failure is injected as.
fn failed(injected: Injected) -> Response<Body> {
    let code = match injected {
        Injected::Conflict => StatusCode::CONFLICT,
        Injected::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
        Injected::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        Injected::Timeout | Injected::Reset => StatusCode::GATEWAY_TIMEOUT,
    };
    let failure = Failure::new(
        code,
        Failure::reason_for(code),
        "injected by the simulation",
    );
    let mut response = Response::new(Body {
        inner: Some(ResponseBody::full(failure.to_json().to_string())),
        delivery: None,
    });
    *response.status_mut() = code;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if injected == Injected::TooManyRequests {
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// Completes when the next outage begins.
struct NextOutage(Pin<Box<dyn Future<Output = ()> + Send>>);

impl std::fmt::Debug for NextOutage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NextOutage")
    }
}

impl Delivery {
    fn new(shared: Arc<Shared>, label: String, plan: WatchPlan) -> Self {
        let outage = NextOutage(Box::pin(shared.next_outage()));
        let end = plan
            .end
            .map(|(after, how, number)| (Box::pin(tokio::time::sleep(after)), how, number));
        Self {
            shared,
            outage,
            label,
            max_delay: plan.max_delay,
            held: None,
            end,
            ended: false,
        }
    }

    /// Logs each event of a chunk as its client receives it; a late one goes on the timeline
    /// too, with its fault number.
    fn delivered(&self, chunk: &Bytes, late: Option<(Duration, u64)>) {
        for line in chunk.split(|byte| *byte == b'\n') {
            let Ok(event) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            let kind = event["type"].as_str().unwrap_or_default();
            let object = describe(&event["object"]);
            self.shared
                .log(format_args!("{} {kind} {object}", self.label));
            if let Some((delay, number)) = late {
                self.shared.mark(format_args!(
                    "fault {number}: {} {kind} {object}, {} ms late",
                    self.label,
                    delay.as_millis()
                ));
            }
        }
    }

    /// The next frame: the watch's end when it breaks, else the next event once its delay
    /// passed.
    fn poll(&mut self, inner: Pin<&mut ResponseBody>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.ended {
            return Poll::Ready(None);
        }
        if self.outage.0.as_mut().poll(cx).is_ready() {
            self.ended = true;
            self.shared
                .log(format_args!("{} broken: outage", self.label));
            return Poll::Ready(None);
        }
        if let Some((sleep, how, number)) = &mut self.end
            && sleep.as_mut().poll(cx).is_ready()
        {
            self.ended = true;
            self.shared
                .fault(*number, format_args!("{} broken: {how:?}", self.label));
            return Poll::Ready(match how {
                End::Dropped => None,
                End::Expired => {
                    let gone = Failure::gone("too old resource version (the simulation)");
                    Some(event_line("ERROR", &text(&gone.to_json())))
                }
            });
        }
        if self.held.is_none() {
            let frame = ready!(http_body::Body::poll_frame(inner, cx));
            let Some(Ok(data)) = frame.map(|frame| frame.map(Frame::into_data)) else {
                return Poll::Ready(None);
            };
            let Ok(chunk) = data else {
                return Poll::Ready(None);
            };
            let (delay, number) = self.shared.delay(self.max_delay);
            let late = number.map(|number| (delay, number));
            self.held = Some(Held {
                chunk,
                sleep: Box::pin(tokio::time::sleep(delay)),
                late,
            });
        }
        if let Some(held) = &mut self.held {
            ready!(held.sleep.as_mut().poll(cx));
        }
        let Some(Held { chunk, late, .. }) = self.held.take() else {
            return Poll::Ready(None);
        };
        self.delivered(&chunk, late);
        Poll::Ready(Some(chunk))
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        let Some(inner) = &mut this.inner else {
            return Poll::Ready(None);
        };
        match &mut this.delivery {
            None => Pin::new(inner).poll_frame(cx),
            Some(delivery) => {
                let next = ready!(delivery.poll(Pin::new(inner), cx));
                if next.is_none() {
                    // Dropping the fake's body closes its side of the watch.
                    this.inner = None;
                }
                Poll::Ready(next.map(|chunk| Ok(Frame::data(chunk))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner
            .as_ref()
            .is_none_or(|inner| self.delivery.is_none() && http_body::Body::is_end_stream(inner))
    }

    fn size_hint(&self) -> SizeHint {
        match (&self.inner, &self.delivery) {
            (Some(inner), None) => http_body::Body::size_hint(inner),
            _ => SizeHint::default(),
        }
    }
}
