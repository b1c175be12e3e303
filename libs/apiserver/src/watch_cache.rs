//! The watch cache: every stored object of the shard, kept in memory from ONE store watch, serving lists,
//! gets and watches without touching the store.
//!
//! Why one watch for the whole keyspace rather than one per resource: revisions are global, so a single
//! ordered stream keeps every resource's cache at the same revision. A read that must observe every
//! acknowledged write then only waits until the cache reaches the newest revision this shard wrote
//! (kept in [`WatchCache::note_write`]), with no store round trip and no progress requests.
//! Caches for resources are created on first sight of a key, so CRDs need no extra machinery.
//!
//! Each watcher has a bounded queue; one that falls behind is cut off (its stream ends and the client
//! re-lists), so a slow client never makes the shard buffer without bound.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_store::{EventKind, Revision, Store, StoreError, WatchResponse};
use parking_lot::RwLock;
use serde_json::Value;

use tokio::sync::mpsc;

use crate::cache_source::{CacheSource, StoreSource};
pub use crate::cached_labels::CachedLabels;
use crate::object_json::ObjectJson;
use crate::object_map::ObjectMap;

/// Resumptions of the store watch in a row that break again without progress before the cache
/// reloads instead.
const FRUITLESS_RESUMES: u32 = 3;
/// How many past events each resource keeps for watches that resume from a resourceVersion.
const HISTORY_PER_RESOURCE: usize = 10_000;
/// The object bytes a resource's history may hold besides: without it, a resource of large objects
/// (or one object in each of many logical clusters, like a CRD) would keep 10,000 old copies.
const HISTORY_BYTES_PER_RESOURCE: usize = 16 << 20;
/// Events queued for one watcher before it is cut off.
pub const WATCHER_QUEUE: usize = 4_096;
/// The newest events of a resource whose encoded watch frame is kept for watchers still to be
/// served; older events drop it and never keep one again (a watcher resuming that far back, or
/// lagging that far behind, encodes its own), so the history does not hold every object twice.
pub const FRAMES_KEPT: usize = 1_024;

/// One object as served: the JSON bytes already carry `resourceVersion`.
#[derive(Debug)]
pub struct CachedObject {
    pub key: String,
    /// Checked when the key was read, so a stored key that names no logical cluster is skipped.
    pub cluster: LogicalClusterName,
    pub namespace: Option<String>,
    pub name: String,
    pub revision: Revision,
    pub labels: CachedLabels,
    pub json: ObjectJson,
}

impl CachedObject {
    pub fn value(&self) -> Result<Value, serde_json::Error> {
        self.json.parse()
    }

    pub fn labels_map(&self) -> BTreeMap<String, String> {
        self.labels.to_map()
    }

    /// Whether `metadata.deletionTimestamp` is set. Read without building the object: callers
    /// ask this of every namespace or every object of an LC.
    pub fn is_deleting(&self) -> bool {
        // Most objects are not, and their bytes say so without a parse.
        self.json.may_contain(b"\"deletionTimestamp\"")
            && self
                .json
                .parse::<DeletionOnly>()
                .is_ok_and(|o| o.metadata.deletion_timestamp.is_some())
    }

    /// One annotation, read without building the object (an LC's path, type or required groups,
    /// asked on every event or admission).
    pub fn annotation(&self, name: &str) -> Option<String> {
        if !self.json.may_contain(name.as_bytes()) {
            return None;
        }
        self.json
            .parse::<AnnotationsOnly>()
            .ok()?
            .metadata
            .annotations
            .remove(name)
    }
}

#[cfg(any(test, feature = "test-util"))]
impl CachedObject {
    /// LogicalCluster `cluster` with `annotations`, as the cache holds one (for the observers'
    /// unit tests).
    pub fn logical_cluster(cluster: &str, annotations: Value) -> CachedObject {
        let value =
            serde_json::json!({"metadata": {"name": "cluster", "annotations": annotations}});
        CachedObject {
            key: crate::registry::keyspaces::logical_cluster_key(cluster),
            cluster: LogicalClusterName::parse(cluster).expect("a test cluster name"),
            namespace: None,
            name: "cluster".into(),
            revision: 1,
            labels: CachedLabels::default(),
            json: ObjectJson::encode(&value).expect("JSON of a test object"),
        }
    }
}

/// Label selectors match a cached object by the labels it keeps apart, without a parse.
impl kcp_apimachinery::selector::label::Labels for CachedObject {
    fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key)
    }
}

/// Only an object's `metadata.annotations`.
#[derive(serde::Deserialize)]
struct AnnotationsOnly {
    #[serde(default)]
    metadata: AnnotationsMeta,
}

#[derive(serde::Deserialize, Default)]
struct AnnotationsMeta {
    #[serde(default)]
    annotations: std::collections::HashMap<String, String>,
}

/// Only an object's `metadata.deletionTimestamp` (serde skips the rest without allocating).
#[derive(serde::Deserialize)]
struct DeletionOnly {
    #[serde(default)]
    metadata: DeletionMeta,
}

#[derive(serde::Deserialize, Default)]
struct DeletionMeta {
    #[serde(rename = "deletionTimestamp", default)]
    deletion_timestamp: Option<serde::de::IgnoredAny>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheEventType {
    Added,
    Modified,
    Deleted,
}

impl CacheEventType {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheEventType::Added => "ADDED",
            CacheEventType::Modified => "MODIFIED",
            CacheEventType::Deleted => "DELETED",
        }
    }
}

#[derive(Debug)]
pub struct CacheEvent {
    pub kind: CacheEventType,
    pub revision: Revision,
    /// The new state (for Deleted: the last state, with the deletion's resourceVersion).
    pub object: Arc<CachedObject>,
    /// The state before this change, for watchers whose selector the object leaves or enters.
    pub prev: Option<Arc<CachedObject>>,
    /// The JSON watch frame of this event as its own kind, encoded once for every watcher that
    /// sees it while the event is recent (see [`FRAMES_KEPT`]).
    frame: parking_lot::Mutex<FrameSlot>,
}

/// An event's encoded frame: not asked for yet, kept for the watchers still to come, or retired
/// (the event is old: encoded for each watcher that asks, never stored again).
#[derive(Debug, Default)]
enum FrameSlot {
    #[default]
    Empty,
    Kept(Bytes),
    Retired,
}

impl CacheEvent {
    fn new(
        kind: CacheEventType,
        revision: Revision,
        object: Arc<CachedObject>,
        prev: Option<Arc<CachedObject>>,
    ) -> CacheEvent {
        CacheEvent {
            kind,
            revision,
            object,
            prev,
            frame: parking_lot::Mutex::new(FrameSlot::Empty),
        }
    }

