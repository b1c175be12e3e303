//! The CRD controller: one task for every logical cluster of the shard, fed by the watch cache.
//!
//! For each cluster whose CRDs changed it (1) decides which CRDs' names are accepted (the oldest
//! CRD keeps a contested name), (2) writes the `NamesAccepted`/`Established`/`Terminating`
//! conditions and `acceptedNames`, (3) points the cluster at its API set, and (4) for a deleted
//! CRD deletes its custom resources, then releases the cleanup finalizer.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use kcp_api_types::ResourceDef;
use kcp_api_types::builtin::crd::CLEANUP_FINALIZER;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::{ServedCrd, has_cleanup_finalizer};
use crate::ApiServer;
use crate::registry::metadata::now_rfc3339;
use crate::registry::metadata::str_at;
use crate::registry::{ObjectRef, UpdateKind, WriteOptions, keyspace};
use crate::watch_cache::{Scope, WatchItem};

/// How soon a cluster with a CRD still being cleaned up (custom resources with finalizers) is looked at again.
const CLEANUP_RETRY: Duration = Duration::from_secs(1);

/// Asks the controller to look at a cluster again.
#[derive(Clone)]
pub struct Requeue(mpsc::UnboundedSender<LogicalClusterName>);

impl Requeue {
    pub fn new() -> (Requeue, mpsc::UnboundedReceiver<LogicalClusterName>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Requeue(tx), rx)
    }

    pub fn cluster(&self, cluster: &LogicalClusterName) {
        let _ = self.0.send(cluster.clone());
    }
}

fn is_deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// The names a CRD claims in its group: resource names and kind names are separate spaces.
fn claimed_names(crd: &Value) -> (Vec<String>, Vec<String>) {
    let names = crd.pointer("/spec/names").cloned().unwrap_or_default();
    let mut resources = vec![str_at(&names, "/plural").to_string()];
    let singular = str_at(&names, "/singular");
    if !singular.is_empty() {
        resources.push(singular.to_string());
    }
    if let Some(short) = names.get("shortNames").and_then(Value::as_array) {
        resources.extend(short.iter().filter_map(|s| s.as_str().map(str::to_string)));
    }
    let mut kinds = vec![str_at(&names, "/kind").to_string()];
    let list_kind = str_at(&names, "/listKind");
    if !list_kind.is_empty() {
        kinds.push(list_kind.to_string());
    }
    (resources, kinds)
}

