//! Answers Kubernetes API requests from the fake's state.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::time::{Duration, Instant, MissedTickBehavior};

use super::Verb;
use super::apply::Apply;
use super::body::{Bookmarks, ResponseBody, WatchStream};
use super::discovery;
use super::initial::InitialEvents;
use super::kind::Kind;
use super::route::Route;
use super::selector::Selector;
use super::state::{State, Target};
use super::status::Failure;
use super::watch::{event_line, text};

/// How long a watch lasts when the client gives no `timeoutSeconds`.
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

/// Answers one request.
pub(crate) async fn handle(
    state: Arc<Mutex<State>>,
    request: Request<kube::client::Body>,
) -> Response<ResponseBody> {
    let (parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return failure(&Failure::bad_request("the request body could not be read")),
    };
    let route = Route::parse(parts.uri.path(), parts.uri.query());
    if parts.method == Method::GET && route.as_ref().is_some_and(continues_a_list) {
        wait_while_continues_held(&state).await;
    }
    dispatch(&state, &parts, route, &body).unwrap_or_else(|f| failure(&f))
}

/// Whether a GET asks for a list page after the first (it has a `continue` token).
fn continues_a_list(route: &Route) -> bool {
    route.name.is_none()
        && !route.flag("watch")
        && route
            .param("continue")
            .is_some_and(|token| !token.is_empty())
}

/// Waits while a test holds continued lists back (`FakeApiServer::hold_list_continues`); the
/// receiver it holds meanwhile is what `held_list_continues` counts.
async fn wait_while_continues_held(state: &Mutex<State>) {
    let mut hold = {
        let guard = state.lock();
        if !*guard.hold_continues.borrow() {
            return;
        }
        guard.hold_continues.subscribe()
    };
    // The sender lives as long as the state, which this request holds.
    let _ = hold.wait_for(|held| !held).await;
}

fn respond(code: StatusCode, body: &Value) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(body.to_string()));
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

fn failure(failure: &Failure) -> Response<ResponseBody> {
    respond(failure.code, &failure.to_json())
}

fn parse_json(body: &Bytes) -> Result<Value, Failure> {
    serde_json::from_slice(body)
        .map_err(|error| Failure::bad_request(format!("the request body is not JSON: {error}")))
}

fn verb_of(method: &Method, route: &Route) -> Result<Verb, Failure> {
    let named = route.name.is_some();
    Ok(match *method {
        Method::GET if named => Verb::Get,
        Method::GET if route.flag("watch") => Verb::Watch,
        Method::GET => Verb::List,
        Method::POST if !named => Verb::Create,
        Method::PUT if named => Verb::Update,
        Method::PATCH if named => Verb::Patch,
        Method::DELETE if named => Verb::Delete,
        Method::DELETE => Verb::DeleteCollection,
        _ => return Err(Failure::method_not_allowed()),
    })
}