    /// The object bytes this event keeps alive, for the history's budget: the previous state counts
    /// too (an event whose predecessor already left the history still holds it), so the budget is a
    /// true upper bound even if shared states are counted twice.
    fn held_bytes(&self) -> usize {
        self.object.json.len() + self.prev.as_ref().map_or(0, |p| p.json.len())
    }

    /// `{"type":"<kind>","object":<object>}\n`, shared by every JSON watcher of this event. Only
    /// the event's own kind is kept: the others (an object entering or leaving a watcher's
    /// selector) are rare.
    pub fn json_frame(&self, kind: CacheEventType) -> Bytes {
        if kind != self.kind {
            return json_frame(kind, &self.object.json);
        }
        let mut slot = self.frame.lock();
        match &*slot {
            FrameSlot::Kept(frame) => frame.clone(),
            FrameSlot::Retired => {
                drop(slot);
                json_frame(kind, &self.object.json)
            }
            FrameSlot::Empty => {
                let frame = json_frame(kind, &self.object.json);
                *slot = FrameSlot::Kept(frame.clone());
                frame
            }
        }
    }

    /// Whether this event holds an encoded frame (memory the history keeps besides the objects).
    pub fn holds_frame(&self) -> bool {
        matches!(*self.frame.lock(), FrameSlot::Kept(_))
    }

    fn retire_frame(&self) {
        *self.frame.lock() = FrameSlot::Retired;
    }
}

/// One watch event line in JSON.
pub fn json_frame(kind: CacheEventType, object_json: &ObjectJson) -> Bytes {
    let mut out = Vec::with_capacity(object_json.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_str().as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    object_json.write_to(&mut out);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

/// Objects listed from the cache, and the revisions whose state they are (see
/// [`WatchCache::list_at`]).
pub struct Listed {
    pub objects: Vec<Arc<CachedObject>>,
    pub revision: Revision,
    pub unchanged_since: Revision,
}

impl Listed {
    /// No objects: true at any revision up to `revision`.
    fn nothing(revision: Revision) -> Listed {
        Listed {
            objects: Vec::new(),
            revision,
            unchanged_since: 0,
        }
    }
}

/// What a watcher receives.
#[derive(Debug, Clone)]
pub enum WatchItem {
    Event(Arc<CacheEvent>),
    /// The cache reached this revision (for bookmarks).
    Progress(Revision),
}

/// Which objects a watcher wants, before per-watcher selectors are applied.
#[derive(Clone, Debug)]
pub struct Scope {
    /// `None` = every logical cluster (wildcard).
    pub cluster: Option<LogicalClusterName>,
    pub namespace: Option<String>,
}

impl Scope {
    fn matches(&self, obj: &CachedObject) -> bool {
        self.cluster.as_ref().is_none_or(|c| *c == obj.cluster)
            && self
                .namespace
                .as_deref()
                .is_none_or(|n| Some(n) == obj.namespace.as_deref())
    }
}

struct Watcher {
    id: u64,
    scope: Scope,
    tx: mpsc::Sender<WatchItem>,
}

#[derive(Default)]
struct ResourceState {
    objects: ObjectMap,
    history: VecDeque<Arc<CacheEvent>>,
    /// Watches may resume from any revision at or after this one.
    history_start: Revision,
    /// Object bytes held by `history`.
    history_bytes: usize,
    /// The revision of the last event applied to this resource.
    applied: Revision,
    watchers: Vec<Watcher>,
}

/// The cache of one resource (one key prefix `/<group>/<resource>/<identity>/`).
pub struct ResourceCache {
    state: RwLock<ResourceState>,
}

/// A registered watcher: its replayed backlog and its live queue.
pub struct Subscription {
    pub backlog: Vec<Arc<CacheEvent>>,
    pub rx: mpsc::Receiver<WatchItem>,
    pub id: u64,
    cache: Arc<ResourceCache>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.cache
            .state
            .write()
            .watchers
            .retain(|w| w.id != self.id);
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("too old resource version: {requested} ({oldest})")]
    TooOld {
        requested: Revision,
        oldest: Revision,
    },
    #[error("Too large resource version: {requested}, current: {current}")]
    TooNew {
        requested: Revision,
        current: Revision,
    },
    #[error("the watch cache is not running")]
    Stopped,
    /// The process whose writes this cache follows did not say what it acknowledged, so a
    /// consistent read cannot know what it must reflect.
    #[error("cannot tell which writes to reflect: {0}")]
    WriterUnreachable(String),
}

/// The shard-wide cache.
pub struct WatchCache {
    resources: RwLock<HashMap<String, Arc<ResourceCache>>>,
    revision: AtomicI64,
    written: AtomicI64,
    /// Who else acknowledges writes this cache must reflect in consistent reads.
    writes_elsewhere: std::sync::OnceLock<Arc<dyn WritesElsewhere>>,
    start_revision: AtomicI64,
    next_watcher: AtomicU64,
    revision_tx: tokio::sync::watch::Sender<Revision>,
    /// Stops following the store (shutdown), releasing it.
    stop: tokio_util::sync::CancellationToken,
    /// Subscribers to every event of every resource (controllers such as the garbage collector).
    all: RwLock<Vec<AllWatcher>>,
    /// Whether `all` is non-empty, so the hot path skips its lock when nobody listens.
    any_all: std::sync::atomic::AtomicBool,
    /// Told of every event as it is applied, in order (see [`CacheObserver`]).
    observer: std::sync::OnceLock<Arc<dyn CacheObserver>>,
    /// Whether the first load came from a snapshot (see [`WatchCache::start_with_snapshot`]).
    from_snapshot: std::sync::atomic::AtomicBool,
    /// False from a broken store watch until the cache is loaded again (the health checks ask).
    following: std::sync::atomic::AtomicBool,
}

/// State kept beside the cache that must never lag it (the RBAC index): called synchronously,
/// under the resource's lock, for every event, so whoever sees the cache at a revision also sees
/// the observer's state at that revision. Must be quick and must not call back into the cache.
pub trait CacheObserver: Send + Sync + 'static {
    fn event(&self, event: &CacheEvent);
    /// The cache was rebuilt from a fresh listing (its watch broke): start over from `objects`.
    fn reloaded(&self, objects: &[Arc<CachedObject>]);
    /// The observer was just set: every object the cache holds, as if each had been added.
    fn replay(&self, objects: &[Arc<CachedObject>]) {
        for obj in objects {
            self.event(&CacheEvent::new(
                CacheEventType::Added,
                obj.revision,
                obj.clone(),
                None,
            ));
        }
    }
}

