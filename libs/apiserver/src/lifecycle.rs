//! Object lifecycles the shard drives itself, through the same registry as requests: bootstrap of the
//! `root` logical cluster, the `default` namespace of new logical clusters, and namespace finalization
//! (emptying a deleted namespace, then releasing its `kubernetes` finalizer).

mod namespace_conditions;
mod unheld;

use std::sync::Arc;
use std::time::Duration;

use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_store::StoreError;
use serde_json::json;
use tokio::sync::mpsc;

use crate::registry::{
    DeleteOptions, ObjectRef, Release, UpdateKind, WriteOptions, Written, created_or_existed,
};
use crate::{ApiServer, ApiServerError};
use namespace_conditions::ContentTotals;

/// The logical cluster every shard of a kcp installation starts with.
pub const ROOT_CLUSTER: &str = "root";
/// The system logical cluster that will hold the bootstrap policy (with RBAC evaluation).
pub const SYSTEM_ADMIN_CLUSTER: &str = "system:admin";
const NAMESPACE_FINALIZER: &str = "kubernetes";

/// One of the names above, as a type.
fn constant(name: &str) -> LogicalClusterName {
    LogicalClusterName::parse(name).expect("a well-formed constant cluster name")
}

/// Hands namespaces whose deletion started to the finalizer task.
pub struct NamespaceFinalizer {
    tx: mpsc::UnboundedSender<(LogicalClusterName, String)>,
    /// Namespaces queued or being finalized, so one namespace never runs in two retry chains.
    pending: parking_lot::Mutex<std::collections::HashSet<(LogicalClusterName, String)>>,
}

impl NamespaceFinalizer {
    pub fn new() -> (
        NamespaceFinalizer,
        mpsc::UnboundedReceiver<(LogicalClusterName, String)>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let pending = parking_lot::Mutex::new(std::collections::HashSet::new());
        (NamespaceFinalizer { tx, pending }, rx)
    }

    fn enqueue(&self, cluster: &LogicalClusterName, namespace: &str) {
        let key = (cluster.clone(), namespace.to_string());
        if self.pending.lock().insert(key.clone()) {
            let _ = self.tx.send(key);
        }
    }

    fn finished(&self, cluster: &LogicalClusterName, namespace: &str) {
        self.pending
            .lock()
            .remove(&(cluster.clone(), namespace.to_string()));
    }
}

impl ApiServer {
    /// The built-in resource `plural` of `group`.
    pub fn builtin(&self, group: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        self.apis
            .builtins()
            .resources()
            .iter()
            .find(|d| d.is(group, plural))
            .cloned()
    }

    /// Creates what a fresh server needs: the `root` and `system:admin` logical clusters, each with
    /// its `default` namespace, and the bootstrap RBAC policy; then what was plugged in creates its
    /// own (kcp's tenancy: workspace types, this shard's Shard object).
    pub(crate) async fn bootstrap(
        self: &Arc<Self>,
        plugged: &[Arc<dyn crate::hooks::Bootstrap>],
    ) -> Result<(), ApiServerError> {
        if !self.role().writes() {
            // The shard bootstraps the store; a follower runs what only serves.
            for more in plugged.iter().filter(|b| !b.writes()) {
                more.bootstrap(self)
                    .await
                    .map_err(|e| ApiServerError::Bootstrap(e.to_string()))?;
            }
            return Ok(());
        }
        let lc = self
            .builtin("core.kcp.io", "logicalclusters")
            .ok_or_else(|| ApiServerError::Bootstrap("LogicalCluster kind missing".into()))?;
        let root_annotations: serde_json::Map<_, _> = (plugged.iter())
            .flat_map(|b| b.root_annotations())
            .collect();
        let (root, system_admin) = (constant(ROOT_CLUSTER), constant(SYSTEM_ADMIN_CLUSTER));
        for cluster in [&root, &system_admin] {
            let mut obj = json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster", "metadata": {"name": "cluster"}});
            if *cluster == root && !root_annotations.is_empty() {
                obj["metadata"]["annotations"] =
                    serde_json::Value::Object(root_annotations.clone());
            }
            self.create_missing(&lc, cluster, obj)
                .await
                .map_err(|e| ApiServerError::Bootstrap(e.to_string()))?;
            self.ensure_default_namespace(cluster)
                .await
                .map_err(|e| ApiServerError::Bootstrap(e.to_string()))?;
        }
        // kcp's bootstrap policy: the default roles in `system:admin` (bindable from every logical
        // cluster), and `root` open to every authenticated user.
        let policy = kcp_auth::authz::rbac::bootstrap::objects()
            .into_iter()
            .map(|o| (&system_admin, o))
            .chain(
                kcp_auth::authz::rbac::bootstrap::root_objects()
                    .into_iter()
                    .map(|o| (&root, o)),
            );
        for (cluster, object) in policy {
            let plural = match object.get("kind").and_then(|k| k.as_str()) {
                Some("ClusterRole") => "clusterroles",
                Some("ClusterRoleBinding") => "clusterrolebindings",
                _ => continue,
            };
            let def = self
                .builtin("rbac.authorization.k8s.io", plural)
                .ok_or_else(|| ApiServerError::Bootstrap(format!("{plural} kind missing")))?;
            self.create_missing(&def, cluster, object)
                .await
                .map_err(|e| ApiServerError::Bootstrap(e.to_string()))?;
        }
        for more in plugged {
            more.bootstrap(self)
                .await
                .map_err(|e| ApiServerError::Bootstrap(e.to_string()))?;
        }
        // Resume namespace deletions interrupted by a restart.
        if let Some(ns_def) = self.builtin("", "namespaces") {
            let prefix = crate::registry::keyspace(&ns_def)
                .all_clusters()
                .to_string();
            for ns in self.registry.cache().list(&prefix, None) {
                if ns.is_deleting() {
                    self.namespaces.enqueue(&ns.cluster, &ns.name);
                }
            }
        }
        Ok(())
    }

