//! `tenancy.kcp.io/v1alpha1` Workspace: a named child of a logical cluster, backed by a logical
//! cluster of its own.

use serde_json::{Value, json};

use super::{
    LOGICAL_CLUSTER_PHASES, api_version, conditions, kind, label_selector, object_meta, string,
    string_list, workspace_type_reference,
};

/// The Workspace component schema (OpenAPI v3 JSON).
pub fn workspace_schema() -> Value {
    json!({
        "description": "Workspace names a logical cluster inside its parent: /clusters/<parent \
                        path>:<workspace name> reaches it. Creating one schedules a new logical cluster \
                        of the workspace's type; deleting it deletes that logical cluster and \
                        everything in it.",
        "type": "object",
        "properties": {
            "apiVersion": api_version("tenancy.kcp.io/v1alpha1"),
            "kind": kind("Workspace"),
            "metadata": object_meta(),
            "spec": {
                "type": "object",
                "description": "Desired state of the workspace.",
                "properties": {
                    "type": workspace_type_reference(
                        "The type of the workspace; defaulted from the parent's type. Immutable."),
                    "location": {
                        "type": "object",
                        "description": "Where the workspace's logical cluster may be scheduled.",
                        "properties": {
                            "selector": label_selector(
                                "Shards whose labels match may hold the workspace's logical cluster."),
                        },
                    },
                    "cluster": string(
                        "Name of the logical cluster backing the workspace; set by the system once \
                         scheduled, then immutable."),
                    "URL": string(
                        "Where the workspace is served: the shard's external URL plus /clusters/<cluster>; \
                         set by the system."),
                },
            },
            "status": {
                "type": "object",
                "description": "Observed state of the workspace.",
                "properties": {
                    "phase": {
                        "type": "string",
                        "description": "Where the workspace is in its life, as its logical cluster.",
                        "enum": LOGICAL_CLUSTER_PHASES,
                    },
                    "conditions": conditions("workspace"),
                    "initializers": string_list("Initializers of the logical cluster that have not finished yet."),
                    "terminators": string_list("Terminators of the logical cluster that have not finished yet."),
                },
            },
        },
    })
}
