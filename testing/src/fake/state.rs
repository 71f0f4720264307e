//! Stores the fake's objects, its event history and its open watches.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use super::Verb;
use super::kind::Kind;
use super::object::{
    self, has_finalizers, is_deleting, metadata_mut, name, name_suffix, resource_version,
    spec_changed, validate_name,
};
use super::selector::Selector;
use super::status::Failure;
use super::watch::{Event, EventType, Watcher, text};

/// Where an update goes: the main endpoint or the `/status` subresource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Main,
    Status,
}

/// A failure to answer the next matching request with.
#[derive(Clone, Debug)]
pub(crate) struct Fault {
    pub(crate) verb: Verb,
    pub(crate) plural: Option<String>,
    pub(crate) failure: Failure,
}

/// Where an object is stored: its kind's storage key, namespace and name.
pub(crate) type Key = (String, String, String);

/// Everything the fake holds, behind one lock.
#[derive(Debug)]
pub(crate) struct State {
    kinds: Vec<Arc<Kind>>,
    objects: BTreeMap<Key, Value>,
    revision: u64,
    history: VecDeque<Event>,
    pub(crate) history_limit: usize,
    /// Events up to this revision are forgotten; watches and continued lists from before it get
    /// 410 Gone.
    compacted: u64,
    watchers: Vec<Watcher>,
    pub(crate) faults: Vec<Fault>,
    pub(crate) gone_next_watch: bool,
    pub(crate) bookmark_interval: std::time::Duration,
    /// Watches write each event's object before its type.
    pub(crate) objects_before_types: bool,
    /// Whether watches may ask for a streaming list (`sendInitialEvents`), as from Kubernetes
    /// 1.27; when not, `resourceVersionMatch` on a watch is refused, as before 1.27.
    pub(crate) streaming_lists: bool,
    /// The most initial events each streaming list sends until this is lifted.
    pub(crate) initial_events_limit: Option<usize>,
    /// While `true`, list requests for a page after the first wait (see
    /// `FakeApiServer::hold_list_continues`); each waiting request holds one receiver.
    pub(crate) hold_continues: tokio::sync::watch::Sender<bool>,
    /// Counts [`FakeApiServer::expire_watches`](super::FakeApiServer::expire_watches) calls.
    expired_watches: u64,
    /// Bookmarks sent by every watch.
    pub(crate) bookmarks_sent: u64,
    /// While watches are paused, the lines of the changes made since, with the watch they go
    /// to, in order: made at the change, as when not paused, and only sent on resume. A watch's
    /// consecutive lines share a chunk of up to [`HELD_CHUNK`] bytes, as a client reading a
    /// backlog off its socket gets many events per read.
    held: Option<Vec<(UnboundedSender<Bytes>, BytesMut)>>,
    seed: u64,
    /// Set on a deterministic fake: timestamps are tokio's clock since this instant.
    pub(crate) virtual_start: Option<tokio::time::Instant>,
    /// The last configuration each server-side apply manager applied, by object uid.
    applied: HashMap<String, BTreeMap<String, Value>>,
}

/// The most a held chunk takes before the next line starts a new one.
const HELD_CHUNK: usize = 64 * 1024;

/// Appends `line` to `watch`'s last held chunk if it has room, or starts a new one.
fn hold(
    held: &mut Vec<(UnboundedSender<Bytes>, BytesMut)>,
    watch: &UnboundedSender<Bytes>,
    line: &[u8],
) {
    let last = held.iter_mut().rev().find(|(to, _)| to.same_channel(watch));
    match last {
        Some((_, chunk)) if chunk.len() + line.len() <= HELD_CHUNK => {
            chunk.extend_from_slice(line);
        }
        _ => held.push((watch.clone(), BytesMut::from(line))),
    }
}