/// Kubernetes' naming check of one CRD against the names other CRDs of its group hold: each
/// requested name that is free is accepted (onto what was accepted before); the condition names
/// the last conflict found, in Kubernetes' order (plural, singular, short names, kind, list kind).
fn check_names(
    crd: &Value,
    resources: &HashSet<String>,
    kinds: &HashSet<String>,
) -> (Option<(&'static str, String)>, Value) {
    let names = crd.pointer("/spec/names").cloned().unwrap_or_default();
    let mut accepted = match crd.pointer("/status/acceptedNames") {
        Some(Value::Object(m)) => m.clone(),
        _ => serde_json::Map::from_iter([
            ("plural".to_string(), json!("")),
            ("kind".to_string(), json!("")),
        ]),
    };
    let mut conflict = None;
    for (field, reason, taken) in [
        ("plural", "PluralConflict", resources),
        ("singular", "SingularConflict", resources),
    ] {
        claim(&names, field, reason, taken, &mut accepted, &mut conflict);
    }
    let short: Vec<&str> = (names.get("shortNames").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let clashes: Vec<String> = short
        .iter()
        .filter(|s| resources.contains(**s))
        .map(|s| in_use(s))
        .collect();
    match clashes.len() {
        0 if !short.is_empty() => {
            accepted.insert("shortNames".into(), json!(short));
        }
        0 => {}
        1 => conflict = Some(("ShortNamesConflict", clashes[0].clone())),
        _ => conflict = Some(("ShortNamesConflict", format!("[{}]", clashes.join(", ")))),
    }
    for (field, reason) in [("kind", "KindConflict"), ("listKind", "ListKindConflict")] {
        claim(&names, field, reason, kinds, &mut accepted, &mut conflict);
    }
    if let Some(categories) = names.get("categories") {
        accepted.insert("categories".into(), categories.clone());
    }
    (conflict, Value::Object(accepted))
}

fn in_use(name: &str) -> String {
    format!("{name:?} is already in use")
}

/// One requested name of `field`: accepted when free, else the conflict `reason`.
fn claim(
    names: &Value,
    field: &str,
    reason: &'static str,
    taken: &HashSet<String>,
    accepted: &mut serde_json::Map<String, Value>,
    conflict: &mut Option<(&'static str, String)>,
) {
    let name = str_at(names, &format!("/{field}"));
    if name.is_empty() {
        return;
    }
    if taken.contains(name) {
        *conflict = Some((reason, in_use(name)));
    } else {
        accepted.insert(field.into(), json!(name));
    }
}

fn condition(type_: &str, status: bool, reason: &str, message: &str) -> Value {
    json!({
        "type": type_,
        "status": if status { "True" } else { "False" },
        "reason": reason,
        "message": message,
    })
}

/// Conditions as desired, keeping `lastTransitionTime` of those whose status did not change.
fn merge_conditions(old: &[Value], desired: Vec<Value>) -> Vec<Value> {
    let now = now_rfc3339();
    desired
        .into_iter()
        .map(|mut c| {
            let prior = old
                .iter()
                .find(|o| o.get("type") == c.get("type") && o.get("status") == c.get("status"));
            let time = prior
                .and_then(|p| p.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(now));
            if let Some(m) = c.as_object_mut() {
                m.insert("lastTransitionTime".into(), time);
            }
            c
        })
        .collect()
}

impl ApiServer {
    fn crd_def(&self) -> Option<Arc<ResourceDef>> {
        self.builtin("apiextensions.k8s.io", "customresourcedefinitions")
    }

    /// Brings one cluster's CRDs, conditions and API set up to date.
    pub(crate) async fn reconcile_crds(
        &self,
        cluster: &LogicalClusterName,
    ) -> Result<(), ApiError> {
        let Some(def) = self.crd_def() else {
            return Ok(());
        };
        let prefix = keyspace(&def).cluster(cluster);
        let mut crds: Vec<Value> = self
            .registry
            .cache()
            .list(&prefix, None)
            .iter()
            .filter_map(|o| o.value().ok())
            .collect();
        // Names already accepted stay with their CRD; among the others the oldest wins.
        crds.sort_by_cached_key(|c| {
            let accepted = c
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|x| x["type"] == "NamesAccepted" && x["status"] == "True")
                });
            let revision: i64 = str_at(c, "/metadata/resourceVersion").parse().unwrap_or(0);
            (
                !accepted,
                str_at(c, "/metadata/creationTimestamp").to_string(),
                revision,
                str_at(c, "/metadata/name").to_string(),
            )
        });

        let mut taken: HashMap<String, (HashSet<String>, HashSet<String>)> = HashMap::new();
        let mut accepted = Vec::new();
        let mut status_writes = Vec::new();
        let mut cleanup = Vec::new();
        for crd in &crds {
            let group = str_at(crd, "/spec/group").to_string();
            let (resources, kinds) = claimed_names(crd);
            let (used_resources, used_kinds) = taken.entry(group).or_default();
            let (conflict, partly_accepted) = check_names(crd, used_resources, used_kinds);
            let mut conditions = Vec::new();
            let names_ok = match conflict {
                Some((reason, message)) => {
                    conditions.push(condition("NamesAccepted", false, reason, &message));
                    false
                }
                None => {
                    conditions.push(condition(
                        "NamesAccepted",
                        true,
                        "NoConflicts",
                        "no conflicts found",
                    ));
                    used_resources.extend(resources);
                    used_kinds.extend(kinds);
                    true
                }
            };
            conditions.push(if names_ok {
                condition(
                    "Established",
                    true,
                    "InitialNamesAccepted",
                    "the initial names have been accepted",
                )
            } else {
                condition(
                    "Established",
                    false,
                    "NotAccepted",
                    "not all names are accepted",
                )
            });
            if is_deleting(crd) {
                conditions.push(condition(
                    "Terminating",
                    true,
                    "InstanceDeletionInProgress",
                    "CustomResource deletion is in progress",
                ));
                if has_cleanup_finalizer(crd) {
                    cleanup.push(crd.clone());
                }
            }
            let accepted_names = if names_ok {
                crd.pointer("/spec/names").cloned().unwrap_or_default()
            } else {
                partly_accepted
            };
            let old_conditions: Vec<Value> = crd
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let conditions = merge_conditions(&old_conditions, conditions);
            let mut desired = crd.clone();
            if let Some(status) = desired
                .as_object_mut()
                .map(|m| m.entry("status").or_insert_with(|| json!({})))
                .and_then(Value::as_object_mut)
            {
                status.insert("conditions".into(), Value::Array(conditions));
                status.insert("acceptedNames".into(), accepted_names);
            }
            if desired.get("status") != crd.get("status") {
                status_writes.push((crd, desired.clone()));
            }
            if names_ok {
                accepted.push(desired);
            }
        }
        // Served before any status says Established: a client that sees the condition may use
        // the resource at once (as in Kubernetes, where Established means served).
        let served: Vec<ServedCrd<'_>> = accepted.iter().map(|crd| ServedCrd { crd }).collect();
        self.crds.set_cluster(&self.apis, cluster, &served);
        if !self.role().writes() {
            // The shard writes the conditions and cleans up; a follower only serves.
            return Ok(());
        }
        for (crd, desired) in status_writes {
            self.write_crd_status(&def, cluster, crd, desired).await?;
        }

        for crd in cleanup {
            if self.delete_custom_resources(cluster, &crd).await? {
                self.release_cleanup_finalizer(&def, cluster, &crd).await?;
            } else {
                let requeue = self.crd_requeue.clone();
                let cluster = cluster.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(CLEANUP_RETRY).await;
                    requeue.cluster(&cluster);
                });
            }
        }
        Ok(())
    }

    async fn write_crd_status(
        &self,
        def: &ResourceDef,
        cluster: &LogicalClusterName,
        crd: &Value,
        desired: Value,
    ) -> Result<(), ApiError> {
        let name = str_at(crd, "/metadata/name");
        let status = desired.get("status").cloned().unwrap_or_default();
        let at = ObjectRef {
            cluster,
            namespace: None,
            name,
        };
        let result = self
            .registry
            .update(
                def,
                at,
                UpdateKind::Status,
                WriteOptions::default(),
                |old| {
                    let mut new = old.clone();
                    if let Some(m) = new.as_object_mut() {
                        m.insert("status".into(), status.clone());
                    }
                    Ok(new)
                },
            )
            .await;
        match result {
            Ok(_) => Ok(()),
            // Gone meanwhile: its deletion event brings the controller back.
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Deletes every custom resource of a CRD in a cluster; `true` once none is left.
    async fn delete_custom_resources(
        &self,
        cluster: &LogicalClusterName,
        crd: &Value,
    ) -> Result<bool, ApiError> {
        let group = str_at(crd, "/spec/group");
        let plural = str_at(crd, "/status/acceptedNames/plural");
        let set = self.apis.for_cluster(cluster);
        // Every version shares one storage prefix; any served version can delete.
        let Some(def) = set
            .resources()
            .iter()
            .find(|d| d.is(group, plural) && d.custom_schema.is_some())
            .cloned()
        else {
            return Ok(true);
        };
        self.registry.delete_all_in_cluster(&def, cluster).await
    }

    async fn release_cleanup_finalizer(
        &self,
        def: &ResourceDef,
        cluster: &LogicalClusterName,
        crd: &Value,
    ) -> Result<(), ApiError> {
        let at = ObjectRef {
            cluster,
            namespace: None,
            name: str_at(crd, "/metadata/name"),
        };
        let result = self
            .registry
            .update(def, at, UpdateKind::Main, WriteOptions::default(), |old| {
                let mut new = old.clone();
                if let Some(list) = new
                    .pointer_mut("/metadata/finalizers")
                    .and_then(Value::as_array_mut)
                {
                    list.retain(|f| f != CLEANUP_FINALIZER);
                }
                Ok(new)
            })
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Runs the controller until shutdown: every CRD event (and every requeue) reconciles its cluster.
pub fn spawn(server: Arc<ApiServer>, mut requeued: mpsc::UnboundedReceiver<LogicalClusterName>) {
    let Some(def) = server.crd_def() else {
        return;
    };
    let weak = Arc::downgrade(&server);
    let shutdown = server.shutdown.clone();
    drop(server);
    let prefix = keyspace(&def).all_clusters().to_string();
    tokio::spawn(async move {
        'subscribe: loop {
            let Some(server) = weak.upgrade() else { return };
            let scope = Scope {
                cluster: None,
                namespace: None,
            };
            let mut sub = match server.registry.cache().subscribe(&prefix, scope, None) {
                Ok(sub) => sub,
                Err(err) => {
                    tracing::warn!(error = %err, "CRD controller cannot watch; retrying");
                    drop(server);
                    tokio::time::sleep(CLEANUP_RETRY).await;
                    continue;
                }
            };
            // Everything there is now, then changes.
            let mut pending: BTreeSet<LogicalClusterName> = server
                .registry
                .cache()
                .list(&prefix, None)
                .iter()
                .map(|o| o.cluster.clone())
                .collect();
            pending.extend(server.apis.clusters_of(crate::apis::ApiSource::Crds));
            drop(server);
            loop {
                for cluster in std::mem::take(&mut pending) {
                    let Some(server) = weak.upgrade() else { return };
                    if let Err(err) = server.reconcile_crds(&cluster).await {
                        tracing::warn!(%cluster, error = %err, "CRD reconcile failed; retrying");
                        server.crd_requeue.cluster(&cluster);
                    }
                }
                tokio::select! {
                    item = sub.rx.recv() => match item {
                        Some(WatchItem::Event(event)) => { pending.insert(event.object.cluster.clone()); }
                        Some(WatchItem::Progress(_)) => {}
                        // Cut off (the cache reloaded): start over from a fresh list.
                        None => continue 'subscribe,
                    },
                    cluster = requeued.recv() => match cluster {
                        Some(cluster) => { pending.insert(cluster); }
                        None => return,
                    },
                    _ = shutdown.cancelled() => return,
                }
                // Take whatever else is queued so a burst reconciles each cluster once.
                while let Ok(item) = sub.rx.try_recv() {
                    if let WatchItem::Event(event) = item {
                        pending.insert(event.object.cluster.clone());
                    }
                }
                while let Ok(cluster) = requeued.try_recv() {
                    pending.insert(cluster);
                }
            }
        }
    });
}
