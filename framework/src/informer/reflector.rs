//! Lists (in pages) and watches one resource into a store and its handlers, recovering from every failure.

use std::fmt;
use std::sync::Arc;

use futures::StreamExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::core::Request;
use kube::{Client, Resource};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use parking_lot::Mutex;
use tokio::sync::watch;

use super::fan_out::FanOut;
use super::transforms::Transforms;
use super::{Config, Stats, connectivity};

/// Lists and watches for one informer into its [`FanOut`]; runs until its task is cancelled.
///
/// Data flows one way: the reflector calls the fan-out (store, then handlers) and records its
/// [`Progress`]; nothing calls back into it.
pub(crate) struct Reflector<K> {
    client: Client,
    request: Request,
    config: Config,
    /// Whether lists and watches ask for `PartialObjectMetadata` (`K` is a `PartialObjectMeta`).
    metadata_only: bool,
    transforms: Arc<Transforms<K>>,
    fan_out: Arc<FanOut<K>>,
    progress: Arc<Progress>,
}

/// How far a reflector got: whether its first list is stored, the latest resourceVersion, and
/// its request counters. Written by the reflector, read by the informer.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    synced: watch::Sender<bool>,
    resource_version: Mutex<Option<String>>,
    stats: Arc<Stats>,
}

impl Progress {
    /// Whether the first complete list is stored.
    pub(crate) fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Tells when the first complete list is stored.
    pub(crate) fn subscribe(&self) -> watch::Receiver<bool> {
        self.synced.subscribe()
    }

    /// The resourceVersion of the latest list, event or bookmark.
    pub(crate) fn resource_version(&self) -> Option<String> {
        self.resource_version.lock().clone()
    }

    /// The request counters.
    pub(crate) fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    fn set_resource_version(&self, version: &str) {
        *self.resource_version.lock() = Some(version.to_owned());
    }

    fn synced_now(&self) {
        self.synced.send_replace(true);
        self.stats.synced_now();
    }
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
    /// A reflector of the resource at the URL path `url`, feeding `fan_out`.
    pub(crate) fn new(
        client: Client,
        url: &str,
        config: Config,
        transforms: Arc<Transforms<K>>,
        fan_out: Arc<FanOut<K>>,
        progress: Arc<Progress>,
    ) -> Self {
        Self {
            client,
            request: Request::new(url),
            config,
            metadata_only: K::metadata_api(),
            transforms,
            fan_out,
            progress,
        }
    }

    /// Lists, then watches from the list's version; lists again only when that version is gone.
    pub(crate) async fn run(self) {
        let mut delays = self.config.backoff_delays();
        let mut resource_version: Option<String> = None;
        loop {
            let version = match resource_version.take() {
                Some(version) => version,
                None => match self.list().await {
                    Ok(version) => {
                        self.config.connectivity.reachable();
                        version
                    }
                    Err(err) => {
                        self.retry_after("list", &err, &mut delays).await;
                        continue;
                    }
                },
            };
            let (end, latest) = self.watch(version).await;
            resource_version = Some(latest);
            match end {
                WatchEnd::Resume { received: true } => {
                    delays = self.config.backoff_delays();
                }
                // A watch that ends at once without any news is retried with backoff, not hot.
                WatchEnd::Resume { received: false } => {
                    tokio::time::sleep(next_delay(&mut delays)).await;
                }
                WatchEnd::Gone => {
                    tracing::info!(
                        url = self.request.url_path,
                        "resource version expired; relisting"
                    );
                    resource_version = None;
                }
                WatchEnd::Failed(err) => self.retry_after("watch", &err, &mut delays).await,
            }
        }
    }

    /// Reports a failed list or watch, then waits for the next backoff step. A server that
    /// cannot be reached is reported through the shared [`Connectivity`](super::connectivity)
    /// (once per outage, not once per request); any other failure (such as 403) here.
    async fn retry_after(
        &self,
        request: &'static str,
        err: &kube::Error,
        delays: &mut (impl Iterator<Item = std::time::Duration> + Send),
    ) {
        let delay = next_delay(delays);
        if connectivity::is_unreachable(err) {
            self.config.connectivity.failed(
                &self.request.url_path,
                &connectivity::with_causes(err),
                delay,
            );
        } else {
            tracing::warn!(url = self.request.url_path, error = %err, retry_in = ?delay, "{request} failed; retrying");
        }
        tokio::time::sleep(delay).await;
    }