/// Several observers of one cache, told in order.
pub struct Observers(pub Vec<Arc<dyn CacheObserver>>);

impl CacheObserver for Observers {
    fn event(&self, event: &CacheEvent) {
        for o in &self.0 {
            o.event(event);
        }
    }

    fn reloaded(&self, objects: &[Arc<CachedObject>]) {
        for o in &self.0 {
            o.reloaded(objects);
        }
    }

    /// Each observer on its own thread: at start-up this is every object of the shard (the RBAC
    /// and path indexes of 100k workspaces took 0.7 s one after the other).
    fn replay(&self, objects: &[Arc<CachedObject>]) {
        std::thread::scope(|scope| {
            for o in &self.0 {
                scope.spawn(move || o.replay(objects));
            }
        });
    }
}

struct AllWatcher {
    id: u64,
    tx: mpsc::Sender<Arc<CacheEvent>>,
}

/// A subscriber to every event of every resource, including resources that appear later.
///
/// Its queue is bounded: a subscriber that falls behind is cut off (`rx` ends) and must start over
/// with a new subscription and a full [`WatchCache::all_objects`] listing.
pub struct AllSubscription {
    pub rx: mpsc::Receiver<Arc<CacheEvent>>,
    id: u64,
    cache: std::sync::Weak<WatchCache>,
}

impl Drop for AllSubscription {
    fn drop(&mut self) {
        if let Some(cache) = self.cache.upgrade() {
            let mut all = cache.all.write();
            all.retain(|w| w.id != self.id);
            cache.any_all.store(!all.is_empty(), Ordering::Release);
        }
    }
}

/// `/<group>/<resource>/<identity>/` of a key.
pub(crate) fn resource_prefix(key: &str) -> Option<&str> {
    let mut idx = 0;
    for _ in 0..4 {
        idx += key[idx..].find('/')? + 1;
    }
    Some(&key[..idx])
}

/// `(cluster, namespace, name)` of a key under its resource prefix.
fn key_parts(key: &str) -> Option<(LogicalClusterName, Option<String>, String)> {
    let prefix = resource_prefix(key)?;
    let parts: Vec<&str> = key[prefix.len()..].split('/').collect();
    match parts.as_slice() {
        [c, n] => Some((LogicalClusterName::parse(c).ok()?, None, n.to_string())),
        [c, ns, n] => Some((
            LogicalClusterName::parse(c).ok()?,
            Some(ns.to_string()),
            n.to_string(),
        )),
        _ => None,
    }
}

/// Turns stored bytes into the served form: `resourceVersion` set to the revision.
pub fn decorate(stored: &[u8], revision: Revision) -> Option<(Value, Bytes)> {
    let mut value: Value = serde_json::from_slice(stored).ok()?;
    set_resource_version(&mut value, revision);
    // Sized up front: the cache keeps these bytes for the object's lifetime, and `to_vec`'s doubling
    // growth would leave up to half of each allocation unused (measured: 60 % of the cache's heap).
    let mut bytes = Vec::with_capacity(stored.len() + 48);
    serde_json::to_writer(&mut bytes, &value).ok()?;
    bytes.shrink_to_fit();
    Some((value, Bytes::from(bytes)))
}

/// `metadata.labels` of `value` as the cache keeps them.
pub fn labels_of(value: &Value) -> CachedLabels {
    CachedLabels::new(
        value
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default(),
    )
}

/// [`decorate`] for the cache: the JSON kept in the form that shares large identical fields.
fn decorate_cached(stored: &[u8], revision: Revision) -> Option<(Value, ObjectJson)> {
    let mut value: Value = serde_json::from_slice(stored).ok()?;
    set_resource_version(&mut value, revision);
    let json = ObjectJson::encode(&value).ok()?;
    Some((value, json))
}

fn set_resource_version(value: &mut Value, revision: Revision) {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert(
            "resourceVersion".into(),
            Value::String(revision.to_string()),
        );
    }
}

/// Objects read per page when the cache loads.
const LOAD_PAGE: usize = 5000;
/// Resources read at once while loading.
const LOAD_READERS: usize = 2;

/// A page of stored objects as the cache keeps them: (resource prefix, object).
fn decode_page(kvs: Vec<kcp_store::KeyValue>) -> Vec<(String, CachedObject)> {
    let mut out = Vec::with_capacity(kvs.len());
    for kv in kvs {
        match (
            resource_prefix(&kv.key),
            cached(&kv.key, &kv.value, kv.mod_revision),
        ) {
            (Some(prefix), Some(obj)) => out.push((prefix.to_string(), obj)),
            _ => tracing::warn!(key = %kv.key, "skipping unreadable stored object"),
        }
    }
    out
}

/// The resource prefixes that hold keys at `revision`, in key order: one key read per resource.
async fn resource_prefixes(
    store: &dyn CacheSource,
    revision: Revision,
) -> Result<Vec<String>, StoreError> {
    let mut prefixes = Vec::new();
    let mut probe_after: Option<String> = None;
    loop {
        let probe = store
            .range(kcp_store::RangeRequest {
                prefix: "/".to_string(),
                start_after: probe_after.clone(),
                limit: 1,
                revision: Some(revision),
            })
            .await?;
        let Some(first) = probe.kvs.into_iter().next() else {
            return Ok(prefixes);
        };
        let Some(prefix) = resource_prefix(&first.key).map(str::to_string) else {
            tracing::warn!(key = %first.key, "skipping a stored key outside every resource");
            probe_after = Some(first.key);
            continue;
        };
        // Past every key of this resource: its prefix ends in '/', and '0' follows '/'.
        probe_after = Some(format!("{}0", &prefix[..prefix.len() - 1]));
        prefixes.push(prefix);
    }
}

/// Sends every page of one resource at `revision` to `pages`.
async fn read_resource(
    store: &dyn CacheSource,
    prefix: String,
    revision: Revision,
    pages: mpsc::Sender<Vec<kcp_store::KeyValue>>,
) -> Result<(), StoreError> {
    let mut start_after = None;
    loop {
        let page = store
            .range(kcp_store::RangeRequest {
                prefix: prefix.clone(),
                start_after: start_after.clone(),
                limit: LOAD_PAGE,
                revision: Some(revision),
            })
            .await?;
        let done = !page.more || page.kvs.is_empty();
        start_after = page.kvs.last().map(|kv| kv.key.clone());
        if pages.send(page.kvs).await.is_err() {
            // The decoding failed; its error ends the load.
            return Ok(());
        }
        if done {
            return Ok(());
        }
    }
}

