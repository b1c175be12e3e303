//! The shape most kcp controllers share: a queue of objects, each a logical cluster's object by
//! name, worked by a few tasks that reconcile one at a time, retrying a failure with backoff; and
//! the status write most of them end with.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kcp_api_types::ResourceDef;
use kcp_api_types::conditions::{same_status, with_transition_times};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::registry::{ObjectRef, UpdateKind, WriteOptions, keyspace, now_rfc3339};
use kcp_apiserver::watch_cache::WatchCache;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::workqueue::{Outcome, WorkQueue};

/// A logical cluster's object by name.
pub type ObjectKey = (LogicalClusterName, String);

/// A queue of objects ([`ObjectKey`]s).
pub type ObjectQueue = WorkQueue<ObjectKey>;

const RETRY_DELAY: Duration = Duration::from_millis(200);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// A queue whose keys `workers` tasks hand to `reconcile` until `stop`; a failure is logged with
/// `what` (what was not done) and the key retried after a growing delay.
pub fn reconciling<F, Fut, E>(
    workers: usize,
    stop: CancellationToken,
    what: &'static str,
    reconcile: F,
) -> Arc<ObjectQueue>
where
    F: Fn(LogicalClusterName, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: Display,
{
    let queue = WorkQueue::new(RETRY_DELAY, MAX_RETRY_DELAY);
    let reconcile = Arc::new(reconcile);
    queue.spawn_workers(workers, stop, move |(cluster, name): ObjectKey| {
        let reconcile = reconcile.clone();
        async move {
            let result = reconcile(cluster.clone(), name.clone()).await;
            Outcome::of(result, |err| {
                tracing::warn!(%cluster, %name, error = %err, "{what}; retrying");
            })
        }
    });
    queue
}

/// Queues every object of `def` the cache holds, in every logical cluster.
pub fn enqueue_all(cache: &WatchCache, def: &ResourceDef, queue: &ObjectQueue) {
    for object in cache.list(keyspace(def).all_clusters(), None) {
        queue.add((object.cluster.clone(), object.name.clone()));
    }
}

/// Writes `status` into the object `name` of `cluster` (its `status` subresource), each condition
/// keeping its transition time while its status stays; nothing when `current` (the object as
/// read) already says it, or when the object is gone.
pub async fn write_status(
    server: &ApiServer,
    def: &ResourceDef,
    cluster: &LogicalClusterName,
    name: &str,
    current: &Value,
    status: Value,
) -> Result<(), ApiError> {
    if same_status(current.get("status"), &status) {
        return Ok(());
    }
    let now = now_rfc3339();
    let at = ObjectRef {
        cluster,
        namespace: None,
        name,
    };
    server
        .registry()
        .update_if_present(
            def,
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
}
