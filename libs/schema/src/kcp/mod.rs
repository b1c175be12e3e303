//! Schemas of kcp's own kinds, which k8s-openapi does not have.
//!
//! Written here in our own words from kcp's API; only ObjectMeta and LabelSelector (and, for
//! `apis.kcp.io`, the apiextensions types kcp embeds and TypedLocalObjectReference) are borrowed
//! from k8s-openapi (by `$ref`). Like a CRD's published schema, everything else is inlined in one
//! component per kind.

use serde_json::{Value, json};

mod apis;
mod logical_cluster;
mod shard;
mod topology;
mod workspace;
mod workspace_type;

pub use logical_cluster::{LOGICAL_CLUSTER_PHASES, logical_cluster_schema};

/// A kcp kind and its component schema, in the `<reversed group>.<version>.<Kind>` naming
/// kube-apiserver uses for CRDs.
pub struct KcpKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub schema_name: &'static str,
    pub schema: fn() -> Value,
}

/// Every kcp kind the shard serves.
pub const KINDS: [KcpKind; 13] = [
    KcpKind {
        group: "core.kcp.io",
        version: "v1alpha1",
        kind: "LogicalCluster",
        schema_name: "io.kcp.core.v1alpha1.LogicalCluster",
        schema: logical_cluster_schema,
    },
    KcpKind {
        group: "core.kcp.io",
        version: "v1alpha1",
        kind: "Shard",
        schema_name: "io.kcp.core.v1alpha1.Shard",
        schema: shard::shard_schema,
    },
    KcpKind {
        group: "tenancy.kcp.io",
        version: "v1alpha1",
        kind: "Workspace",
        schema_name: "io.kcp.tenancy.v1alpha1.Workspace",
        schema: workspace::workspace_schema,
    },
    KcpKind {
        group: "tenancy.kcp.io",
        version: "v1alpha1",
        kind: "WorkspaceType",
        schema_name: "io.kcp.tenancy.v1alpha1.WorkspaceType",
        schema: workspace_type::workspace_type_schema,
    },
    KcpKind {
        group: "apis.kcp.io",
        version: "v1alpha1",
        kind: "APIResourceSchema",
        schema_name: "io.kcp.apis.v1alpha1.APIResourceSchema",
        schema: apis::api_resource_schema_schema,
    },
    KcpKind {
        group: "apis.kcp.io",
        version: "v1alpha1",
        kind: "APIExport",
        schema_name: "io.kcp.apis.v1alpha1.APIExport",
        schema: apis::api_export_v1alpha1_schema,
    },
    KcpKind {
        group: "apis.kcp.io",
        version: "v1alpha2",
        kind: "APIExport",
        schema_name: "io.kcp.apis.v1alpha2.APIExport",
        schema: apis::api_export_v1alpha2_schema,
    },
    KcpKind {
        group: "apis.kcp.io",
        version: "v1alpha1",
        kind: "APIBinding",
        schema_name: "io.kcp.apis.v1alpha1.APIBinding",
        schema: apis::api_binding_v1alpha1_schema,
    },
    KcpKind {
        group: "apis.kcp.io",
        version: "v1alpha2",
        kind: "APIBinding",
        schema_name: "io.kcp.apis.v1alpha2.APIBinding",
        schema: apis::api_binding_v1alpha2_schema,
    },
    KcpKind {
        group: "apis.kcp.io",
        version: "v1alpha1",
        kind: "APIExportEndpointSlice",
        schema_name: "io.kcp.apis.v1alpha1.APIExportEndpointSlice",
        schema: apis::api_export_endpoint_slice_schema,
    },
    KcpKind {
        group: "apis.kcp.io",
        version: "v1alpha1",
        kind: "APIConversion",
        schema_name: "io.kcp.apis.v1alpha1.APIConversion",
        schema: apis::api_conversion_schema,
    },
    KcpKind {
        group: "topology.kcp.io",
        version: "v1alpha1",
        kind: "Partition",
        schema_name: "io.kcp.topology.v1alpha1.Partition",
        schema: topology::partition_schema,
    },
    KcpKind {
        group: "topology.kcp.io",
        version: "v1alpha1",
        kind: "PartitionSet",
        schema_name: "io.kcp.topology.v1alpha1.PartitionSet",
        schema: topology::partition_set_schema,
    },
];

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn boolean(description: &str) -> Value {
    json!({"type": "boolean", "description": description})
}

fn string_list(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

fn api_version(group_version: &str) -> Value {
    string(&format!(
        "APIVersion of this representation of the object, {group_version}."
    ))
}

fn kind(kind: &str) -> Value {
    string(&format!("Kind of the object, {kind}."))
}

fn object_meta() -> Value {
    json!({
        "description": "Standard object metadata.",
        "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
    })
}

fn label_selector(description: &str) -> Value {
    json!({
        "description": description,
        "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"}],
    })
}

/// A user as the authenticator saw them (authentication.k8s.io's UserInfo).
fn user_info(description: &str) -> Value {
    json!({
        "type": "object",
        "description": description,
        "properties": {
            "username": string("The user's name."),
            "uid": string("A unique value identifying the user across time."),
            "groups": string_list("The groups the user belongs to."),
            "extra": {
                "type": "object",
                "description": "Further information the authenticator provided.",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
            },
        },
    })
}

/// One condition of `what`'s status (kcp's conditions carry a severity).
fn condition(what: &str) -> Value {
    json!({
        "type": "object",
        "description": format!("One observation of an aspect of the {what}'s state."),
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

fn conditions(what: &str) -> Value {
    json!({
        "type": "array",
        "description": format!("The latest observations of the {what}'s state."),
        "items": condition(what),
    })
}

/// A reference to a WorkspaceType: its name and the path of the workspace that holds it.
fn workspace_type_reference(description: &str) -> Value {
    json!({
        "type": "object",
        "description": description,
        "required": ["name"],
        "properties": {
            "name": {
                "type": "string",
                "description": "Name of the WorkspaceType (lower-case).",
                "pattern": "^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$",
            },
            "path": {
                "type": "string",
                "description": "Path of the workspace holding the type, e.g. root:org; defaulted \
                                from the referring object's context.",
                "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
            },
        },
    })
}