/// Whether a snapshot with `header` continues the history of `store` (whose identity and current
/// revision are given); the reason when not.
async fn continues(
    store: &dyn CacheSource,
    header: &crate::cache_snapshot::Header,
    identity: &str,
    current: Revision,
) -> Result<(), String> {
    if header.identity != identity {
        return Err(format!("made of {}, not {identity}", header.identity));
    }
    if header.revision > current {
        return Err(format!(
            "at revision {}, ahead of the store ({current})",
            header.revision
        ));
    }
    let Some((key, mod_revision)) = &header.newest else {
        return Err("empty".into());
    };
    // The same write at the same revision: the store did not go back to a backup and on.
    let found = store
        .range(kcp_store::RangeRequest {
            prefix: key.clone(),
            start_after: None,
            limit: 1,
            revision: Some(header.revision),
        })
        .await
        .map_err(|e| format!("reading {key} at revision {}: {e}", header.revision))?;
    match found.kvs.first() {
        Some(kv) if kv.key == *key && kv.mod_revision == *mod_revision => Ok(()),
        _ => Err(format!(
            "{key} is not at mod revision {mod_revision} in the store"
        )),
    }
}

fn cached(key: &str, stored: &[u8], revision: Revision) -> Option<CachedObject> {
    let (cluster, namespace, name) = key_parts(key)?;
    // The stored bytes with the version spliced in; through a Value only when they are unusual.
    let (labels, json) = match crate::stored_json::scan(stored) {
        Some(layout) => {
            let json = ObjectJson::from_stored(stored, &layout, &revision.to_string());
            (CachedLabels::new(layout.labels), json)
        }
        None => {
            let (value, json) = decorate_cached(stored, revision)?;
            (labels_of(&value), json)
        }
    };
    Some(CachedObject {
        key: key.to_string(),
        cluster,
        namespace,
        name,
        revision,
        labels,
        json,
    })
}

/// Objects decoded for a load, by resource prefix.
type Fresh = HashMap<String, ObjectMap>;

/// Decodes pages of stored objects on blocking threads, several at once, while the caller reads
/// the next page: at start-up with a million objects, decoding is most of the time the shard is
/// not ready.
struct PageDecoder {
    /// Decoded objects by resource prefix, in the order their pages came (key order for a load).
    fresh: HashMap<String, Vec<Arc<CachedObject>>>,
    decoding: VecDeque<tokio::task::JoinHandle<Vec<(String, CachedObject)>>>,
    parallel: usize,
}

impl PageDecoder {
    fn new() -> PageDecoder {
        PageDecoder {
            fresh: HashMap::new(),
            decoding: VecDeque::new(),
            parallel: std::thread::available_parallelism().map_or(2, |n| n.get()),
        }
    }

    async fn push(&mut self, page: Vec<kcp_store::KeyValue>) -> Result<(), StoreError> {
        self.decoding
            .push_back(tokio::task::spawn_blocking(move || decode_page(page)));
        while self.decoding.len() > self.parallel {
            self.merge_one().await?;
        }
        Ok(())
    }

    async fn merge_one(&mut self) -> Result<(), StoreError> {
        if let Some(task) = self.decoding.pop_front() {
            let decoded = task.await.map_err(|e| StoreError::Backend(e.to_string()))?;
            // Only appended here: this runs between page reads, on the load's critical path.
            for (prefix, obj) in decoded {
                self.fresh.entry(prefix).or_default().push(Arc::new(obj));
            }
        }
        Ok(())
    }

    /// Each resource's map built at once from its objects, the resources side by side. Built
    /// from sorted input (a load's pages come in key order) a map takes one pass; inserting a
    /// million keys one by one, between page reads, made a restart with 100k workspaces 5-9 %
    /// slower. As with inserts, the last of equal keys wins.
    async fn finish(mut self) -> Result<Fresh, StoreError> {
        while !self.decoding.is_empty() {
            self.merge_one().await?;
        }
        let building: Vec<_> = self
            .fresh
            .into_iter()
            .map(|(prefix, objects)| {
                tokio::task::spawn_blocking(move || (prefix, objects.into_iter().collect()))
            })
            .collect();
        let mut fresh = Fresh::with_capacity(building.len());
        for built in building {
            let (prefix, objects) = built
                .await
                .map_err(|e| StoreError::Backend(e.to_string()))?;
            fresh.insert(prefix, objects);
        }
        Ok(fresh)
    }
}

impl WatchCache {
    /// Loads every object from the store and follows its changes until the process ends.
    pub async fn start(store: Arc<dyn Store>) -> Result<Arc<WatchCache>, StoreError> {
        Self::start_with_snapshot(store, None).await
    }

    /// [`WatchCache::start`], from the snapshot at `snapshot` when there is a usable one (see
    /// [`crate::cache_snapshot`]). Returns once the cache reflects the store's current revision.
    pub async fn start_with_snapshot(
        store: Arc<dyn Store>,
        snapshot: Option<&std::path::Path>,
    ) -> Result<Arc<WatchCache>, StoreError> {
        Self::start_from(Arc::new(StoreSource(store)), snapshot).await
    }

    /// A cache fed by `store`, which need not be a store of this process (see [`CacheSource`]).
    pub async fn start_from(
        store: Arc<dyn CacheSource>,
        snapshot: Option<&std::path::Path>,
    ) -> Result<Arc<WatchCache>, StoreError> {
        let revision = store.current_revision().await?;
        let (revision_tx, _) = tokio::sync::watch::channel(revision);
        let cache = Arc::new(WatchCache {
            resources: RwLock::new(HashMap::new()),
            revision: AtomicI64::new(revision),
            written: AtomicI64::new(revision),
            start_revision: AtomicI64::new(revision),
            next_watcher: AtomicU64::new(1),
            revision_tx,
            stop: tokio_util::sync::CancellationToken::new(),
            all: RwLock::new(Vec::new()),
            any_all: std::sync::atomic::AtomicBool::new(false),
            observer: std::sync::OnceLock::new(),
            from_snapshot: std::sync::atomic::AtomicBool::new(false),
            following: std::sync::atomic::AtomicBool::new(true),
            writes_elsewhere: std::sync::OnceLock::new(),
        });
        let started = std::time::Instant::now();
        let from_snapshot = match snapshot {
            Some(path) => cache.load_snapshot(store.as_ref(), path, revision).await,
            None => None,
        };
        let mut used_snapshot = from_snapshot.is_some();
        let mut loaded_at = match from_snapshot {
            Some(at) => at,
            None => {
                cache.load(store.as_ref(), revision).await?;
                revision
            }
        };
        let stream = match store.watch_changes("/", loaded_at).await {
            Ok(stream) => stream,
            Err(err) if loaded_at < revision => {
                tracing::warn!(error = %err, "cannot continue the cache snapshot; reading the store");
                cache.load(store.as_ref(), revision).await?;
                loaded_at = revision;
                used_snapshot = false;
                store.watch_changes("/", revision).await?
            }
            Err(err) => return Err(err),
        };
        cache.from_snapshot.store(used_snapshot, Ordering::Release);
        let follower = cache.clone();
        tokio::spawn(async move { follower.follow(store, stream).await });
        // From a snapshot: serve nothing older than the store was when the shard started.
        while cache.revision() < revision {
            match cache.wait_for(revision).await {
                Ok(_) | Err(CacheError::TooNew { .. }) => {}
                Err(err) => return Err(StoreError::Backend(err.to_string())),
            }
        }
        tracing::info!(
            objects = cache.object_count(),
            revision,
            from_snapshot = used_snapshot,
            caught_up_from = loaded_at,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "watch cache loaded"
        );
        Ok(cache)
    }

