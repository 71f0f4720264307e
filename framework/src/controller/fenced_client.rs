//! Wraps a controller's client so that every write it makes leaves a mark for fenced reads,
//! and the creates with `generateName`, writes of owned objects and deletes a reconcile makes
//! are expected of its owner.
//!
//! The answer to a create, update, patch or delete names the object's new resourceVersion (or,
//! for a delete that removed it, its uid): the wrapper reads it from the response body, which
//! it then hands on unchanged, and notes it in the controller's [`Fences`]. Reads and watches
//! pass through untouched; a refused write leaves no mark. A write whose outcome is unknown (no
//! answer, or a 5xx) is followed by a read of its object, whose resourceVersion is noted instead.

use std::sync::Arc;

use http::{Method, Request, Response};
use kube::Client;
use kube::api::ObjectMeta;
use kube::client::Body;
use serde::Deserialize;

use super::expectations::Expectations;
use super::fences::Fences;
use super::why::WriteRequest;
use crate::cache::{Fence, ObjectKey};

/// `client`, whose writes are noted in `fences` and, made during a reconcile, in `expectations`.
pub(crate) fn fenced(
    client: Client,
    fences: Arc<Fences>,
    expectations: Arc<Expectations>,
) -> Client {
    let namespace = client.default_namespace().to_owned();
    let service = tower::service_fn(move |request: Request<Body>| {
        let (client, fences) = (client.clone(), Arc::clone(&fences));
        let expectations = Arc::clone(&expectations);
        async move {
            let target = is_write(request.method())
                .then(|| Target::of(request.uri().path(), request.method()))
                .flatten();
            let recorded = WriteRequest::of(&request);
            let path = request.uri().path().to_owned();
            let response = match client.send(request).await {
                Ok(response) => response,
                Err(error) => {
                    if let Some(target) = &target {
                        target.look_up(&client, &path, &fences).await;
                    }
                    return Err(error);
                }
            };
            let success = response.status().is_success();
            if let Some(target) = target
                .as_ref()
                .filter(|_| response.status().is_server_error())
            {
                target.look_up(&client, &path, &fences).await;
            }
            if target.is_none() && recorded.is_none() || recorded.is_none() && !success {
                return Ok(response);
            }
            let (parts, body) = response.into_parts();
            let bytes = body.collect_bytes().await?;
            if let Some(recorded) = recorded {
                recorded.answered(parts.status.as_u16(), &bytes);
            }
            if let Some(target) = target.filter(|_| success) {
                target.note(&fences, &expectations, &bytes);
            }
            Ok::<_, kube::Error>(Response::from_parts(parts, Body::from(bytes)))
        }
    });
    Client::new(service, namespace)
}

fn is_write(method: &Method) -> bool {
    [Method::POST, Method::PUT, Method::PATCH, Method::DELETE].contains(method)
}

/// The resource, namespace and name a write request is for (the name from the answer, for a
/// create).
#[derive(Debug, PartialEq, Eq)]
struct Target {
    /// `plural` or `plural.group`, as the context's reads name it.
    resource: String,
    namespace: Option<String>,
    name: Option<String>,
    delete: bool,
    /// A create: a POST to the collection.
    create: bool,
}

/// The fields of a write's answer that say what it left: an object, or a delete's `Status`.
#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: ObjectMeta,
    details: Option<Details>,
}

#[derive(Deserialize)]
struct Details {
    uid: Option<String>,
}