    /// Lists every page into the store in place, removes what vanished, returns the version.
    /// The next page is requested before the current one is applied, so the server's work on it
    /// overlaps the decoding here.
    async fn list(&self) -> Result<String, kube::Error> {
        let config = &self.config;
        let mut relist = self.fan_out.relist();
        let mut params = ListParams {
            label_selector: config.label_selector.clone(),
            field_selector: config.field_selector.clone(),
            limit: (config.page_size > 0).then_some(config.page_size),
            ..ListParams::default()
        };
        let mut fetching = self.fetch_page(&params)?;
        loop {
            let page = fetching.await.map_err(|()| stalled("list"))??;
            let more = page.metadata.continue_.clone().filter(|t| !t.is_empty());
            let next = match more {
                Some(token) => {
                    params.continue_token = Some(token);
                    Some(self.fetch_page(&params)?)
                }
                None => None,
            };
            for item in page.items {
                // One item at a time as an untyped value: a whole page of them would take ten
                // times the text's memory, and decoding from a value (unlike from text) sizes
                // every list in the object exactly. The text is valid JSON by construction.
                let raw: Value = serde_json::from_str(item.get()).unwrap_or_default();
                drop(item);
                if let Some((obj, json)) = self.decode(raw) {
                    relist.apply(obj, json);
                }
            }
            let Some(next) = next else {
                let version = page.metadata.resource_version.unwrap_or_default();
                relist.finish();
                self.progress.set_resource_version(&version);
                self.progress.synced_now();
                Stats::count(&self.progress.stats.relists);
                return Ok(version);
            };
            fetching = next;
        }
    }

    /// Requests one list page on a task of its own; dropping the handle aborts the request.
    fn fetch_page(&self, params: &ListParams) -> Result<Fetch, kube::Error> {
        let config = &self.config;
        let request = if self.metadata_only {
            self.request.list_metadata(params)
        } else {
            self.request.list(params)
        };
        let request = request.map_err(kube::Error::BuildRequest)?;
        Stats::count(&self.progress.stats.list_requests);
        let client = self.client.clone();
        let idle = config.idle_timeout;
        Ok(Fetch(tokio::spawn(async move {
            tokio::time::timeout(idle, client.request::<RawList>(request))
                .await
                .map_err(|_| ())
        })))
    }