    /// Creates `object` in `cluster` unless it exists. The cache is asked first: a refused create
    /// costs a store round trip (every bootstrap object at start-up, every object of a resumed
    /// workspace scheduling).
    pub async fn create_missing(
        &self,
        def: &Arc<ResourceDef>,
        cluster: &LogicalClusterName,
        object: serde_json::Value,
    ) -> Result<(), ApiError> {
        let name = object
            .pointer("/metadata/name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        let key = crate::registry::keyspace(def).object(cluster, None, name);
        if self.registry.cache().get(&key).is_some() {
            return Ok(());
        }
        created_or_existed(
            self.registry
                .create(def, cluster, None, object, WriteOptions::default())
                .await,
        )
    }

    async fn ensure_default_namespace(&self, cluster: &LogicalClusterName) -> Result<(), ApiError> {
        let Some(ns) = self.builtin("", "namespaces") else {
            return Ok(());
        };
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
        self.create_missing(&ns, cluster, obj).await
    }

    /// Follow-ups of a successful create.
    pub(crate) async fn after_create(
        &self,
        def: &ResourceDef,
        cluster: &LogicalClusterName,
        _written: &Written,
    ) {
        // A new logical cluster gets its `default` namespace, as a workspace's initializer gives it.
        if def.is("core.kcp.io", "logicalclusters")
            && let Err(err) = self.ensure_default_namespace(cluster).await
        {
            tracing::warn!(%cluster, error = %err, "creating the default namespace failed");
        }
    }

    /// Follow-ups of a deletion that waits for finalizers.
    pub(crate) async fn after_delete_started(&self, def: &ResourceDef, at: ObjectRef<'_>) {
        if def.is("", "namespaces") {
            self.namespaces.enqueue(at.cluster, at.name);
        }
    }

    /// Deletes everything in a logical cluster but its LogicalCluster (the deletion of a workspace);
    /// answers how many objects are left, e.g. waiting for their finalizers or for child workspaces
    /// to go. Objects already being deleted are not deleted again.
    pub async fn delete_cluster_content(
        &self,
        cluster: &LogicalClusterName,
    ) -> Result<usize, ApiError> {
        Ok(self
            .delete_cluster_content_releasing(cluster, &[])
            .await?
            .left)
    }

    /// [`ApiServer::delete_cluster_content`], and when nothing holds any of the content,
    /// `releases` (the logical cluster's own, say: see [`crate::registry::Registry::release_writes`])
    /// go in the store write of the last of it, or in one of their own when there is no content:
    /// a write fewer than releasing them afterwards, and the cluster is not read again.
    pub async fn delete_cluster_content_releasing(
        &self,
        cluster: &LogicalClusterName,
        releases: &[Release<'_>],
    ) -> Result<ContentDeletion, ApiError> {
        let set = self.apis.for_cluster(cluster);
        let def_of = |obj: &crate::watch_cache::CachedObject| served_resource(&set, obj);
        let is_logical_cluster = |def: &ResourceDef| def.is("core.kcp.io", "logicalclusters");
        let cache = self.registry.cache();
        let mut objects = cache.objects_in_cluster(cluster);
        match self.delete_unheld_content(&set, &objects, releases).await? {
            Unheld::Released => {
                return Ok(ContentDeletion {
                    left: 0,
                    released: true,
                    remaining: String::new(),
                });
            }
            Unheld::Deleted => {
                let _ = cache.wait_fresh().await;
                objects = cache.objects_in_cluster(cluster);
            }
            Unheld::Nothing => {}
        }
        let doomed: Vec<_> = objects
            .into_iter()
            .filter_map(|obj| {
                let def = def_of(&obj)?;
                (!is_logical_cluster(&def) && !obj.is_deleting()).then_some((def, obj))
            })
            .collect();
        // Namespaces last: one emptied by then is removed in a single write, instead of being
        // marked Terminating and released afterwards.
        let (namespaces, rest): (Vec<_>, Vec<_>) = doomed
            .into_iter()
            .partition(|(def, _)| def.is("", "namespaces"));
        in_batches(&rest, |(def, obj)| self.delete_content(cluster, def, obj)).await?;
        if !namespaces.is_empty() {
            let _ = cache.wait_fresh().await;
        }
        in_batches(&namespaces, |(def, ns)| {
            self.delete_namespace_of_deleted_cluster(cluster, def, ns)
        })
        .await?;
        let _ = cache.wait_fresh().await;
        // Emptied namespaces are released here rather than queued behind every other namespace
        // of the shard: the whole LC is going, nothing waits on them or reads their conditions.
        let emptied: Vec<_> = cache
            .objects_in_cluster(cluster)
            .into_iter()
            .filter(|ns| {
                ns.namespace.is_none()
                    && def_of(ns).is_some_and(|d| d.is("", "namespaces"))
                    && ns.is_deleting()
                    && cache.objects_in_namespace(cluster, &ns.name).is_empty()
            })
            .collect();
        if !emptied.is_empty() {
            in_batches(&emptied, |ns| self.release_namespace(cluster, &ns.name)).await?;
            let _ = cache.wait_fresh().await;
        }
        let left: Vec<_> = cache
            .objects_in_cluster(cluster)
            .into_iter()
            .filter_map(|o| {
                def_of(&o)
                    .filter(|d| !is_logical_cluster(d))
                    .map(|d| (d, o))
            })
            .collect();
        Ok(ContentDeletion {
            left: left.len(),
            released: false,
            remaining: remaining_message(&left),
        })
    }

    /// Deletes what nothing holds among `objects` (a deleted logical cluster's), several objects
    /// to a store write ([`unheld`]). A DELETE of any of them would remove it outright, so doing
    /// them together changes only the number of writes. Admission sees none of them, so a
    /// logical cluster with admission configuration of its own keeps the one-by-one path.
    /// `releases` join the last write when nothing holds any of the objects. A refused write (an
    /// object changed meanwhile) ends the pass, and the ordinary path decides the rest.
    async fn delete_unheld_content(
        &self,
        set: &crate::discovery::ApiSet,
        objects: &[Arc<crate::watch_cache::CachedObject>],
        releases: &[Release<'_>],
    ) -> Result<Unheld, ApiError> {
        let resolved: Vec<_> = objects
            .iter()
            .filter_map(|obj| served_resource(set, obj).map(|def| (def, obj)))
            .filter(|(def, _)| !def.is("core.kcp.io", "logicalclusters"))
            .collect();
        if resolved
            .iter()
            .any(|(def, _)| def.group == "admissionregistration.k8s.io")
        {
            return Ok(Unheld::Nothing);
        }
        let candidates: Vec<_> = resolved
            .iter()
            .map(|(def, obj)| {
                let is_namespace = def.is("", "namespaces");
                unheld::Candidate {
                    key: &obj.key,
                    revision: obj.revision,
                    // Resolved by it, so there is one.
                    resource: crate::watch_cache::resource_prefix(&obj.key).unwrap_or_default(),
                    namespace: match is_namespace {
                        true => Some(obj.name.as_str()),
                        false => obj.namespace.as_deref(),
                    },
                    is_namespace,
                    held: is_held(def, obj, is_namespace),
                }
            })
            .collect::<Vec<_>>();
        let release_writes = match releases.is_empty() || candidates.iter().any(|c| c.held) {
            true => None,
            false => self.registry.release_writes(releases)?,
        };
        let release_resources: Vec<String> = match release_writes {
            Some(_) => releases
                .iter()
                .map(|r| crate::registry::keyspace(r.def).all_clusters().to_string())
                .collect(),
            None => Vec::new(),
        };
        let finally: Vec<(&str, kcp_store::Write)> = release_writes
            .into_iter()
            .flatten()
            .zip(&release_resources)
            .map(|(w, r)| (r.as_str(), w))
            .collect();
        let mut outcome = Unheld::Nothing;
        for writes in unheld::plan(&candidates, &finally) {
            match self.registry.write_all(&writes).await {
                Ok(_) => outcome = Unheld::Deleted,
                Err(StoreError::Conflict { .. } | StoreError::NotFound { .. }) => {
                    return Ok(outcome);
                }
                Err(err) => return Err(ApiError::internal(err)),
            }
        }
        Ok(match finally.is_empty() {
            true => outcome,
            false => Unheld::Released,
        })
    }

    /// Finalizes every terminating namespace now, without waiting for the background task (tests).
    pub async fn finalize_namespaces_now(&self) {
        let Some(ns_def) = self.builtin("", "namespaces") else {
            return;
        };
        let prefix = crate::registry::keyspace(&ns_def)
            .all_clusters()
            .to_string();
        for _ in 0..10 {
            let _ = self.registry.cache().wait_fresh().await;
            let pending: Vec<_> = self
                .registry
                .cache()
                .list(&prefix, None)
                .into_iter()
                .filter(|ns| {
                    ns.value()
                        .ok()
                        .and_then(|v| v.pointer("/metadata/deletionTimestamp").cloned())
                        .is_some_and(|t| !t.is_null())
                })
                .collect();
            if pending.is_empty() {
                return;
            }
            for ns in pending {
                let _ = self.finalize_namespace(&ns.cluster, &ns.name).await;
            }
            let _ = self.registry.cache().wait_fresh().await;
        }
    }

    /// Deletes everything in a terminating namespace and reports progress in its conditions; once it
    /// is empty, releases the finalizer. Returns whether the namespace is done.
    async fn finalize_namespace(
        &self,
        cluster: &LogicalClusterName,
        namespace: &str,
    ) -> Result<bool, ApiError> {
        let set = self.apis.for_cluster(cluster);
        let def_of = |obj: &crate::watch_cache::CachedObject| served_resource(&set, obj);
        let mut totals = ContentTotals::default();
        let mut served = 0usize;
        for obj in self
            .registry
            .cache()
            .objects_in_namespace(cluster, namespace)
        {
            let Some(def) = def_of(&obj) else {
                continue;
            };
            served += 1;
            let at = ObjectRef {
                cluster,
                namespace: Some(namespace),
                name: &obj.name,
            };
            if let Err(e) = self.registry.delete_if_present(&def, at).await {
                let message = format!("{}: {}", def.qualified_resource(), e.message);
                if !totals.errors.contains(&message) {
                    totals.errors.push(message);
                }
            }
        }
        // What is left once the deletions above are visible: objects waiting for finalizers.
        let _ = self.registry.cache().wait_fresh().await;
        let left = self
            .registry
            .cache()
            .objects_in_namespace(cluster, namespace);
        for obj in &left {
            if let Some(def) = def_of(obj) {
                let finalizers = obj
                    .value()
                    .map(|v| crate::registry::metadata::finalizers(&v))
                    .unwrap_or_default();
                totals.count(&def.group, &def.plural, &finalizers);
            }
        }
        self.report_namespace_conditions(cluster, namespace, &totals)
            .await;
        if !totals.errors.is_empty() || (served > 0 && !left.is_empty()) {
            return Ok(false);
        }
        self.release_namespace(cluster, namespace).await?;
        Ok(true)
    }

    /// Deletes one object of a logical cluster being deleted; gone or already going is fine.
    async fn delete_content(
        &self,
        cluster: &LogicalClusterName,
        def: &ResourceDef,
        obj: &crate::watch_cache::CachedObject,
    ) -> Result<(), ApiError> {
        let at = ObjectRef {
            cluster,
            namespace: obj.namespace.as_deref(),
            name: &obj.name,
        };
        match self
            .registry
            .delete(def, at, &DeleteOptions::default())
            .await
        {
            Err(e) if !e.is_not_found() && !e.is_conflict_or_exists() => Err(e),
            _ => Ok(()),
        }
    }

    /// A namespace of a logical cluster being deleted: removed at once when it is empty and
    /// nothing but Kubernetes' own finalizer would hold it (nobody waits on its conditions: the
    /// whole LC is going); otherwise deleted as any namespace, content first.
    async fn delete_namespace_of_deleted_cluster(
        &self,
        cluster: &LogicalClusterName,
        def: &ResourceDef,
        ns: &crate::watch_cache::CachedObject,
    ) -> Result<(), ApiError> {
        let empty = self
            .registry
            .cache()
            .objects_in_namespace(cluster, &ns.name)
            .is_empty();
        if empty
            && ns
                .json
                .parse::<FinalizersOnly>()
                .is_ok_and(|f| f.only_kubernetes())
        {
            match self
                .registry
                .store()
                .delete_version(&ns.key, ns.revision)
                .await
            {
                Ok(revision) => {
                    self.registry.cache().note_write(revision);
                    return Ok(());
                }
                // Changed or gone meanwhile: the ordinary path decides.
                Err(StoreError::Conflict { .. } | StoreError::NotFound { .. }) => {}
                Err(err) => return Err(crate::registry::store_error(def, &ns.name, err)),
            }
        }
        self.delete_content(cluster, def, ns).await
    }

    /// Removes the `kubernetes` finalizer of an emptied, terminating namespace, which ends it: the
    /// update deletes the namespace in the same write when nothing else holds it (a concurrent
    /// condition report only makes the update retry).
    async fn release_namespace(
        &self,
        cluster: &LogicalClusterName,
        namespace: &str,
    ) -> Result<(), ApiError> {
        let Some(ns_def) = self.builtin("", "namespaces") else {
            return Ok(());
        };
        let at = ObjectRef {
            cluster,
            namespace: None,
            name: namespace,
        };
        match self
            .registry
            .finalize(&ns_def, at, NAMESPACE_FINALIZER)
            .await
        {
            Err(e) if !e.is_not_found() => Err(e),
            _ => Ok(()),
        }
    }
}

impl ApiServer {
    /// Writes the namespace's deletion conditions when they changed (no write otherwise).
    async fn report_namespace_conditions(
        &self,
        cluster: &LogicalClusterName,
        namespace: &str,
        totals: &ContentTotals,
    ) {
        let Some(ns_def) = self.builtin("", "namespaces") else {
            return;
        };
        let at = ObjectRef {
            cluster,
            namespace: None,
            name: namespace,
        };
        let now = crate::registry::metadata::now_rfc3339();
        let result = self
            .registry
            .update(
                &ns_def,
                at,
                UpdateKind::Status,
                WriteOptions::default(),
                |old| {
                    let mut new = old.clone();
                    let conditions = namespace_conditions::updated(
                        old.pointer("/status/conditions"),
                        totals,
                        &now,
                    );
                    if let Some(m) = new.as_object_mut() {
                        let status = m.entry("status").or_insert_with(|| json!({}));
                        if let Some(status) = status.as_object_mut() {
                            status.insert("conditions".into(), json!(conditions));
                        }
                    }
                    if let Some(m) = new.get_mut("metadata").and_then(|m| m.as_object_mut()) {
                        m.remove("resourceVersion");
                    }
                    Ok(new)
                },
            )
            .await;
        match result {
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                tracing::warn!(%cluster, %namespace, error = %e, "reporting namespace deletion conditions failed")
            }
        }
    }
}

/// The resource of `set` a cached object belongs to (by its key's resource prefix).
fn served_resource(
    set: &crate::discovery::ApiSet,
    obj: &crate::watch_cache::CachedObject,
) -> Option<Arc<ResourceDef>> {
    // By the key's resource prefix: one map lookup, not a key prefix built per resource.
    crate::watch_cache::resource_prefix(&obj.key)
        .and_then(|prefix| set.by_key_prefix(prefix))
        .cloned()
}

/// What [`ApiServer::delete_cluster_content_releasing`] came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentDeletion {
    /// Objects left: waiting for finalizers of their own, child workspaces still going, ...
    pub left: usize,
    /// Whether the releases asked for were written, with the last of the content.
    pub released: bool,
    /// What is left, in kcp's words (see [`remaining_message`]); empty when nothing is.
    pub remaining: String,
}

/// kcp's account of what holds a deleted logical cluster's content, for its
/// `WorkspaceContentDeleted` condition: the objects left per resource, and the finalizers they
/// wait for, each sorted.
fn remaining_message(left: &[(Arc<ResourceDef>, Arc<crate::watch_cache::CachedObject>)]) -> String {
    use std::collections::BTreeMap;
    let mut resources: BTreeMap<String, usize> = BTreeMap::new();
    let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
    // Only the finalizers are read, and only from objects that have some: a tree's root is
    // asked this with thousands of child workspaces going.
    #[derive(serde::Deserialize, Default)]
    struct Meta {
        #[serde(default)]
        finalizers: Vec<String>,
    }
    #[derive(serde::Deserialize)]
    struct Held {
        #[serde(default)]
        metadata: Meta,
    }
    for (def, obj) in left {
        *resources
            .entry(format!("{}.{}", def.plural, def.group))
            .or_default() += 1;
        if !obj.json.may_contain(b"\"finalizers\"") {
            continue;
        }
        let held = obj.json.parse::<Held>().map(|h| h.metadata.finalizers);
        for f in held.unwrap_or_default() {
            *finalizers.entry(f).or_default() += 1;
        }
    }
    let list = |counts: BTreeMap<String, usize>, how: &str| -> Vec<String> {
        let mut items: Vec<String> = counts
            .into_iter()
            .map(|(name, n)| format!("{name} {how} {n} resource instances"))
            .collect();
        // kcp sorts the sentences themselves.
        items.sort();
        items
    };
    let mut parts = Vec::new();
    if !resources.is_empty() {
        parts.push(format!(
            "Some resources are remaining: {}",
            list(resources, "has").join(", ")
        ));
    }
    if !finalizers.is_empty() {
        parts.push(format!(
            "Some content in the logical cluster has finalizers remaining: {}",
            list(finalizers, "in").join(", ")
        ));
    }
    parts.join("; ")
}

/// What the several-to-a-write pass over a cluster's content did.
enum Unheld {
    Nothing,
    Deleted,
    /// Everything, and the releases with it.
    Released,
}

/// Hands the finalizer every namespace whose deletion starts, whoever started it (a request, the
/// garbage collector, a test through the registry), by following the namespaces in the watch cache.
fn spawn_namespace_follower(server: &Arc<ApiServer>) {
    let Some(ns_def) = server.builtin("", "namespaces") else {
        return;
    };
    let prefix = crate::registry::keyspace(&ns_def)
        .all_clusters()
        .to_string();
    let weak = Arc::downgrade(server);
    let cache = server.registry.cache().clone();
    let shutdown = server.shutdown.clone();
    tokio::spawn(async move {
        let every_cluster = crate::watch_cache::Scope {
            cluster: None,
            namespace: None,
        };
        while !shutdown.is_cancelled() {
            let Ok(mut sub) = cache.subscribe(&prefix, every_cluster.clone(), None) else {
                return;
            };
            // Deletions that started before this subscription (first start, or after a cut-off).
            let started: Vec<_> = cache
                .list(&prefix, None)
                .into_iter()
                .filter(|ns| ns.is_deleting())
                .collect();
            let Some(server) = weak.upgrade() else { return };
            for ns in started {
                server.namespaces.enqueue(&ns.cluster, &ns.name);
            }
            drop(server);
            loop {
                let item = tokio::select! {
                    item = sub.rx.recv() => item,
                    _ = shutdown.cancelled() => return,
                };
                let event = match item {
                    Some(crate::watch_cache::WatchItem::Event(event)) => event,
                    Some(_) => continue,
                    None => break,
                };
                let began = event.kind != crate::watch_cache::CacheEventType::Deleted
                    && event.object.is_deleting()
                    && !event.prev.as_deref().is_some_and(|o| o.is_deleting());
                if began {
                    let Some(server) = weak.upgrade() else { return };
                    server
                        .namespaces
                        .enqueue(&event.object.cluster, &event.object.name);
                }
            }
        }
    });
}

/// Runs namespace finalization until the server shuts down; namespaces still holding objects with
/// finalizers of their own are retried every second.
pub fn spawn_namespace_finalizer(
    server: Arc<ApiServer>,
    mut rx: mpsc::UnboundedReceiver<(LogicalClusterName, String)>,
) {
    spawn_namespace_follower(&server);
    let weak = Arc::downgrade(&server);
    let shutdown = server.shutdown.clone();
    drop(server);
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                n = rx.recv() => n,
                _ = shutdown.cancelled() => None,
            };
            let Some((cluster, namespace)) = next else {
                return;
            };
            let Some(server) = weak.upgrade() else { return };
            let done = match server.finalize_namespace(&cluster, &namespace).await {
                Ok(done) => done,
                Err(err) => {
                    tracing::warn!(%cluster, %namespace, error = %err, "namespace finalization failed; retrying");
                    false
                }
            };
            if done {
                server.namespaces.finished(&cluster, &namespace);
            } else {
                let tx = server.namespaces.tx.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    let _ = tx.send((cluster, namespace));
                });
            }
        }
    });
}

