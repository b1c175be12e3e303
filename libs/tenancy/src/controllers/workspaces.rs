//! The workspace controller: every Workspace and LogicalCluster of the shard, reconciled by a pool
//! of workers (a key at a time each, see [`WorkQueue`]), so thousands of new workspaces are
//! scheduled concurrently and their writes share the store's commits.
//!
//! A new Workspace arrives from admission with the name of its future LC and a finalizer. It is
//! scheduled onto a Shard matching its location selector (this shard is the only one that can take
//! it for now, but the choice goes through the Shard objects in `root`); its LogicalCluster is
//! created with the workspace's path, type, owner and the initializers and terminators of its type
//! chain, and the creator becomes cluster-admin there through the `workspace-admin`
//! ClusterRoleBinding. The `root:universal` initializer runs right then (namespaces `default` and
//! `kube-system`), and the Workspace gets `spec.cluster`, `spec.URL` and the status of its LC in
//! one write. Afterwards its phase follows its LogicalCluster's; an LC whose last initializer is
//! removed (custom initializers are removed by PATCH) becomes Ready.
//!
//! Deleting a Workspace deletes its LC: `Terminating` while terminators are pending (removed by
//! PATCH), then `Deleting`: its content, child workspaces included, is deleted, and the LC and
//! the Workspace go, in the write of the last of the content when they can (see `deletion`). An
//! LC whose Workspace went first (its finalizer removed by hand) is deleted all the same.

mod creation;
mod deletion;
mod state;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::workspace_types::{
    CLUSTER_ANNOTATION, OWNER_ANNOTATION, SHARD_ANNOTATION, TypeRef, Types, WORKSPACE_FINALIZER,
    lifecycle_names, new_cluster_name,
};
use kcp_api_types::ResourceDef;
use kcp_api_types::tenancy::PHASE_LABEL;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::selector::label::Labels;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::registry::{ObjectRef, ObjectUpdate, UpdateKind, WriteOptions, keyspace};
use kcp_apiserver::watch_cache::{CacheEvent, CacheEventType, CachedObject};
use kcp_store::Revision;
use parking_lot::Mutex;
use serde_json::{Value, json};

use self::creation::Placed;
use self::deletion::Content;
use self::state::{LcState, WorkspaceState, unscheduled_status};
use kcp_api_types::conditions::{same_status, with_transition_times};
use kcp_controllers::builtin;
use kcp_controllers::feed::{Change, Feed};
use kcp_controllers::workqueue::{Outcome, WorkQueue};

/// Shards with this annotation take no new workspaces.
const UNSCHEDULABLE_ANNOTATION: &str = "experimental.core.kcp.io/unschedulable";
/// The initializer of the `universal` type in `root`, run by this controller.
const UNIVERSAL_INITIALIZER: &str = "root:universal";
/// Namespaces the `universal` initializer creates.
const UNIVERSAL_NAMESPACES: [&str; 2] = ["default", "kube-system"];
/// Holds a workspace's LogicalCluster until everything else in the LC is gone (kcp's name).
const CONTENT_FINALIZER: &str = "core.kcp.io/logicalcluster-deletion";
/// What [`CONTENT_FINALIZER`] was called before it took kcp's name; LCs created then carry it and
/// are released from it the same way.
const LEGACY_CONTENT_FINALIZER: &str = "core.kcp.io/logicalcluster-content";
/// Workers: enough that many workspaces' writes are in flight together (each write waits for a
/// durable commit; concurrent ones share it), few enough to bound the memory of a burst. Deleting
/// a tree is bound by them: each deleting LC takes a few store round trips one after the other
/// (on etcd, a 10k tree went in 29.6 s with 32 workers, 23.4 s with 64, 22.9 s with 128, when a
/// workspace took seven writes to delete; four now).
const WORKERS: usize = 64;
/// Keys queued by a resync between two yields to the runtime.
const RESYNC_YIELD_EVERY: usize = 1024;
/// Backoff of a failed reconcile.
const RETRY_DELAY: Duration = Duration::from_millis(50);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(10);
/// A deleting LC whose content waits on something no event of ours announces (an object with a
/// finalizer of its own) is looked at again after this long.
const CONTENT_RECHECK: Duration = Duration::from_secs(1);

struct Defs {
    workspaces: Arc<ResourceDef>,
    logical_clusters: Arc<ResourceDef>,
    shards: Arc<ResourceDef>,
    bindings: Arc<ResourceDef>,
    namespaces: Arc<ResourceDef>,
}

/// What a worker reconciles.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    /// A Workspace: (its LC, its name).
    Workspace(LogicalClusterName, String),
    /// A LogicalCluster, by its LC name.
    Cluster(LogicalClusterName),
    /// The LC name a deleted workspace leaves: its LC (if it is still there), or content under
    /// that name (what the POST of a workspace never placed wrote there, or a straggler).
    LeftBehind(LogicalClusterName),
}

