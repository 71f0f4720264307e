//! Lists (in pages, or as one stream) and watches one resource into a store and its handlers, recovering from every failure.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::core::{Request, Status};
use kube::{Client, Resource};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use super::decode::Decoder;
use super::decode_ahead::{
    DecodeAhead, Decoded, Decoding, Dropped, MAX_BATCH_BYTES, MAX_BATCH_LINES,
};
use super::fan_out::{self, FanOut};
use super::initial_events::InitialEvents;
use super::list_response;
use super::progress::{Latest, Progress};
use super::transforms::Transforms;
use super::watch_lines::{Idle, WatchLines};
use super::{Config, Stats, WatchList, connectivity};

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
    decoder: Arc<Decoder<K>>,
    /// The namespace this reflector fills when it is one of several filling a store (one per
    /// namespace): its relists replace only that namespace's objects.
    namespace: Option<String>,
    /// Whether a complete list was stored.
    listed: AtomicBool,
    fan_out: Arc<FanOut<K>>,
    progress: Arc<Progress>,
}

/// One list response, with each item kept as its JSON text so that each decodes on its own
/// (text takes a tenth of the memory of untyped values, so a relist's peak stays low).
#[derive(Deserialize)]
struct RawList {
    #[serde(default)]
    metadata: ListMeta,
    /// `null` when empty, in a list of `PartialObjectMetadata`.
    #[serde(default)]
    items: Option<Vec<Box<RawValue>>>,
}

/// The annotation of the bookmark that ends a streaming list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Why a watch ended.
enum WatchEnd {
    /// The server closed it (timeout) or it was idle too long: resume from the latest version.
    Resume { received: bool },
    /// The version is too old (410 Gone / expired): list again.
    Gone,
    /// Anything else: wait, then resume from the latest version.
    Failed(kube::Error),
    /// The server does not serve streaming lists (it answered the request as invalid).
    Refused(kube::Error),
}

