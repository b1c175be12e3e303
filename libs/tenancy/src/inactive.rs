//! Logical clusters marked inactive (kcp's `core.kcp.io/inactive: "true"` on the LC, or its
//! older `internal.kcp.io/inactive`). Requests into one are refused, but for its OpenAPI documents
//! and its LogicalCluster (so the mark can be taken off); marking one ends the watches open on it,
//! and every watch across all logical clusters, which may show its objects (kcp cancels both
//! request contexts). Fed by the watch cache, as the path index is.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use kcp_api_types::builtin::marked_inactive;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::hooks::ClusterGate;
use parking_lot::RwLock;
use tokio::sync::broadcast;

use kcp_apiserver::watch_cache::{CacheEvent, CacheEventType, CacheObserver, CachedObject};
use kcp_http::request_info::Target;

/// Markings waiting for slow watchers; one that falls further behind ends as if told (its client
/// watches again).
const MARKINGS_KEPT: usize = 64;

pub struct InactiveClusters {
    marked: RwLock<HashSet<LogicalClusterName>>,
    /// Each newly marked cluster, for the open watches.
    markings: broadcast::Sender<Arc<str>>,
    logical_clusters: String,
}

impl Default for InactiveClusters {
    fn default() -> Self {
        InactiveClusters::new()
    }
}

impl InactiveClusters {
    pub fn new() -> InactiveClusters {
        InactiveClusters {
            marked: RwLock::new(HashSet::new()),
            markings: broadcast::channel(MARKINGS_KEPT).0,
            logical_clusters: kcp_apiserver::registry::keyspaces::logical_clusters()
                .all_clusters()
                .to_string(),
        }
    }

    /// Whether `cluster` is marked inactive.
    pub fn contains(&self, cluster: &str) -> bool {
        let marked = self.marked.read();
        !marked.is_empty() && marked.contains(cluster)
    }

    /// Whether a request for `target` into an inactive cluster is served all the same (kcp's
    /// exceptions: the OpenAPI documents and the LogicalCluster resource).
    pub fn serves(target: &Target) -> bool {
        match target {
            Target::OpenApiV2 | Target::OpenApiV3Root | Target::OpenApiV3 { .. } => true,
            Target::Resource(r) => r.group == "core.kcp.io" && r.resource == "logicalclusters",
            _ => false,
        }
    }

    /// The clusters marked from now on: a watch of `cluster` (or of all clusters, `None`) ends
    /// when [`ends_watch`] says so.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.markings.subscribe()
    }

    fn apply(&self, object: &CachedObject, deleted: bool) {
        if !object.key.starts_with(&self.logical_clusters) {
            return;
        }
        let inactive = !deleted && marked_inactive(|key| object.annotation(key));
        let known = self.contains(&object.cluster);
        if inactive == known {
            return;
        }
        let mut marked = self.marked.write();
        if inactive {
            marked.insert(object.cluster.clone());
            // No receivers is fine: no watch is open.
            let _ = self.markings.send(Arc::from(object.cluster.as_str()));
        } else {
            marked.remove(&object.cluster);
        }
    }
}

/// Whether a watch of `cluster` (`None`: of all clusters) ends on `marking` (`Err`: markings were
/// missed, or the server is going away).
pub fn ends_watch(
    cluster: Option<&str>,
    marking: &Result<Arc<str>, broadcast::error::RecvError>,
) -> bool {
    match (cluster, marking) {
        (_, Err(_)) | (None, Ok(_)) => true,
        (Some(mine), Ok(marked)) => mine == &**marked,
    }
}

impl ClusterGate for InactiveClusters {
    fn refuse(&self, cluster: &LogicalClusterName, target: &Target) -> Option<ApiError> {
        (self.contains(cluster) && !InactiveClusters::serves(target)).then(|| {
            ApiError::forbidden(
                "core.kcp.io",
                "logicalclusters",
                cluster,
                "logical cluster is marked inactive",
            )
        })
    }

    fn watch_ends(
        &self,
        cluster: Option<&LogicalClusterName>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + Sync>> {
        let mut marked = self.subscribe();
        let cluster = cluster.cloned();
        Box::pin(async move {
            loop {
                let marking = marked.recv().await;
                if ends_watch(cluster.as_deref(), &marking) {
                    return;
                }
            }
        })
    }
}

impl CacheObserver for InactiveClusters {
    fn event(&self, event: &CacheEvent) {
        self.apply(&event.object, event.kind == CacheEventType::Deleted);
    }

    fn reloaded(&self, objects: &[Arc<CachedObject>]) {
        let lcs = objects
            .iter()
            .filter(|o| o.key.starts_with(&self.logical_clusters));
        let now: HashSet<LogicalClusterName> = lcs
            .filter(|o| marked_inactive(|key| o.annotation(key)))
            .map(|o| o.cluster.clone())
            .collect();
        let mut marked = self.marked.write();
        for cluster in now.difference(&marked) {
            let _ = self.markings.send(Arc::from(cluster.as_str()));
        }
        *marked = now;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn lc(cluster: &str, annotations: serde_json::Value) -> CachedObject {
        CachedObject::logical_cluster(cluster, annotations)
    }

    #[test]
    fn marks_come_and_go_and_are_told_once() {
        let index = InactiveClusters::new();
        let mut told = index.subscribe();
        index.apply(&lc("a", serde_json::json!({})), false);
        assert!(!index.contains("a"));
        let marked = lc("a", serde_json::json!({"core.kcp.io/inactive": "true"}));
        index.apply(&marked, false);
        // A second write while marked tells nobody again.
        index.apply(&marked, false);
        assert!(index.contains("a"));
        assert_eq!(&*told.try_recv().unwrap(), "a");
        assert!(told.try_recv().is_err());
        let legacy = lc("b", serde_json::json!({"internal.kcp.io/inactive": "true"}));
        index.apply(&legacy, false);
        assert!(index.contains("b"));
        index.apply(&legacy, true);
        assert!(!index.contains("b"));
        index.apply(
            &lc("a", serde_json::json!({"core.kcp.io/inactive": "false"})),
            false,
        );
        assert!(!index.contains("a"));
    }

    #[test]
    fn watches_end_on_their_cluster_or_any_when_across_all() {
        let marked: Result<Arc<str>, _> = Ok(Arc::from("a"));
        assert!(ends_watch(Some("a"), &marked));
        assert!(!ends_watch(Some("b"), &marked));
        assert!(ends_watch(None, &marked));
        assert!(ends_watch(
            Some("b"),
            &Err(broadcast::error::RecvError::Lagged(1))
        ));
    }
}
