//! APIBindings, as kcp's `kcp-apibinding` controller binds them. A new binding goes to phase
//! `Binding`; then, each pass, its export is resolved, the export's claims copied, and each of its
//! resources bound unless a CRD or another binding of the logical cluster holds that group and
//! resource (`NamingConflicts`): `status.boundResources` names the schema, its UID and the
//! export's identity hash, and the binding is `Bound`. What the bindings of a logical cluster bind
//! is served there ([`serving`]). Deleting a binding deletes what it bound in the logical
//! cluster, then releases its finalizer.

mod claims;
mod index;
pub mod serving;
mod status;

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use kcp_api_types::ResourceDef;
use kcp_api_types::apis::{BINDING_FINALIZER, GROUP};
use kcp_api_types::conditions::{same_status, with_transition_times};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::hooks::ClusterResolver;
use kcp_apiserver::registry::str_at as text;
use kcp_apiserver::registry::{ObjectRef, UpdateKind, WriteOptions, keyspace, now_rfc3339};
use kcp_apiserver::watch_cache::{CacheEventType, CachedObject};
use kcp_controllers::builtin;
use kcp_controllers::feed::{Change, Feed, Feeds};
use kcp_controllers::workqueue::{Outcome, WorkQueue};
use serde_json::{Value, json};

use self::index::ExportIndex;
use self::status::Conditions;
use crate::Shared;
use crate::locks::{LOCK_ANNOTATION, resource_key};

/// The one LogicalCluster object of every logical cluster.
const LOGICAL_CLUSTER: &str = "cluster";
const RETRY_DELAY: Duration = Duration::from_millis(100);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);
/// A deleting binding whose objects are still going is looked at again this often.
const DELETION_RECHECK: Duration = Duration::from_millis(500);

pub struct Defs {
    pub bindings: Arc<ResourceDef>,
    pub exports: Arc<ResourceDef>,
    pub schemas: Arc<ResourceDef>,
    pub crds: Arc<ResourceDef>,
    pub logical_clusters: Arc<ResourceDef>,
}

