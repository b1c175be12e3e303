//! The workspace controller: one task for every Workspace and LogicalCluster of the shard.
//!
//! A new Workspace is scheduled onto a Shard matching its location selector (this shard is the
//! only one that can take it for now, but the choice goes through the Shard objects in `root`):
//! a random LC name is recorded on the Workspace first, so a retry after a crash reuses it, then
//! the LogicalCluster is created with the workspace's path, type, owner and the initializers of
//! its type chain, and the creator becomes cluster-admin there through the `workspace-admin`
//! ClusterRoleBinding. Then the Workspace gets `spec.cluster` and `spec.URL`, and its phase follows
//! its LogicalCluster's. The `root:universal` initializer is run here too: it creates namespace
//! `default` and removes itself, after which the LC (and so the Workspace) is Ready.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Weak};
use std::time::Duration;

use kcp_api_types::ResourceDef;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::registry::{ObjectRef, UpdateKind, WriteOptions, created_or_existed, keyspace};
use kcp_apiserver::tenancy::{
    OWNER_ANNOTATION, SHARD_ANNOTATION, TypeRef, Types, new_logical_cluster,
    workspace_admin_binding,
};
use kcp_apiserver::watch_cache::CacheEventType;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::feed::{Change, Feed};
use crate::per_namespace::builtin;

/// The LC name chosen for a workspace, written before its LogicalCluster is created.
const CLUSTER_ANNOTATION: &str = "internal.tenancy.kcp.io/cluster";
/// Shards with this annotation take no new workspaces.
const UNSCHEDULABLE_ANNOTATION: &str = "experimental.core.kcp.io/unschedulable";
/// The initializer of the `universal` type in `root`, run by this controller.
const UNIVERSAL_INITIALIZER: &str = "root:universal";
/// Holds a Workspace until its logical cluster is gone (kcp's name).
const WORKSPACE_FINALIZER: &str = "core.kcp.io/logicalcluster";
/// Holds a workspace's LogicalCluster until everything else in the LC is gone.
const CONTENT_FINALIZER: &str = "core.kcp.io/logicalcluster-content";
const RETRY_DELAY: Duration = Duration::from_secs(1);

struct Defs {
    workspaces: Arc<ResourceDef>,
    logical_clusters: Arc<ResourceDef>,
    shards: Arc<ResourceDef>,
    bindings: Arc<ResourceDef>,
    namespaces: Arc<ResourceDef>,
}

/// Starts the controller; it stops with the server.
pub fn spawn(server: Arc<ApiServer>) {
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
    let weak = Arc::downgrade(&server);
    drop(server);
    tokio::spawn(async move {
        tokio::select! {
            _ = stop.cancelled() => {}
            _ = run(weak, defs) => {}
        }
    });
}

/// A workspace by (its LC, its name).
type WorkspaceKey = (String, String);

