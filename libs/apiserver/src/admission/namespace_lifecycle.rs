//! kcp's WorkspaceNamespaceLifecycle, its part beyond what the registry already does for
//! terminating namespaces: the namespaces every workspace keeps (`default`, `kube-system`,
//! `kube-public`) may not be deleted by a request, unless their logical cluster is itself being
//! deleted. The shard's own deletions (of a deleted workspace's content) are not admitted.

use std::sync::Arc;

use async_trait::async_trait;
use kcp_apimachinery::status::ApiError;
use serde_json::Value;

use super::{Admission, Attributes, Operation};
use crate::watch_cache::WatchCache;

/// Kubernetes' immortal namespaces.
const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];

pub struct NamespaceLifecycle {
    cache: Arc<WatchCache>,
}

impl NamespaceLifecycle {
    pub fn new(cache: Arc<WatchCache>) -> Self {
        NamespaceLifecycle { cache }
    }

    /// Whether `cluster`'s LogicalCluster is being deleted (then everything in it may go).
    fn cluster_deleting(&self, cluster: &str) -> bool {
        let key = crate::registry::keyspaces::logical_cluster_key(cluster);
        self.cache.get(&key).is_some_and(|lc| lc.is_deleting())
    }
}

#[async_trait]
impl Admission for NamespaceLifecycle {
    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        _object: Option<&Value>,
    ) -> Result<(), ApiError> {
        if attrs.operation != Operation::Delete
            || !attrs.def.is("", "namespaces")
            || attrs.subresource.is_some()
            || !IMMORTAL.contains(&attrs.name)
            || self.cluster_deleting(attrs.cluster)
        {
            return Ok(());
        }
        Err(ApiError::forbidden(
            "",
            "namespaces",
            attrs.name,
            "this namespace may not be deleted",
        ))
    }
}
