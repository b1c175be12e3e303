//! `apis.kcp.io` APIExport: a provider's offer of APIs (APIResourceSchemas) that other
//! workspaces bind to, with its identity and the extra access it claims. v1alpha2 is the
//! storage version; v1alpha1 lists schemas by name instead of resources with a storage.

use serde_json::{Value, json};

use super::claims::{Claim, v1alpha1_claim, v1alpha2_claim};
use super::{k8s_ref, list, map_list, non_empty_string, rule, with};
use crate::kcp::{api_version, conditions, kind, object_meta, string, string_list};

const DESCRIPTION: &str = "APIExport offers APIs defined by APIResourceSchemas in its \
                           workspace to other workspaces, which use them through APIBindings. \
                           Objects of its resources are stored under its identity and served to \
                           the provider by the APIExport's virtual workspace.";

/// The secret whose `key` is the export's identity.
fn identity() -> Value {
    json!({
        "type": "object",
        "description": "The export's identity, which keys where its objects are stored; \
                        defaulted to a Secret named after the export, created in kcp-system.",
        "properties": {
            "secretRef": {
                "type": "object",
                "description": "The Secret holding the identity in its `key` entry.",
                "properties": {
                    "name": string("Name of the Secret."),
                    "namespace": string("Namespace of the Secret."),
                },
                "x-kubernetes-map-type": "atomic",
            },
        },
    })
}

fn maximal_permission_policy() -> Value {
    json!({
        "type": "object",
        "description": "An upper bound on what consumers may do with the exported resources, \
                        checked against RBAC in the export's workspace for the user and groups \
                        prefixed with apis.kcp.io:binding:; unset sets no bound.",
        "oneOf": [{"required": ["local"]}],
        "properties": {
            "local": {
                "type": "object",
                "description": "Check the bound against RBAC in the export's own workspace.",
            },
        },
    })
}

fn status() -> Value {
    json!({
        "type": "object",
        "description": "Observed state of the export.",
        "properties": {
            "identityHash": string(
                "SHA-256 of the identity key, in hex; immutable once set. Bindings and claims \
                 refer to the export's resources by it."),
            "conditions": conditions("export"),
            "virtualWorkspaces": list(
                "Deprecated: one URL of the export's virtual workspace per shard, set only with \
                 kcp's EnableDeprecatedAPIExportVirtualWorkspacesUrls feature gate; read the \
                 APIExportEndpointSlices instead.",
                json!({
                    "type": "object",
                    "required": ["url"],
                    "properties": {
                        "url": non_empty_string("A URL of the export's virtual workspace."),
                    },
                }),
            ),
        },
    })
}

/// The APIExport v1alpha1 component schema (OpenAPI v3 JSON).
pub fn api_export_v1alpha1_schema() -> Value {
    json!({
        "description": DESCRIPTION,
        "type": "object",
        "properties": {
            "apiVersion": api_version("apis.kcp.io/v1alpha1"),
            "kind": kind("APIExport"),
            "metadata": object_meta(),
            "spec": {
                "type": "object",
                "description": "Desired state of the export.",
                "properties": {
                    "latestResourceSchemas": with(
                        string_list(
                            "Names of the exported APIResourceSchemas, each \
                             <prefix>.<plural>.<group>."),
                        json!({"x-kubernetes-list-type": "set"}),
                    ),
                    "identity": identity(),
                    "maximalPermissionPolicy": maximal_permission_policy(),
                    "permissionClaims": map_list(
                        "Access to other resources of the consumers' workspaces the provider asks \
                         for; each takes effect once a binding accepts it.",
                        v1alpha1_claim(Claim::Requested, true),
                        &["group", "resource"],
                    ),
                },
            },
            "status": status(),
        },
    })
}

/// How an exported resource is stored: as a CRD in the binding workspaces, or served from
/// another object's virtual workspace.
fn storage() -> Value {
    json!({
        "type": "object",
        "description": "How objects of the resource are stored; exactly one of crd and virtual.",
        "default": {"crd": {}},
        "oneOf": [{"required": ["crd"]}, {"required": ["virtual"]}],
        "properties": {
            "crd": {
                "type": "object",
                "description": "Stored like a custom resource in each binding workspace.",
            },
            "virtual": {
                "type": "object",
                "description": "Served from the virtual workspace another object advertises \
                                (in a `url` of its status), e.g. an endpoint slice.",
                "required": ["identityHash", "reference"],
                "properties": {
                    "reference": with(
                        k8s_ref(
                            "io.k8s.api.core.v1.TypedLocalObjectReference",
                            "The object, in the export's workspace, advertising the URL."),
                        json!({"x-kubernetes-map-type": "atomic"}),
                    ),
                    "identityHash": string("Identity hash of the virtual resource."),
                },
            },
        },
        "x-kubernetes-validations": [
            rule("has(self.crd) != has(self.virtual)", "Exactly one of crd or virtual must be set"),
        ],
    })
}

fn resource_schema() -> Value {
    json!({
        "type": "object",
        "description": "One exported resource and the APIResourceSchema defining it.",
        "required": ["group", "name", "schema"],
        "properties": {
            "name": string("Plural name of the resource."),
            "group": string("API group of the resource; empty for the core group."),
            "schema": string(
                "Name of the APIResourceSchema defining it: <prefix>.<name>.<group>, with core \
                 for the empty group."),
            "storage": storage(),
        },
    })
}

/// The APIExport v1alpha2 component schema (OpenAPI v3 JSON).
pub fn api_export_v1alpha2_schema() -> Value {
    json!({
        "description": DESCRIPTION,
        "type": "object",
        "properties": {
            "apiVersion": api_version("apis.kcp.io/v1alpha2"),
            "kind": kind("APIExport"),
            "metadata": object_meta(),
            "spec": {
                "type": "object",
                "description": "Desired state of the export.",
                "properties": {
                    "resources": map_list(
                        "The exported resources; ones added later reach existing bindings too.",
                        resource_schema(),
                        &["name", "group"],
                    ),
                    "identity": identity(),
                    "maximalPermissionPolicy": maximal_permission_policy(),
                    "permissionClaims": map_list(
                        "Access to other resources of the consumers' workspaces the provider asks \
                         for; each takes effect once a binding accepts it.",
                        v1alpha2_claim(Claim::Requested),
                        &["group", "resource"],
                    ),
                },
            },
            "status": status(),
        },
    })
}
