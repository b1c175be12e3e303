//! The resource quota controller: keeps every ResourceQuota's `status.hard` equal to its `spec.hard`
//! (in canonical quantities) and `status.used` equal to the object counts of its namespace, in every
//! logical cluster of the shard, from one task.
//!
//! Admission (`kcp_apiserver::admission::quota`) raises `used` as creates reserve it; this controller
//! counts from scratch when Kubernetes' controller does: when a quota appears or its `spec.hard`
//! changes, when a counted object is deleted (replenishment), and on a periodic resync, which also
//! gives back usage reserved by creates that then failed.
//!
//! A count must not overwrite a reservation whose object is not written yet, or that slot would be
//! handed out twice. So the controller reads the quota, then makes sure no reserved create is in
//! flight in that namespace (else it comes back shortly), then waits for the cache to reflect every
//! acknowledged write, counts, and writes with the quota's resourceVersion as precondition: a
//! reservation made meanwhile changed that version and the write is retried.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::quantity::Quantity;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::admission::quota::{
    counted_resource, creates_in_flight, quota_def, quota_keyspace, resource_list,
    resource_list_json,
};
use kcp_apiserver::registry::{ObjectRef, UpdateKind, WriteOptions, cache_error, keyspace};
use kcp_apiserver::watch_cache::{CacheEvent, CacheEventType, WatchCache};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::feed::{Change, Feed};

/// How often every quota is recounted (kube-controller-manager's `--resource-quota-sync-period`).
pub const RESYNC_PERIOD: Duration = Duration::from_secs(300);
/// How soon a namespace is looked at again when creates were in flight or the quota changed meanwhile.
const SOON: Duration = Duration::from_millis(50);
/// How soon a namespace whose reconcile failed is looked at again.
const RETRY_DELAY: Duration = Duration::from_secs(1);
/// Deletions queued from the watchers of counted resources before they wait for the controller.
const SIGNAL_QUEUE: usize = 1024;

type NamespaceRef = (LogicalClusterName, String);

enum Signal {
    /// A counted object in this namespace was deleted.
    Namespace(NamespaceRef),
    /// Deletions may have been missed.
    Resync,
}

enum Outcome {
    Done,
    /// Come back soon: creates were in flight, or the quota changed under the write.
    Soon,
}

/// Namespaces to look at again once a deadline passes.
#[derive(Default)]
struct Deferred {
    namespaces: BTreeSet<NamespaceRef>,
    at: Option<Instant>,
}

impl Deferred {
    fn insert(&mut self, ns: NamespaceRef, delay: Duration) {
        self.namespaces.insert(ns);
        self.at.get_or_insert_with(|| Instant::now() + delay);
    }

    /// Waits for the deadline (forever when nothing is deferred); cancel-safe.
    async fn due(&self) {
        match self.at {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    }

    fn take(&mut self) -> BTreeSet<NamespaceRef> {
        self.at = None;
        std::mem::take(&mut self.namespaces)
    }
}

/// Whether a quota change calls for a recount: new hard limits, or a status that does not show them.
fn needs_count(event: &CacheEvent) -> bool {
    let Ok(now) = event.object.value() else {
        return false;
    };
    let hard = resource_list(now.pointer("/spec/hard"));
    let before = event
        .prev
        .as_ref()
        .and_then(|p| p.value().ok())
        .map(|p| resource_list(p.pointer("/spec/hard")));
    before.as_ref() != Some(&hard)
        || resource_list(now.pointer("/status/hard")) != hard
        || now.pointer("/status/used").is_none()
}

struct Controller {
    server: Weak<ApiServer>,
    quota_def: Arc<ResourceDef>,
    /// Resources whose deletions are followed (prefixes across all clusters).
    watched: HashSet<String>,
    signals: mpsc::Sender<Signal>,
    shutdown: CancellationToken,
}

impl Controller {
    fn quota_namespaces(&self, cache: &WatchCache) -> BTreeSet<NamespaceRef> {
        cache
            .list(quota_keyspace().all_clusters(), None)
            .iter()
            .filter_map(|q| Some((q.cluster.clone(), q.namespace.clone()?)))
            .collect()
    }