impl Target {
    /// The target of a write to `path`; `None` for a collection delete or a subresource other
    /// than `status` (an eviction, a token: their answers describe another object).
    fn of(path: &str, method: &Method) -> Option<Self> {
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let (group, rest) = match segments.as_slice() {
            ["api", _version, rest @ ..] => ("", rest),
            ["apis", group, _version, rest @ ..] => (*group, rest),
            _ => return None,
        };
        let (namespace, rest) = match rest {
            ["namespaces", namespace, rest @ ..] if !rest.is_empty() => (Some(*namespace), rest),
            _ => (None, rest),
        };
        let (plural, name) = match rest {
            [plural] => (*plural, None),
            [plural, name] | [plural, name, "status"] => (*plural, Some(*name)),
            _ => return None,
        };
        let delete = method == Method::DELETE;
        if delete && name.is_none() {
            return None;
        }
        Some(Self {
            resource: if group.is_empty() {
                plural.to_owned()
            } else {
                format!("{plural}.{group}")
            },
            namespace: namespace.map(str::to_owned),
            name: name.map(str::to_owned),
            delete,
            create: method == Method::POST && name.is_none(),
        })
    }

    /// After a write to `path` whose outcome is unknown (no answer, or a 5xx: it may have been
    /// applied and its answer lost), reads the object and notes its resourceVersion in `fences`,
    /// so that the next read of it waits for whatever the write may have left (a seeded
    /// simulation found a failure report whose answer was lost, stored after the reconcile's
    /// read, that a `generation_changed` predicate then never let reconcile again). A create
    /// (no name yet) and a delete are not looked up; nor is anything when the read fails.
    async fn look_up(&self, client: &Client, path: &str, fences: &Fences) {
        if self.create || self.delete || self.name.is_none() {
            return;
        }
        let object = path.strip_suffix("/status").unwrap_or(path);
        let Ok(request) = Request::get(object).body(Body::empty()) else {
            return;
        };
        let Ok(response) = client.send(request).await else {
            return;
        };
        if !response.status().is_success() {
            return;
        }
        let Ok(bytes) = response.into_body().collect_bytes().await else {
            return;
        };
        if let Ok(answer) = serde_json::from_slice::<Answer>(&bytes) {
            fences.wrote(&self.resource, &answer.metadata);
        }
    }