async fn run(server: Weak<ApiServer>, defs: Defs) {
    let (mut workspaces, mut clusters) = {
        let Some(s) = server.upgrade() else { return };
        let cache = s.registry().cache().clone();
        (
            Feed::new(cache.clone(), keyspace(&defs.workspaces).all_clusters()),
            Feed::new(cache, keyspace(&defs.logical_clusters).all_clusters()),
        )
    };
    let mut due: HashMap<WorkspaceKey, Instant> = HashMap::new();
    let mut clusters_due: HashMap<String, Instant> = HashMap::new();
    let mut resync = true;
    loop {
        let mut queue: BTreeSet<WorkspaceKey> = BTreeSet::new();
        let mut lcs: BTreeSet<String> = BTreeSet::new();
        if resync {
            resync = false;
            let Some(s) = server.upgrade() else { return };
            let cache = s.registry().cache();
            for ws in cache.list(keyspace(&defs.workspaces).all_clusters(), None) {
                queue.insert((ws.cluster.clone(), ws.name.clone()));
            }
            for lc in cache.list(keyspace(&defs.logical_clusters).all_clusters(), None) {
                lcs.insert(lc.cluster.clone());
            }
        } else {
            let next_retry = due.values().chain(clusters_due.values()).min().copied();
            let retry = async {
                match next_retry {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                change = workspaces.next() => match change {
                    Change::Event(e) if e.kind != CacheEventType::Deleted => {
                        queue.insert((e.object.cluster.clone(), e.object.name.clone()));
                    }
                    Change::Event(_) => {}
                    Change::Resync => resync = true,
                },
                change = clusters.next() => match change {
                    Change::Event(e) => follow_cluster(&e, &mut lcs, &mut queue),
                    Change::Resync => resync = true,
                },
                _ = retry => {}
            }
            // Take what else is queued, so a burst is handled in one pass.
            while let Some(change) = workspaces.try_next() {
                match change {
                    Change::Event(e) if e.kind != CacheEventType::Deleted => {
                        queue.insert((e.object.cluster.clone(), e.object.name.clone()));
                    }
                    Change::Event(_) => {}
                    Change::Resync => resync = true,
                }
            }
            while let Some(change) = clusters.try_next() {
                match change {
                    Change::Event(e) => follow_cluster(&e, &mut lcs, &mut queue),
                    Change::Resync => resync = true,
                }
            }
            let now = Instant::now();
            due.retain(|key, at| {
                if *at <= now {
                    queue.insert(key.clone());
                    false
                } else {
                    true
                }
            });
            clusters_due.retain(|lc, at| {
                if *at <= now {
                    lcs.insert(lc.clone());
                    false
                } else {
                    true
                }
            });
        }
        let Some(s) = server.upgrade() else { return };
        for lc in lcs {
            match reconcile_cluster(&s, &defs, &lc).await {
                Ok((owner, again)) => {
                    queue.extend(owner);
                    if again {
                        clusters_due.insert(lc, Instant::now() + RETRY_DELAY);
                    }
                }
                Err(err) => {
                    tracing::warn!(cluster = %lc, error = %err, "logical cluster reconcile failed; retrying");
                    clusters_due.insert(lc, Instant::now() + RETRY_DELAY);
                }
            }
        }
        for key in queue {
            match reconcile_workspace(&s, &defs, &key.0, &key.1).await {
                Ok(false) => {}
                Ok(true) => {
                    due.insert(key, Instant::now() + RETRY_DELAY);
                }
                Err(err) => {
                    tracing::warn!(cluster = %key.0, workspace = %key.1, error = %err, "workspace reconcile failed; retrying");
                    due.insert(key, Instant::now() + RETRY_DELAY);
                }
            }
        }
    }
}

/// A LogicalCluster event: the LC to look at, or (once it is gone) its owning workspace.
fn follow_cluster(
    event: &kcp_apiserver::watch_cache::CacheEvent,
    lcs: &mut BTreeSet<String>,
    queue: &mut BTreeSet<WorkspaceKey>,
) {
    if event.kind != CacheEventType::Deleted {
        lcs.insert(event.object.cluster.clone());
    } else if let Some(owner) = event.object.value().ok().as_ref().and_then(owner_of) {
        queue.insert(owner);
    }
}

/// The workspace owning a LogicalCluster, if a workspace made it.
fn owner_of(lc: &Value) -> Option<WorkspaceKey> {
    (text(lc, "/spec/owner/resource") == "workspaces")
        .then(|| {
            (
                text(lc, "/spec/owner/cluster").to_string(),
                text(lc, "/spec/owner/name").to_string(),
            )
        })
        .filter(|(c, n)| !c.is_empty() && !n.is_empty())
}

fn is_deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
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

/// 16 base-36 characters from a random UUID, as kcp names workspace LCs.
fn random_cluster_name() -> String {
    let digits = kcp_apimachinery::names::base36(uuid::Uuid::new_v4().as_u128());
    // A random u128 has up to 25 base-36 digits; its last 16 are as random as any.
    let start = digits.len().saturating_sub(16);
    format!("{:0>16}", &digits[start..])
}

/// The Workspace's status as its LogicalCluster's state implies.
fn mirrored_status(lc: Option<&Value>) -> Value {
    let Some(lc) = lc else {
        return json!({"phase": "Scheduling"});
    };
    let phase = lc
        .pointer("/status/phase")
        .cloned()
        .unwrap_or(json!("Initializing"));
    let initializers = string_list(lc, "/status/initializers");
    let initialized = initializers.is_empty();
    let mut conditions = vec![json!({"type": "WorkspaceScheduled", "status": "True"})];
    conditions.push(if initialized {
        json!({"type": "WorkspaceInitialized", "status": "True"})
    } else {
        json!({"type": "WorkspaceInitialized", "status": "False", "severity": "Info", "reason": "InitializerExists",
               "message": format!("Initializers still exist: {initializers:?}")})
    });
    let mut status = json!({"phase": phase, "conditions": conditions});
    if !initialized {
        status["initializers"] = json!(initializers);
    }
    status
}

/// Conditions keep their transition time while their status stays.
fn with_transition_times(mut status: Value, old: &Value, now: &str) -> Value {
    let old_conditions = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in conditions.iter_mut() {
            let kept = old_conditions
                .iter()
                .find(|o| o.get("type") == c.get("type") && o.get("status") == c.get("status"))
                .and_then(|o| o.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(now));
            c["lastTransitionTime"] = kept;
        }
    }
    status
}