/// Deletions of one logical cluster's content in flight at once.
const CONTENT_DELETIONS_AT_ONCE: usize = 16;

/// How much history the store keeps for watches and paginated lists (kube-apiserver compacts every 5 minutes).
pub const COMPACTION_INTERVAL: Duration = Duration::from_secs(300);

/// Compacts the store every interval to the revision it had one interval earlier, so history stays
/// bounded while resuming watches and continuing lists within the window keep working.
pub fn spawn_compactor(server: &Arc<ApiServer>, interval: Duration) {
    let store = server.config.store.clone();
    let cache = server.registry.cache().clone();
    let shutdown = server.shutdown.clone();
    tokio::spawn(async move {
        let mut previous = cache.revision();
        let mut compacted = 0;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = shutdown.cancelled() => return,
            }
            let now = cache.revision();
            if previous > compacted {
                match store.compact(previous).await {
                    Ok(()) => {
                        compacted = previous;
                        tracing::debug!(revision = previous, "compacted the store");
                    }
                    Err(err) => {
                        tracing::warn!(revision = previous, error = %err, "compaction failed")
                    }
                }
            }
            previous = now;
        }
    });
}

/// Runs `delete` for every item, [`CONTENT_DELETIONS_AT_ONCE`] at a time: each deletion waits for
/// a commit, and concurrent ones share it.
async fn in_batches<'a, T, F, Fut>(items: &'a [T], delete: F) -> Result<(), ApiError>
where
    F: Fn(&'a T) -> Fut,
    Fut: std::future::Future<Output = Result<(), ApiError>>,
{
    for batch in items.chunks(CONTENT_DELETIONS_AT_ONCE) {
        for done in futures::future::join_all(batch.iter().map(&delete)).await {
            done?;
        }
    }
    Ok(())
}

/// Whether something keeps `obj` from going at once: a deletion under way, a finalizer, or (for a
/// namespace) any finalizer in its spec but Kubernetes' own, or its kind's own rule.
fn is_held(def: &ResourceDef, obj: &crate::watch_cache::CachedObject, is_namespace: bool) -> bool {
    if obj.is_deleting() {
        return true;
    }
    if is_namespace {
        return !obj
            .json
            .parse::<FinalizersOnly>()
            .is_ok_and(|f| f.only_kubernetes());
    }
    obj.value().map_or(true, |v| {
        !crate::registry::metadata::finalizers(&v).is_empty() || def.strategy.blocks_deletion(&v)
    })
}

/// A namespace's finalizers (serde skips the rest without allocating).
#[derive(serde::Deserialize)]
struct FinalizersOnly {
    #[serde(default)]
    metadata: MetaFinalizers,
    #[serde(default)]
    spec: MetaFinalizers,
}

#[derive(serde::Deserialize, Default)]
struct MetaFinalizers {
    #[serde(default)]
    finalizers: Vec<String>,
}

impl FinalizersOnly {
    /// Nothing but `kubernetes` (the namespace controller's own) holds the namespace.
    fn only_kubernetes(&self) -> bool {
        self.metadata.finalizers.is_empty()
            && self
                .spec
                .finalizers
                .iter()
                .all(|f| f == NAMESPACE_FINALIZER)
    }
}