    /// Fills the cache from the snapshot at `path` when it continues the store's history (see
    /// [`crate::cache_snapshot`]); answers the revision it shows. None (and the cache untouched)
    /// when there is no snapshot or it cannot be used.
    async fn load_snapshot(
        &self,
        store: &dyn CacheSource,
        path: &std::path::Path,
        current: Revision,
    ) -> Option<Revision> {
        let identity = match store.identity().await {
            Ok(Some(identity)) => identity,
            _ => return None,
        };
        let owned = path.to_path_buf();
        let opened = tokio::task::spawn_blocking(move || crate::cache_snapshot::take(&owned))
            .await
            .ok()?;
        let (header, reader) = match opened {
            Ok(Some(found)) => found,
            Ok(None) => return None,
            Err(err) => {
                tracing::warn!(error = %err, "unreadable cache snapshot; reading the store");
                return None;
            }
        };
        if let Err(why) = continues(store, &header, &identity, current).await {
            tracing::info!("cache snapshot not used: {why}; reading the store");
            return None;
        }
        match self.fill_from(reader, header.revision).await {
            Ok(()) => Some(header.revision),
            Err(err) => {
                tracing::warn!(error = %err, "cache snapshot broken off; reading the store");
                None
            }
        }
    }

    async fn fill_from(
        &self,
        mut reader: crate::cache_snapshot::Reader,
        revision: Revision,
    ) -> Result<(), StoreError> {
        let mut decoder = PageDecoder::new();
        loop {
            let (page, back) = tokio::task::spawn_blocking(move || {
                let page = reader.page(LOAD_PAGE);
                (page, reader)
            })
            .await
            .map_err(|e| StoreError::Backend(e.to_string()))?;
            reader = back;
            let page = page.map_err(|e| StoreError::Backend(e.to_string()))?;
            if page.is_empty() {
                break;
            }
            decoder.push(page).await?;
        }
        self.install(decoder.finish().await?, revision);
        Ok(())
    }

    /// Saves the cache's content to `path` for the next start, when the store is one a snapshot
    /// is kept of. For shutdown, once nothing writes any more.
    pub async fn save_snapshot(
        &self,
        store: &dyn Store,
        path: &std::path::Path,
    ) -> Result<bool, StoreError> {
        let Some(identity) = store.identity().await? else {
            return Ok(false);
        };
        let revision = self.revision();
        let objects = self.all_objects();
        let path = path.to_path_buf();
        tokio::task::spawn_blocking(move || {
            crate::cache_snapshot::write(&path, &identity, revision, &objects)
        })
        .await
        .map_err(|e| StoreError::Backend(e.to_string()))?
        .map_err(|e| StoreError::Backend(format!("writing the cache snapshot: {e}")))?;
        Ok(true)
    }

    /// Replaces the cache's content with the store's state at `revision`.
    ///
    /// Page by page, one resource per reader: etcd counts every key from a range's start to its
    /// end on each page, so paging through the whole keyspace at once is quadratic in its size.
    /// Two resources are read at once, so that reading (one page after another) is not the
    /// decoding's bottleneck.
    async fn load(&self, store: &dyn CacheSource, revision: Revision) -> Result<(), StoreError> {
        let prefixes = resource_prefixes(store, revision).await?;
        let (pages, mut arriving) = mpsc::channel::<Vec<kcp_store::KeyValue>>(LOAD_READERS);
        let read = async move {
            futures::stream::iter(prefixes)
                .map(Ok)
                .try_for_each_concurrent(LOAD_READERS, |prefix| {
                    read_resource(store, prefix, revision, pages.clone())
                })
                .await
        };
        // Owns the receiver, so the readers stop once the decoding is over.
        let decode = async move {
            let mut decoder = PageDecoder::new();
            while let Some(page) = arriving.recv().await {
                decoder.push(page).await?;
            }
            decoder.finish().await
        };
        // The decoding ends once the readers are done (they hold every sender); the first error
        // of either ends the load at once, dropping the other.
        let ((), fresh) = tokio::try_join!(read, decode)?;
        self.install(fresh, revision);
        Ok(())
    }

    /// Makes `fresh`, the objects at `revision`, the cache's content.
    fn install(&self, mut fresh: Fresh, revision: Revision) {
        self.start_revision.store(revision, Ordering::Release);
        let mut resources = self.resources.write();
        // Watchers of the old state cannot be continued consistently: end them so clients re-list.
        for (prefix, rc) in resources.iter() {
            let mut st = rc.state.write();
            st.watchers.clear();
            st.history.clear();
            st.history_bytes = 0;
            st.history_start = revision;
            st.objects = fresh.remove(prefix).unwrap_or_default();
        }
        for (prefix, objects) in fresh {
            let state = ResourceState {
                objects,
                history_start: revision,
                ..Default::default()
            };
            resources.insert(
                prefix,
                Arc::new(ResourceCache {
                    state: RwLock::new(state),
                }),
            );
        }
        drop(resources);
        // Subscribers to everything cannot be continued consistently either: they start over, after
        // the new content is in place so their fresh listing sees it.
        self.all.write().clear();
        self.any_all.store(false, Ordering::Release);
        self.revision.store(revision, Ordering::Release);
        self.revision_tx.send_replace(revision);
    }