fn dispatch(
    state: &Arc<Mutex<State>>,
    parts: &http::request::Parts,
    route: Option<Route>,
    body: &Bytes,
) -> Result<Response<ResponseBody>, Failure> {
    let Some(route) = route else {
        let guard = state.lock();
        let kinds: Vec<&Kind> = guard.kinds().collect();
        return match discovery::document(parts.uri.path(), &kinds) {
            Some(document) if parts.method == Method::GET => Ok(respond(StatusCode::OK, &document)),
            Some(_) => Err(Failure::method_not_allowed()),
            None => Err(Failure::no_such_resource()),
        };
    };
    let verb = verb_of(&parts.method, &route)?;
    let mut guard = state.lock();
    let kind = guard
        .kind(&route.group, &route.version, &route.plural)
        .ok_or_else(Failure::no_such_resource)?;
    if let Some(fault) = guard.take_fault(verb, &route.plural) {
        return Err(fault);
    }
    if !kind.namespaced && route.namespace.is_some() {
        return Err(Failure::no_such_resource());
    }
    let target = match route.subresource.as_deref() {
        None => Target::Main,
        Some("status") if kind.status_subresource => Target::Status,
        Some(_) => return Err(Failure::no_such_resource()),
    };
    let namespace = route.namespace.clone().unwrap_or_default();
    let name = route.name.clone().unwrap_or_default();
    match verb {
        Verb::Get => Ok(respond(
            StatusCode::OK,
            &guard.get(&kind, &namespace, &name)?,
        )),
        Verb::List => {
            let selector = selector(&route)?;
            let limit = route.param("limit").and_then(|l| l.parse().ok());
            let after = route.param("continue").filter(|token| !token.is_empty());
            let list = guard.list(&kind, route.namespace.as_deref(), &selector, limit, after)?;
            Ok(respond(StatusCode::OK, &list))
        }
        Verb::Watch => {
            drop(guard);
            watch(state, &kind, &route)
        }
        Verb::Create if kind.namespaced && route.namespace.is_none() => {
            Err(Failure::method_not_allowed())
        }
        Verb::Create => {
            let created = guard.create(&kind, &namespace, parse_json(body)?, false)?;
            Ok(respond(StatusCode::CREATED, &created))
        }
        Verb::Update => {
            let updated = guard.update(&kind, &namespace, &name, parse_json(body)?, target)?;
            Ok(respond(StatusCode::OK, &updated))
        }
        Verb::Patch => {
            let content_type = parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default();
            let request = PatchRequest {
                kind: &kind,
                namespace: &namespace,
                name: &name,
                target,
                field_manager: route.param("fieldManager"),
                force: route.flag("force"),
            };
            let (code, patched) = patch(&mut guard, &request, content_type, body)?;
            Ok(respond(code, &patched))
        }
        Verb::Delete => {
            let options = delete_options(body)?;
            let deleted = guard.delete(&kind, &namespace, &name, &options["preconditions"])?;
            Ok(respond(StatusCode::OK, &deleted))
        }
        Verb::DeleteCollection => {
            let options = delete_options(body)?;
            let selector = selector(&route)?;
            let mut list = guard.list(&kind, route.namespace.as_deref(), &selector, None, None)?;
            let mut deleted = Vec::new();
            for object in list["items"].as_array().cloned().unwrap_or_default() {
                let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
                let name = super::object::name(&object);
                deleted.push(guard.delete(&kind, namespace, name, &options["preconditions"])?);
            }
            list["items"] = Value::Array(deleted);
            Ok(respond(StatusCode::OK, &list))
        }
    }
}

fn delete_options(body: &Bytes) -> Result<Value, Failure> {
    if body.is_empty() {
        Ok(Value::Null)
    } else {
        parse_json(body)
    }
}

fn selector(route: &Route) -> Result<Selector, Failure> {
    Selector::parse(route.param("labelSelector"), route.param("fieldSelector"))
}

/// The object a patch addresses.
struct PatchRequest<'a> {
    kind: &'a Kind,
    namespace: &'a str,
    name: &'a str,
    target: Target,
    field_manager: Option<&'a str>,
    force: bool,
}

fn patch(
    state: &mut State,
    request: &PatchRequest<'_>,
    content_type: &str,
    body: &Bytes,
) -> Result<(StatusCode, Value), Failure> {
    let PatchRequest {
        kind,
        namespace,
        name,
        target,
        ..
    } = *request;
    let patch = parse_json(body)?;
    let media_type = content_type.split(';').next().unwrap_or_default().trim();
    if media_type == "application/apply-patch+yaml" {
        let manager = request
            .field_manager
            .filter(|manager| !manager.is_empty())
            .ok_or_else(|| {
                Failure::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Invalid",
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is \
                     required for apply patch",
                )
            })?;
        let apply = Apply {
            kind,
            namespace,
            name,
            target,
            manager,
            force: request.force,
        };
        return apply.run(state, patch);
    }
    let mut document = state.get(kind, namespace, name)?;
    match media_type {
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            json_patch::merge(&mut document, &patch);
        }
        "application/json-patch+json" => {
            let operations: json_patch::Patch = serde_json::from_value(patch)
                .map_err(|error| Failure::bad_request(format!("invalid JSON patch: {error}")))?;
            json_patch::patch(&mut document, &operations.0).map_err(|error| {
                Failure::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Invalid",
                    error.to_string(),
                )
            })?;
        }
        other => {
            return Err(Failure::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "UnsupportedMediaType",
                format!("the body of the request was in an unknown format: {other:?}"),
            ));
        }
    }
    Ok((
        StatusCode::OK,
        state.update(kind, namespace, name, document, target)?,
    ))
}