struct Controller {
    server: Weak<ApiServer>,
    /// Workspace paths, for the URLs and types of workspaces.
    paths: Arc<crate::PathIndex>,
    defs: Defs,
    queue: Arc<WorkQueue<Key>>,
    /// LCs whose content is being deleted: a namespace or workspace leaving one of them brings the
    /// LC back at once instead of at its next recheck.
    deleting: Mutex<HashSet<LogicalClusterName>>,
    /// When each deleting LC's `WorkspaceContentDeleted` condition was last written: while a
    /// tree goes, its root's account changes with every child gone, and is rewritten at most
    /// every [`CONTENT_RECHECK`].
    noted: Mutex<HashMap<LogicalClusterName, std::time::Instant>>,
}

/// Starts the controller; it stops with the server.
pub fn spawn(server: Arc<ApiServer>, paths: Arc<crate::PathIndex>) {
    let defs = match (
        builtin("tenancy.kcp.io", "workspaces"),
        builtin("core.kcp.io", "logicalclusters"),
        builtin("core.kcp.io", "shards"),
        builtin("rbac.authorization.k8s.io", "clusterrolebindings"),
        builtin("", "namespaces"),
    ) {
        (
            Some(workspaces),
            Some(logical_clusters),
            Some(shards),
            Some(bindings),
            Some(namespaces),
        ) => Defs {
            workspaces,
            logical_clusters,
            shards,
            bindings,
            namespaces,
        },
        _ => {
            tracing::error!("workspace controller: a tenancy kind is missing; not started");
            return;
        }
    };
    let stop = server.shutdown_token();
    let cache = server.registry().cache().clone();
    let feeds = [
        Feed::new(cache.clone(), keyspace(&defs.workspaces).all_clusters()),
        Feed::new(
            cache.clone(),
            keyspace(&defs.logical_clusters).all_clusters(),
        ),
        Feed::new(cache, keyspace(&defs.namespaces).all_clusters()),
    ];
    let controller = Arc::new(Controller {
        server: Arc::downgrade(&server),
        paths,
        defs,
        queue: WorkQueue::new(RETRY_DELAY, MAX_RETRY_DELAY),
        deleting: Mutex::new(HashSet::new()),
        noted: Mutex::new(HashMap::new()),
    });
    let source = Arc::downgrade(&controller);
    server
        .registry()
        .add_companions(Arc::new(move |def, _cluster, object| {
            source
                .upgrade()
                .map(|c| c.companions(def, object))
                .unwrap_or_default()
        }));
    drop(server);
    let worker = controller.clone();
    controller
        .queue
        .spawn_workers(WORKERS, stop.clone(), move |key| {
            let controller = worker.clone();
            async move { controller.reconcile(key).await }
        });
    tokio::spawn(async move {
        tokio::select! {
            _ = stop.cancelled() => {}
            _ = controller.dispatch(feeds) => {}
        }
    });
}

impl Controller {
    /// Turns watch events into keys, until the server is gone.
    async fn dispatch(&self, feeds: [Feed; 3]) {
        let [mut workspaces, mut clusters, mut namespaces] = feeds;
        self.resync().await;
        loop {
            let (change, from) = tokio::select! {
                c = workspaces.next() => (c, 0),
                c = clusters.next() => (c, 1),
                c = namespaces.next() => (c, 2),
            };
            if self.server.strong_count() == 0 {
                return;
            }
            match change {
                Change::Resync => self.resync().await,
                Change::Event(e) => match from {
                    0 => self.on_workspace(&e),
                    1 => self.on_cluster(&e),
                    _ => self.on_namespace(&e),
                },
            }
        }
    }

    /// Queues every Workspace and LogicalCluster (first start, or events were missed).
    async fn resync(&self) {
        let Some(s) = self.server.upgrade() else {
            return;
        };
        let cache = s.registry().cache();
        let workspaces = cache.list(keyspace(&self.defs.workspaces).all_clusters(), None);
        let clusters = cache.list(keyspace(&self.defs.logical_clusters).all_clusters(), None);
        drop(s);
        let keys = workspaces
            .iter()
            .map(|ws| Key::Workspace(ws.cluster.clone(), ws.name.clone()))
            .chain(clusters.iter().map(|lc| Key::Cluster(lc.cluster.clone())));
        for (i, key) in keys.enumerate() {
            self.queue.add(key);
            if i % RESYNC_YIELD_EVERY == 0 {
                // 200k keys at a restart: let the listener's first requests in meanwhile.
                tokio::task::yield_now().await;
            }
        }
    }