    /// Follows deletions of a counted resource from now on (one task per resource, for every cluster).
    fn watch_deletions(&mut self, cache: &Arc<WatchCache>, prefix: &str) {
        if !self.watched.insert(prefix.to_string()) {
            return;
        }
        let mut feed = Feed::new(cache.clone(), prefix);
        let signals = self.signals.clone();
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            loop {
                let change = tokio::select! {
                    change = feed.next() => change,
                    _ = shutdown.cancelled() => return,
                };
                let signal = match change {
                    Change::Resync => Signal::Resync,
                    Change::Event(event) if event.kind == CacheEventType::Deleted => {
                        let Some(ns) = event.object.namespace.clone() else {
                            continue;
                        };
                        Signal::Namespace((event.object.cluster.clone(), ns))
                    }
                    Change::Event(_) => continue,
                };
                if signals.send(signal).await.is_err() {
                    return;
                }
            }
        });
    }

    /// How many objects of the resource a quota name counts are in the namespace; 0 when the
    /// cluster does not serve it.
    fn count(
        &mut self,
        server: &ApiServer,
        cluster: &str,
        namespace: &str,
        group: &str,
        plural: &str,
    ) -> i64 {
        let apis = server.apis_of(cluster);
        let Some(def) = apis
            .resources()
            .iter()
            .find(|d| d.is(group, plural) && d.namespaced)
        else {
            return 0;
        };
        let space = keyspace(def);
        let cache = server.registry().cache();
        self.watch_deletions(cache, space.all_clusters());
        let objects = cache.list(&space.namespace(cluster, namespace), None).len();
        i64::try_from(objects).unwrap_or(i64::MAX)
    }

    async fn reconcile(
        &mut self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        namespace: &str,
    ) -> Result<Outcome, ApiError> {
        let registry = server.registry();
        let quotas = registry
            .cache()
            .list(&quota_keyspace().namespace(cluster, namespace), None);
        if quotas.is_empty() {
            return Ok(Outcome::Done);
        }
        if creates_in_flight(registry, cluster, namespace) > 0 {
            return Ok(Outcome::Soon);
        }
        registry.cache().wait_fresh().await.map_err(cache_error)?;
        for quota in quotas {
            let value = quota.value().map_err(ApiError::internal)?;
            let hard = resource_list(value.pointer("/spec/hard"));
            // Usage of names nothing here counts is kept, as Kubernetes keeps what it cannot evaluate.
            let mut used: BTreeMap<String, Quantity> = resource_list(value.pointer("/status/used"));
            used.retain(|name, _| hard.contains_key(name));
            for name in hard.keys() {
                if let Some((group, plural)) = counted_resource(name) {
                    let count = self.count(server, cluster, namespace, &group, &plural);
                    used.insert(name.clone(), Quantity::from_count(count));
                }
            }
            let status =
                json!({"hard": resource_list_json(&hard), "used": resource_list_json(&used)});
            if value.get("status") == Some(&status) {
                continue;
            }
            let at = ObjectRef {
                cluster,
                namespace: Some(namespace),
                name: &quota.name,
            };
            let revision = quota.revision.to_string();
            let written = registry
                .update(
                    &self.quota_def,
                    at,
                    UpdateKind::Status,
                    WriteOptions::default(),
                    |current| {
                        let mut next = current.clone();
                        if let Some(object) = next.as_object_mut() {
                            object.insert("status".into(), status.clone());
                        }
                        // Only over the quota this count started from: a reservation since then retries.
                        if let Some(meta) =
                            next.pointer_mut("/metadata").and_then(Value::as_object_mut)
                        {
                            meta.insert("resourceVersion".into(), json!(revision));
                        }
                        Ok(next)
                    },
                )
                .await;
            match written {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) if e.is_conflict_or_exists() => return Ok(Outcome::Soon),
                Err(e) => return Err(e),
            }
        }
        Ok(Outcome::Done)
    }
}

/// Starts the controller with Kubernetes' resync period; it stops when the server shuts down.
pub fn spawn(server: Arc<ApiServer>) {
    spawn_with_resync(server, RESYNC_PERIOD);
}

/// Starts the controller, recounting every quota each `resync` period.
pub fn spawn_with_resync(server: Arc<ApiServer>, resync: Duration) {
    let Some(quota_def) = quota_def() else {
        return;
    };
    let cache = server.registry().cache().clone();
    let shutdown = server.shutdown_token();
    let (signals, mut signal_rx) = mpsc::channel(SIGNAL_QUEUE);
    let mut quota_feed = Feed::new(cache.clone(), quota_keyspace().all_clusters());
    let mut controller = Controller {
        server: Arc::downgrade(&server),
        quota_def,
        watched: HashSet::new(),
        signals,
        shutdown: shutdown.clone(),
    };
    let mut pending = controller.quota_namespaces(&cache);
    drop(server);
    tokio::spawn(async move {
        let mut soon = Deferred::default();
        let mut retry = Deferred::default();
        let mut resync_timer = tokio::time::interval_at(Instant::now() + resync, resync);
        loop {
            for (cluster, namespace) in std::mem::take(&mut pending) {
                if shutdown.is_cancelled() {
                    return;
                }
                let Some(server) = controller.server.upgrade() else {
                    return;
                };
                match controller.reconcile(&server, &cluster, &namespace).await {
                    Ok(Outcome::Done) => {}
                    Ok(Outcome::Soon) => soon.insert((cluster, namespace), SOON),
                    Err(err) => {
                        tracing::warn!(%cluster, %namespace, error = %err, "quota recount failed; retrying");
                        retry.insert((cluster, namespace), RETRY_DELAY);
                    }
                }
            }
            tokio::select! {
                change = quota_feed.next() => on_quota_change(&controller, &cache, change, &mut pending),
                signal = signal_rx.recv() => match signal {
                    Some(Signal::Namespace(ns)) => { pending.insert(ns); }
                    Some(Signal::Resync) => pending.extend(controller.quota_namespaces(&cache)),
                    None => return,
                },
                _ = soon.due() => pending.append(&mut soon.take()),
                _ = retry.due() => pending.append(&mut retry.take()),
                _ = resync_timer.tick() => pending.extend(controller.quota_namespaces(&cache)),
                _ = shutdown.cancelled() => return,
            }
            // Take whatever else is queued, so a burst recounts each namespace once.
            while let Some(change) = quota_feed.try_next() {
                on_quota_change(&controller, &cache, change, &mut pending);
            }
            while let Ok(signal) = signal_rx.try_recv() {
                match signal {
                    Signal::Namespace(ns) => {
                        pending.insert(ns);
                    }
                    Signal::Resync => pending.extend(controller.quota_namespaces(&cache)),
                }
            }
        }
    });
}

fn on_quota_change(
    controller: &Controller,
    cache: &WatchCache,
    change: Change,
    pending: &mut BTreeSet<NamespaceRef>,
) {
    match change {
        Change::Resync => pending.extend(controller.quota_namespaces(cache)),
        Change::Event(event) => {
            if event.kind != CacheEventType::Deleted
                && needs_count(&event)
                && let Some(ns) = &event.object.namespace
            {
                pending.insert((event.object.cluster.clone(), ns.clone()));
            }
        }
    }
}
