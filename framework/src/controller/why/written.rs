//! Notes a write a reconcile made through its context's client, for the flight recorder.

use http::{Method, Request, header};
use serde::Deserialize;

use super::record::Verb;
use super::run::{note_write, recording};

/// What the flight recorder needs of a write request, read before it is sent.
#[derive(Debug)]
pub(crate) struct WriteRequest {
    verb: Verb,
    /// The resource's plural, from the path: the kind when the answer names none.
    plural: String,
    namespace: Option<String>,
    name: Option<String>,
    status: bool,
}

/// The fields of an answer the record names.
#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: Metadata,
}

#[derive(Default, Deserialize)]
struct Metadata {
    name: Option<String>,
}

impl WriteRequest {
    /// The write `request` is, when a reconcile that records its writes runs on this task.
    pub(crate) fn of<B>(request: &Request<B>) -> Option<Self> {
        if !recording() {
            return None;
        }
        let apply = request
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|t| t.as_bytes().starts_with(b"application/apply-patch"));
        let verb = match *request.method() {
            Method::POST => Verb::Create,
            Method::PUT => Verb::Update,
            Method::PATCH if apply => Verb::Apply,
            Method::PATCH => Verb::Patch,
            Method::DELETE => Verb::Delete,
            _ => return None,
        };
        let segments: Vec<&str> = (request.uri().path().split('/'))
            .filter(|s| !s.is_empty())
            .collect();
        let (["api", _, rest @ ..] | ["apis", _, _, rest @ ..]) = segments.as_slice() else {
            return None;
        };
        let (namespace, rest) = match rest {
            ["namespaces", namespace, rest @ ..] if !rest.is_empty() => (Some(*namespace), rest),
            _ => (None, rest),
        };
        let (plural, name, status) = match rest {
            [plural] => (*plural, None, false),
            [plural, name] => (*plural, Some(*name), false),
            [plural, name, "status"] => (*plural, Some(*name), true),
            _ => return None,
        };
        Some(Self {
            verb,
            plural: plural.to_owned(),
            namespace: namespace.map(str::to_owned),
            name: name.map(str::to_owned),
            status,
        })
    }

    /// Notes the write as answered with `code` and `body` (the object written, or a `Status`).
    pub(crate) fn answered(self, code: u16, body: &[u8]) {
        let answer = serde_json::from_slice::<Answer>(body).ok();
        let success = (200..300).contains(&code);
        let kind = answer
            .as_ref()
            .filter(|a| success && !a.kind.is_empty() && a.kind != "Status")
            .map_or(self.plural, |a| a.kind.clone());
        let name = self
            .name
            .or_else(|| answer.and_then(|a| a.metadata.name))
            .unwrap_or_default();
        note_write(self.verb, kind, self.namespace, name, self.status, code);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_status_apply_names_its_plural_namespace_and_name() {
        let request = Request::patch("/apis/demo.io/v1/namespaces/prod/widgets/web/status")
            .header(header::CONTENT_TYPE, "application/apply-patch+yaml")
            .body(())
            .unwrap();
        let run = std::sync::Arc::new(super::super::Run::new(Vec::new(), 0, true));
        let write = super::super::running(run, async { WriteRequest::of(&request) })
            .await
            .expect("a write while recording");
        assert_eq!(write.verb, Verb::Apply);
        assert_eq!(write.plural, "widgets");
        assert_eq!(write.namespace.as_deref(), Some("prod"));
        assert_eq!(write.name.as_deref(), Some("web"));
        assert!(write.status);
    }

    #[test]
    fn outside_a_recorded_reconcile_nothing_is_read() {
        let request = Request::post("/api/v1/namespaces/prod/configmaps")
            .body(())
            .unwrap();
        assert!(WriteRequest::of(&request).is_none());
    }
}
