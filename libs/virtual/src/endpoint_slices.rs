//! The URLs APIExportEndpointSlices publish, as kcp's endpoint-slice controllers keep them on each
//! shard: a slice whose export exists (and whose `spec.partition`, when set, names a Partition of
//! the slice's workspace whose selector this shard's labels match) lists this server's
//! virtual-workspace URL for the export in `status.endpoints` while this server hosts at least one
//! binding of the export, and drops it when it hosts none. Conditions `APIExportValid` and
//! `PartitionValid` say why a slice lists nothing, with kcp's reasons.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Weak};

use kcp_api_types::ResourceDef;
use kcp_api_types::apis::{EXPORT_LABEL, GROUP, export_label_value};
use kcp_api_types::conditions::condition;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::hooks::ClusterResolver;
use kcp_apiserver::registry::{keyspace, str_at as text};
use kcp_apiserver::watch_cache::{CacheEventType, CachedObject};
use kcp_controllers::builtin;
use kcp_controllers::feed::{Change, Feed, Feeds};
use kcp_controllers::objects::{self, ObjectQueue};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// The URL of export `name` of `cluster` on a server whose virtual workspaces are at `base`.
pub fn export_url(base: &str, cluster: &str, name: &str) -> String {
    format!(
        "{}/services/{}/{cluster}/{name}",
        base.trim_end_matches('/'),
        crate::apiexport::FAMILY
    )
}

/// The URL of the object-partitioned slice `name` of `cluster` (served by
/// [`crate::apiexportslice`]).
pub fn slice_url(base: &str, cluster: &str, name: &str) -> String {
    format!(
        "{}/services/{}/{cluster}/{name}",
        base.trim_end_matches('/'),
        crate::apiexportslice::FAMILY
    )
}

struct Defs {
    slices: Arc<ResourceDef>,
    exports: Arc<ResourceDef>,
    bindings: Arc<ResourceDef>,
    /// topology.kcp.io Partitions, once the catalogue has them.
    partitions: Option<Arc<ResourceDef>>,
    shards: Arc<ResourceDef>,
}

struct Controller {
    server: Weak<ApiServer>,
    resolver: Option<Arc<dyn ClusterResolver>>,
    defs: Defs,
    /// Where this server's virtual workspaces are reached, and its Shard object's name.
    base_url: String,
    shard: String,
    /// The bindings this server hosts, per export (its `internal.apis.kcp.io/export` label
    /// value), by a hash of their keys: 8 bytes per binding, where the keys would take ~100; a
    /// binding's event carries its previous state, whose label says which set it leaves.
    hosted: Mutex<HashMap<String, HashSet<u64>>>,
}

