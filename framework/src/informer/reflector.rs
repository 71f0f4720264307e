//! Lists (in pages) and watches one resource into an informer, recovering from every failure.

use std::fmt;
use std::sync::Arc;

use futures::StreamExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::core::Request;
use kube::{Api, Client, Resource};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use super::Stats;
use super::shared_informer::{Inner, Transform};

/// Lists and watches for one informer; runs until its task is cancelled.
pub(crate) struct Reflector<K> {
    client: Client,
    request: Request,
    informer: Arc<Inner<K>>,
    transforms: Vec<Transform<K>>,
}

/// One list response, with each item kept as its JSON text so that each decodes on its own
/// (text takes a tenth of the memory of untyped values, so a relist's peak stays low).
#[derive(Deserialize)]
struct RawList {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default)]
    items: Vec<Box<RawValue>>,
}

/// Why a watch ended.
enum WatchEnd {
    /// The server closed it (timeout) or it was idle too long: resume from the latest version.
    Resume { received: bool },
    /// The version is too old (410 Gone / expired): list again.
    Gone,
    /// Anything else: wait, then resume from the latest version.
    Failed(kube::Error),
}

impl<K> Reflector<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    pub(crate) fn new(api: Api<K>, informer: Arc<Inner<K>>, transforms: Vec<Transform<K>>) -> Self {
        Self {
            request: Request::new(api.resource_url()),
            client: api.into_client(),
            informer,
            transforms,
        }
    }

    /// Lists, then watches from the list's version; lists again only when that version is gone.
    pub(crate) async fn run(self) {
        let mut delays = self.informer.config().backoff_delays();
        let mut resource_version: Option<String> = None;
        loop {
            let version = match resource_version.take() {
                Some(version) => version,
                None => match self.list().await {
                    Ok(version) => version,
                    Err(err) => {
                        tracing::warn!(url = self.request.url_path, error = %err, "list failed; retrying");
                        wait(&mut delays).await;
                        continue;
                    }
                },
            };
            let (end, latest) = self.watch(version).await;
            resource_version = Some(latest);
            match end {
                WatchEnd::Resume { received: true } => {
                    delays = self.informer.config().backoff_delays();
                }
                // A watch that ends at once without any news is retried with backoff, not hot.
                WatchEnd::Resume { received: false } => wait(&mut delays).await,
                WatchEnd::Gone => {
                    tracing::info!(
                        url = self.request.url_path,
                        "resource version expired; relisting"
                    );
                    resource_version = None;
                }
                WatchEnd::Failed(err) => {
                    tracing::warn!(url = self.request.url_path, error = %err, "watch failed; retrying");
                    wait(&mut delays).await;
                }
            }
        }
    }

    /// Lists every page into the store in place, removes what vanished, returns the version.
    async fn list(&self) -> Result<String, kube::Error> {
        let config = self.informer.config();
        let mut relist = self.informer.writer().relist();
        let mut params = ListParams {
            label_selector: config.label_selector.clone(),
            field_selector: config.field_selector.clone(),
            limit: (config.page_size > 0).then_some(config.page_size),
            ..ListParams::default()
        };
        loop {
            let request = if config.metadata_only {
                self.request.list_metadata(&params)
            } else {
                self.request.list(&params)
            };
            let request = request.map_err(kube::Error::BuildRequest)?;
            Stats::count(&self.informer.stats().list_requests);
            let page =
                tokio::time::timeout(config.idle_timeout, self.client.request::<RawList>(request));
            let page = page.await.map_err(|_| stalled_list())??;
            for item in page.items {
                // One item at a time as an untyped value: a whole page of them would take ten
                // times the text's memory, and decoding from a value (unlike from text) sizes
                // every list in the object exactly. The text is valid JSON by construction.
                let raw: Value = serde_json::from_str(item.get()).unwrap_or_default();
                drop(item);
                if let Some(obj) = self.decode(&raw) {
                    let json = self.encode(raw);
                    self.informer.relist_apply(&mut relist, obj, json);
                }
            }
            if let Some(token) = page.metadata.continue_.filter(|token| !token.is_empty()) {
                params.continue_token = Some(token);
            } else {
                let version = page.metadata.resource_version.unwrap_or_default();
                self.informer.relist_finish(relist, Some(version.clone()));
                Stats::count(&self.informer.stats().relists);
                return Ok(version);
            }
        }
    }

    /// Watches from `version` until the watch ends; returns why and the latest version seen.
    async fn watch(&self, mut version: String) -> (WatchEnd, String) {
        let config = self.informer.config();
        let params = WatchParams {
            label_selector: config.label_selector.clone(),
            field_selector: config.field_selector.clone(),
            timeout: Some(
                u32::try_from(config.watch_timeout.as_secs())
                    .unwrap_or(u32::MAX)
                    .max(1),
            ),
            bookmarks: true,
            ..WatchParams::default()
        };
        let request = if config.metadata_only {
            self.request.watch_metadata(&params, &version)
        } else {
            self.request.watch(&params, &version)
        };
        let request = match request {
            Ok(request) => request,
            Err(err) => return (WatchEnd::Failed(kube::Error::BuildRequest(err)), version),
        };
        Stats::count(&self.informer.stats().watch_requests);
        let started = tokio::time::timeout(
            config.idle_timeout,
            self.client.request_events::<Value>(request),
        );
        let events = match started.await {
            Ok(Ok(events)) => events,
            Ok(Err(err)) => return (classify(err), version),
            Err(_) => {
                tracing::warn!(url = self.request.url_path, idle = ?config.idle_timeout, "watch request got no response; retrying");
                return (WatchEnd::Resume { received: false }, version);
            }
        };
        let mut events = std::pin::pin!(events);
        let mut received = false;
        loop {
            let next = tokio::time::timeout(config.idle_timeout, events.next()).await;
            let event = match next {
                Err(_) => {
                    tracing::warn!(url = self.request.url_path, idle = ?config.idle_timeout, "watch stalled; restarting it");
                    return (WatchEnd::Resume { received }, version);
                }
                Ok(None) => return (WatchEnd::Resume { received }, version),
                Ok(Some(Err(err))) => return (classify(err), version),
                Ok(Some(Ok(event))) => event,
            };
            received = true;
            match event {
                WatchEvent::Added(raw) | WatchEvent::Modified(raw) => {
                    version = raw_resource_version(&raw).unwrap_or(version);
                    if let Some(obj) = self.decode(&raw) {
                        let json = self.encode(raw);
                        self.informer.apply(obj, json);
                    }
                }
                WatchEvent::Deleted(raw) => {
                    version = raw_resource_version(&raw).unwrap_or(version);
                    if let Some(obj) = self.decode(&raw) {
                        self.informer.delete(obj);
                    }
                }
                WatchEvent::Bookmark(bookmark) => version = bookmark.metadata.resource_version,
                WatchEvent::Error(status) if status.code == 410 => {
                    return (WatchEnd::Gone, version);
                }
                WatchEvent::Error(status) => {
                    return (WatchEnd::Failed(kube::Error::Api(status)), version);
                }
            }
            self.informer.set_resource_version(Some(version.clone()));
        }
    }

    /// Decodes one object on its own; one that does not fit `K` is skipped, logged and counted.
    fn decode(&self, raw: &Value) -> Option<Arc<K>> {
        match K::deserialize(raw) {
            Ok(obj) => Some(self.prepare(obj)),
            Err(err) => {
                self.skip(raw, &err);
                None
            }
        }
    }

    /// Strips `managedFields` (if configured) and applies the transforms.
    fn prepare(&self, mut obj: K) -> Arc<K> {
        if self.informer.config().strip_managed_fields {
            obj.meta_mut().managed_fields = None;
        }
        for transform in &self.transforms {
            transform(&mut obj);
        }
        Arc::new(obj)
    }

    /// Counts and logs an object that does not decode.
    fn skip(&self, raw: &Value, err: &serde_json::Error) {
        Stats::count(&self.informer.stats().decode_failures);
        let meta = raw.get("metadata");
        let field = |name: &str| {
            meta.and_then(|m| m.get(name))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        tracing::warn!(
            url = self.request.url_path,
            namespace = field("namespace"),
            name = field("name"),
            error = %err,
            "skipping an object that does not decode"
        );
    }
}

