//! `tenancy.kcp.io/v1alpha1` WorkspaceType: what a kind of workspace gets when it is created,
//! and where it may sit in the tree.

use serde_json::{Value, json};

use super::{
    api_version, boolean, conditions, kind, object_meta, string, workspace_type_reference,
};

/// Which types a parent (or child) may be.
fn type_selector(description: &str) -> Value {
    json!({
        "type": "object",
        "description": description,
        // Either no type at all or a list of them, as kcp's schema has it.
        "oneOf": [{"required": ["none"]}, {"required": ["types"]}],
        "properties": {
            "none": boolean("No type at all is allowed."),
            "types": {
                "type": "array",
                "description": "The allowed types; empty allows every type.",
                "items": workspace_type_reference("An allowed type."),
            },
        },
    })
}

/// RBAC PolicyRules (rbac/v1): what an initializer or terminator may do inside a workspace.
fn policy_rules(description: &str) -> Value {
    let strings = |d: &str| json!({"type": "array", "description": d, "items": {"type": "string"}});
    json!({
        "type": "array",
        "description": description,
        "items": {
            "type": "object",
            "required": ["verbs"],
            "properties": {
                "verbs": strings("Verbs allowed; * is all."),
                "apiGroups": strings("API groups; \"\" is the core group, * is all."),
                "resources": strings("Resources (res, res/sub, */sub); * is all."),
                "resourceNames": strings("Names allowed; empty allows any."),
                "nonResourceURLs": strings("Paths allowed (a trailing * is a prefix)."),
            },
        },
    })
}

/// The WorkspaceType component schema (OpenAPI v3 JSON).
pub fn workspace_type_schema() -> Value {
    json!({
        "description": "WorkspaceType describes a kind of workspace: its initializers and \
                        terminators, the default type of its children, and which parents and \
                        children it allows. Using a type needs the `use` verb on it (and on every \
                        type it extends).",
        "type": "object",
        "properties": {
            "apiVersion": api_version("tenancy.kcp.io/v1alpha1"),
            "kind": kind("WorkspaceType"),
            "metadata": object_meta(),
            "spec": {
                "type": "object",
                "description": "Desired state of the workspace type.",
                "properties": {
                    "initializer": boolean(
                        "Workspaces of this type get an initializer named <type's cluster>:<type name>, \
                         which blocks readiness until removed."),
                    "terminator": boolean(
                        "Workspaces of this type get a terminator named <type's cluster>:<type name>, \
                         which blocks the end of deletion until removed."),
                    "extend": {
                        "type": "object",
                        "description": "Types this type extends: their initializers, terminators and \
                                        parent/child rules apply too, and this type counts as each of them.",
                        "properties": {
                            "with": {
                                "type": "array",
                                "description": "The extended types.",
                                "items": workspace_type_reference("An extended type."),
                            },
                        },
                    },
                    "additionalWorkspaceLabels": {
                        "type": "object",
                        "description": "Labels added to every new workspace of this type.",
                        "additionalProperties": {"type": "string"},
                    },
                    "initializerPermissions": policy_rules(
                        "What this type's initializer may do inside a workspace through the \
                         initializing virtual workspace, as itself. Unset: it works there as the \
                         workspace's owner."),
                    "terminatorPermissions": policy_rules(
                        "What this type's terminator may do inside a workspace through the \
                         terminating virtual workspace, as itself. Unset: it works there as the \
                         workspace's owner."),
                    // kcp's default: children of any type are universal unless the type says
                    // otherwise (or a child names its type).
                    "defaultChildWorkspaceType": with_default(
                        workspace_type_reference(
                            "The type of a child workspace created without one."),
                        json!({"name": "universal", "path": "root"}),
                    ),
                    "limitAllowedChildren": type_selector(
                        "Which types child workspaces may have; unset allows every type."),
                    "limitAllowedParents": type_selector(
                        "Which types a parent workspace may have; unset allows every type."),
                    "defaultAPIBindings": {
                        "type": "array",
                        "description": "APIExports bound into every new workspace of this type during initialization.",
                        "items": {
                            "type": "object",
                            "required": ["export"],
                            "properties": {
                                "path": string("Path of the workspace holding the APIExport."),
                                "export": string("Name of the APIExport."),
                            },
                        },
                    },
                    "defaultAPIBindingLifecycle": {
                        "type": "string",
                        "description": "Whether default bindings are created once (InitializeOnly) or kept in place (Maintain).",
                        "enum": ["InitializeOnly", "Maintain"],
                    },
                },
            },
            "status": {
                "type": "object",
                "description": "Observed state of the workspace type.",
                "properties": {
                    "conditions": conditions("workspace type"),
                    "virtualWorkspaces": {
                        "type": "array",
                        "description": "Where the initializing and terminating virtual workspaces of this type are served.",
                        "items": {
                            "type": "object",
                            "required": ["url"],
                            "properties": {
                                "url": string("URL of the virtual workspace."),
                                "type": {
                                    "type": "string",
                                    "description": "Which virtual workspace this is.",
                                    "enum": ["initializing", "terminating"],
                                },
                            },
                        },
                    },
                },
            },
        },
    })
}

/// `schema` with `default` set.
fn with_default(mut schema: Value, default: Value) -> Value {
    if let Some(map) = schema.as_object_mut() {
        map.insert("default".into(), default);
    }
    schema
}
