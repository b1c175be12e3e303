//! The shape the service-account and root-CA controllers share: one named object that every live
//! namespace of every logical cluster must have, created when the namespace appears, created again
//! when deleted, and put back when edited. One pool of workers serves the whole shard.
//!
//! A namespace the shard creates brings the object along in its own store write (a registry
//! companion), so the usual case costs the controller no write at all; the controller covers what
//! that leaves out (namespaces from before, an object deleted or edited later).

use std::sync::{Arc, Weak};
use std::time::Duration;

use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::registry::{Companion, ObjectRef, UpdateKind, WriteOptions, keyspace};
use kcp_apiserver::watch_cache::{CacheEventType, CachedObject};
use serde_json::Value;

use crate::feed::{Change, Feed};
use crate::workqueue::{Outcome, WorkQueue};

/// How soon a namespace whose reconcile failed is looked at again; doubled on each further failure
/// (a quota may refuse the object for a long time), up to [`MAX_RETRY_DELAY`].
const RETRY_DELAY: Duration = Duration::from_secs(1);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(300);
/// Namespaces reconciled at once: their writes share the store's commits.
const WORKERS: usize = 8;

/// The object a [`spawn`]ed controller keeps in every namespace.
pub(crate) trait NamespaceObject: Send + Sync + 'static {
    /// For logs.
    fn controller(&self) -> &'static str;
    /// Its resource.
    fn def(&self) -> &Arc<ResourceDef>;
    /// Its name in every namespace.
    fn name(&self) -> &'static str;
    /// The object to create.
    fn desired(&self) -> Value;
    /// `current` with any drift undone, or `None` when it is as it should be.
    fn corrected(&self, current: &Value) -> Option<Value>;
    /// Whether the cached object is certainly as it should be, told without building it (most
    /// reconciles find it so: they follow the object's own creation). `false` sends the object
    /// through [`NamespaceObject::corrected`].
    fn as_desired(&self, _current: &CachedObject) -> bool {
        false
    }
    /// Whether its content is kept as [`NamespaceObject::corrected`] says, or only its existence
    /// (then an existing object is not even read).
    fn keeps_content(&self) -> bool {
        true
    }
}

pub fn builtin(group: &str, plural: &str) -> Option<Arc<ResourceDef>> {
    kcp_api_types::builtin::catalogue()
        .into_iter()
        .find(|d| d.is(group, plural))
        .map(Arc::new)
}

/// Deleted, or in phase Terminating (as Kubernetes' controllers check a namespace's phase). Read
/// without building the object: this runs for every namespace of the shard at start-up.
fn is_terminating(ns: &CachedObject) -> bool {
    #[derive(serde::Deserialize, Default)]
    struct Status {
        #[serde(default)]
        phase: String,
    }
    #[derive(serde::Deserialize)]
    struct PhaseOnly {
        #[serde(default)]
        status: Status,
    }
    ns.is_deleting()
        || (ns.json.may_contain(b"Terminating")
            && ns
                .json
                .parse::<PhaseOnly>()
                .is_ok_and(|o| o.status.phase == "Terminating"))
}

/// A create refused because the namespace is gone or going: nothing to do there.
fn namespace_unavailable(err: &ApiError) -> bool {
    err.is_not_found()
        || (err.is_forbidden()
            && err
                .details
                .causes
                .iter()
                .any(|c| c.reason == "NamespaceTerminating"))
}

struct Controller<O> {
    server: Weak<ApiServer>,
    namespaces: Arc<ResourceDef>,
    logical_clusters: Option<Arc<ResourceDef>>,
    object: O,
}

impl<O: NamespaceObject> Controller<O> {
    /// What a new namespace brings along: the object, unless the namespace or its LC is going.
    fn companions(
        &self,
        def: &ResourceDef,
        cluster: &LogicalClusterName,
        ns: &Value,
    ) -> Vec<Companion> {
        let name = ns
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !def.is("", "namespaces") || name.is_empty() {
            return Vec::new();
        }
        let terminating = ns.pointer("/metadata/deletionTimestamp").is_some()
            || ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating");
        if terminating || self.lc_deleting(cluster) {
            return Vec::new();
        }
        vec![Companion {
            def: self.object.def().clone(),
            cluster: cluster.clone(),
            namespace: Some(name.to_string()),
            object: self.object.desired(),
        }]
    }

    /// A deleting LC's content is on its way out: recreating it there would only make the
    /// deletion find it again (measured: most LCs of a deleted tree waited a recheck for it).
    fn lc_deleting(&self, cluster: &str) -> bool {
        let (Some(lcs), Some(server)) = (&self.logical_clusters, self.server.upgrade()) else {
            return false;
        };
        server
            .registry()
            .cache()
            .get(&keyspace(lcs).object(cluster, None, "cluster"))
            .is_some_and(|lc| lc.is_deleting())
    }