/// Whether `status` says what `old` already says (transition times aside).
fn same_status(old: &Value, status: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(cs) = v.get_mut("conditions").and_then(Value::as_array_mut) {
            for c in cs {
                if let Some(m) = c.as_object_mut() {
                    m.remove("lastTransitionTime");
                }
            }
        }
        v
    };
    strip(old.get("status").unwrap_or(&Value::Null)) == strip(status)
}

/// Brings one workspace forward; answers whether to look again soon (a deletion under way).
async fn reconcile_workspace(
    server: &ApiServer,
    defs: &Defs,
    cluster: &str,
    name: &str,
) -> Result<bool, ApiError> {
    let registry = server.registry();
    let key = keyspace(&defs.workspaces).object(cluster, None, name);
    let Some(cached) = registry.cache().get(&key) else {
        return Ok(false);
    };
    let ws = cached.value().map_err(ApiError::internal)?;
    if is_deleting(&ws) {
        return delete_workspace(server, defs, cluster, name, &ws).await;
    }
    let at = ObjectRef {
        cluster,
        namespace: None,
        name,
    };
    let scheduled = text(&ws, "/spec/cluster").to_string();
    let lc_name = if scheduled.is_empty() {
        match schedule(server, defs, cluster, name, &ws).await? {
            Some(lc) => lc,
            None => return Ok(false),
        }
    } else {
        scheduled
    };
    let lc_key = keyspace(&defs.logical_clusters).object(&lc_name, None, "cluster");
    let lc = registry.cache().get(&lc_key).and_then(|o| o.value().ok());
    let status = mirrored_status(lc.as_ref());
    if same_status(&ws, &status) {
        return Ok(false);
    }
    match write_status(server, defs, at, &status).await {
        Err(e) if e.code != 404 => Err(e),
        _ => Ok(false),
    }
}

