//! `core.kcp.io/v1alpha1` LogicalCluster: the object that makes a logical cluster exist.

use serde_json::{Value, json};

use super::{api_version, boolean, conditions, kind, object_meta, string, string_list, user_info};

/// The phases a logical cluster moves through.
pub const LOGICAL_CLUSTER_PHASES: [&str; 7] = [
    "Scheduling",
    "Initializing",
    "Ready",
    "Unavailable",
    "Inactive",
    "Terminating",
    "Deleting",
];

fn owner() -> Value {
    json!({
        "type": "object",
        "description": "Who created this logical cluster, e.g. the Workspace that asked for it; \
                        deleting the logical cluster is the owner's business.",
        "required": ["apiVersion", "resource", "name", "cluster", "uid"],
        "properties": {
            "apiVersion": string("Group and version of the owning object, e.g. tenancy.kcp.io/v1alpha1."),
            "resource": string("Plural resource name of the owning object, e.g. workspaces."),
            "name": string("Name of the owning object."),
            "namespace": string("Namespace of the owning object; empty for cluster-scoped owners."),
            "cluster": string("Logical cluster the owning object lives in."),
            "uid": string("UID of the owning object, so a re-created namesake is not mistaken for it."),
        }
    })
}

/// The LogicalCluster component schema (OpenAPI v3 JSON).
pub fn logical_cluster_schema() -> Value {
    json!({
        "description": "LogicalCluster is the object that makes a logical cluster exist: one per logical \
                        cluster, always named \"cluster\". It tracks the cluster's owner, its \
                        initialization and termination, and its phase.",
        "type": "object",
        "properties": {
            "apiVersion": api_version("core.kcp.io/v1alpha1"),
            "kind": kind("LogicalCluster"),
            "metadata": object_meta(),
            "spec": {
                "type": "object",
                "description": "Desired state of the logical cluster.",
                "properties": {
                    "directlyDeletable": boolean(
                        "Whether a user may delete this object directly instead of through its owner."),
                    "owner": owner(),
                    "createdBy": user_info(
                        "Who asked for the logical cluster; bound to cluster-admin in it by the \
                         workspace-admin ClusterRoleBinding."),
                    "initializers": string_list(
                        "Initializers that must each finish their work before the cluster becomes Ready; \
                         copied into status when the cluster is created."),
                    "terminators": string_list(
                        "Terminators that must each finish their work before a deleted cluster goes away; \
                         copied into status when the cluster is created."),
                },
            },
            "status": {
                "type": "object",
                "description": "Observed state of the logical cluster.",
                "properties": {
                    "URL": string("Where the logical cluster is served: the shard's base URL plus /clusters/<name>."),
                    "phase": {
                        "type": "string",
                        "description": "Where the logical cluster is in its life.",
                        "enum": LOGICAL_CLUSTER_PHASES,
                    },
                    "conditions": conditions("logical cluster"),
                    "initializers": string_list("Initializers that have not finished yet."),
                    "terminators": string_list("Terminators that have not finished yet."),
                },
            },
        },
    })
}