impl Defs {
    pub fn new() -> Option<Defs> {
        Some(Defs {
            bindings: builtin(GROUP, "apibindings")?,
            exports: builtin(GROUP, "apiexports")?,
            schemas: builtin(GROUP, "apiresourceschemas")?,
            crds: builtin("apiextensions.k8s.io", "customresourcedefinitions")?,
            logical_clusters: builtin("core.kcp.io", "logicalclusters")?,
        })
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Binding(LogicalClusterName, String),
    /// A logical cluster whose served bindings are to be recomputed.
    Served(LogicalClusterName),
    /// A logical cluster whose lock annotation is to be brought up to date.
    Locks(LogicalClusterName),
}

struct Controller {
    server: Weak<ApiServer>,
    resolver: Option<Arc<dyn ClusterResolver>>,
    defs: Defs,
    queue: Arc<WorkQueue<Key>>,
    index: parking_lot::Mutex<ExportIndex>,
    shared: Arc<Shared>,
}

/// Starts the controller; it stops with the server.
pub fn spawn(
    server: Arc<ApiServer>,
    resolver: Option<Arc<dyn ClusterResolver>>,
    shared: Arc<Shared>,
) {
    let Some(defs) = Defs::new() else {
        tracing::error!("APIBinding controller: a kind is missing; not started");
        return;
    };
    let stop = server.shutdown_token();
    let cache = server.registry().cache().clone();
    let binding_feed = Feed::new(cache.clone(), keyspace(&defs.bindings).all_clusters());
    let export_feed = Feed::new(cache.clone(), keyspace(&defs.exports).all_clusters());
    let schema_feed = Feed::new(cache.clone(), keyspace(&defs.schemas).all_clusters());
    let crd_feed = Feed::new(cache, keyspace(&defs.crds).all_clusters());
    let queue: Arc<WorkQueue<Key>> = WorkQueue::new(RETRY_DELAY, MAX_RETRY_DELAY);
    let controller = Arc::new(Controller {
        server: Arc::downgrade(&server),
        resolver,
        defs,
        queue: queue.clone(),
        index: Default::default(),
        shared,
    });
    drop(server);
    let worker = controller.clone();
    queue.spawn_workers(8, stop.clone(), move |key| {
        let controller = worker.clone();
        async move { controller.reconcile(key).await }
    });
    let c = controller.clone();
    let feeds = Feeds::new().on(binding_feed, move |change| match change {
        Change::Event(e) => {
            let o = &e.object;
            let now = (e.kind != CacheEventType::Deleted)
                .then(|| o.value().ok())
                .flatten();
            (c.index.lock()).set((o.cluster.clone(), o.name.clone()), now.as_ref());
            (c.shared.policies).set_binding(&o.cluster, &o.name, now.as_ref());
            (c.shared.claims).set_binding(&o.cluster, &o.name, now.as_ref());
            c.queue.add(Key::Binding(o.cluster.clone(), o.name.clone()));
            c.queue.add(Key::Served(o.cluster.clone()));
        }
        Change::Resync => c.all(),
    });
    let c = controller.clone();
    let feeds = feeds.on(export_feed, move |change| match change {
        Change::Event(e) => {
            let o = &e.object;
            let now = (e.kind != CacheEventType::Deleted)
                .then(|| o.value().ok())
                .flatten();
            (c.shared.policies).set_export(&o.cluster, &o.name, now.as_ref());
            c.bindings_of_export(o);
        }
        Change::Resync => c.all(),
    });
    let c = controller.clone();
    let feeds = feeds.on(schema_feed, move |change| match change {
        Change::Event(e) => c.bindings_of_schema(&e.object),
        Change::Resync => c.all(),
    });
    // A CRD gone may free a resource a binding could not bind; CRDs are in the lock annotation.
    let c = controller.clone();
    let feeds = feeds.on(crd_feed, move |change| match change {
        Change::Event(e) => {
            c.bindings_in(&e.object.cluster);
            c.queue.add(Key::Locks(e.object.cluster.clone()));
        }
        Change::Resync => c.all(),
    });
    feeds.spawn(stop, move || controller.all());
}

impl Controller {
    fn bindings(&self, server: &ApiServer) -> Vec<Arc<CachedObject>> {
        let cache = server.registry().cache();
        cache.list(keyspace(&self.defs.bindings).all_clusters(), None)
    }

    fn all(&self) {
        let Some(server) = self.server.upgrade() else {
            return;
        };
        let mut index = self.index.lock();
        index.clear();
        let mut schemas_in_use = HashSet::new();
        for b in self.bindings(&server) {
            let binding = b.value().ok();
            index.set((b.cluster.clone(), b.name.clone()), binding.as_ref());
            let bound = binding
                .as_ref()
                .and_then(|b| b.pointer("/status/boundResources"));
            for r in bound.and_then(Value::as_array).into_iter().flatten() {
                schemas_in_use.insert(text(r, "/schema/UID").to_string());
            }
            self.queue
                .add(Key::Binding(b.cluster.clone(), b.name.clone()));
            self.queue.add(Key::Served(b.cluster.clone()));
            self.queue.add(Key::Locks(b.cluster.clone()));
        }
        self.shared.schemas.retain(&schemas_in_use);
        (self.shared.policies).rebuild(server.registry().cache(), &self.defs);
        (self.shared.claims).rebuild(server.registry().cache(), &self.defs);
    }

    fn bindings_in(&self, cluster: &LogicalClusterName) {
        let Some(server) = self.server.upgrade() else {
            return;
        };
        let prefix = keyspace(&self.defs.bindings).cluster(cluster);
        for b in server.registry().cache().list(&prefix, None) {
            self.queue
                .add(Key::Binding(b.cluster.clone(), b.name.clone()));
        }
    }