/// A deleted workspace: its LogicalCluster is deleted (which deletes the LC's content, child
/// workspaces included), and once it is gone the workspace is released.
async fn delete_workspace(
    server: &ApiServer,
    defs: &Defs,
    cluster: &str,
    name: &str,
    ws: &Value,
) -> Result<bool, ApiError> {
    if !has_finalizer(ws, WORKSPACE_FINALIZER) {
        return Ok(false);
    }
    let registry = server.registry();
    let lc_name = Some(text(ws, "/spec/cluster"))
        .filter(|c| !c.is_empty())
        .or_else(|| {
            ws.pointer("/metadata/annotations")
                .and_then(|a| a.get(CLUSTER_ANNOTATION))
                .and_then(Value::as_str)
        })
        .map(str::to_string);
    if let Some(lc_name) = lc_name {
        let lc_key = keyspace(&defs.logical_clusters).object(&lc_name, None, "cluster");
        if let Some(lc) = registry.cache().get(&lc_key).and_then(|o| o.value().ok())
            // Only an LC this workspace owns.
            && text(&lc, "/spec/owner/uid") == text(ws, "/metadata/uid")
        {
            if !is_deleting(&lc) {
                let at = ObjectRef {
                    cluster: &lc_name,
                    namespace: None,
                    name: "cluster",
                };
                let deleted = registry
                    .delete(
                        &defs.logical_clusters,
                        at,
                        &kcp_apiserver::registry::DeleteOptions::default(),
                    )
                    .await;
                if let Err(e) = deleted
                    && e.code != 404
                {
                    return Err(e);
                }
            }
            return Ok(true);
        }
    }
    let at = ObjectRef {
        cluster,
        namespace: None,
        name,
    };
    match edit_metadata(server, defs, at, |m| {
        set_finalizer(m, WORKSPACE_FINALIZER, false)
    })
    .await
    {
        Err(e) if e.code != 404 => Err(e),
        _ => Ok(false),
    }
}

/// Changes a Workspace's metadata.
async fn edit_metadata(
    server: &ApiServer,
    defs: &Defs,
    at: ObjectRef<'_>,
    edit: impl Fn(&mut serde_json::Map<String, Value>),
) -> Result<(), ApiError> {
    server
        .registry()
        .update(
            &defs.workspaces,
            at,
            UpdateKind::Main,
            WriteOptions::default(),
            |old| {
                let mut new = old.clone();
                if !new["metadata"].is_object() {
                    new["metadata"] = json!({});
                }
                if let Some(m) = new["metadata"].as_object_mut() {
                    edit(m);
                }
                Ok(new)
            },
        )
        .await
        .map(|_| ())
}

/// The annotations of `meta`, made an object if they were not one.
fn annotations(meta: &mut serde_json::Map<String, Value>) -> &mut serde_json::Map<String, Value> {
    let a = meta.entry("annotations").or_insert_with(|| json!({}));
    if !a.is_object() {
        *a = json!({});
    }
    match a {
        Value::Object(m) => m,
        _ => unreachable!("made an object above"),
    }
}

/// Replaces a Workspace's status, keeping the transition times of unchanged conditions.
async fn write_status(
    server: &ApiServer,
    defs: &Defs,
    at: ObjectRef<'_>,
    status: &Value,
) -> Result<(), ApiError> {
    let now = kcp_apiserver::registry::now_rfc3339();
    server
        .registry()
        .update(
            &defs.workspaces,
            at,
            UpdateKind::Status,
            WriteOptions::default(),
            |old| {
                let mut new = old.clone();
                new["status"] = with_transition_times(status.clone(), old, &now);
                Ok(new)
            },
        )
        .await
        .map(|_| ())
}