    /// Watches from `version` until the watch ends; returns why and the latest version seen.
    async fn watch(&self, mut version: String) -> (WatchEnd, String) {
        let config = &self.config;
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
        let request = if self.metadata_only {
            self.request.watch_metadata(&params, &version)
        } else {
            self.request.watch(&params, &version)
        };
        let request = match request {
            Ok(request) => request,
            Err(err) => return (WatchEnd::Failed(kube::Error::BuildRequest(err)), version),
        };
        Stats::count(&self.progress.stats.watch_requests);
        let started = tokio::time::timeout(
            config.idle_timeout,
            self.client.request_events::<Value>(request),
        );
        let events = match started.await {
            Ok(Ok(events)) => {
                config.connectivity.reachable();
                events
            }
            Ok(Err(err)) => return (classify(err), version),
            Err(_) => return (WatchEnd::Failed(stalled("watch")), version),
        };
        let mut events = std::pin::pin!(events);
        let mut received = false;
        loop {
            let next = tokio::time::timeout(config.idle_timeout, events.next()).await;
            let event = match next {
                Err(_) => {
                    // Restarted at once; a server that is gone shows in the restart's failure.
                    tracing::info!(url = self.request.url_path, idle = ?config.idle_timeout, "watch stalled; restarting it");
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
                    if let Some((obj, json)) = self.decode(raw) {
                        self.fan_out.apply(obj, json);
                    }
                }
                WatchEvent::Deleted(raw) => {
                    version = raw_resource_version(&raw).unwrap_or(version);
                    if let Some((obj, _)) = self.decode(raw) {
                        self.fan_out.delete(obj);
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
            self.progress.set_resource_version(&version);
        }
    }

    /// Decodes one object on its own, with the JSON a compact store keeps of it (`None` for a
    /// default store); one that does not fit `K` is skipped, logged and counted.
    ///
    /// `managedFields` are dropped from the value before decoding when they are stripped, and
    /// the value is decoded by move, so its strings become the object's without a copy.
    fn decode(&self, mut raw: Value) -> Option<(Arc<K>, Option<Vec<u8>>)> {
        let config = &self.config;
        let json = prepare_raw(
            &mut raw,
            config.strip_managed_fields,
            config.compact_hot.is_some(),
        );
        // Kept for the warning only: the value itself is consumed by the decode.
        let identity = Identity::of(&raw);
        match K::deserialize(raw) {
            Ok(obj) => Some((self.prepare(obj), json)),
            Err(err) => {
                self.skip(&identity, &err);
                None
            }
        }
    }

    /// Strips `managedFields` (if configured) and applies the transforms.
    fn prepare(&self, mut obj: K) -> Arc<K> {
        self.transforms.apply(&mut obj);
        Arc::new(obj)
    }

    /// Counts and logs an object that does not decode.
    fn skip(&self, identity: &Identity, err: &serde_json::Error) {
        Stats::count(&self.progress.stats.decode_failures);
        tracing::warn!(
            url = self.request.url_path,
            namespace = identity.namespace,
            name = identity.name,
            error = %err,
            "skipping an object that does not decode"
        );
    }
}

/// A list page being fetched; the request is aborted if this is dropped (the list failed).
struct Fetch(tokio::task::JoinHandle<Result<Result<RawList, kube::Error>, ()>>);

impl Future for Fetch {
    type Output = Result<Result<RawList, kube::Error>, ()>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0)
            .poll(cx)
            .map(|joined| joined.unwrap_or(Err(())))
    }
}

impl Drop for Fetch {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Namespace and name of an object, for a warning about it.
struct Identity {
    namespace: String,
    name: String,
}

impl Identity {
    fn of(raw: &Value) -> Self {
        let meta = raw.get("metadata");
        let field = |name: &str| {
            meta.and_then(|m| m.get(name))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Self {
            namespace: field("namespace"),
            name: field("name"),
        }
    }
}

/// Drops `metadata.managedFields` from `raw` if they are stripped; returns the compact JSON a
/// compact store keeps of it (`None` for a default store).
fn prepare_raw(raw: &mut Value, strip_managed_fields: bool, compact: bool) -> Option<Vec<u8>> {
    if strip_managed_fields
        && let Some(meta) = raw.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.remove("managedFields");
    }
    compact.then(|| serde_json::to_vec(raw).ok()).flatten()
}

/// A list page or watch response that did not arrive within the idle timeout, as the client's
/// own error type.
fn stalled(request: &str) -> kube::Error {
    kube::Error::ReadEvents(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("no {request} response within the idle timeout"),
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

fn next_delay(
    delays: &mut (impl Iterator<Item = std::time::Duration> + Send),
) -> std::time::Duration {
    delays
        .next()
        .unwrap_or_else(|| std::time::Duration::from_secs(30))
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
        let mut stripped = raw();
        let json = prepare_raw(&mut stripped, true, true).unwrap_or_default();
        let expected = json!({"metadata": {"name": "a"}, "data": {"k": "v"}});
        assert_eq!(serde_json::from_slice::<Value>(&json)?, expected);
        assert_eq!(
            stripped, expected,
            "the value decoded afterwards is stripped too"
        );
        let mut kept = raw();
        let json = prepare_raw(&mut kept, false, true).unwrap_or_default();
        assert_eq!(serde_json::from_slice::<Value>(&json)?, raw());
        assert_eq!(
            prepare_raw(&mut raw(), true, false),
            None,
            "a default store keeps no JSON"
        );
        Ok(())
    }
}