    fn resource(&self, prefix: &str) -> Arc<ResourceCache> {
        if let Some(rc) = self.resources.read().get(prefix) {
            return rc.clone();
        }
        let start = self.start_revision.load(Ordering::Acquire);
        self.resources
            .write()
            .entry(prefix.to_string())
            .or_insert_with(|| {
                Arc::new(ResourceCache {
                    state: RwLock::new(ResourceState {
                        history_start: start,
                        ..Default::default()
                    }),
                })
            })
            .clone()
    }

    /// Applies the store's changes. When the store watch breaks (a lost connection, an etcd leader
    /// change, a watcher cut off for lagging), it is resumed after the cache's revision, so the
    /// clients' watches go on without missing anything. Everything is reloaded at the current
    /// revision instead, which ends every client watch (they resume or relist), when the store no
    /// longer has that history (compacted), is behind the cache (restored from a backup, or
    /// wiped), or a resumed watch keeps breaking without getting anywhere.
    async fn follow(
        self: Arc<Self>,
        store: Arc<dyn CacheSource>,
        mut stream: kcp_store::WatchStream,
    ) {
        // The revision of the last resumption, and how many resumptions since made no progress.
        let mut resumed_at: Option<Revision> = None;
        let mut fruitless = 0u32;
        loop {
            let mut history_gone = false;
            loop {
                let item = tokio::select! {
                    item = stream.next() => item,
                    _ = self.stop.cancelled() => return,
                };
                match item {
                    Some(Ok(resp)) => {
                        self.apply(resp);
                        if !self.following.load(Ordering::Acquire) {
                            self.following.store(true, Ordering::Release);
                        }
                    }
                    Some(Err(err)) => {
                        history_gone = matches!(
                            err,
                            StoreError::Compacted { .. } | StoreError::FutureRevision { .. }
                        );
                        tracing::warn!(error = %err, "store watch broke");
                        break;
                    }
                    None => {
                        tracing::warn!("store watch ended");
                        break;
                    }
                }
            }
            self.following.store(false, Ordering::Release);
            if resumed_at == Some(self.revision()) {
                fruitless += 1;
            } else {
                fruitless = 0;
            }
            if fruitless >= FRUITLESS_RESUMES {
                tracing::warn!("the resumed store watch keeps breaking; reloading the watch cache");
                history_gone = true;
            }
            stream = loop {
                if self.stop.is_cancelled() {
                    return;
                }
                if fruitless > 0 && !history_gone {
                    // A watch that breaks again at once must not become a tight loop.
                    let wait = Duration::from_secs(1 << fruitless.min(5));
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = self.stop.cancelled() => return,
                    }
                }
                let attempt = if history_gone {
                    self.reload(store.as_ref()).await
                } else {
                    self.resume(store.as_ref()).await
                };
                match attempt {
                    Ok(s) => {
                        if history_gone {
                            self.following.store(true, Ordering::Release);
                            resumed_at = None;
                            fruitless = 0;
                        } else {
                            resumed_at = Some(self.revision());
                        }
                        break s;
                    }
                    Err(StoreError::Compacted { .. } | StoreError::FutureRevision { .. })
                        if !history_gone =>
                    {
                        tracing::warn!(
                            "the store no longer continues the watch cache's history; reloading it"
                        );
                        history_gone = true;
                    }
                    Err(err) => {
                        tracing::error!(error = %err, "following the store again failed; retrying");
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                            _ = self.stop.cancelled() => return,
                        }
                    }
                }
            };
        }
    }

    /// Watches the store again after the cache's revision, unless the store is behind it (its
    /// history is another one: a restored backup or a wiped etcd).
    async fn resume(&self, store: &dyn CacheSource) -> Result<kcp_store::WatchStream, StoreError> {
        let after = self.revision();
        let current = store.current_revision().await?;
        if current < after {
            return Err(StoreError::FutureRevision {
                requested: after,
                current,
            });
        }
        store.watch_changes("/", after).await
    }

    async fn reload(&self, store: &dyn CacheSource) -> Result<kcp_store::WatchStream, StoreError> {
        let revision = store.current_revision().await?;
        self.load(store, revision).await?;
        if let Some(observer) = self.observer.get() {
            observer.reloaded(&self.all_objects());
        }
        store.watch_changes("/", revision).await
    }

    fn apply(&self, resp: WatchResponse) {
        for ev in resp.events {
            let Some(prefix) = resource_prefix(&ev.kv.key) else {
                continue;
            };
            let rc = self.resource(prefix);
            let mut st = rc.state.write();
            let prev = st.objects.get(&ev.kv.key).cloned();
            let event = match ev.kind {
                EventKind::Put => {
                    let Some(mut obj) = cached(&ev.kv.key, &ev.kv.value, ev.kv.mod_revision) else {
                        tracing::warn!(key = %ev.kv.key, "skipping unreadable stored object");
                        continue;
                    };
                    // The same name as the version before, held once.
                    if let Some(prev) = &prev {
                        obj.cluster = prev.cluster.clone();
                    }
                    let obj = Arc::new(obj);
                    st.objects.insert(obj.clone());
                    let kind = if prev.is_some() {
                        CacheEventType::Modified
                    } else {
                        CacheEventType::Added
                    };
                    CacheEvent::new(kind, ev.kv.mod_revision, obj, prev)
                }
                EventKind::Delete => {
                    st.objects.remove(&ev.kv.key);
                    let Some(last) = prev.clone() else { continue };
                    let deleted_rev = ev.kv.mod_revision;
                    let Some((value, json)) = decorate_cached(&last.json.to_bytes(), deleted_rev)
                    else {
                        continue;
                    };
                    let obj = Arc::new(CachedObject {
                        key: last.key.clone(),
                        cluster: last.cluster.clone(),
                        namespace: last.namespace.clone(),
                        name: last.name.clone(),
                        revision: deleted_rev,
                        labels: labels_of(&value),
                        json,
                    });
                    CacheEvent::new(CacheEventType::Deleted, deleted_rev, obj, prev)
                }
            };
            let event = Arc::new(event);
            if let Some(observer) = self.observer.get() {
                observer.event(&event);
            }
            st.applied = event.revision;
            st.history_bytes += event.held_bytes();
            st.history.push_back(event.clone());
            if let Some(aged) = st.history.len().checked_sub(FRAMES_KEPT + 1) {
                st.history[aged].retire_frame();
            }
            while st.history.len() > HISTORY_PER_RESOURCE
                || (st.history_bytes > HISTORY_BYTES_PER_RESOURCE && st.history.len() > 1)
            {
                let Some(old) = st.history.pop_front() else {
                    break;
                };
                st.history_bytes = st.history_bytes.saturating_sub(old.held_bytes());
                st.history_start = old.revision;
            }
            // Deliver; a watcher whose queue is full is cut off.
            st.watchers.retain(|w| {
                let relevant = w.scope.matches(&event.object);
                !relevant || w.tx.try_send(WatchItem::Event(event.clone())).is_ok()
            });
            // Delivered under the resource's lock, so a subscriber sees each resource's events in order.
            if self.any_all.load(Ordering::Acquire) {
                let mut all = self.all.write();
                all.retain(|w| w.tx.try_send(event.clone()).is_ok());
                self.any_all.store(!all.is_empty(), Ordering::Release);
            }
        }
        let rev = resp.revision;
        if rev > self.revision.load(Ordering::Acquire) {
            self.revision.store(rev, Ordering::Release);
            self.revision_tx.send_replace(rev);
        }
    }

    /// Whether the cache started from a snapshot rather than by reading the store.
    /// Whether the cache follows the store now (not reloading after its watch broke).
    pub fn is_following(&self) -> bool {
        self.following.load(Ordering::Acquire)
    }

    pub fn started_from_snapshot(&self) -> bool {
        self.from_snapshot.load(Ordering::Acquire)
    }

    /// The newest revision the cache reflects.
    pub fn revision(&self) -> Revision {
        self.revision.load(Ordering::Acquire)
    }

    /// Records a revision this shard wrote, so later consistent reads wait for it.
    pub fn note_write(&self, revision: Revision) {
        self.written.fetch_max(revision, Ordering::AcqRel);
    }

    /// Consistent reads also wait for the writes `writer` acknowledged: the process whose store
    /// this cache follows (a kcp-vw's shard).
    /// Set once; a later call changes nothing.
    pub fn follow_writes_of(&self, writer: Arc<dyn WritesElsewhere>) {
        if self.writes_elsewhere.set(writer).is_err() {
            tracing::warn!("the watch cache already follows another writer");
        }
    }

    /// Waits until the cache reflects every write acknowledged so far (a consistent read).
    pub async fn wait_fresh(&self) -> Result<Revision, CacheError> {
        let mut target = self.written.load(Ordering::Acquire);
        if let Some(writer) = self.writes_elsewhere.get() {
            // The writer may be alive and acknowledging writes this process cannot hear of:
            // without its word, a consistent read would be a guess.
            let revision = (writer.newest().await)
                .map_err(|err| CacheError::WriterUnreachable(err.to_string()))?;
            target = target.max(revision);
        }
        self.wait_for(target).await
    }

    /// Waits until the cache reaches `revision` (3 s at most, as kube-apiserver does).
    pub async fn wait_for(&self, revision: Revision) -> Result<Revision, CacheError> {
        let current = self.revision();
        if current >= revision {
            return Ok(current);
        }
        let mut rx = self.revision_tx.subscribe();
        let wait = rx.wait_for(|r| *r >= revision);
        match tokio::time::timeout(Duration::from_secs(3), wait).await {
            Ok(Ok(r)) => Ok(*r),
            Ok(Err(_)) => Err(CacheError::Stopped),
            Err(_) => Err(CacheError::TooNew {
                requested: revision,
                current: self.revision(),
            }),
        }
    }

    /// One object by key.
    pub fn get(&self, key: &str) -> Option<Arc<CachedObject>> {
        let prefix = resource_prefix(key)?;
        let rc = self.resources.read().get(prefix).cloned()?;
        rc.state.read().objects.get(key).cloned()
    }

    /// Objects whose keys start with `prefix` (which must lie inside one resource), in key order,
    /// strictly after `start_after`.
    pub fn list(&self, prefix: &str, start_after: Option<&str>) -> Vec<Arc<CachedObject>> {
        self.list_at(prefix, start_after).objects
    }

    /// Like [`WatchCache::list`], with the revision the objects are exactly the state of: every event
    /// of the resource up to it is applied and none after it, so a watch from it misses and repeats
    /// nothing. They are also the state of every revision back to `unchanged_since` (revisions are
    /// global, so other resources' writes move `revision` without changing these objects).
    pub fn list_at(&self, prefix: &str, start_after: Option<&str>) -> Listed {
        let Some(rp) = resource_prefix(prefix).or_else(|| {
            if prefix.matches('/').count() == 4 {
                Some(prefix)
            } else {
                None
            }
        }) else {
            return Listed::nothing(self.revision());
        };
        let Some(rc) = self.resources.read().get(rp).cloned() else {
            return Listed::nothing(self.revision());
        };
        let st = rc.state.read();
        // Events are applied in revision order and the shard revision moves only after a whole batch,
        // so under this lock the resource reflects exactly its events up to the larger of the two.
        let revision = self.revision().max(st.applied);
        let lower = match start_after {
            Some(k) if k >= prefix => std::ops::Bound::Excluded(k),
            _ => std::ops::Bound::Included(prefix),
        };
        let objects = st.objects.under(prefix, lower).cloned().collect();
        Listed {
            objects,
            revision,
            // A reload replaces the objects wholesale at `history_start`.
            unchanged_since: st.applied.max(st.history_start),
        }
    }

    /// Registers a watcher on one resource. With `after = Some(rev)`, events after `rev` are replayed
    /// first (410 if that history is gone); with `None` only live events follow.
    pub fn subscribe(
        &self,
        resource_prefix: &str,
        scope: Scope,
        after: Option<Revision>,
    ) -> Result<Subscription, CacheError> {
        let rc = self.resource(resource_prefix);
        let mut st = rc.state.write();
        let mut backlog = Vec::new();
        if let Some(after) = after {
            if after < st.history_start {
                return Err(CacheError::TooOld {
                    requested: after,
                    oldest: st.history_start,
                });
            }
            backlog = st
                .history
                .iter()
                .filter(|e| e.revision > after && scope.matches(&e.object))
                .cloned()
                .collect();
        }
        let (tx, rx) = mpsc::channel(WATCHER_QUEUE);
        let id = self.next_watcher.fetch_add(1, Ordering::Relaxed);
        st.watchers.push(Watcher { id, scope, tx });
        drop(st);
        Ok(Subscription {
            backlog,
            rx,
            id,
            cache: rc,
        })
    }

    /// Subscribes to every event of every resource from now on, with a queue of `capacity` events.
    /// Subscribe first, then read [`WatchCache::all_objects`]: every change after the listing then
    /// arrives as an event (some may repeat what the listing already showed).
    pub fn subscribe_all(self: &Arc<Self>, capacity: usize) -> AllSubscription {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let id = self.next_watcher.fetch_add(1, Ordering::Relaxed);
        let mut all = self.all.write();
        all.push(AllWatcher { id, tx });
        self.any_all.store(true, Ordering::Release);
        AllSubscription {
            rx,
            id,
            cache: Arc::downgrade(self),
        }
    }

    /// Installs the observer (once) and gives it everything cached so far, under the same locks as
    /// events, so it misses nothing and never goes back in time.
    pub fn set_observer(&self, observer: Arc<dyn CacheObserver>) -> bool {
        if self.observer.set(observer.clone()).is_err() {
            return false;
        }
        // Under every resource's read lock, as events are delivered under the write lock: an event
        // applied meanwhile reaches the observer after the replay, never before it.
        let caches: Vec<Arc<ResourceCache>> = self.resources.read().values().cloned().collect();
        let states: Vec<_> = caches.iter().map(|rc| rc.state.read()).collect();
        let objects: Vec<Arc<CachedObject>> = states
            .iter()
            .flat_map(|st| st.objects.values().cloned())
            .collect();
        observer.replay(&objects);
        drop(states);
        true
    }

    /// Every cached object of every resource (a full listing for subscribers that start over).
    pub fn all_objects(&self) -> Vec<Arc<CachedObject>> {
        let caches: Vec<Arc<ResourceCache>> = self.resources.read().values().cloned().collect();
        let mut out = Vec::new();
        for rc in caches {
            out.extend(rc.state.read().objects.values().cloned());
        }
        out
    }

    /// Every `(cluster, namespace)`-scoped object of every resource, for namespace deletion.
    pub fn objects_in_namespace(&self, cluster: &str, namespace: &str) -> Vec<Arc<CachedObject>> {
        self.objects_under(&format!("{cluster}/{namespace}/"))
    }

    /// Every cached object of a logical cluster, of every resource.
    pub fn objects_in_cluster(&self, cluster: &str) -> Vec<Arc<CachedObject>> {
        self.objects_under(&format!("{cluster}/"))
    }

    /// Objects whose keys continue their resource prefix with `suffix`.
    fn objects_under(&self, suffix: &str) -> Vec<Arc<CachedObject>> {
        let caches: Vec<(String, Arc<ResourceCache>)> = self
            .resources
            .read()
            .iter()
            .map(|(p, rc)| (p.clone(), rc.clone()))
            .collect();
        let mut out = Vec::new();
        for (resource_prefix, rc) in caches {
            // Keys are resource-major: one range per resource covers exactly this cluster or namespace.
            let prefix = format!("{resource_prefix}{suffix}");
            let st = rc.state.read();
            let lower = std::ops::Bound::Included(prefix.as_str());
            out.extend(st.objects.under(&prefix, lower).cloned());
        }
        out
    }

    /// Ends every watcher and stops following the store (shutdown).
    pub fn close_all(&self) {
        self.stop.cancel();
        self.all.write().clear();
        self.any_all.store(false, Ordering::Release);
        for rc in self.resources.read().values() {
            rc.state.write().watchers.clear();
        }
    }

    /// Number of objects cached, for metrics and benchmarks.
    pub fn object_count(&self) -> usize {
        self.resources
            .read()
            .values()
            .map(|rc| rc.state.read().objects.len())
            .sum()
    }
}

