//! The schema of kcp's `core.kcp.io/v1alpha1` LogicalCluster, which k8s-openapi does not have.
//!
//! Written here in our own words; only ObjectMeta is borrowed from k8s-openapi (by `$ref`).
//! Like a CRD's published schema, everything but metadata is inlined in one component.

use serde_json::{Value, json};

/// Component name, in the `<reversed group>.<version>.<Kind>` form kube-apiserver uses for CRDs.
pub const LOGICAL_CLUSTER_SCHEMA_NAME: &str = "io.kcp.core.v1alpha1.LogicalCluster";

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

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn string_list(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

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

fn condition() -> Value {
    json!({
        "type": "object",
        "description": "One observation of an aspect of the logical cluster's state.",
        "required": ["type", "status"],
        "properties": {
            "type": string("What aspect this condition is about, in CamelCase."),
            "status": string("True, False or Unknown."),
            "severity": string("How bad a False status is: Error, Warning or Info; empty when True."),
            "reason": string("A machine-readable CamelCase word for the last transition."),
            "message": string("A human-readable explanation of the last transition."),
            "lastTransitionTime": {
                "type": "string",
                "format": "date-time",
                "description": "When the status last changed.",
            },
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
            "apiVersion": string("APIVersion of this representation of the object, core.kcp.io/v1alpha1."),
            "kind": string("Kind of the object, LogicalCluster."),
            "metadata": {
                "description": "Standard object metadata.",
                "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
            },
            "spec": {
                "type": "object",
                "description": "Desired state of the logical cluster.",
                "properties": {
                    "directlyDeletable": {
                        "type": "boolean",
                        "description": "Whether a user may delete this object directly instead of \
                                        through its owner.",
                    },
                    "owner": owner(),
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
                    "conditions": {
                        "type": "array",
                        "description": "The latest observations of the logical cluster's state.",
                        "items": condition(),
                    },
                    "initializers": string_list("Initializers that have not finished yet."),
                    "terminators": string_list("Terminators that have not finished yet."),
                },
            },
        },
    })
}