fn watch(
    state: &Arc<Mutex<State>>,
    kind: &Kind,
    route: &Route,
) -> Result<Response<ResponseBody>, Failure> {
    let selector = selector(route)?;
    let from = match route.param("resourceVersion").filter(|rv| !rv.is_empty()) {
        None => None,
        Some(text) => Some(
            text.parse::<u64>()
                .map_err(|_| Failure::bad_request(format!("invalid resource version: {text}")))?,
        ),
    };
    let streaming = streaming_list(state, route)?;
    let timeout = route
        .param("timeoutSeconds")
        .and_then(|seconds| seconds.parse().ok())
        .map_or(DEFAULT_WATCH_TIMEOUT, Duration::from_secs);
    let (sender, events) = tokio::sync::mpsc::unbounded_channel();
    let mut guard = state.lock();
    let opened = if std::mem::take(&mut guard.gone_next_watch) {
        Err(Failure::gone(format!(
            "too old resource version: {} ({})",
            from.unwrap_or_default(),
            guard.revision()
        )))
    } else {
        // A streaming list's watch gets live events from now; its initial events come first.
        let from = if streaming {
            Some(guard.revision())
        } else {
            from
        };
        guard.watch(
            kind,
            route.namespace.as_deref(),
            selector.clone(),
            from,
            sender.clone(),
        )
    };
    let initial = (streaming && opened.is_ok()).then(|| InitialEvents {
        state: Arc::clone(state),
        resource: kind.storage_key(),
        namespace: route.namespace.clone(),
        selector,
        object_first: guard.objects_before_types,
        api_version: kind.api_version(),
        kind: kind.name.clone(),
        revision: guard.revision(),
        expired: guard.expired_watches(),
        after: None,
        sent: 0,
    });
    if let Err(failure) = opened {
        // Like the real server: the watch opens, then carries one ERROR event and ends.
        let _ = sender.send(event_line("ERROR", &text(&failure.to_json())));
    }
    let period = guard.bookmark_interval;
    drop(guard);
    let bookmarks = route.flag("allowWatchBookmarks").then(|| {
        let mut interval = tokio::time::interval_at(Instant::now() + period, period);
        interval.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Bookmarks {
            interval,
            state: Arc::clone(state),
            api_version: kind.api_version(),
            kind: kind.name.clone(),
        }
    });
    let stream = WatchStream {
        initial,
        expired: false,
        events,
        deadline: Box::pin(tokio::time::sleep(timeout)),
        bookmarks,
    };
    let mut response = Response::new(ResponseBody::watch(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// Whether a watch asks for a streaming list (`sendInitialEvents=true`), checked as the API
/// server checks it: from 1.27 it needs `resourceVersionMatch=NotOlderThan` and bookmarks, and
/// `resourceVersionMatch` is refused without it; before 1.27 (a fake built
/// [`without_streaming_lists`](super::FakeApiServer::without_streaming_lists)),
/// `resourceVersionMatch` is refused on every watch and `sendInitialEvents` ignored.
fn streaming_list(state: &Arc<Mutex<State>>, route: &Route) -> Result<bool, Failure> {
    let forbidden = |why: &str| {
        Failure::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            format!("ListOptions.meta.k8s.io \"\" is invalid: {why}"),
        )
    };
    let version_match = route
        .param("resourceVersionMatch")
        .filter(|m| !m.is_empty());
    if !state.lock().streaming_lists {
        return match version_match {
            Some(_) => Err(forbidden(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch",
            )),
            None => Ok(false),
        };
    }
    let initial_events = route.flag("sendInitialEvents");
    match (version_match, initial_events) {
        (Some("NotOlderThan"), true) => {}
        (_, true) => {
            return Err(forbidden(
                "resourceVersionMatch: Forbidden: sendInitialEvents requires setting \
                 resourceVersionMatch to NotOlderThan",
            ));
        }
        (Some(_), false) => {
            return Err(forbidden(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch \
                 unless sendInitialEvents is provided",
            ));
        }
        (None, false) => return Ok(false),
    }
    if !route.flag("allowWatchBookmarks") {
        return Err(forbidden(
            "allowWatchBookmarks: Forbidden: sendInitialEvents requires allowWatchBookmarks=true",
        ));
    }
    Ok(true)
}