/// A process that acknowledges writes to the store a cache follows (see
/// [`WatchCache::follow_writes_of`]).
#[async_trait::async_trait]
pub trait WritesElsewhere: Send + Sync {
    /// The newest revision of a write it acknowledged.
    async fn newest(&self) -> Result<Revision, StoreError>;
}

#[async_trait::async_trait]
impl WritesElsewhere for kcp_store::remote::RemoteStore {
    async fn newest(&self) -> Result<Revision, StoreError> {
        self.acknowledged().await
    }
}

/// What the store service tells its callers about this process's writes.
impl kcp_store::remote::AcknowledgedWrites for WatchCache {
    fn note(&self, revision: Revision) {
        self.note_write(revision);
    }

    fn newest(&self) -> Revision {
        self.written.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_parts() {
        assert_eq!(
            resource_prefix("/core/configmaps/local/root/default/a"),
            Some("/core/configmaps/local/")
        );
        assert_eq!(
            key_parts("/core/configmaps/local/root/default/a"),
            Some((
                crate::testing::lc("root").clone(),
                Some("default".into()),
                "a".into()
            ))
        );
        assert_eq!(
            key_parts("/core/namespaces/local/root/a"),
            Some((crate::testing::lc("root").clone(), None, "a".into()))
        );
        assert_eq!(resource_prefix("/core"), None);
    }

    /// A consistent read waits for what another process acknowledged (a kcp-vw's shard), and
    /// fails rather than guess when that process cannot be asked.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn consistent_reads_follow_another_writer() {
        struct Writer(Arc<dyn Store>, bool);
        #[async_trait::async_trait]
        impl WritesElsewhere for Writer {
            async fn newest(&self) -> Result<Revision, StoreError> {
                match self.1 {
                    true => self.0.current_revision().await,
                    false => Err(StoreError::Backend("unreachable".into())),
                }
            }
        }
        let store: Arc<dyn Store> = Arc::new(kcp_store::MemoryStore::new());
        let cache = WatchCache::start(store.clone())
            .await
            .expect("the cache starts");
        cache.follow_writes_of(Arc::new(Writer(store.clone(), true)));
        let key = "/core/configmaps/local/root/default/a";
        let value = Bytes::from_static(br#"{"metadata":{"name":"a","namespace":"default"}}"#);
        // Written behind the cache's back: only the writer knows of it.
        let written = store.create(key, value).await.expect("written");
        let seen = cache.wait_fresh().await.expect("a consistent read");
        assert!(seen >= written, "{seen} < {written}");
        assert!(cache.get(key).is_some());

        let blind = WatchCache::start(store.clone())
            .await
            .expect("the cache starts");
        blind.follow_writes_of(Arc::new(Writer(store, false)));
        assert!(matches!(
            blind.wait_fresh().await,
            Err(CacheError::WriterUnreachable(_))
        ));
    }

    #[test]
    fn decorate_sets_resource_version() {
        let (v, bytes) = decorate(br#"{"metadata":{"name":"a"}}"#, 7).expect("decorates");
        assert_eq!(v["metadata"]["resourceVersion"], "7");
        assert!(
            std::str::from_utf8(&bytes)
                .unwrap_or_default()
                .contains("\"resourceVersion\":\"7\"")
        );
    }
}