    /// Notes in `fences` what the write answered with `body` left, and in `expectations` a
    /// create with `generateName` or a delete.
    fn note(self, fences: &Fences, expectations: &Expectations, body: &[u8]) {
        let Ok(answer) = serde_json::from_slice::<Answer>(body) else {
            return;
        };
        let meta = &answer.metadata;
        let still_there = meta.deletion_timestamp.is_some()
            && meta.finalizers.as_ref().is_some_and(|f| !f.is_empty());
        if !self.delete {
            fences.wrote(&self.resource, meta);
            expectations.wrote(&self.resource, meta, self.create);
            return;
        }
        if still_there {
            fences.wrote(&self.resource, meta);
            if let (Some(name), Some(version)) = (&meta.name, &meta.resource_version) {
                let key = ObjectKey::new(self.namespace.as_deref(), name);
                let version = version.clone();
                expectations.deleted(&self.resource, Fence::Version { key, version });
            }
            return;
        }
        let uid = if answer.kind == "Status" {
            answer.details.and_then(|d| d.uid)
        } else {
            meta.uid.clone()
        };
        let name = self.name.or_else(|| meta.name.clone()).unwrap_or_default();
        if let Some(uid) = uid {
            let key = ObjectKey::new(self.namespace.as_deref(), &name);
            fences.deleted(&self.resource, key.clone(), &uid);
            expectations.deleted(&self.resource, Fence::Gone { key, uid });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn target(resource: &str, namespace: Option<&str>, name: Option<&str>) -> Target {
        Target {
            resource: resource.into(),
            namespace: namespace.map(Into::into),
            name: name.map(Into::into),
            delete: false,
            create: false,
        }
    }

    fn expectations() -> Expectations {
        let metrics = crate::metrics::Metrics::new(&prometheus::Registry::new());
        let metrics = metrics.expect("invariant: a fresh registry has no families");
        Expectations::new(
            "widgets",
            Duration::from_secs(5),
            metrics.expectations("test"),
        )
    }

    #[test]
    fn a_write_path_names_its_resource_namespace_and_object() {
        assert_eq!(
            Target::of("/api/v1/namespaces/ns/configmaps", &Method::POST),
            Some(Target {
                create: true,
                ..target("configmaps", Some("ns"), None)
            })
        );
        assert_eq!(
            Target::of(
                "/apis/apps/v1/namespaces/ns/deployments/web/status",
                &Method::PATCH
            ),
            Some(target("deployments.apps", Some("ns"), Some("web")))
        );
        assert_eq!(
            Target::of("/api/v1/namespaces/ns", &Method::PUT),
            Some(target("namespaces", None, Some("ns")))
        );
        assert_eq!(
            Target::of("/apis/example.com/v1/widgets/w", &Method::PUT),
            Some(target("widgets.example.com", None, Some("w")))
        );
    }

    /// A write answered 504 (applied, its answer lost) is followed by a read of its object,
    /// whose resourceVersion becomes the mark; a create answered so is not looked up.
    #[tokio::test]
    async fn a_write_whose_answer_is_lost_marks_the_version_a_read_then_finds() {
        let server = tower::service_fn(|request: Request<Body>| async move {
            let (status, body) = if request.method() == Method::GET {
                let object = r#"{"kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"9"}}"#;
                (200, object)
            } else {
                (504, r#"{"kind":"Status","code":504,"reason":"Timeout"}"#)
            };
            let response = Response::builder()
                .status(status)
                .body(Body::from(body.as_bytes().to_vec()));
            Ok::<_, std::convert::Infallible>(response.expect("a valid response"))
        });
        let (fences, expectations) = (Arc::new(Fences::default()), Arc::new(expectations()));
        let client = fenced(Client::new(server, "ns"), Arc::clone(&fences), expectations);
        let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
            kube::Api::namespaced(client, "ns");
        let patch = kube::api::Patch::Merge(serde_json::json!({ "data": { "k": "v" } }));
        let params = kube::api::PatchParams::default();
        assert!(api.patch_status("a", &params, &patch).await.is_err());
        let key = ObjectKey::new(Some("ns"), "a");
        let version = "9".to_owned();
        assert_eq!(
            fences.of_object("configmaps", &key),
            [crate::cache::Fence::Version { key, version }]
        );
        let created = k8s_openapi::api::core::v1::ConfigMap::default();
        let post = kube::api::PostParams::default();
        assert!(api.create(&post, &created).await.is_err());
        assert_eq!(
            fences.of_list("configmaps", Some("ns")).len(),
            1,
            "the create left no mark"
        );
    }

    #[test]
    fn subresources_other_than_status_and_collection_deletes_leave_no_mark() {
        let eviction = "/api/v1/namespaces/ns/pods/p/eviction";
        assert_eq!(Target::of(eviction, &Method::POST), None);
        assert_eq!(
            Target::of("/api/v1/namespaces/ns/pods", &Method::DELETE),
            None
        );
    }

    #[test]
    fn a_delete_that_removed_the_object_marks_its_uid_and_one_held_by_finalizers_its_version() {
        let (fences, expectations) = (Fences::default(), expectations());
        let gone = Target::of("/api/v1/namespaces/ns/configmaps/a", &Method::DELETE);
        let status = br#"{"kind":"Status","details":{"name":"a","uid":"u1"}}"#;
        gone.unwrap().note(&fences, &expectations, status);
        let key = ObjectKey::new(Some("ns"), "a");
        assert_eq!(
            fences.of_object("configmaps", &key),
            [crate::cache::Fence::Gone {
                key: key.clone(),
                uid: "u1".into()
            }]
        );
        let held = Target::of("/api/v1/namespaces/ns/configmaps/a", &Method::DELETE);
        let object = br#"{"kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","uid":"u2",
            "resourceVersion":"7","deletionTimestamp":"2026-01-01T00:00:00Z","finalizers":["x"]}}"#;
        held.unwrap().note(&fences, &expectations, object);
        assert_eq!(
            fences.of_object("configmaps", &key),
            [crate::cache::Fence::Version {
                key,
                version: "7".into()
            }]
        );
    }
}