    fn on_workspace(&self, event: &CacheEvent) {
        let o = &event.object;
        if event.kind == CacheEventType::Deleted {
            // A child workspace gone: its parent LC may be waiting for it to finish deleting.
            if self.deleting.lock().contains(&o.cluster) {
                self.queue.add(Key::Cluster(o.cluster.clone()));
            }
            // Its LC normally went first (or with it); not if its finalizer was removed by hand.
            if let Some(lc) = o
                .json
                .parse::<WorkspaceState>()
                .ok()
                .and_then(|ws| ws.left_behind(o.annotation(CLUSTER_ANNOTATION).as_deref()))
            {
                self.queue.add(Key::LeftBehind(lc));
            }
        } else {
            self.queue
                .add(Key::Workspace(o.cluster.clone(), o.name.clone()));
        }
    }

    /// A LogicalCluster event: the LC to look at, or (once it is gone) its owning workspace.
    fn on_cluster(&self, event: &CacheEvent) {
        if event.kind != CacheEventType::Deleted {
            self.queue.add(Key::Cluster(event.object.cluster.clone()));
            return;
        }
        self.deleting.lock().remove(&event.object.cluster);
        self.noted.lock().remove(&event.object.cluster);
        if let Some((cluster, name)) = event
            .object
            .json
            .parse::<LcState>()
            .ok()
            .and_then(|lc| lc.owner())
        {
            self.queue.add(Key::Workspace(cluster, name));
        }
    }

    fn on_namespace(&self, event: &CacheEvent) {
        let cluster = &event.object.cluster;
        if event.kind == CacheEventType::Deleted && self.deleting.lock().contains(cluster) {
            self.queue.add(Key::Cluster(cluster.clone()));
        }
    }

    async fn reconcile(&self, key: Key) -> Outcome {
        let Some(server) = self.server.upgrade() else {
            return Outcome::Done;
        };
        let result = match &key {
            Key::Workspace(cluster, name) => self.reconcile_workspace(&server, cluster, name).await,
            Key::Cluster(cluster) => self.reconcile_cluster(&server, cluster).await,
            Key::LeftBehind(cluster) => self.reconcile_left_behind(&server, cluster).await,
        };
        result.unwrap_or_else(|err| {
            tracing::warn!(?key, error = %err, "workspace controller: reconcile failed; retrying");
            Outcome::Failed
        })
    }
}

/// Removes `finalizer` from an object (which ends its deletion if it was the last); gone is fine.
async fn release(
    server: &ApiServer,
    def: &ResourceDef,
    at: ObjectRef<'_>,
    finalizer: &str,
) -> Result<Outcome, ApiError> {
    server
        .registry()
        .update_if_present(def, at, UpdateKind::Main, WriteOptions::default(), |old| {
            let mut new = old.clone();
            set_finalizer(metadata(&mut new), finalizer, false);
            Ok(new)
        })
        .await?;
    Ok(Outcome::Done)
}

/// Where LogicalCluster `lc` is: its one object, `cluster`.
fn lc_at(lc: &LogicalClusterName) -> ObjectRef<'_> {
    ObjectRef {
        cluster: lc,
        namespace: None,
        name: "cluster",
    }
}

/// Whether a cached Workspace or LogicalCluster carries its `phase` (if it states one) as label:
/// objects stored by shards before the label was kept lack it, and with it what else follows the
/// status (kcp's metadata reconcilers would add them at their first resync).
fn phase_labelled(cached: &CachedObject, phase: Option<&str>) -> bool {
    phase.is_none_or(|p| cached.label(PHASE_LABEL) == Some(p))
}

fn has_finalizer(v: &Value, finalizer: &str) -> bool {
    v.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|x| x == finalizer))
}

/// `meta`'s finalizers with `finalizer` added (`add`) or removed.
fn set_finalizer(meta: &mut serde_json::Map<String, Value>, finalizer: &str, add: bool) {
    let list = meta.entry("finalizers").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(items) = list.as_array_mut() {
        items.retain(|x| x != finalizer);
        if add {
            items.push(json!(finalizer));
        }
    }
}

fn text<'v>(v: &'v Value, pointer: &str) -> &'v str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn string_list(v: &Value, pointer: &str) -> Vec<String> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a type chain's initializers include `root:universal`.
fn initialized_by_universal(chain: &[crate::workspace_types::ResolvedType]) -> bool {
    lifecycle_names(chain, "initializer")
        .iter()
        .any(|i| i == UNIVERSAL_INITIALIZER)
}

fn annotation<'v>(v: &'v Value, name: &str) -> Option<&'v str> {
    v.pointer("/metadata/annotations")
        .and_then(|a| a.get(name))
        .and_then(Value::as_str)
}

/// The metadata map of `obj`, made an object if it was not one.
fn metadata(obj: &mut Value) -> &mut serde_json::Map<String, Value> {
    object_at(obj, "metadata")
}