    /// Every binding whose export is `export` (or that waits for an export of its name).
    fn bindings_of_export(&self, export: &CachedObject) {
        for (cluster, name) in self.index.lock().naming(&export.name) {
            self.queue.add(Key::Binding(cluster, name));
        }
    }

    /// Every binding of a schema of `schema`'s logical cluster: a schema serves from its place.
    fn bindings_of_schema(&self, schema: &CachedObject) {
        for (cluster, name) in self.index.lock().bound_to(&schema.cluster) {
            self.queue.add(Key::Served(cluster.clone()));
            self.queue.add(Key::Binding(cluster, name));
        }
    }

    async fn reconcile(&self, key: Key) -> Outcome {
        let Some(server) = self.server.upgrade() else {
            return Outcome::Done;
        };
        match key {
            Key::Served(cluster) => {
                serving::refresh(&server, &self.defs, &self.shared.schemas, &cluster);
                Outcome::Done
            }
            // A follower's shard writes locks and status.
            Key::Locks(_) | Key::Binding(..) if !server.role().writes() => Outcome::Done,
            Key::Locks(cluster) => match self.write_locks(&server, &cluster).await {
                Ok(()) => Outcome::Done,
                Err(err) => {
                    tracing::warn!(%cluster, error = %err, "resource lock annotation not written; retrying");
                    Outcome::Failed
                }
            },
            Key::Binding(cluster, name) => {
                match self.reconcile_binding(&server, &cluster, &name).await {
                    Ok(outcome) => outcome,
                    Err(err) => {
                        tracing::warn!(%cluster, %name, error = %err, "APIBinding reconcile failed; retrying");
                        Outcome::Failed
                    }
                }
            }
        }
    }

    async fn reconcile_binding(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
    ) -> Result<Outcome, ApiError> {
        let key = keyspace(&self.defs.bindings).object(cluster, None, name);
        let Some(cached) = server.registry().cache().get(&key) else {
            return Ok(Outcome::Done);
        };
        let binding = cached.value().map_err(ApiError::internal)?;
        if binding.pointer("/metadata/deletionTimestamp").is_some() {
            return self.delete(server, cluster, name, &binding).await;
        }
        let mut status = self.desired_status(server, cluster, &binding);
        let mut applied = true;
        if let Ok((_, export)) = self.export_of(server, cluster, &binding) {
            let claims = &self.shared.claims;
            applied = claims::apply(server, claims, cluster, &binding, &export, &mut status).await;
        }
        self.write_status(server, cluster, name, &binding, status)
            .await?;
        // A claim not fully applied is tried again, as kcp's controller retries its error.
        Ok(if applied {
            Outcome::Done
        } else {
            Outcome::Failed
        })
    }

    /// The export a binding refers to: its logical cluster and its stored (v1alpha2) form.
    fn export_of(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        binding: &Value,
    ) -> Result<(LogicalClusterName, Value), String> {
        let name = text(binding, "/spec/reference/export/name");
        let path = text(binding, "/spec/reference/export/path");
        let shown = match path {
            "" => cluster.to_string(),
            p => p.to_string(),
        };
        let not_found = || format!("APIExport {shown}|{name} not found");
        let export_cluster =
            crate::export_cluster(self.resolver.as_deref(), cluster, path).ok_or_else(not_found)?;
        let key = keyspace(&self.defs.exports).object(&export_cluster, None, name);
        let export = (server.registry().cache().get(&key))
            .and_then(|e| e.value().ok())
            .ok_or_else(not_found)?;
        Ok((export_cluster, export))
    }

