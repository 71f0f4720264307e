//! Wraps a manager's client so that, once planning, every write is a dry run that is noted.
//!
//! Off (every manager until it plans), a request passes through untouched. On, a create,
//! update, patch or delete gets `dryRun=All` in its query: admission, defaulting and validation
//! run on the API server, and nothing persists. Its answer goes back to the caller unchanged
//! and is noted with the live object, read next to the write, to diff against. A later read of
//! a single object the pass wrote (a GET of it) is answered with the dry-run result: the
//! overlay. Lists, watches and the informers' caches show the cluster as it is.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use kube::Client;
use kube::client::Body;
use parking_lot::Mutex;
use serde_json::Value;

/// The planning switch and what a plan pass sent. Shared by the manager and its client.
#[derive(Debug, Default)]
pub(crate) struct Planning {
    on: AtomicBool,
    /// Event writes sent dry (and so not recorded).
    events: AtomicUsize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    writes: Vec<Write>,
    /// Object path → the object as the pass's last dry-run write left it.
    overlay: HashMap<String, Bytes>,
}

/// One dry-run write.
#[derive(Debug)]
pub(crate) struct Write {
    pub(crate) method: Method,
    pub(crate) target: Target,
    /// The object as the API server had it when the write was sent; `None` when it did not
    /// exist (or the write was a create).
    pub(crate) live: Option<Value>,
    pub(crate) status: StatusCode,
    /// The answer: the object the write would leave, or the refusal's `Status`.
    pub(crate) answer: Value,
}

/// What a request's path names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    /// `/api/v1` or `/apis/GROUP/VERSION`.
    pub(crate) prefix: String,
    pub(crate) namespace: Option<String>,
    pub(crate) plural: String,
    pub(crate) name: Option<String>,
    pub(crate) subresource: Option<String>,
}

impl Target {
    /// The target of `path`; `None` for what is not a resource (`/version`, discovery).
    pub(crate) fn of(path: &str) -> Option<Self> {
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let (prefix, rest) = match segments.as_slice() {
            ["api", version, rest @ ..] => (format!("/api/{version}"), rest),
            ["apis", group, version, rest @ ..] => (format!("/apis/{group}/{version}"), rest),
            _ => return None,
        };
        let (namespace, rest) = match rest {
            ["namespaces", namespace, rest @ ..] if !rest.is_empty() => (Some(*namespace), rest),
            _ => (None, rest),
        };
        let (plural, name, subresource) = match rest {
            [plural] => (*plural, None, None),
            [plural, name] => (*plural, Some(*name), None),
            [plural, name, sub] => (*plural, Some(*name), Some(*sub)),
            _ => return None,
        };
        Some(Self {
            prefix,
            namespace: namespace.map(str::to_owned),
            plural: plural.to_owned(),
            name: name.map(str::to_owned),
            subresource: subresource.map(str::to_owned),
        })
    }

    /// The path of the object `name` this target's collection holds.
    pub(crate) fn object_path(&self, name: &str) -> String {
        match &self.namespace {
            Some(ns) => format!("{}/namespaces/{ns}/{}/{name}", self.prefix, self.plural),
            None => format!("{}/{}/{name}", self.prefix, self.plural),
        }
    }

    /// Whether it names Events (`v1` or `events.k8s.io`).
    fn is_event(&self) -> bool {
        self.plural == "events"
    }
}

impl Planning {
    /// Turns dry runs on. There is no turning them off: an Event or write still on its way
    /// when a plan ends must stay dry.
    pub(crate) fn start(&self) {
        self.on.store(true, Ordering::SeqCst);
    }

    /// The writes noted so far, in the order they were answered.
    pub(crate) fn take_writes(&self) -> Vec<Write> {
        std::mem::take(&mut self.state.lock().writes)
    }

    /// How many Event writes were sent dry.
    pub(crate) fn events(&self) -> usize {
        self.events.load(Ordering::SeqCst)
    }

    async fn send(&self, inner: &Client, request: Request<Body>) -> kube::Result<Response<Body>> {
        let method = request.method().clone();
        let Some(target) = Target::of(request.uri().path()) else {
            return inner.send(request).await;
        };
        if method == Method::GET {
            let watch = request.uri().query().is_some_and(|q| q.contains("watch="));
            let overlaid = (target.name.as_deref())
                .filter(|_| !watch && target.subresource.as_deref().is_none_or(|s| s == "status"))
                .and_then(|name| {
                    self.state
                        .lock()
                        .overlay
                        .get(&target.object_path(name))
                        .cloned()
                });
            return match overlaid {
                Some(object) => Ok(answer(StatusCode::OK, object)),
                None => inner.send(request).await,
            };
        }
        if ![Method::POST, Method::PUT, Method::PATCH, Method::DELETE].contains(&method) {
            return inner.send(request).await;
        }
        let request = dry(request)?;
        if target.is_event() {
            self.events.fetch_add(1, Ordering::SeqCst);
            return inner.send(request).await;
        }
        let live = async {
            match &target.name {
                Some(name) => read(inner, &target.object_path(name)).await,
                None => None,
            }
        };
        let (live, response) = futures::join!(live, inner.send(request));
        let (parts, body) = response?.into_parts();
        let bytes = body.collect_bytes().await?;
        self.note(method, target, live, parts.status, &bytes);
        Ok(Response::from_parts(parts, Body::from(bytes)))
    }