/// `obj[field]` as a map, made an (empty) object if it was not one.
fn object_at<'v>(obj: &'v mut Value, field: &str) -> &'v mut serde_json::Map<String, Value> {
    if !obj.is_object() {
        *obj = json!({});
    }
    let entry = &mut obj[field];
    if !entry.is_object() {
        *entry = json!({});
    }
    match entry {
        Value::Object(m) => m,
        _ => unreachable!("made an object above"),
    }
}

/// Where a scheduled workspace lives: its LC's name and URL, its shard and the shard's region.
struct Placement<'a> {
    cluster: &'a str,
    url: &'a str,
    shard: &'a str,
    region: Option<String>,
}

/// `ws` as it should be: placed (when `placement` is given), its status the one its LC implies.
/// `None` when it already is. (Its phase label and owner annotation follow the status in the
/// write itself: the Workspace strategy's `follow_status`.)
fn desired_workspace(
    ws: &Value,
    placement: Option<&Placement<'_>>,
    status: &Value,
) -> Option<Value> {
    let placed = placement.is_none_or(|p| text(ws, "/spec/cluster") == p.cluster);
    if placed && same_status(ws.get("status"), status) {
        return None;
    }
    let mut new = ws.clone();
    if let Some(p) = placement {
        let spec = object_at(&mut new, "spec");
        spec.insert("cluster".into(), json!(p.cluster));
        spec.insert("URL".into(), json!(p.url));
        let meta = metadata(&mut new);
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(a) = annotations.as_object_mut() {
            // Its hash comes with it: the Workspace strategy's `follow_status`.
            a.insert(SHARD_ANNOTATION.into(), json!(p.shard));
        }
    }
    // kcp labels a placed workspace with its shard's region (the REGION column).
    if let Some(p) = placement {
        let labels = metadata(&mut new)
            .entry("labels")
            .or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Some(labels) = labels.as_object_mut() {
            match &p.region {
                Some(region) => labels.insert("region".into(), json!(region)),
                None => labels.remove("region"),
            };
        }
    }
    let now = kcp_apiserver::registry::now_rfc3339();
    new["status"] = with_transition_times(status.clone(), ws, &now);
    Some(new)
}

impl Controller {
    fn lc_key(&self, lc: &LogicalClusterName) -> String {
        keyspace(&self.defs.logical_clusters)
            .object(lc, None, "cluster")
            .to_string()
    }

    /// The LogicalCluster `lc` as the cache has it.
    fn cached_lc(&self, server: &ApiServer, lc: &LogicalClusterName) -> Option<Value> {
        server
            .registry()
            .cache()
            .get(&self.lc_key(lc))
            .and_then(|o| o.value().ok())
    }

    /// The lifecycle state of LogicalCluster `lc` as the cache has it.
    fn cached_lc_state(&self, server: &ApiServer, lc: &LogicalClusterName) -> Option<LcState> {
        server
            .registry()
            .cache()
            .get(&self.lc_key(lc))
            .and_then(|o| o.json.parse().ok())
    }

    /// Writes an object as it is stored, for what its strategy's `follow_status` adds (labels
    /// and annotations that follow its status). Gone is fine.
    async fn rewrite(
        &self,
        server: &ApiServer,
        def: &ResourceDef,
        at: ObjectRef<'_>,
    ) -> Result<(), ApiError> {
        server
            .registry()
            .update_if_present(def, at, UpdateKind::Whole, WriteOptions::default(), |old| {
                Ok(old.clone())
            })
            .await
    }

    /// Brings one workspace forward.
    async fn reconcile_workspace(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
    ) -> Result<Outcome, ApiError> {
        let key = keyspace(&self.defs.workspaces).object(cluster, None, name);
        let Some(cached) = server.registry().cache().get(&key) else {
            return Ok(Outcome::Done);
        };
        // Read without the whole object: most reconciles find the workspace as it should be.
        let state: WorkspaceState = cached.json.parse().map_err(ApiError::internal)?;
        if state.is_deleting() || state.cluster().is_none() {
            let ws = cached.value().map_err(ApiError::internal)?;
            return match state.is_deleting() {
                true => {
                    self.delete_workspace(server, cluster, name, &ws, cached.revision)
                        .await
                }
                false => {
                    self.schedule(server, cluster, name, &ws, cached.revision)
                        .await
                }
            };
        }
        let status = (state.cluster())
            .and_then(|lc| self.cached_lc_state(server, &lc))
            .map_or_else(unscheduled_status, |lc| lc.mirrored_status());
        let at = ObjectRef {
            cluster,
            namespace: None,
            name,
        };
        if same_status(state.status.as_ref(), &status) {
            // The common case, and every workspace at start-up: no write (not even a no-op one,
            // which still runs admission and validation), unless it was stored by a shard that
            // did not label it yet.
            if !phase_labelled(&cached, status.get("phase").and_then(Value::as_str)) {
                self.rewrite(server, &self.defs.workspaces, at).await?;
            }
            return Ok(Outcome::Done);
        }
        self.write_workspace(server, at, None, &status).await?;
        Ok(Outcome::Done)
    }