/// Schedules a workspace: the LC name it gets, once its LogicalCluster exists; `None` while it
/// cannot be scheduled (its status says why).
async fn schedule(
    server: &ApiServer,
    defs: &Defs,
    cluster: &str,
    name: &str,
    ws: &Value,
) -> Result<Option<String>, ApiError> {
    let registry = server.registry();
    let at = ObjectRef {
        cluster,
        namespace: None,
        name,
    };
    let Some(reference) = ws.pointer("/spec/type").and_then(TypeRef::from_value) else {
        return Ok(None);
    };
    // Only this shard can create LCs here; other shards' objects are candidates for the front
    // proxy's scheduler later.
    let selector = match ws.pointer("/spec/location/selector") {
        Some(s) => kcp_apimachinery::selector::label::from_label_selector(s)
            .map_err(|e| ApiError::internal(e.to_string()))?,
        None => kcp_apimachinery::selector::Selector::everything(),
    };
    let shards = registry.cache().list(
        &keyspace(&defs.shards).cluster(kcp_api_types::tenancy::ROOT),
        None,
    );
    let fits = shards.iter().filter_map(|s| s.value().ok()).any(|shard| {
        text(&shard, "/metadata/name") == server.shard_name()
            && selector.matches_object(&shard)
            && shard
                .pointer(&format!(
                    "/metadata/annotations/{}",
                    UNSCHEDULABLE_ANNOTATION.replace('/', "~1")
                ))
                .is_none()
    });
    if !fits {
        let status = json!({"phase": "Scheduling", "conditions": [{
            "type": "WorkspaceScheduled", "status": "False", "severity": "Error", "reason": "Unschedulable",
            "message": "No available shards to schedule the workspace",
        }]});
        if !same_status(ws, &status) {
            write_status(server, defs, at, &status).await?;
        }
        return Ok(None);
    }
    // Phase one: the name, recorded before anything is created under it.
    let annotation = ws
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(CLUSTER_ANNOTATION))
        .and_then(Value::as_str)
        .map(str::to_string);
    let Some(lc_name) = annotation else {
        let chosen = random_cluster_name();
        // The finalizer too: from now on an LC may exist that only this workspace can delete.
        edit_metadata(server, defs, at, |m| {
            let a = annotations(m);
            a.insert(CLUSTER_ANNOTATION.into(), json!(chosen));
            a.insert(SHARD_ANNOTATION.into(), json!(server.shard_name()));
            set_finalizer(m, WORKSPACE_FINALIZER, true);
        })
        .await?;
        // The annotation's own event brings the workspace back for phase two.
        return Ok(None);
    };
    // Phase two: the LogicalCluster, then the workspace admin, then the workspace's spec.
    let types = Types {
        cache: registry.cache(),
        paths: server.paths(),
    };
    let chain = types.chain(&reference).map_err(ApiError::internal)?;
    let parent_path = types.path_of(cluster);
    let owner_json = ws
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(OWNER_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("{}")
        .to_string();
    let created_by: Value = serde_json::from_str(&owner_json).unwrap_or_else(|_| json!({}));
    let uid = text(ws, "/metadata/uid").to_string();
    let mut lc = new_logical_cluster(
        &format!("{parent_path}:{name}"),
        &reference,
        &chain,
        &created_by,
    );
    lc["metadata"]["finalizers"] = json!([CONTENT_FINALIZER]);
    lc["metadata"]["annotations"][SHARD_ANNOTATION] = json!(server.shard_name());
    lc["spec"]["owner"] = json!({
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "resource": "workspaces",
        "name": name,
        "cluster": cluster,
        "uid": uid,
    });
    match registry
        .create(
            &defs.logical_clusters,
            &lc_name,
            None,
            lc,
            WriteOptions::default(),
        )
        .await
    {
        Ok(_) => {}
        Err(e) if e.code == 409 => {
            // Ours from an earlier attempt, or someone else's: then pick another name.
            let key = keyspace(&defs.logical_clusters).object(&lc_name, None, "cluster");
            let existing = registry.cache().get(&key).and_then(|o| o.value().ok());
            if existing.as_ref().map(|e| text(e, "/spec/owner/uid")) != Some(uid.as_str()) {
                edit_metadata(server, defs, at, |m| {
                    annotations(m).remove(CLUSTER_ANNOTATION);
                })
                .await?;
                return Ok(None);
            }
        }
        Err(e) => return Err(e),
    }
    let username = text(&created_by, "/username");
    if !username.is_empty() {
        let binding = workspace_admin_binding(username);
        created_or_existed(
            registry
                .create(
                    &defs.bindings,
                    &lc_name,
                    None,
                    binding,
                    WriteOptions::default(),
                )
                .await,
        )?;
    }
    let url = format!("{}/clusters/{lc_name}", server.external_url());
    registry
        .update(
            &defs.workspaces,
            at,
            UpdateKind::Main,
            WriteOptions::default(),
            |old| {
                let mut new = old.clone();
                new["spec"]["cluster"] = json!(lc_name);
                new["spec"]["URL"] = json!(url);
                Ok(new)
            },
        )
        .await?;
    Ok(Some(lc_name))
}