    fn note(
        &self,
        method: Method,
        target: Target,
        live: Option<Value>,
        status: StatusCode,
        body: &Bytes,
    ) {
        let answer: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let mut state = self.state.lock();
        let name = (target.name.clone())
            .or_else(|| answer["metadata"]["name"].as_str().map(str::to_owned));
        if let (true, Some(name)) = (status.is_success(), name.as_deref())
            && method != Method::DELETE
            && answer.get("metadata").is_some()
        {
            let path = target.object_path(name);
            state.overlay.insert(path, body.clone());
        }
        state.writes.push(Write {
            method,
            target,
            live,
            status,
            answer,
        });
    }
}

/// `inner` behind a plan's switch, off until [started](Planning::start), and the switch: every
/// client made from the one returned sends its writes as dry runs, noted in it, once it is on.
pub(crate) fn switchable(inner: Client) -> (Client, Arc<Planning>) {
    let planning = Arc::new(Planning::default());
    (client(inner, Arc::clone(&planning)), planning)
}

/// `inner`, whose writes are dry runs noted in `planning` once it [started](Planning::start).
pub(crate) fn client(inner: Client, planning: Arc<Planning>) -> Client {
    let namespace = inner.default_namespace().to_owned();
    let service = tower::service_fn(move |request: Request<Body>| {
        let (inner, planning) = (inner.clone(), Arc::clone(&planning));
        async move {
            if planning.on.load(Ordering::SeqCst) {
                planning.send(&inner, request).await
            } else {
                inner.send(request).await
            }
        }
    });
    Client::new(service, namespace)
}

/// `request` with `dryRun=All` in its query.
fn dry(mut request: Request<Body>) -> kube::Result<Request<Body>> {
    let uri = request.uri();
    let query = match uri.query() {
        Some(query) if query.split('&').any(|p| p == "dryRun=All") => return Ok(request),
        Some(query) => format!("{query}&dryRun=All"),
        None => "dryRun=All".to_owned(),
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(
        format!("{}?{query}", uri.path())
            .parse()
            .map_err(|e: http::uri::InvalidUri| kube::Error::HttpError(e.into()))?,
    );
    *request.uri_mut() =
        http::Uri::from_parts(parts).map_err(|e| kube::Error::HttpError(e.into()))?;
    Ok(request)
}

/// The object at `path` as the API server has it; `None` when it does not exist.
async fn read(inner: &Client, path: &str) -> Option<Value> {
    let request = Request::get(path).body(Body::empty()).ok()?;
    let response = inner.send(request).await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let bytes = response.into_body().collect_bytes().await.ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn answer(status: StatusCode, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_their_group_namespace_plural_name_and_subresource() {
        let status =
            Target::of("/apis/demo.kubeward.dev/v1/namespaces/a/configmapgenerators/g/status")
                .expect("a resource path");
        assert_eq!(status.prefix, "/apis/demo.kubeward.dev/v1");
        assert_eq!(status.namespace.as_deref(), Some("a"));
        assert_eq!(status.plural, "configmapgenerators");
        assert_eq!(status.name.as_deref(), Some("g"));
        assert_eq!(status.subresource.as_deref(), Some("status"));
        assert_eq!(
            status.object_path("g"),
            "/apis/demo.kubeward.dev/v1/namespaces/a/configmapgenerators/g"
        );
        let namespaces = Target::of("/api/v1/namespaces").expect("a resource path");
        assert_eq!(
            (namespaces.plural.as_str(), namespaces.namespace),
            ("namespaces", None)
        );
        assert_eq!(Target::of("/version"), None);
    }

    #[test]
    fn a_dry_request_keeps_its_query_and_gets_dry_run_all_once() -> anyhow::Result<()> {
        let request = Request::patch("/api/v1/namespaces/a/configmaps/c?fieldManager=m&force=true")
            .body(Body::empty())?;
        let dried = dry(request)?;
        assert_eq!(
            dried.uri().to_string(),
            "/api/v1/namespaces/a/configmaps/c?fieldManager=m&force=true&dryRun=All"
        );
        let again = dry(dried)?;
        assert_eq!(
            again.uri().query(),
            Some("fieldManager=m&force=true&dryRun=All")
        );
        let bare = dry(Request::post("/api/v1/namespaces/a/configmaps").body(Body::empty())?)?;
        assert_eq!(bare.uri().query(), Some("dryRun=All"));
        Ok(())
    }
}