impl State {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            kinds: Vec::new(),
            objects: BTreeMap::new(),
            revision: 0,
            history: VecDeque::new(),
            history_limit: 10_000,
            compacted: 0,
            watchers: Vec::new(),
            faults: Vec::new(),
            gone_next_watch: false,
            bookmark_interval: std::time::Duration::from_secs(1),
            objects_before_types: false,
            streaming_lists: true,
            initial_events_limit: None,
            hold_continues: tokio::sync::watch::Sender::new(false),
            expired_watches: 0,
            bookmarks_sent: 0,
            held: None,
            seed,
            virtual_start: None,
            applied: HashMap::new(),
        }
    }

    /// Serves a kind (replacing an earlier registration of the same group and plural).
    pub(crate) fn register(&mut self, kind: Kind) {
        self.kinds
            .retain(|known| known.group != kind.group || known.plural != kind.plural);
        self.kinds.push(Arc::new(kind));
    }

    /// Every served kind.
    pub(crate) fn kinds(&self) -> impl Iterator<Item = &Kind> {
        self.kinds.iter().map(|kind| &**kind)
    }

    /// The kind served at a group, version and plural.
    pub(crate) fn kind(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Kind>> {
        self.kinds
            .iter()
            .find(|kind| kind.group == group && kind.version == version && kind.plural == plural)
            .cloned()
    }

    /// The kind served for a Rust type's group and kind.
    pub(crate) fn kind_of(&self, group: &str, kind: &str) -> Option<Arc<Kind>> {
        self.kinds
            .iter()
            .find(|known| known.group == group && known.name == kind)
            .cloned()
    }

    /// What each apply manager last applied to the object with this uid.
    pub(crate) fn applied(&self, uid: &str) -> BTreeMap<String, Value> {
        self.applied.get(uid).cloned().unwrap_or_default()
    }

    /// Records what each apply manager last applied to the object with this uid.
    pub(crate) fn set_applied(&mut self, uid: String, managers: BTreeMap<String, Value>) {
        self.applied.insert(uid, managers);
    }

    /// The latest resourceVersion handed out.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    fn key(kind: &Kind, namespace: &str, name: &str) -> (String, String, String) {
        let namespace = if kind.namespaced { namespace } else { "" };
        (kind.storage_key(), namespace.to_owned(), name.to_owned())
    }

    pub(crate) fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Result<Value, Failure> {
        self.objects
            .get(&Self::key(kind, namespace, name))
            .cloned()
            .ok_or_else(|| Failure::not_found(kind, name))
    }

    /// One page of a list; `after` is the continue token of the previous page.
    pub(crate) fn list(
        &self,
        kind: &Kind,
        namespace: Option<&str>,
        selector: &Selector,
        limit: Option<usize>,
        after: Option<&str>,
    ) -> Result<Value, Failure> {
        let (revision, start) = match after {
            Some(token) => {
                let mut parts = token.splitn(3, '/');
                let revision = parts.next().and_then(|r| r.parse::<u64>().ok());
                match (revision, parts.next(), parts.next()) {
                    (Some(revision), Some(_), Some(_)) if revision < self.compacted => {
                        return Err(Failure::gone(
                            "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                        ));
                    }
                    (Some(revision), Some(namespace), Some(name)) => {
                        (revision, Some((namespace.to_owned(), name.to_owned())))
                    }
                    _ => return Err(Failure::bad_request("continue key is not valid")),
                }
            }
            None => (self.revision, None),
        };
        let resource = kind.storage_key();
        // A continued list starts after the previous page's last key, without walking the
        // keys before it: each page costs the same however far into the list it is.
        let after = start.map(|(ns, name)| (resource.clone(), ns, name));
        let mut in_range = self
            .objects_after(&resource, after.as_ref())
            .filter(|((_, ns, _), _)| namespace.is_none_or(|want| want == ns));
        let limit = limit.filter(|limit| *limit > 0).unwrap_or(usize::MAX);
        let page: Vec<_> = in_range
            .by_ref()
            .filter(|(_, object)| selector.matches(object))
            .take(limit)
            .collect();
        // Like the real server, a page is continued while objects remain in the key range,
        // whether or not they match the selectors: the last page can be empty.
        let remaining = in_range.count();
        let mut metadata = json!({ "resourceVersion": revision.to_string() });
        if remaining > 0
            && let Some(((_, ns, name), _)) = page.last()
        {
            metadata["continue"] = json!(format!("{revision}/{ns}/{name}"));
            if selector.is_empty() {
                metadata["remainingItemCount"] = json!(remaining);
            }
        }
        let items: Vec<Value> = page.into_iter().map(|(_, object)| object.clone()).collect();
        Ok(json!({
            "apiVersion": kind.api_version(),
            "kind": format!("{}List", kind.name),
            "metadata": metadata,
            "items": items,
        }))
    }

    /// Opens a watch: replays what it must, then registers it for live events.
    pub(crate) fn watch(
        &mut self,
        kind: &Kind,
        namespace: Option<&str>,
        selector: Selector,
        from: Option<u64>,
        sender: UnboundedSender<Bytes>,
    ) -> Result<(), Failure> {
        let watcher = Watcher {
            resource: kind.storage_key(),
            namespace: namespace.map(str::to_owned),
            selector,
            sender,
            object_first: self.objects_before_types,
        };
        match from {
            None | Some(0) => {
                let current = self
                    .objects
                    .iter()
                    .filter(|((r, _, _), object)| *r == watcher.resource && watcher.wants(object));
                for (_, object) in current {
                    // A closed receiver is noticed and dropped at the next event.
                    let _ = watcher.sender.send(watcher.line("ADDED", &text(object)));
                }
            }
            Some(revision) if revision < self.compacted => {
                return Err(Failure::gone(format!(
                    "too old resource version: {revision} ({})",
                    self.compacted + 1
                )));
            }
            Some(revision) => {
                for event in self
                    .history
                    .iter()
                    .filter(|event| event.revision > revision)
                {
                    watcher.deliver(event);
                }
            }
        }
        self.watchers.push(watcher);
        Ok(())
    }

    /// The objects of the kind stored under `resource`, in key order, after the key `after`.
    pub(crate) fn objects_after<'a>(
        &'a self,
        resource: &'a str,
        after: Option<&Key>,
    ) -> impl Iterator<Item = (&'a Key, &'a Value)> + 'a {
        let start = match after {
            Some(key) => Bound::Excluded(key.clone()),
            None => Bound::Included((resource.to_owned(), String::new(), String::new())),
        };
        self.objects
            .range((start, Bound::Unbounded))
            .take_while(move |((r, _, _), _)| r == resource)
    }

    /// The objects of the kind stored under `resource` as a streaming list opened at `revision`
    /// sends them, in key order, after the key `after`: those stored now (as they are now), and
    /// those deleted since (as they were at `revision`), as a real server's snapshot holds them.
    /// Deletes the history has forgotten are not undone.
    pub(crate) fn objects_at<'a>(
        &'a self,
        resource: &'a str,
        revision: u64,
        after: Option<&Key>,
    ) -> impl Iterator<Item = (Cow<'a, Key>, &'a Value)> + 'a {
        // Newest first, so each key ends with what it was before its first change since.
        let mut before = BTreeMap::new();
        let since = self.history.iter().rev();
        for event in since.take_while(|event| event.revision > revision) {
            if event.resource != resource {
                continue;
            }
            let object = event.old.as_ref().unwrap_or(&event.object);
            let metadata = &object["metadata"];
            let key = (
                resource.to_owned(),
                metadata["namespace"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                metadata["name"].as_str().unwrap_or_default().to_owned(),
            );
            let was = (event.kind != EventType::Added).then_some(object);
            before.insert(key, was);
        }
        let mut deleted = before
            .into_iter()
            .filter_map(|(key, was)| was.map(|was| (key, was)))
            .filter(|(key, _)| {
                after.is_none_or(|after| key > after) && !self.objects.contains_key(key)
            })
            .collect::<Vec<_>>()
            .into_iter()
            .peekable();
        let mut stored = self.objects_after(resource, after).peekable();
        std::iter::from_fn(move || {
            let deleted_first = match (stored.peek(), deleted.peek()) {
                (Some((stored, _)), Some((deleted, _))) => deleted < *stored,
                (None, Some(_)) => true,
                (_, None) => false,
            };
            if deleted_first {
                deleted.next().map(|(key, was)| (Cow::Owned(key), was))
            } else {
                stored
                    .next()
                    .map(|(key, object)| (Cow::Borrowed(key), object))
            }
        })
    }

    /// How many times every open watch was ended with 410 Gone.
    pub(crate) fn expired_watches(&self) -> u64 {
        self.expired_watches
    }

    /// Ends every open watch with 410 Gone, streaming lists amid their initial events too
    /// (they notice the count change).
    pub(crate) fn expire_watches(&mut self) {
        self.expired_watches += 1;
        let failure = Failure::gone(format!(
            "too old resource version: {} ({})",
            self.compacted, self.revision
        ));
        let line = super::watch::event_line("ERROR", &text(&failure.to_json()));
        for watcher in self.watchers.drain(..) {
            let _ = watcher.sender.send(line.clone());
        }
        if let Some(held) = &mut self.held {
            held.clear();
        }
    }

    /// Holds back every change from open watches until [`resume_watches`](Self::resume_watches).
    pub(crate) fn pause_watches(&mut self) {
        self.held.get_or_insert_with(Vec::new);
    }

    /// Sends open watches the changes held back since the pause, in order.
    pub(crate) fn resume_watches(&mut self) {
        for (watch, chunk) in self.held.take().unwrap_or_default() {
            // A watch that closed meanwhile is forgotten at the next change.
            let _ = watch.send(chunk.freeze());
        }
    }

    pub(crate) fn open_watches(&self) -> usize {
        self.watchers
            .iter()
            .filter(|w| !w.sender.is_closed())
            .count()
    }

    /// Ends every open watch.
    pub(crate) fn drop_watches(&mut self) {
        self.watchers.clear();
        if let Some(held) = &mut self.held {
            held.clear();
        }
    }

    /// Forgets the whole event history: watches from any past resourceVersion get 410 Gone.
    pub(crate) fn compact(&mut self) {
        self.history.clear();
        self.compacted = self.revision;
    }

    /// Takes the first injected fault that matches a request.
    pub(crate) fn take_fault(&mut self, verb: Verb, plural: &str) -> Option<Failure> {
        let index = self.faults.iter().position(|fault| {
            fault.verb == verb && fault.plural.as_deref().is_none_or(|p| p == plural)
        })?;
        Some(self.faults.remove(index).failure)
    }

    fn emit(&mut self, kind: EventType, resource: String, object: Value, old: Option<Value>) {
        let event = Event {
            revision: self.revision,
            resource,
            kind,
            text: text(&object),
            object,
            old,
        };
        match &mut self.held {
            Some(held) => self.watchers.retain(|watcher| {
                if let Some(line) = watcher.line_for(&event) {
                    hold(held, &watcher.sender, &line);
                }
                !watcher.sender.is_closed()
            }),
            None => self.watchers.retain(|watcher| watcher.deliver(&event)),
        }
        self.history.push_back(event);
        while self.history.len() > self.history_limit {
            if let Some(forgotten) = self.history.pop_front() {
                self.compacted = forgotten.revision;
            }
        }
    }

    fn next_revision(&mut self, object: &mut Value) {
        self.revision += 1;
        metadata_mut(object).insert("resourceVersion".into(), json!(self.revision.to_string()));
    }

    /// Creates an object; `keep_status` is true when seeding.
    pub(crate) fn create(
        &mut self,
        kind: &Kind,
        namespace: &str,
        mut object: Value,
        keep_status: bool,
    ) -> Result<Value, Failure> {
        let metadata = metadata_mut(&mut object);
        if kind.namespaced {
            match metadata.get("namespace").and_then(Value::as_str) {
                Some(given) if !given.is_empty() && given != namespace => {
                    return Err(Failure::bad_request(
                        "the namespace of the provided object does not match the namespace sent \
                         on the request",
                    ));
                }
                _ => metadata.insert("namespace".into(), json!(namespace)),
            };
        } else {
            metadata.remove("namespace");
        }
        let mut name = metadata
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if name.is_empty() {
            let prefix = metadata
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if prefix.is_empty() {
                return Err(Failure::invalid(
                    kind,
                    "",
                    "metadata.name",
                    "",
                    "name or generateName is required",
                ));
            }
            loop {
                self.seed += 1;
                name = format!("{prefix}{}", name_suffix(self.seed));
                if !self
                    .objects
                    .contains_key(&Self::key(kind, namespace, &name))
                {
                    break;
                }
            }
        }
        validate_name(kind, &name)?;
        if self
            .objects
            .contains_key(&Self::key(kind, namespace, &name))
        {
            return Err(Failure::already_exists(kind, &name));
        }
        self.seed += 1;
        let metadata = metadata_mut(&mut object);
        metadata.insert("name".into(), json!(name));
        for field in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            metadata.remove(field);
        }
        metadata.insert("uid".into(), json!(object::uid(self.seed)));
        metadata.insert(
            "creationTimestamp".into(),
            json!(object::now(self.virtual_start)),
        );
        if kind.generation {
            metadata.insert("generation".into(), json!(1));
        } else {
            metadata.remove("generation");
        }
        object["apiVersion"] = json!(kind.api_version());
        object["kind"] = json!(kind.name);
        if kind.status_subresource && !keep_status {
            let reset = (!kind.custom).then(|| json!({}));
            set_or_remove(&mut object, "status", reset);
        }
        self.next_revision(&mut object);
        self.objects
            .insert(Self::key(kind, namespace, &name), object.clone());
        self.emit(EventType::Added, kind.storage_key(), object.clone(), None);
        Ok(object)
    }

    /// Replaces an object (or its status), checking the resourceVersion precondition.
    pub(crate) fn update(
        &mut self,
        kind: &Kind,
        namespace: &str,
        url_name: &str,
        new: Value,
        target: Target,
    ) -> Result<Value, Failure> {
        let key = Self::key(kind, namespace, url_name);
        let old = self.get(kind, namespace, url_name)?;
        if !name(&new).is_empty() && name(&new) != url_name {
            return Err(Failure::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({url_name})",
                name(&new)
            )));
        }
        match resource_version(&new) {
            "" if kind.custom => {
                return Err(Failure::invalid(
                    kind,
                    url_name,
                    "metadata.resourceVersion",
                    "0x0",
                    "must be specified for an update",
                ));
            }
            "" => {}
            wanted if wanted != resource_version(&old) => {
                return Err(Failure::conflict(
                    kind,
                    url_name,
                    "the object has been modified; please apply your changes to the latest \
                     version and try again",
                ));
            }
            _ => {}
        }
        let mut next = match target {
            Target::Status => {
                let mut next = old.clone();
                set_or_remove(&mut next, "status", new.get("status").cloned());
                next
            }
            Target::Main if kind.status_subresource => {
                let mut next = new;
                set_or_remove(&mut next, "status", old.get("status").cloned());
                next
            }
            Target::Main => new,
        };
        let metadata = metadata_mut(&mut next);
        for field in [
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "resourceVersion",
        ] {
            match old["metadata"].get(field) {
                Some(value) => metadata.insert(field.into(), value.clone()),
                None => metadata.remove(field),
            };
        }
        next["apiVersion"] = json!(kind.api_version());
        next["kind"] = json!(kind.name);
        if kind.generation && spec_changed(&old, &next, kind.status_subresource) {
            let generation = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
            metadata_mut(&mut next).insert("generation".into(), json!(generation));
        }
        if next == old {
            return Ok(old);
        }
        self.next_revision(&mut next);
        if is_deleting(&next) && !has_finalizers(&next) {
            self.objects.remove(&key);
            self.emit(
                EventType::Deleted,
                kind.storage_key(),
                next.clone(),
                Some(old),
            );
        } else {
            self.objects.insert(key, next.clone());
            self.emit(
                EventType::Modified,
                kind.storage_key(),
                next.clone(),
                Some(old),
            );
        }
        Ok(next)
    }

    /// Deletes an object, or marks it for deletion while it has finalizers.
    pub(crate) fn delete(
        &mut self,
        kind: &Kind,
        namespace: &str,
        name: &str,
        preconditions: &Value,
    ) -> Result<Value, Failure> {
        let key = Self::key(kind, namespace, name);
        let old = self.get(kind, namespace, name)?;
        for (field, label) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
            if let Some(wanted) = preconditions[field].as_str()
                && Some(wanted) != old["metadata"][field].as_str()
            {
                let why = format!(
                    "Precondition failed: {label} in precondition: {wanted}, {label} in object \
                     meta: {}",
                    old["metadata"][field].as_str().unwrap_or_default()
                );
                return Err(Failure::conflict(kind, name, &why));
            }
        }
        if has_finalizers(&old) {
            if is_deleting(&old) {
                return Ok(old);
            }
            let mut next = old.clone();
            let metadata = metadata_mut(&mut next);
            metadata.insert(
                "deletionTimestamp".into(),
                json!(object::now(self.virtual_start)),
            );
            metadata.insert("deletionGracePeriodSeconds".into(), json!(0));
            if let Some(generation) = metadata.get("generation").and_then(Value::as_i64) {
                metadata.insert("generation".into(), json!(generation + 1));
            }
            self.next_revision(&mut next);
            self.objects.insert(key, next.clone());
            self.emit(
                EventType::Modified,
                kind.storage_key(),
                next.clone(),
                Some(old),
            );
            return Ok(next);
        }
        let mut gone = self.objects.remove(&key).unwrap_or_else(|| old.clone());
        self.next_revision(&mut gone);
        self.emit(
            EventType::Deleted,
            kind.storage_key(),
            gone.clone(),
            Some(old),
        );
        Ok(gone)
    }
}

fn set_or_remove(object: &mut Value, field: &str, value: Option<Value>) {
    match (value, object.as_object_mut()) {
        (Some(value), Some(map)) if !value.is_null() => {
            map.insert(field.into(), value);
        }
        (_, Some(map)) => {
            map.remove(field);
        }
        _ => {}
    }
}