impl<K> Reflector<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    /// A reflector of the resource at the URL path `url`, feeding `fan_out`; with a `namespace`,
    /// one of several reflectors feeding it, each listing its own namespace.
    pub(crate) fn new(
        client: Client,
        (url, namespace): (&str, Option<String>),
        config: Config,
        transforms: Arc<Transforms<K>>,
        fan_out: Arc<FanOut<K>>,
        progress: Arc<Progress>,
    ) -> Self {
        let decoder = Arc::new(Decoder::new(
            url,
            &config,
            transforms,
            Arc::clone(progress.stats()),
        ));
        Self {
            client,
            request: Request::new(url),
            config,
            metadata_only: K::metadata_api(),
            decoder,
            namespace,
            listed: AtomicBool::new(false),
            fan_out,
            progress,
        }
    }

    /// Lists (or streams the initial state), then watches from the list's version; lists again
    /// only when that version is gone.
    pub(crate) async fn run(self) {
        let mut delays = self.config.backoff_delays();
        // Whether `delays` grew from failures: a watch that opened since has reached the server,
        // so a quiet end after it starts the series again rather than waiting an outage's step.
        let mut failing = false;
        let mut resource_version: Option<String> = None;
        loop {
            let (end, latest) = match resource_version.take() {
                Some(version) => self.watch(version).await,
                None if self.streams() => self.stream().await,
                None => match self.list().await {
                    Ok(version) => {
                        self.config.connectivity.reachable();
                        self.served();
                        self.watch(version).await
                    }
                    Err(err) => {
                        failing = true;
                        self.retry_after("list", &err, &mut delays).await;
                        continue;
                    }
                },
            };
            resource_version = latest;
            match end {
                WatchEnd::Resume { received: true } => {
                    (delays, failing) = (self.config.backoff_delays(), false);
                }
                // A watch that ends at once without any news is retried with backoff, not hot;
                // if it ended in an outage (others failed; it has no failure of its own), the
                // outage's end ends the wait too.
                WatchEnd::Resume { received: false } => {
                    if std::mem::take(&mut failing) {
                        delays = self.config.backoff_delays();
                    }
                    let connectivity = &self.config.connectivity;
                    let outage_ended = connectivity.outage_ended();
                    connectivity.ended_quietly(&self.request.url_path);
                    // Biased: either way it retries, and a simulation's order stays the seed's.
                    tokio::select! {
                        biased;
                        () = tokio::time::sleep(next_delay(&mut delays)) => {}
                        () = outage_ended => {}
                    }
                }
                WatchEnd::Gone => {
                    tracing::info!(
                        url = self.request.url_path,
                        "resource version expired; relisting"
                    );
                    resource_version = None;
                }
                WatchEnd::Failed(err) => {
                    failing = true;
                    self.retry_after("watch", &err, &mut delays).await;
                }
                WatchEnd::Refused(err) if self.config.watch_list == WatchList::Auto => {
                    if self.progress.refuse_streaming() {
                        let error = crate::error::chain(&err);
                        tracing::info!(url = self.request.url_path, %error, "the server does not serve streaming lists; listing in pages from now on");
                    }
                }
                WatchEnd::Refused(err) => {
                    failing = true;
                    self.retry_after("streaming list", &err, &mut delays).await;
                }
            }
        }
    }

    /// Whether the next initial state comes from a streaming list.
    fn streams(&self) -> bool {
        match self.config.watch_list {
            WatchList::Off => false,
            WatchList::On => true,
            WatchList::Auto => !self.progress.streaming_refused(),
        }
    }

    /// Records that the server answered a list or watch, with one line if it had not served
    /// the resource before.
    fn served(&self) {
        if self
            .progress
            .stats()
            .not_served
            .swap(false, Ordering::Relaxed)
        {
            tracing::info!(
                url = self.request.url_path,
                "the API server serves the resource again"
            );
        }
    }

    /// Reports a failed list or watch, then waits for the next backoff step. A server that
    /// cannot be reached is reported through the shared [`Connectivity`](super::connectivity)
    /// (once per outage, not once per request), and when that outage was one that more than one
    /// resource saw, the wait ends as soon as it does (another informer or the leader elector
    /// reached the server); any other failure (such as 403) is logged here.
    async fn retry_after(
        &self,
        request: &'static str,
        err: &kube::Error,
        delays: &mut (impl Iterator<Item = std::time::Duration> + Send),
    ) {
        let delay = next_delay(delays);
        if connectivity::is_unreachable(err) {
            let connectivity = &self.config.connectivity;
            // Subscribed before the failure is counted: the outage it belongs to may end before
            // this task waits.
            let back = connectivity.shared_outage_ended();
            connectivity.failed(&self.request.url_path, &crate::error::chain(err), delay);
            // Biased: either way it retries, and a simulation's order stays the seed's.
            tokio::select! {
                biased;
                () = tokio::time::sleep(delay) => {}
                () = back => {}
            }
            return;
        } else if let Some(fix) = super::not_served::hint(err) {
            // One line when the resource stops being served, however long that lasts, and a
            // check at a steady pace, so that a CRD installed later is noticed within moments.
            let delay = delay.min(super::not_served::CHECK_EVERY);
            let stats = self.progress.stats();
            if !stats.not_served.swap(true, Ordering::Relaxed) {
                let error = crate::error::chain(err);
                tracing::warn!(url = self.request.url_path, %error, check_every = ?delay, "{request} failed: {fix}; waiting for it");
            }
            tokio::time::sleep(delay).await;
            return;
        }
        let error = crate::error::chain(err);
        tracing::warn!(url = self.request.url_path, %error, retry_in = ?delay, "{request} failed; retrying");
        tokio::time::sleep(delay).await;
    }

    /// Lists every page into the store in place, removes what vanished, returns the version.
    ///
    /// When the server expires a continue token midway (the list outlived etcd's compaction,
    /// 5 minutes by default, as a paginated list of a million objects does), it lists once more
    /// in one request without pages, as client-go's pager does (`FullListIfExpired`): starting
    /// the pages over would expire again, forever. That one response is held whole while it is
    /// applied.
    async fn list(&self) -> Result<String, kube::Error> {
        let config = &self.config;
        let paged = ListParams {
            label_selector: config.label_selector.clone(),
            field_selector: config.field_selector.clone(),
            limit: (config.page_size > 0).then_some(config.page_size),
            ..ListParams::default()
        };
        if let Some(version) = self.list_with(paged.clone()).await? {
            return Ok(version);
        }
        tracing::info!(
            url = self.request.url_path,
            "a list page expired before the list ended (the list outlived the server's compaction); listing again in one request"
        );
        let whole = ListParams {
            limit: None,
            ..paged
        };
        // Only a server that paginates a list asked for whole could expire it again.
        self.list_with(whole).await?.ok_or_else(|| {
            kube::Error::ReadEvents(std::io::Error::other(
                "the server expired a list requested in one piece",
            ))
        })
    }

    /// Lists with `params` (and the pages after the first) into the store; `None` when the
    /// server expired a continue token, leaving the relist unfinished: the objects stored so far
    /// stay (each is a state the server had), and nothing is removed, since the pages applied
    /// may hold objects deleted since.
    /// The next page is requested before the current one is applied, so the server's work on it
    /// overlaps the decoding here.
    async fn list_with(&self, mut params: ListParams) -> Result<Option<String>, kube::Error> {
        let mut relist = self.fan_out.relist(self.namespace.as_deref());
        let mut fetching = self.fetch_page(&params)?;
        loop {
            let page = match fetching.await.map_err(|()| stalled("list"))? {
                Err(kube::Error::Api(status))
                    if status.code == 410 && params.continue_token.is_some() =>
                {
                    return Ok(None);
                }
                page => page?,
            };
            let more = page.metadata.continue_.clone().filter(|t| !t.is_empty());
            let next = match more {
                Some(token) => {
                    params.continue_token = Some(token);
                    Some(self.fetch_page(&params)?)
                }
                None => None,
            };
            for item in page.items.unwrap_or_default() {
                // One item at a time as an untyped value: a whole page of them would take ten
                // times the text's memory, and decoding from a value (unlike from text) sizes
                // every list in the object exactly. The text is valid JSON by construction.
                let raw: Value = serde_json::from_str(item.get()).unwrap_or_default();
                drop(item);
                if let Some((obj, json)) = self.decoder.decode(raw) {
                    relist.apply(obj, json);
                }
            }
            let Some(next) = next else {
                let version = page.metadata.resource_version.unwrap_or_default();
                relist.finish();
                self.progress
                    .publish(&Latest::Text(version.as_str().into()));
                self.progress
                    .listed(!self.listed.swap(true, Ordering::Relaxed));
                Stats::count(&self.progress.stats().relists);
                return Ok(Some(version));
            };
            fetching = next;
        }
    }

    /// Requests one list page on a task of its own, waiting at most the idle timeout for each
    /// part of the answer (never for the whole); dropping the handle aborts the request.
    fn fetch_page(&self, params: &ListParams) -> Result<Fetch, kube::Error> {
        let config = &self.config;
        let request = if self.metadata_only {
            self.request.list_metadata(params)
        } else {
            self.request.list(params)
        };
        let request = request.map_err(kube::Error::BuildRequest)?;
        Stats::count(&self.progress.stats().list_requests);
        let client = self.client.clone();
        let idle = config.idle_timeout;
        Ok(Fetch(crate::task::spawn(async move {
            list_response::read(&client, request, idle)
                .await
                .map_err(|Idle| ())
        })))
    }

    /// Watches from `version` until the watch ends; returns why and the latest version seen.
    async fn watch(&self, version: String) -> (WatchEnd, Option<String>) {
        let mut latest = Latest::Text(version.as_str().into());
        let end = self.watch_from(&version, &mut latest, &mut None).await;
        (end, Some(latest.text()))
    }

    /// Streams the current state into the store in place, as a list would (objects the stream
    /// did not have are removed at its end), then watches on; returns why the watch ended and
    /// the latest version seen, `None` if the stream ended before its initial events did (the
    /// next start is a streaming list again, from the newest state).
    async fn stream(&self) -> (WatchEnd, Option<String>) {
        let mut latest = Latest::Text("".into());
        let mut initial = Some(self.fan_out.relist(self.namespace.as_deref()));
        // No resourceVersion: the initial events are the newest state (a consistent read), as
        // client-go's reflector asks for it.
        let end = self.watch_from("", &mut latest, &mut initial).await;
        (end, initial.is_none().then(|| latest.text()))
    }

    /// Watches from `version`, keeping `latest` up to date, until the watch ends; returns why.
    /// With an `initial` relist, the watch is a streaming list: its events go to the relist
    /// until the bookmark that ends them, which takes the relist (the store is complete).
    async fn watch_from(
        &self,
        version: &str,
        latest: &mut Latest,
        initial: &mut Option<fan_out::Relist<'_, K>>,
    ) -> WatchEnd {
        let config = &self.config;
        let streaming = initial.is_some();
        let params = WatchParams {
            label_selector: config.label_selector.clone(),
            field_selector: config.field_selector.clone(),
            timeout: Some(
                u32::try_from(config.watch_timeout.as_secs())
                    .unwrap_or(u32::MAX)
                    .max(1),
            ),
            bookmarks: true,
            send_initial_events: streaming,
        };
        let request = if self.metadata_only {
            self.request.watch_metadata(&params, version)
        } else {
            self.request.watch(&params, version)
        };
        let request = match request {
            Ok(request) => request,
            Err(err) => return WatchEnd::Failed(kube::Error::BuildRequest(err)),
        };
        Stats::count(&self.progress.stats().watch_requests);
        let opened =
            tokio::time::timeout(config.idle_timeout, WatchLines::open(&self.client, request));
        let mut lines = match opened.await {
            Ok(Ok(lines)) => {
                config.connectivity.reachable();
                self.served();
                lines
            }
            Ok(Err(err)) if streaming && refuses_streaming(&err) => {
                return WatchEnd::Refused(err);
            }
            Ok(Err(err)) => return classify(err),
            Err(_) => return WatchEnd::Failed(stalled("watch")),
        };
        let mut received = false;
        let mut ahead = DecodeAhead::new(Arc::clone(&self.decoder));
        let mut awaiting = streaming.then(InitialEvents::new);
        loop {
            // Until the end bookmark, a warning every so often: the informer is not synced.
            if let (Some(wait), Some(relist)) = (awaiting.as_mut(), initial.as_ref()) {
                wait.warn_if_due(&self.request.url_path, relist.applied());
            }
            let mut batch = Vec::new();
            if ahead.is_empty() {
                let objects = initial.as_ref().map(fan_out::Relist::applied);
                let awaited = awaiting.as_mut().zip(objects);
                match self.next_line(&mut lines, awaited).await {
                    Err(Idle) => {
                        // Restarted at once; a server that is gone shows in the restart's failure.
                        tracing::info!(url = self.request.url_path, idle = ?config.idle_timeout, "watch stalled; restarting it");
                        return WatchEnd::Resume { received };
                    }
                    Ok(None) => {
                        return lines
                            .failure()
                            .map_or(WatchEnd::Resume { received }, classify);
                    }
                    Ok(Some(line)) => batch.push(line),
                }
                received = true;
            }
            let bytes = lines
                .gather(&mut batch, MAX_BATCH_LINES, MAX_BATCH_BYTES)
                .await;
            let end = if ahead.takes(batch.len(), bytes) {
                let oldest = if ahead.is_full() {
                    ahead.oldest().await
                } else {
                    None
                };
                let end = match oldest {
                    Some(decoded) => self.apply(decoded, latest, initial).await,
                    None => None,
                };
                if end.is_none() {
                    ahead.push(batch, initial.is_some());
                }
                end
            } else if let Some(decoded) = ahead.oldest().await {
                self.apply(decoded, latest, initial).await
            } else {
                let mut end = None;
                for line in batch {
                    let event = self.decoder.event(&line, initial.is_some());
                    end = self.take(&line, event, latest, initial).await;
                    if end.is_some() {
                        break;
                    }
                }
                end
            };
            // Once per batch rather than per event: the version is read rarely, and publishing
            // it takes a lock.
            self.progress.publish(latest);
            if let Some(end) = end {
                return end;
            }
        }
    }

    /// The watch's next line, waiting at most the idle timeout; while a streaming list's end
    /// bookmark is `awaited` (with the objects received so far), warning meanwhile when a
    /// warning falls due, so that a silent server is reported too.
    async fn next_line(
        &self,
        lines: &mut WatchLines,
        awaited: Option<(&mut InitialEvents, u64)>,
    ) -> Result<Option<bytes::Bytes>, Idle> {
        let idle = self.config.idle_timeout;
        let Some((wait, objects)) = awaited else {
            return lines.next(idle).await;
        };
        let idle_at = tokio::time::Instant::now() + idle;
        loop {
            let left = idle_at.saturating_duration_since(tokio::time::Instant::now());
            // `next` is cancel safe: what it has read stays in `lines`.
            tokio::select! {
                line = lines.next(left) => return line,
                () = tokio::time::sleep_until(wait.next_warning()) => {
                    wait.warn_if_due(&self.request.url_path, objects);
                }
            }
        }
    }

    /// Applies a batch decoded ahead, in order; `Some` if one of its events ends the watch, or
    /// if the batch was dropped (the watch then resumes from the last event applied).
    async fn apply(
        &self,
        decoded: Result<Decoded<K>, Dropped>,
        latest: &mut Latest,
        initial: &mut Option<fan_out::Relist<'_, K>>,
    ) -> Option<WatchEnd> {
        let Ok(decoded) = decoded else {
            return Some(WatchEnd::Resume { received: true });
        };
        for (line, event) in decoded {
            if let Some(end) = self.take(&line, event, latest, initial).await {
                return Some(end);
            }
        }
        None
    }

    /// Applies one decoded watch event, to the `initial` relist while a streaming list's
    /// initial events last; `Some` if it ends the watch.
    async fn take(
        &self,
        line: &[u8],
        event: Decoding<K>,
        latest: &mut Latest,
        initial: &mut Option<fan_out::Relist<'_, K>>,
    ) -> Option<WatchEnd> {
        // One unit of tokio's cooperative budget per event: a chunk can hold hundreds of
        // events, and reading them takes none, so without this a burst would keep the thread
        // until its last event is cached. Giving it up every so often lets the workers take
        // their keys while the objects are still in the processor's cache.
        tokio::task::consume_budget().await;
        let event = match event {
            Ok(event) => event,
            Err(err) => return Some(unparsed(line, err)),
        };
        match event {
            WatchEvent::Added(Some((obj, json))) | WatchEvent::Modified(Some((obj, json))) => {
                note_version(latest, &obj);
                match initial {
                    Some(relist) => relist.apply(obj, json),
                    None => self.fan_out.apply(obj, json),
                }
            }
            WatchEvent::Deleted(Some((obj, _))) => {
                note_version(latest, &obj);
                match initial {
                    Some(relist) => relist.delete(obj),
                    None => self.fan_out.delete(obj),
                }
            }
            WatchEvent::Added(None) | WatchEvent::Modified(None) | WatchEvent::Deleted(None) => {}
            WatchEvent::Bookmark(bookmark) => {
                *latest = Latest::Text(bookmark.metadata.resource_version.into());
                let end = bookmark.metadata.annotations.get(INITIAL_EVENTS_END);
                if end.is_some_and(|value| value == "true")
                    && let Some(relist) = initial.take()
                {
                    self.streamed(relist, latest);
                }
            }
            WatchEvent::Error(status) if status.code == 410 => return Some(WatchEnd::Gone),
            WatchEvent::Error(status) => {
                return Some(WatchEnd::Failed(kube::Error::Api(status)));
            }
        }
        None
    }

    /// Ends a streaming list's initial events: removes what the stream did not have and
    /// records a complete list (the informer has synced once every reflector has one).
    fn streamed(&self, relist: fan_out::Relist<'_, K>, latest: &Latest) {
        relist.finish();
        self.progress.publish(latest);
        self.progress
            .listed(!self.listed.swap(true, Ordering::Relaxed));
        Stats::count(&self.progress.stats().relists);
        Stats::count(&self.progress.stats().streamed_lists);
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

/// A list page or watch response that stopped arriving for the idle timeout, as the client's
/// own error type.
fn stalled(request: &str) -> kube::Error {
    kube::Error::ReadEvents(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("the {request} response stopped arriving for the idle timeout"),
    ))
}

/// Makes `obj` the source of the latest version, if it has one.
fn note_version<K: Resource + Send + Sync + 'static>(latest: &mut Latest, obj: &Arc<K>) {
    if obj.meta().resource_version.is_some() {
        *latest = Latest::Object(Arc::clone(obj) as Arc<dyn super::progress::Versioned>);
    }
}

/// How a watch ends on a line that is not a watch event: as the server's `Status`, if it is
/// one, else as a decode failure.
fn unparsed(line: &[u8], err: serde_json::Error) -> WatchEnd {
    match serde_json::from_slice::<Status>(line) {
        Ok(status) if status.code != 0 => classify(kube::Error::Api(status.boxed())),
        _ => WatchEnd::Failed(kube::Error::SerdeError(err)),
    }
}

/// Whether a refused streaming list means the server does not serve them: it finds the request
/// invalid (a server before 1.27 forbids `resourceVersionMatch` on a watch, one without the
/// `WatchList` feature forbids `sendInitialEvents`) rather than failing it for another reason.
fn refuses_streaming(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 400 || status.code == 422)
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