    fn all_namespaces(&self, server: &ApiServer) -> Vec<(LogicalClusterName, String)> {
        server
            .registry()
            .cache()
            .list(keyspace(&self.namespaces).all_clusters(), None)
            .iter()
            .map(|ns| (ns.cluster.clone(), ns.name.clone()))
            .collect()
    }

    async fn reconcile(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        namespace: &str,
    ) -> Result<(), ApiError> {
        let registry = server.registry();
        let ns_key = keyspace(&self.namespaces).object(cluster, None, namespace);
        match registry.cache().get(&ns_key) {
            Some(ns) if !is_terminating(&ns) => {}
            _ => return Ok(()),
        }
        if self.lc_deleting(cluster) {
            return Ok(());
        }
        let def = self.object.def();
        let key = keyspace(def).object(cluster, Some(namespace), self.object.name());
        let Some(current) = registry.cache().get(&key) else {
            let created = registry
                .create(
                    def,
                    cluster,
                    Some(namespace),
                    self.object.desired(),
                    WriteOptions::default(),
                )
                .await;
            return match created {
                Ok(_) => Ok(()),
                Err(e) if e.is_conflict_or_exists() || namespace_unavailable(&e) => Ok(()),
                Err(e) => Err(e),
            };
        };
        if !self.object.keeps_content()
            || self.object.as_desired(&current)
            || self
                .object
                .corrected(&current.value().map_err(ApiError::internal)?)
                .is_none()
        {
            return Ok(());
        }
        let at = ObjectRef {
            cluster,
            namespace: Some(namespace),
            name: self.object.name(),
        };
        let updated = registry
            .update(def, at, UpdateKind::Main, WriteOptions::default(), |old| {
                Ok(self.object.corrected(old).unwrap_or_else(|| old.clone()))
            })
            .await;
        match updated {
            Ok(_) => Ok(()),
            // Deleted meanwhile: its deletion event brings it back here.
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// What a change of a namespace or of one of the objects asks for.
    fn on_change(
        &self,
        server: &ApiServer,
        change: Change,
        queue: &WorkQueue<(LogicalClusterName, String)>,
        is_namespace: bool,
    ) {
        match change {
            Change::Resync => {
                for ns in self.all_namespaces(server) {
                    queue.add(ns);
                }
            }
            Change::Event(event) => {
                let obj = &event.object;
                if is_namespace {
                    if event.kind != CacheEventType::Deleted {
                        queue.add((obj.cluster.clone(), obj.name.clone()));
                    }
                } else if obj.name == self.object.name()
                    && let Some(ns) = &obj.namespace
                {
                    queue.add((obj.cluster.clone(), ns.clone()));
                }
            }
        }
    }
}

/// Runs the controller for `object` until the server shuts down.
pub(crate) fn spawn<O: NamespaceObject>(server: Arc<ApiServer>, object: O) {
    let Some(namespaces) = builtin("", "namespaces") else {
        return;
    };
    let cache = server.registry().cache().clone();
    let shutdown = server.shutdown_token();
    let mut namespace_feed = Feed::new(cache.clone(), keyspace(&namespaces).all_clusters());
    let mut object_feed = Feed::new(cache, keyspace(object.def()).all_clusters());
    let controller = Arc::new(Controller {
        server: Arc::downgrade(&server),
        namespaces,
        logical_clusters: builtin("core.kcp.io", "logicalclusters"),
        object,
    });
    let source = Arc::downgrade(&controller);
    server
        .registry()
        .add_companions(Arc::new(move |def, cluster, ns| {
            source
                .upgrade()
                .map(|c| c.companions(def, cluster, ns))
                .unwrap_or_default()
        }));
    let queue = WorkQueue::new(RETRY_DELAY, MAX_RETRY_DELAY);
    drop(server);
    let worker = controller.clone();
    queue.spawn_workers(WORKERS, shutdown.clone(), move |ns: (LogicalClusterName, String)| {
        let controller = worker.clone();
        async move {
            let Some(server) = controller.server.upgrade() else {
                return Outcome::Done;
            };
            Outcome::of(controller.reconcile(&server, &ns.0, &ns.1).await, |err| {
                tracing::warn!(controller = controller.object.controller(), cluster = %ns.0, namespace = %ns.1, error = %err, "reconcile failed; retrying");
            })
        }
    });
    tokio::spawn(async move {
        // Listed here, not before spawning: at start-up that is every namespace of the shard, and
        // the shard's listener should not wait for it.
        let all = match controller.server.upgrade() {
            Some(server) => controller.all_namespaces(&server),
            None => return,
        };
        for (i, ns) in all.into_iter().enumerate() {
            queue.add(ns);
            if i % 1024 == 0 {
                tokio::task::yield_now().await;
            }
        }
        loop {
            let (change, is_namespace) = tokio::select! {
                change = namespace_feed.next() => (change, true),
                change = object_feed.next() => (change, false),
                _ = shutdown.cancelled() => return,
            };
            let Some(server) = controller.server.upgrade() else {
                return;
            };
            controller.on_change(&server, change, &queue, is_namespace);
        }
    });
}