/// Starts the controller; it stops with the server. `base_url` is where clients reach this
/// server's virtual workspaces; `shard` names its Shard object (for `spec.partition`).
pub fn spawn(
    server: Arc<ApiServer>,
    resolver: Option<Arc<dyn ClusterResolver>>,
    base_url: String,
    shard: String,
) {
    let partitions = builtin("topology.kcp.io", "partitions");
    let (Some(slices), Some(exports), Some(bindings), Some(shards)) = (
        builtin(GROUP, "apiexportendpointslices"),
        builtin(GROUP, "apiexports").filter(|d| d.version == "v1alpha2"),
        builtin(GROUP, "apibindings").filter(|d| d.version == "v1alpha2"),
        builtin("core.kcp.io", "shards"),
    ) else {
        tracing::error!("APIExportEndpointSlice URL controller: a kind is missing; not started");
        return;
    };
    let stop = server.shutdown_token();
    let cache = server.registry().cache().clone();
    let slices_feed = Feed::new(cache.clone(), keyspace(&slices).all_clusters());
    let exports_feed = Feed::new(cache.clone(), keyspace(&exports).all_clusters());
    let bindings_feed = Feed::new(cache.clone(), keyspace(&bindings).all_clusters());
    let shards_feed = Feed::new(cache.clone(), keyspace(&shards).all_clusters());
    let partitions_feed =
        (partitions.as_ref()).map(|p| Feed::new(cache, keyspace(p).all_clusters()));
    let controller = Arc::new(Controller {
        server: Arc::downgrade(&server),
        resolver,
        defs: Defs {
            slices,
            exports,
            bindings,
            partitions,
            shards,
        },
        base_url,
        shard,
        hosted: Mutex::new(HashMap::new()),
    });
    drop(server);
    let worker = controller.clone();
    let queue = objects::reconciling(
        2,
        stop.clone(),
        "endpoint slice URLs not written",
        move |cluster, name| {
            let controller = worker.clone();
            async move { controller.reconcile(&cluster, &name).await }
        },
    );
    let (c, q) = (controller.clone(), queue.clone());
    let feeds = Feeds::new().on(slices_feed, move |change| match change {
        Change::Event(e) => q.add((e.object.cluster.clone(), e.object.name.clone())),
        Change::Resync => c.all(&q),
    });
    // An export that comes or goes changes what the slices naming it say; a Partition or this
    // server's Shard (its labels), what the slices selecting shards say.
    let (c, q) = (controller.clone(), queue.clone());
    let feeds = feeds.on(exports_feed, move |change| match change {
        Change::Event(e) if e.kind == CacheEventType::Modified => {}
        Change::Event(e) => c.naming(&q, &e.object.name),
        Change::Resync => c.all(&q),
    });
    let (c, q) = (controller.clone(), queue.clone());
    let feeds = feeds.on(shards_feed, move |change| match change {
        Change::Event(e) if e.object.name != c.shard => {}
        Change::Event(_) | Change::Resync => c.all(&q),
    });
    let feeds = match partitions_feed {
        Some(partitions_feed) => {
            let (c, q) = (controller.clone(), queue.clone());
            feeds.on(partitions_feed, move |change| match change {
                Change::Event(_) | Change::Resync => c.all(&q),
            })
        }
        None => feeds,
    };
    let (c, q) = (controller.clone(), queue.clone());
    let feeds = feeds.on(bindings_feed, move |change| match change {
        Change::Event(e) => {
            let label = |o: &CachedObject| o.labels.get(EXPORT_LABEL).map(str::to_string);
            let before = e.prev.as_deref().and_then(label);
            let now = (e.kind != CacheEventType::Deleted)
                .then(|| label(&e.object))
                .flatten();
            if c.count(&e.object.key, before, now) {
                c.all(&q);
            }
        }
        Change::Resync => {
            c.recount();
            c.all(&q);
        }
    });
    feeds.spawn(stop, move || {
        controller.recount();
        controller.all(&queue);
    });
}

impl Controller {
    fn all(&self, queue: &ObjectQueue) {
        if let Some(server) = self.server.upgrade() {
            objects::enqueue_all(server.registry().cache(), &self.defs.slices, queue);
        }
    }

    /// The slices naming an export called `name` (wherever it is).
    fn naming(&self, queue: &ObjectQueue, name: &str) {
        let Some(server) = self.server.upgrade() else {
            return;
        };
        let cache = server.registry().cache();
        for slice in cache.list(keyspace(&self.defs.slices).all_clusters(), None) {
            if slice
                .value()
                .is_ok_and(|s| text(&s, "/spec/export/name") == name)
            {
                queue.add((slice.cluster.clone(), slice.name.clone()));
            }
        }
    }

    /// Binding `key`'s export label went from `before` to `now` (`None`: none, or gone); whether
    /// an export went from no binding here to some, or back. Idempotent, so an event the last
    /// recount already saw changes nothing.
    fn count(&self, key: &str, before: Option<String>, now: Option<String>) -> bool {
        let id = binding_id(key);
        let mut hosted = self.hosted.lock();
        let mut flipped = false;
        if let Some(old) = before.filter(|b| Some(b) != now.as_ref())
            && let Some(ids) = hosted.get_mut(&old)
            && ids.remove(&id)
            && ids.is_empty()
        {
            hosted.remove(&old);
            flipped = true;
        }
        if let Some(new) = now {
            let ids = hosted.entry(new).or_default();
            flipped |= ids.insert(id) && ids.len() == 1;
        }
        flipped
    }

    fn recount(&self) {
        let Some(server) = self.server.upgrade() else {
            return;
        };
        let mut hosted: HashMap<String, HashSet<u64>> = HashMap::new();
        let cache = server.registry().cache();
        for b in cache.list(keyspace(&self.defs.bindings).all_clusters(), None) {
            if let Some(label) = b.labels.get(EXPORT_LABEL) {
                hosted
                    .entry(label.to_string())
                    .or_default()
                    .insert(binding_id(&b.key));
            }
        }
        *self.hosted.lock() = hosted;
    }