    /// What the binding's status should be now (kcp's phase, binding and summary reconcilers).
    fn desired_status(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        binding: &Value,
    ) -> Value {
        let mut status = binding.get("status").cloned().unwrap_or_else(|| json!({}));
        let mut conditions = Conditions::of(&status);
        // kcp's phase reconciler marks a new binding Binding and binds it on the next pass; both
        // happen in one pass here, so a binding that binds at once is written once, not twice.
        if text(binding, "/status/phase").is_empty() {
            status["phase"] = json!("Binding");
            conditions.set_false(
                "InitialBindingCompleted",
                "WaitingForEstablished",
                "Info",
                "Waiting for API(s) to be established",
            );
        }
        self.bind(server, cluster, binding, &mut status, &mut conditions);
        conditions.summarize_ready("InitialBindingCompleted");
        status["conditions"] = conditions.into_value();
        status
    }

    fn bind(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        binding: &Value,
        status: &mut Value,
        conditions: &mut Conditions,
    ) {
        let (export_cluster, export) = match self.export_of(server, cluster, binding) {
            Ok(found) => found,
            Err(message) => {
                conditions.set_false("APIExportValid", "APIExportNotFound", "Error", &message);
                return;
            }
        };
        let export_name = text(&export, "/metadata/name").to_string();
        let shown = match text(binding, "/spec/reference/export/path") {
            "" => cluster.to_string(),
            p => p.to_string(),
        };
        status["exportPermissionClaims"] = export
            .pointer("/spec/permissionClaims")
            .cloned()
            .unwrap_or_else(|| json!([]));
        let identity = text(&export, "/status/identityHash").to_string();
        if identity.is_empty() {
            conditions.set_false(
                "APIExportValid",
                "MissingIdentityHash",
                "Warning",
                &format!("APIExport {shown}|{export_name} is missing status.identityHash"),
            );
            return;
        }
        status["apiExportClusterName"] = json!(export_cluster.as_str());
        let resources = (export.pointer("/spec/resources").and_then(Value::as_array))
            .cloned()
            .unwrap_or_default();
        let mut schemas = Vec::new();
        for resource in &resources {
            let schema_name = text(resource, "/schema");
            let key = keyspace(&self.defs.schemas).object(&export_cluster, None, schema_name);
            match server
                .registry()
                .cache()
                .get(&key)
                .and_then(|s| s.value().ok())
            {
                Some(schema) => schemas.push(schema),
                None => {
                    conditions.set_false(
                        "APIExportValid",
                        "InternalError",
                        "Error",
                        &format!("Invalid APIExport. Please contact the APIExport owner to resolve: APIResourceSchema {schema_name:?} not found"),
                    );
                    return;
                }
            }
        }
        let me = text(binding, "/metadata/name");
        let taken = self.taken_here(server, cluster, me);
        let binding_exists = |name: &str| {
            let key = keyspace(&self.defs.bindings).object(cluster, None, name);
            server.registry().cache().get(&key).is_some()
        };
        let mut claimed = false;
        let mut bound = (status.get("boundResources").and_then(Value::as_array))
            .cloned()
            .unwrap_or_default();
        let mut skipped = Vec::new();
        for schema in &schemas {
            let group = text(schema, "/spec/group");
            let plural = text(schema, "/spec/names/plural");
            if let Some(holder) = taken
                .iter()
                .find(|t| t.group == group && t.plural == plural)
            {
                skipped.push(format!("{plural}.{group}:{}", holder.describe()));
                continue;
            }
            // The table settles races the stored objects cannot: a CRD admitted but not yet
            // stored, or another binding of the same resource in this very moment.
            let resource = resource_key(group, plural);
            if let Err(by) =
                (self.shared.locks).claim_for_binding(cluster, &resource, me, binding_exists, false)
            {
                skipped.push(format!("{plural}.{group}:{{{by}}}"));
                continue;
            }
            claimed = true;
            let previous = bound
                .iter()
                .position(|b| text(b, "/group") == group && text(b, "/resource") == plural);
            let mut versions: BTreeSet<String> = previous
                .map(|i| {
                    (bound[i].get("storageVersions").and_then(Value::as_array))
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            versions.extend(storage_version(schema));
            let entry = json!({
                "group": group,
                "resource": plural,
                "schema": {
                    "name": text(schema, "/metadata/name"),
                    "UID": text(schema, "/metadata/uid"),
                    "identityHash": identity,
                },
                "storageVersions": versions,
            });
            match previous {
                Some(i) => bound[i] = entry,
                None => bound.push(entry),
            }
        }
        status["boundResources"] = Value::Array(bound);
        if claimed {
            self.queue.add(Key::Locks(cluster.clone()));
        }
        conditions.set_true("APIExportValid");
        if skipped.is_empty() {
            conditions.set_true("InitialBindingCompleted");
            conditions.set_true("BindingUpToDate");
            status["phase"] = json!("Bound");
        } else {
            let message = format!(
                "Unable to bind APIs because they are bound by other APIBindings or CRDs: map[{}]",
                skipped.join(" ")
            );
            conditions.set_false("BindingUpToDate", "NamingConflicts", "Error", &message);
            if conditions.is_false("InitialBindingCompleted") {
                conditions.set_false(
                    "InitialBindingCompleted",
                    "NamingConflicts",
                    "Error",
                    &message,
                );
            }
        }
    }

    /// The group/resources of `cluster` held by its own CRDs and by its other bindings.
    fn taken_here(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        me: &str,
    ) -> Vec<Holder> {
        let cache = server.registry().cache();
        let mut taken = Vec::new();
        for crd in cache.list(&keyspace(&self.defs.crds).cluster(cluster), None) {
            let Ok(crd) = crd.value() else { continue };
            taken.push(Holder {
                group: text(&crd, "/spec/group").to_string(),
                plural: text(&crd, "/spec/names/plural").to_string(),
                by: format!("CRD {}", text(&crd, "/metadata/name")),
            });
        }
        for b in cache.list(&keyspace(&self.defs.bindings).cluster(cluster), None) {
            if b.name == me {
                continue;
            }
            let Ok(other) = b.value() else { continue };
            for r in (other
                .pointer("/status/boundResources")
                .and_then(Value::as_array))
            .into_iter()
            .flatten()
            {
                taken.push(Holder {
                    group: text(r, "/group").to_string(),
                    plural: text(r, "/resource").to_string(),
                    by: format!("APIBinding {}", b.name),
                });
            }
        }
        taken
    }

    /// Writes `cluster`'s lock annotation on its LogicalCluster when it says something else.
    async fn write_locks(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
    ) -> Result<(), ApiError> {
        let cache = server.registry().cache();
        let crds: Vec<String> = (cache.list(&keyspace(&self.defs.crds).cluster(cluster), None))
            .iter()
            .filter_map(|c| c.value().ok())
            .map(|crd| resource_key(text(&crd, "/spec/group"), text(&crd, "/spec/names/plural")))
            .collect();
        let wanted = self.shared.locks.annotation(cluster, &crds).to_string();
        let key = keyspace(&self.defs.logical_clusters).object(cluster, None, LOGICAL_CLUSTER);
        let current = (cache.get(&key)).and_then(|lc| lc.value().ok());
        let Some(current) = current else {
            return Ok(());
        };
        let annotations = current.pointer("/metadata/annotations");
        if annotations
            .and_then(|a| a.get(LOCK_ANNOTATION))
            .and_then(Value::as_str)
            == Some(&wanted)
        {
            return Ok(());
        }
        let at = ObjectRef {
            cluster,
            namespace: None,
            name: LOGICAL_CLUSTER,
        };
        server
            .registry()
            .update_if_present(
                &self.defs.logical_clusters,
                at,
                UpdateKind::Main,
                WriteOptions::default(),
                |old| {
                    let mut new = old.clone();
                    if !new["metadata"]["annotations"].is_object() {
                        new["metadata"]["annotations"] = json!({});
                    }
                    new["metadata"]["annotations"][LOCK_ANNOTATION] = json!(wanted);
                    Ok(new)
                },
            )
            .await
    }

    async fn write_status(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
        binding: &Value,
        status: Value,
    ) -> Result<(), ApiError> {
        // A new binding gets its finalizer in the same write as its first status: one write
        // (and one version in the watch history) less per binding.
        let finalize = !has_finalizer(binding);
        if !finalize && same_status(binding.get("status"), &status) {
            return Ok(());
        }
        let now = now_rfc3339();
        let at = ObjectRef {
            cluster,
            namespace: None,
            name,
        };
        let kind = if finalize {
            UpdateKind::Whole
        } else {
            UpdateKind::Status
        };
        server
            .registry()
            .update_if_present(
                &self.defs.bindings,
                at,
                kind,
                WriteOptions::default(),
                |old| {
                    let mut new = old.clone();
                    if finalize {
                        with_finalizer(&mut new, true);
                    }
                    new["status"] = with_transition_times(status.clone(), old, &now);
                    Ok(new)
                },
            )
            .await
    }

    async fn set_finalizer(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
        present: bool,
    ) -> Result<(), ApiError> {
        let at = ObjectRef {
            cluster,
            namespace: None,
            name,
        };
        server
            .registry()
            .update_if_present(
                &self.defs.bindings,
                at,
                UpdateKind::Main,
                WriteOptions::default(),
                |old| {
                    let mut new = old.clone();
                    with_finalizer(&mut new, present);
                    Ok(new)
                },
            )
            .await
    }

    /// A deleting binding: what it bound goes from the logical cluster first (served meanwhile
    /// without `create`), then its finalizer.
    async fn delete(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
        binding: &Value,
    ) -> Result<Outcome, ApiError> {
        if !has_finalizer(binding) {
            return Ok(Outcome::Done);
        }
        self.queue.add(Key::Served(cluster.clone()));
        let served = server.apis_of(cluster);
        let mut all_gone = true;
        for r in (binding
            .pointer("/status/boundResources")
            .and_then(Value::as_array))
        .into_iter()
        .flatten()
        {
            let identity = text(r, "/schema/identityHash");
            let def = (served.resources().iter()).find(|d| {
                d.group == text(r, "/group")
                    && d.plural == text(r, "/resource")
                    && d.storage_identity.as_deref() == Some(identity)
            });
            if let Some(def) = def {
                all_gone &= server
                    .registry()
                    .delete_all_in_cluster(def, cluster)
                    .await?;
            }
        }
        if !all_gone {
            return Ok(Outcome::After(DELETION_RECHECK));
        }
        self.set_finalizer(server, cluster, name, false).await?;
        self.shared.locks.release_binding(cluster, name);
        self.queue.add(Key::Locks(cluster.clone()));
        Ok(Outcome::Done)
    }
}

/// Who holds a group/resource in a logical cluster.
struct Holder {
    group: String,
    plural: String,
    by: String,
}

impl Holder {
    fn describe(&self) -> String {
        format!("{{{}}}", self.by)
    }
}

/// Puts the binding finalizer in `binding`'s finalizers (`present`), or takes it out.
fn with_finalizer(binding: &mut Value, present: bool) {
    let mut finalizers: Vec<Value> = (binding.pointer("/metadata/finalizers"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    finalizers.retain(|f| f.as_str() != Some(BINDING_FINALIZER));
    if present {
        finalizers.push(json!(BINDING_FINALIZER));
    }
    binding["metadata"]["finalizers"] = Value::Array(finalizers);
}

fn has_finalizer(binding: &Value) -> bool {
    (binding
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array))
    .is_some_and(|f| f.iter().any(|f| f.as_str() == Some(BINDING_FINALIZER)))
}

/// The storage version of an APIResourceSchema.
fn storage_version(schema: &Value) -> Option<String> {
    (schema.pointer("/spec/versions").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .map(str::to_string)
}
