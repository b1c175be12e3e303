//! The keyspaces of the kinds the server itself reads by key (existence checks, indexes, admission),
//! named once here; everything else finds a resource's keyspace from its definition
//! ([`super::keyspace`]).

use std::sync::LazyLock;

use kcp_store::keys::ResourceKeyspace;

macro_rules! keyspace {
    ($(#[$doc:meta])* $name:ident, $group:expr, $resource:expr, $namespaced:expr) => {
        $(#[$doc])*
        pub fn $name() -> &'static ResourceKeyspace {
            static KEYSPACE: LazyLock<ResourceKeyspace> =
                LazyLock::new(|| ResourceKeyspace::new($group, $resource, None, $namespaced));
            &KEYSPACE
        }
    };
}

keyspace!(
    /// `core.kcp.io` LogicalClusters: one per logical cluster, always named `cluster`.
    logical_clusters,
    "core.kcp.io",
    "logicalclusters",
    false
);
keyspace!(
    /// `tenancy.kcp.io` Workspaces.
    workspaces,
    "tenancy.kcp.io",
    "workspaces",
    false
);
keyspace!(
    /// `tenancy.kcp.io` WorkspaceTypes.
    workspace_types,
    "tenancy.kcp.io",
    "workspacetypes",
    false
);
keyspace!(
    /// Namespaces.
    namespaces,
    "",
    "namespaces",
    false
);
keyspace!(
    /// ResourceQuotas.
    resource_quotas,
    "",
    "resourcequotas",
    true
);
keyspace!(
    /// ServiceAccounts.
    service_accounts,
    "",
    "serviceaccounts",
    true
);

/// The name of every LogicalCluster object.
pub const LOGICAL_CLUSTER_NAME: &str = "cluster";

/// The key of `cluster`'s LogicalCluster object.
pub fn logical_cluster_key(cluster: &str) -> String {
    logical_clusters().object(cluster, None, LOGICAL_CLUSTER_NAME)
}

/// The key of a namespace.
pub fn namespace_key(cluster: &str, namespace: &str) -> String {
    namespaces().object(cluster, None, namespace)
}