    async fn reconcile(&self, cluster: &LogicalClusterName, name: &str) -> Result<(), ApiError> {
        let Some(server) = self.server.upgrade() else {
            return Ok(());
        };
        let key = keyspace(&self.defs.slices).object(cluster, None, name);
        let Some(cached) = server.registry().cache().get(&key) else {
            return Ok(());
        };
        let slice = cached.value().map_err(ApiError::internal)?;
        let status = self.desired_status(&server, cluster, &slice);
        objects::write_status(&server, &self.defs.slices, cluster, name, &slice, status).await
    }

    fn desired_status(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        slice: &Value,
    ) -> Value {
        let mut status = json!({});
        let mut conditions = Vec::new();
        let export_name = text(slice, "/spec/export/name");
        let export_cluster = self.export_cluster(cluster, text(slice, "/spec/export/path"));
        let export = export_cluster.as_ref().filter(|c| {
            let key = keyspace(&self.defs.exports).object(c, None, export_name);
            server.registry().cache().get(&key).is_some()
        });
        let Some(export_cluster) = export else {
            let shown = match text(slice, "/spec/export/path") {
                "" => cluster.to_string(),
                path => path.to_string(),
            };
            conditions.push(condition(
                "APIExportValid",
                Some((
                    "APIExportNotFound",
                    &format!("APIExport {shown}|{export_name} not found"),
                )),
            ));
            status["conditions"] = Value::Array(conditions);
            return status;
        };
        conditions.push(condition("APIExportValid", None));
        let mut selected = true;
        let partition = text(slice, "/spec/partition");
        if !partition.is_empty() {
            let found = (self.defs.partitions.as_ref())
                .map(|def| keyspace(def).object(cluster, None, partition))
                .and_then(|key| server.registry().cache().get(&key))
                .and_then(|p| p.value().ok());
            let Some(found) = found else {
                conditions.push(condition(
                    "PartitionValid",
                    Some((
                        "PartitionInvalidReference",
                        &format!("partition {partition} not found"),
                    )),
                ));
                status["conditions"] = Value::Array(conditions);
                return status;
            };
            let selector = found
                .pointer("/spec/selector")
                .cloned()
                .unwrap_or(Value::Null);
            status["shardSelector"] = json!(selector_text(&selector));
            selected = self.shard_matches(server, &selector);
        }
        conditions.push(condition("PartitionValid", None));
        status["conditions"] = Value::Array(conditions);
        let label = export_label_value(export_cluster, export_name);
        let hosting = self.hosted.lock().contains_key(&label);
        // This shard's entry only; with several shards each would add its own (kcp applies it
        // server-side with the shard's field manager), which one shard does not need yet.
        if selected && hosting {
            let url = match slice.pointer("/spec/objectPartition") {
                Some(_) => {
                    let name = text(slice, "/metadata/name");
                    slice_url(&self.base_url, cluster.as_str(), name)
                }
                None => export_url(&self.base_url, export_cluster.as_str(), export_name),
            };
            status["endpoints"] = json!([{ "url": url }]);
        }
        status
    }

    /// The logical cluster an export reference leads to: the slice's own without a path.
    fn export_cluster(
        &self,
        cluster: &LogicalClusterName,
        path: &str,
    ) -> Option<LogicalClusterName> {
        kcp_apis::export_cluster(self.resolver.as_deref(), cluster, path)
    }

    /// Whether this server's Shard object's labels match a Partition's selector.
    fn shard_matches(&self, server: &ApiServer, selector: &Value) -> bool {
        let Ok(selector) = kcp_apimachinery::selector::label::from_label_selector(selector) else {
            return false;
        };
        let key =
            keyspace(&self.defs.shards).object(&LogicalClusterName::root(), None, &self.shard);
        let labels = (server.registry().cache().get(&key))
            .and_then(|s| s.value().ok())
            .and_then(|s| s.pointer("/metadata/labels").cloned())
            .unwrap_or_else(|| json!({}));
        let mut with_name = labels;
        // Every shard is labelled with its name, as kcp's are.
        with_name["name"] = json!(self.shard);
        selector.matches_object(&json!({"metadata": {"labels": with_name}}))
    }
}

/// A binding's key as [`Controller::hosted`] holds it (a fixed hash, the same on every call).
fn binding_id(key: &str) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    key.hash(&mut hasher);
    hasher.finish()
}

/// A `metav1.LabelSelector` as its selector string (`region=us-east`); empty for everything.
fn selector_text(selector: &Value) -> String {
    match kcp_apimachinery::selector::label::from_label_selector(selector) {
        Ok(s) => s.to_string(),
        Err(_) => String::new(),
    }
}