/// Runs the `root:universal` initializer of an LC, or deletes the content of a deleted one; answers
/// the LC's owning workspace, if any, and whether to look again soon.
async fn reconcile_cluster(
    server: &ApiServer,
    defs: &Defs,
    cluster: &str,
) -> Result<(Option<WorkspaceKey>, bool), ApiError> {
    let registry = server.registry();
    let key = keyspace(&defs.logical_clusters).object(cluster, None, "cluster");
    let Some(cached) = registry.cache().get(&key) else {
        return Ok((None, false));
    };
    let lc = cached.value().map_err(ApiError::internal)?;
    let owner = owner_of(&lc);
    let at = ObjectRef {
        cluster,
        namespace: None,
        name: "cluster",
    };
    if is_deleting(&lc) {
        if !has_finalizer(&lc, CONTENT_FINALIZER) {
            return Ok((owner, false));
        }
        if server.delete_cluster_content(cluster).await? > 0 {
            return Ok((owner, true));
        }
        let released = registry
            .update(
                &defs.logical_clusters,
                at,
                UpdateKind::Main,
                WriteOptions::default(),
                |old| {
                    let mut new = old.clone();
                    if let Some(m) = new["metadata"].as_object_mut() {
                        set_finalizer(m, CONTENT_FINALIZER, false);
                    }
                    Ok(new)
                },
            )
            .await;
        return match released {
            Err(e) if e.code != 404 => Err(e),
            _ => Ok((owner, false)),
        };
    }
    let initializers = string_list(&lc, "/status/initializers");
    if text(&lc, "/status/phase") != "Initializing"
        || !initializers.iter().any(|i| i == UNIVERSAL_INITIALIZER)
    {
        return Ok((owner, false));
    }
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
    created_or_existed(
        registry
            .create(
                &defs.namespaces,
                cluster,
                None,
                namespace,
                WriteOptions::default(),
            )
            .await,
    )?;
    registry
        .update(
            &defs.logical_clusters,
            at,
            UpdateKind::Status,
            WriteOptions::default(),
            |old| {
                let mut new = old.clone();
                let remaining: Vec<String> = string_list(old, "/status/initializers")
                    .into_iter()
                    .filter(|i| i != UNIVERSAL_INITIALIZER)
                    .collect();
                if remaining.is_empty() {
                    new["status"]["phase"] = json!("Ready");
                }
                new["status"]["initializers"] = json!(remaining);
                Ok(new)
            },
        )
        .await?;
    Ok((owner, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_names_are_sixteen_base36_characters() {
        let a = random_cluster_name();
        assert_eq!(a.len(), 16);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        );
        assert_ne!(a, random_cluster_name());
        assert!(kcp_apimachinery::names::is_valid_cluster_name(&a));
    }

    #[test]
    fn status_follows_the_logical_cluster() {
        assert_eq!(mirrored_status(None)["phase"], "Scheduling");
        let initializing =
            json!({"status": {"phase": "Initializing", "initializers": ["root:universal"]}});
        let s = mirrored_status(Some(&initializing));
        assert_eq!(s["phase"], "Initializing");
        assert_eq!(s["conditions"][1]["reason"], "InitializerExists");
        let ready = json!({"status": {"phase": "Ready", "initializers": []}});
        let s = mirrored_status(Some(&ready));
        assert_eq!(s["phase"], "Ready");
        assert_eq!(s["conditions"][1]["status"], "True");
        assert!(same_status(&json!({"status": s.clone()}), &s));
    }
}