    /// The batch update of workspace `ws` (at `at`, read at `revision`) into `desired`, status
    /// included.
    fn workspace_update<'a>(
        &'a self,
        at: ObjectRef<'a>,
        ws: &'a Value,
        revision: Revision,
        desired: Value,
    ) -> ObjectUpdate<'a> {
        ObjectUpdate {
            def: &self.defs.workspaces,
            at,
            kind: UpdateKind::Whole,
            old: ws,
            revision,
            desired,
        }
    }

    /// Writes the workspace as [`desired_workspace`] makes it, if that changes anything.
    async fn write_workspace(
        &self,
        server: &ApiServer,
        at: ObjectRef<'_>,
        placement: Option<&Placement<'_>>,
        status: &Value,
    ) -> Result<(), ApiError> {
        server
            .registry()
            .update_if_present(
                &self.defs.workspaces,
                at,
                UpdateKind::Whole,
                WriteOptions::default(),
                |old| Ok(desired_workspace(old, placement, status).unwrap_or_else(|| old.clone())),
            )
            .await
    }

    /// A deleted workspace (read at `revision`): its LogicalCluster is deleted (which deletes the
    /// LC's content, child workspaces included), and once it is gone the workspace is released.
    async fn delete_workspace(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
        ws: &Value,
        revision: Revision,
    ) -> Result<Outcome, ApiError> {
        if !has_finalizer(ws, WORKSPACE_FINALIZER) {
            return Ok(Outcome::Done);
        }
        let registry = server.registry();
        let lc_name = Some(text(ws, "/spec/cluster"))
            .filter(|c| !c.is_empty())
            .or_else(|| annotation(ws, CLUSTER_ANNOTATION))
            .and_then(|c| LogicalClusterName::parse(c).ok());
        let lc_name = lc_name.as_ref();
        let at = ObjectRef {
            cluster,
            namespace: None,
            name,
        };
        let mut lc = lc_name.and_then(|n| self.cached_lc_state(server, n));
        if lc.is_none() && lc_name.is_some() {
            // Releasing the workspace with its LC still there would orphan that LC: make sure the
            // cache is not merely behind a create that just happened.
            let _ = registry.cache().wait_fresh().await;
            lc = lc_name.and_then(|n| self.cached_lc_state(server, n));
        }
        let lc_missing = lc.is_none();
        if let Some(lc_name) = lc_name
            && let Some(lc) = lc
            // Only an LC this workspace owns.
            && lc.owner_uid() == text(ws, "/metadata/uid")
        {
            if !lc.is_deleting() {
                if self
                    .mark_lc_with_workspace(server, at, ws, revision, lc_name)
                    .await?
                {
                    return Ok(Outcome::Done);
                }
                self.delete_lc(server, lc_name).await?;
            }
            // The workspace shows the deletion's progress; the LC's events bring it back here.
            self.write_workspace(server, at, None, &lc.mirrored_status())
                .await?;
            return Ok(Outcome::Done);
        }
        if let Some(lc_name) = lc_name
            && lc_missing
        {
            // Scheduling writes an LC's content beside the LC: content whose LC was never
            // created (a failed write, then the deletion) must not outlive the workspace.
            let left = server.delete_cluster_content(lc_name).await?;
            if left > 0 {
                return Ok(Outcome::After(CONTENT_RECHECK));
            }
        }
        release(server, &self.defs.workspaces, at, WORKSPACE_FINALIZER).await
    }

    /// Deletes LogicalCluster `lc` (its content follows); gone already is fine.
    async fn delete_lc(&self, server: &ApiServer, lc: &LogicalClusterName) -> Result<(), ApiError> {
        let at = lc_at(lc);
        let deleted = server
            .registry()
            .delete(
                &self.defs.logical_clusters,
                at,
                &kcp_apiserver::registry::DeleteOptions::default(),
            )
            .await;
        match deleted {
            Err(e) if !e.is_not_found() => Err(e),
            _ => Ok(()),
        }
    }

    /// Whether the workspace that owns `lc` is gone (or is another one by now) while `lc` is
    /// not. Only decided when the owner's own LC is on this shard: elsewhere, absence here says
    /// nothing. An LC that names no owner uid was not made by a workspace's scheduling.
    fn owner_gone(&self, server: &ApiServer, lc: &LcState) -> bool {
        let Some((parent, name)) = lc.owner() else {
            return false;
        };
        let cache = server.registry().cache();
        if lc.owner_uid().is_empty() || cache.get(&self.lc_key(&parent)).is_none() {
            return false;
        }
        let key = keyspace(&self.defs.workspaces).object(&parent, None, &name);
        // A uid nowhere in the workspace's bytes is not its `metadata.uid` (read without a
        // parse: this runs for every LC at start-up).
        cache
            .get(&key)
            .is_none_or(|ws| !ws.json.may_contain(lc.owner_uid().as_bytes()))
    }

    /// The LC name of a deleted workspace: an LC still there is reconciled as any other (and
    /// deleted, its owner being gone: the workspace's finalizer was removed by hand). Content
    /// under the name goes too: what the POST of a workspace never placed wrote for its LC-to-be
    /// (`kube-system` and what came with it), or an object written into the LC while it went.
    async fn reconcile_left_behind(
        &self,
        server: &ApiServer,
        lc: &LogicalClusterName,
    ) -> Result<Outcome, ApiError> {
        let cache = server.registry().cache();
        if cache.get(&self.lc_key(lc)).is_some() {
            return self.reconcile_cluster(server, lc).await;
        }
        if cache.objects_in_cluster(lc).is_empty() {
            return Ok(Outcome::Done);
        }
        Ok(match server.delete_cluster_content(lc).await? {
            0 => Outcome::Done,
            _ => Outcome::After(CONTENT_RECHECK),
        })
    }

    /// Whether this shard may take a workspace with `ws`'s location selector.
    fn fits_here(&self, server: &ApiServer, ws: &Value) -> bool {
        self.shard_for(server, ws).is_ok()
    }

    /// This shard's Shard object, if it may take a workspace with `ws`'s location selector; else
    /// why not, in the words of kcp's `WorkspaceScheduled` condition.
    fn shard_for(
        &self,
        server: &ApiServer,
        ws: &Value,
    ) -> Result<Arc<kcp_apiserver::watch_cache::CachedObject>, String> {
        // Only this shard can create LCs here; other shards' objects are candidates for the front
        // proxy's scheduler later.
        let selector = match ws.pointer("/spec/location/selector") {
            Some(s) => kcp_apimachinery::selector::label::from_label_selector(s)
                .map_err(|e| format!("spec.location.selector is invalid: {e}"))?,
            None => kcp_apimachinery::selector::Selector::everything(),
        };
        let key = keyspace(&self.defs.shards)
            .object(kcp_api_types::tenancy::ROOT, None, server.shard_name())
            .to_string();
        server
            .registry()
            .cache()
            .get(&key)
            .filter(|shard| {
                selector.matches(&**shard) && shard.annotation(UNSCHEDULABLE_ANNOTATION).is_none()
            })
            .ok_or_else(|| "No available shards to schedule the workspace".to_string())
    }

    /// Schedules a workspace: creates its LogicalCluster and admin binding, runs the universal
    /// initializer, and places the workspace, in that order, so a crash at any point resumes here.
    async fn schedule(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
        ws: &Value,
        revision: Revision,
    ) -> Result<Outcome, ApiError> {
        let registry = server.registry();
        let at = ObjectRef {
            cluster,
            namespace: None,
            name,
        };
        let Some(reference) = ws.pointer("/spec/type").and_then(TypeRef::from_value) else {
            return Ok(Outcome::Done);
        };
        let shard = match self.shard_for(server, ws) {
            Ok(shard) => shard,
            Err(message) => {
                // kcp: a Workspace* condition False makes the phase Unavailable (scheduling is
                // retried all the same: it follows the empty spec.cluster, not the phase). An
                // invalid selector is no error of the shard's: it stays until the user fixes it.
                let status = json!({"phase": "Unavailable", "conditions": [{
                    "type": "WorkspaceScheduled", "status": "False", "severity": "Error",
                    "reason": "Unschedulable", "message": message,
                }]});
                self.write_workspace(server, at, None, &status).await?;
                return Ok(Outcome::Done);
            }
        };
        // Admission names the LC; a workspace from before that (or whose name was taken) gets
        // one here, with the finalizer, before anything is created under it.
        let Some(lc_name) =
            annotation(ws, CLUSTER_ANNOTATION).and_then(|c| LogicalClusterName::parse(c).ok())
        else {
            self.rename(server, at, true).await?;
            return Ok(Outcome::Done);
        };
        let uid = text(ws, "/metadata/uid").to_string();
        let created_by: Value = annotation(ws, OWNER_ANNOTATION)
            .and_then(|o| serde_json::from_str(o).ok())
            .unwrap_or_else(|| json!({}));
        let username = text(&created_by, "/username");
        // kcp's URL names the workspace by its canonical path, not its LC.
        let parent_path = Types {
            cache: registry.cache(),
            paths: &self.paths,
        }
        .path_of(at.cluster);
        let url = format!("{}/clusters/{parent_path}:{name}", server.external_url());
        let region = shard.label("region").map(str::to_string);
        let placement = Placement {
            cluster: &lc_name,
            url: &url,
            shard: server.shard_name(),
            region,
        };
        let (lc, fresh) = match self.cached_lc(server, &lc_name) {
            Some(lc) => (lc, false),
            None => {
                let chain = Types {
                    cache: registry.cache(),
                    paths: &self.paths,
                }
                .chain(&reference)
                .map_err(ApiError::internal)?;
                let universal = initialized_by_universal(&chain);
                let lc = self.logical_cluster(
                    server,
                    cluster,
                    name,
                    ws,
                    &created_by,
                    &reference,
                    &chain,
                );
                let status = LcState::of(&lc).mirrored_status();
                if let Some(desired) = desired_workspace(ws, Some(&placement), &status) {
                    let placed = Placed {
                        at,
                        ws,
                        revision,
                        desired,
                        username,
                    };
                    if self
                        .create_placed(server, &lc_name, &lc, placed, universal)
                        .await?
                    {
                        return Ok(Outcome::Done);
                    }
                }
                match self
                    .create_lc(server, &lc_name, lc, username, universal)
                    .await
                {
                    Ok(lc) => (lc, true),
                    Err(e) if e.is_conflict_or_exists() => {
                        // Created meanwhile: ours (an earlier attempt) or someone else's.
                        let _ = registry.cache().wait_fresh().await;
                        (self.cached_lc(server, &lc_name).unwrap_or_default(), false)
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        if text(&lc, "/spec/owner/uid") != uid {
            // Someone else's LC: pick another name.
            self.rename(server, at, false).await?;
            return Ok(Outcome::Done);
        }
        let lc = if fresh {
            lc
        } else {
            // Resumed after a crash or a failed write: make sure of the binding and namespaces
            // (an LC born past the initializer may lack them), and finish the initializer. The LC
            // records its type's initializers, even if the type has changed since.
            let universal = string_list(&lc, "/spec/initializers")
                .iter()
                .any(|i| i == UNIVERSAL_INITIALIZER);
            self.lc_content(server, &lc_name, username, universal)
                .await?;
            match LcState::of(&lc).pending(UNIVERSAL_INITIALIZER) {
                true => self
                    .remove_initializer(server, &lc_name, UNIVERSAL_INITIALIZER)
                    .await?
                    .unwrap_or(lc),
                false => lc,
            }
        };
        let status = LcState::of(&lc).mirrored_status();
        self.write_workspace(server, at, Some(&placement), &status)
            .await?;
        Ok(Outcome::Done)
    }

    /// Gives the workspace a new LC name (and, with `guard`, the finalizer that protects it).
    async fn rename(
        &self,
        server: &ApiServer,
        at: ObjectRef<'_>,
        guard: bool,
    ) -> Result<(), ApiError> {
        let chosen = new_cluster_name();
        server
            .registry()
            .update(
                &self.defs.workspaces,
                at,
                UpdateKind::Main,
                WriteOptions::default(),
                |old| {
                    let mut new = old.clone();
                    let meta = metadata(&mut new);
                    let a = meta.entry("annotations").or_insert_with(|| json!({}));
                    if !a.is_object() {
                        *a = json!({});
                    }
                    a[CLUSTER_ANNOTATION] = json!(chosen);
                    if guard {
                        set_finalizer(meta, WORKSPACE_FINALIZER, true);
                    }
                    Ok(new)
                },
            )
            .await
            .map(|_| ())
    }

    /// Runs the `root:universal` initializer on `lc` if it is pending: answers the LC as updated,
    /// `None` when there was nothing to do.
    async fn initialize_universal(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        lc: &LcState,
    ) -> Result<Option<Value>, ApiError> {
        if !lc.pending(UNIVERSAL_INITIALIZER) {
            return Ok(None);
        }
        self.universal_namespaces(server, cluster, true).await?;
        self.remove_initializer(server, cluster, UNIVERSAL_INITIALIZER)
            .await
    }

    /// Removes `initializer` from the LC's pending ones (none: only makes an LC with none left
    /// Ready); answers the LC as updated.
    async fn remove_initializer(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        initializer: &str,
    ) -> Result<Option<Value>, ApiError> {
        let at = lc_at(cluster);
        let written = server
            .registry()
            .update(
                &self.defs.logical_clusters,
                at,
                UpdateKind::Status,
                WriteOptions::default(),
                |old| {
                    let mut new = old.clone();
                    let remaining: Vec<String> = string_list(old, "/status/initializers")
                        .into_iter()
                        .filter(|i| i != initializer)
                        .collect();
                    if remaining.is_empty() && text(old, "/status/phase") == "Initializing" {
                        new["status"]["phase"] = json!("Ready");
                    }
                    new["status"]["initializers"] = json!(remaining);
                    Ok(new)
                },
            )
            .await;
        match written {
            Ok(w) => Ok(Some(w.object)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// An LC's own progress: initialization of LCs no workspace schedules (homes, bare LCs) and
    /// readiness once custom initializers are gone; termination and content deletion. Its owning
    /// workspace is queued to follow it.
    async fn reconcile_cluster(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
    ) -> Result<Outcome, ApiError> {
        let Some(cached) = server.registry().cache().get(&self.lc_key(cluster)) else {
            return Ok(Outcome::Done);
        };
        let lc: LcState = cached.json.parse().map_err(ApiError::internal)?;
        let owner = lc.owner();
        let outcome = if lc.is_deleting() {
            self.delete_cluster(server, cluster, &lc).await?
        } else if self.owner_gone(server, &lc) {
            // Its workspace went without it (the workspace's finalizer was removed by hand):
            // nothing else would ever delete it.
            tracing::info!(
                %cluster,
                "workspace controller: deleting an LC whose workspace is gone"
            );
            self.delete_lc(server, cluster).await?;
            Outcome::Done
        } else {
            if lc.is_initializing() && lc.initializers().is_empty() {
                self.remove_initializer(server, cluster, "").await?;
            } else if lc.is_initializing() && owner.is_none() {
                // A workspace's LC is initialized when it is scheduled.
                self.initialize_universal(server, cluster, &lc).await?;
            } else if !phase_labelled(&cached, lc.stated_phase()) {
                self.rewrite(server, &self.defs.logical_clusters, lc_at(cluster))
                    .await?;
            }
            Outcome::Done
        };
        if let Some((c, n)) = owner {
            self.queue.add(Key::Workspace(c, n));
        }
        Ok(outcome)
    }

    /// A deleting LC: terminators first (they are removed by PATCH), then the content, then the LC.
    async fn delete_cluster(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        lc: &LcState,
    ) -> Result<Outcome, ApiError> {
        let Some(finalizer) = [CONTENT_FINALIZER, LEGACY_CONTENT_FINALIZER]
            .into_iter()
            .find(|f| lc.has_finalizer(f))
        else {
            return Ok(Outcome::Done);
        };
        let at = lc_at(cluster);
        let registry = server.registry();
        if !lc.terminators().is_empty() {
            return Ok(Outcome::Done);
        }
        if lc.phase() != "Deleting" {
            let written = registry
                .update(
                    &self.defs.logical_clusters,
                    at,
                    UpdateKind::Status,
                    WriteOptions::default(),
                    |old| {
                        let mut new = old.clone();
                        object_at(&mut new, "status").insert("phase".into(), json!("Deleting"));
                        Ok(new)
                    },
                )
                .await;
            if let Err(e) = written
                && !e.is_not_found()
            {
                return Err(e);
            }
        }
        self.deleting.lock().insert(cluster.clone());
        let owner = self.going_owner(server, lc);
        match self
            .delete_content_and_release(server, cluster, finalizer, owner.as_ref())
            .await?
        {
            Content::Released => Ok(Outcome::Done),
            Content::Empty => release(server, &self.defs.logical_clusters, at, finalizer).await,
            Content::Left(remaining) => {
                self.note_remaining(server, cluster, lc, &remaining).await?;
                Ok(Outcome::After(CONTENT_RECHECK))
            }
        }
    }

    /// Tells on the deleting LC (and so its workspace) what its content waits for, as kcp's
    /// `WorkspaceContentDeleted` condition does; written only when that changes.
    async fn note_remaining(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        lc: &LcState,
        remaining: &str,
    ) -> Result<(), ApiError> {
        if lc.content_remaining() == Some(remaining) {
            return Ok(());
        }
        let recent =
            (self.noted.lock().get(cluster)).is_some_and(|at| at.elapsed() < CONTENT_RECHECK);
        if recent && lc.content_remaining().is_some() {
            return Ok(());
        }
        let condition = state::content_remaining_condition(remaining);
        let written = server
            .registry()
            .update_if_present(
                &self.defs.logical_clusters,
                lc_at(cluster),
                UpdateKind::Status,
                WriteOptions::default(),
                |old| {
                    let mut new = old.clone();
                    let status = object_at(&mut new, "status");
                    let mut conditions: Vec<Value> = (status.get("conditions"))
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter(|c| c["type"] != state::CONTENT_DELETED)
                        .cloned()
                        .collect();
                    conditions.push(condition.clone());
                    status.insert("conditions".into(), json!(conditions));
                    Ok(new)
                },
            )
            .await;
        self.noted
            .lock()
            .insert(cluster.clone(), std::time::Instant::now());
        written
    }
}