impl<K> Reflector<K>
where
    K: Resource + Send + Sync + 'static,
{
    /// The JSON a compact store keeps of `raw` (its decoded object is cached already); `None`
    /// for a default store.
    fn encode(&self, raw: Value) -> Option<Vec<u8>> {
        let config = self.informer.config();
        config.compact_hot?;
        encode_raw(raw, config.strip_managed_fields)
    }
}

/// Compact JSON of a raw object, without `metadata.managedFields` if they are stripped.
fn encode_raw(mut raw: Value, strip_managed_fields: bool) -> Option<Vec<u8>> {
    if strip_managed_fields
        && let Some(meta) = raw.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("managedFields");
    }
    serde_json::to_vec(&raw).ok()
}

/// A list page that did not arrive within the idle timeout, as the client's own error type.
fn stalled_list() -> kube::Error {
    kube::Error::ReadEvents(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "no list response within the idle timeout",
    ))
}

fn raw_resource_version(raw: &Value) -> Option<String> {
    raw.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn classify(err: kube::Error) -> WatchEnd {
    match &err {
        kube::Error::Api(status) if status.code == 410 => WatchEnd::Gone,
        _ => WatchEnd::Failed(err),
    }
}

async fn wait(delays: &mut (impl Iterator<Item = std::time::Duration> + Send)) {
    let delay = delays
        .next()
        .unwrap_or_else(|| std::time::Duration::from_secs(30));
    tokio::time::sleep(delay).await;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn raw() -> Value {
        json!({
            "metadata": {
                "name": "a",
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}]
            },
            "data": {"k": "v"}
        })
    }

    #[test]
    fn the_json_a_compact_store_keeps_leaves_out_managed_fields_only_when_they_are_stripped()
    -> anyhow::Result<()> {
        let stripped: Value = serde_json::from_slice(&encode_raw(raw(), true).unwrap_or_default())?;
        assert_eq!(
            stripped,
            json!({"metadata": {"name": "a"}, "data": {"k": "v"}})
        );
        let kept: Value = serde_json::from_slice(&encode_raw(raw(), false).unwrap_or_default())?;
        assert_eq!(kept, raw());
        Ok(())
    }
}
