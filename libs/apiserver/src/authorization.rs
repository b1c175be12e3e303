//! Keeps kcp's authorizer in step with the watch cache: RBAC objects feed the [`RbacIndex`] and
//! changes to logical clusters (their required groups) drop that LC's cached decisions. Both happen inside the
//! cache's own event loop ([`CacheObserver`]), so once the cache has applied a write, authorization
//! sees it: a client whose RoleBinding was acknowledged is never refused by a stale index.

use std::sync::Arc;

use kcp_auth::authz::kcp::REQUIRED_GROUPS_ANNOTATION;
use kcp_auth::authz::rbac::RbacKind;
use kcp_auth::{ClusterFacts, KcpAuthorizer, RbacIndex};
use kcp_store::keys::ResourceKeyspace;

use crate::registry::keyspaces;

use crate::watch_cache::{CacheEventType, CacheObserver, CachedObject, WatchCache};

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// Required groups read from the cached LogicalCluster objects.
pub(crate) struct CachedClusterFacts {
    cache: Arc<WatchCache>,
}

impl CachedClusterFacts {
    pub(crate) fn new(cache: Arc<WatchCache>) -> Self {
        CachedClusterFacts { cache }
    }
}

impl ClusterFacts for CachedClusterFacts {
    fn required_groups(&self, cluster: &str) -> Option<String> {
        self.cache
            .get(&keyspaces::logical_cluster_key(cluster))?
            .annotation(REQUIRED_GROUPS_ANNOTATION)
    }
}

/// Feeds RBAC objects to the index and tells the authorizer when logical clusters change.
pub(crate) struct AuthorizationFeed {
    index: Arc<RbacIndex>,
    authorizer: Arc<KcpAuthorizer>,
    /// Key prefixes of Roles, ClusterRoles, RoleBindings and ClusterRoleBindings, with their kind.
    rbac_prefixes: Vec<(String, RbacKind)>,
    logical_clusters: String,
}

impl AuthorizationFeed {
    pub(crate) fn new(index: Arc<RbacIndex>, authorizer: Arc<KcpAuthorizer>) -> Self {
        let prefix = |plural: &str, namespaced: bool| {
            ResourceKeyspace::new(RBAC_GROUP, plural, None, namespaced)
                .all_clusters()
                .to_string()
        };
        AuthorizationFeed {
            index,
            authorizer,
            rbac_prefixes: vec![
                (prefix("roles", true), RbacKind::Role),
                (prefix("clusterroles", false), RbacKind::ClusterRole),
                (prefix("rolebindings", true), RbacKind::RoleBinding),
                (
                    prefix("clusterrolebindings", false),
                    RbacKind::ClusterRoleBinding,
                ),
            ],
            logical_clusters: keyspaces::logical_clusters().all_clusters().to_string(),
        }
    }

    fn rbac_kind(&self, key: &str) -> Option<RbacKind> {
        self.rbac_prefixes
            .iter()
            .find(|(prefix, _)| key.starts_with(prefix.as_str()))
            .map(|(_, kind)| *kind)
    }

    fn apply(&self, object: &CachedObject, deleted: bool) {
        if object.key.starts_with(&self.logical_clusters) {
            self.authorizer.cluster_changed(&object.cluster);
            return;
        }
        let Some(kind) = self.rbac_kind(&object.key) else {
            return;
        };
        let value = if deleted {
            None
        } else {
            match object.value() {
                Ok(v) => Some(v),
                Err(err) => {
                    tracing::warn!(key = %object.key, error = %err, "unreadable RBAC object");
                    None
                }
            }
        };
        if let Err(err) = self.index.apply(
            &object.cluster,
            kind,
            object.namespace.as_deref(),
            &object.name,
            value.as_ref(),
        ) {
            // The index already dropped any earlier version (fail closed).
            tracing::warn!(key = %object.key, error = %err, "RBAC object ignored");
        }
    }
}

impl CacheObserver for AuthorizationFeed {
    fn event(&self, event: &crate::watch_cache::CacheEvent) {
        self.apply(&event.object, event.kind == CacheEventType::Deleted);
    }

    fn reloaded(&self, objects: &[Arc<CachedObject>]) {
        self.index.clear();
        self.authorizer.clusters_changed();
        for object in objects {
            self.apply(object, false);
        }
    }
}
