//! `apis.kcp.io` APIBinding: makes an APIExport's resources available in the binding's
//! workspace and records which of its permission claims the workspace accepts. v1alpha2 is the
//! storage version; v1alpha1 has the older claim shape.

use serde_json::{Value, json};

use super::claims::{Claim, v1alpha1_claim, v1alpha2_claim};
use super::{export_reference, list, map_list, non_empty_string, rule, with};
use crate::kcp::{api_version, conditions, kind, object_meta, string};

const DESCRIPTION: &str = "APIBinding brings the resources of an APIExport into this workspace. \
                           Creating one needs the bind verb on the export; the binding is \
                           Bound once every resource of the export is served here.";

/// `spec.reference`, immutable; v1alpha1 also requires its one member through `oneOf`.
fn reference(one_of: bool) -> Value {
    let reference = json!({
        "type": "object",
        "description": "The APIExport to bind to. Immutable.",
        "properties": {
            "export": export_reference(
                "An APIExport by workspace path and name; binding to it needs the bind verb on it."),
        },
        "x-kubernetes-validations": [
            rule("self == oldSelf", "APIExport reference must not be changed"),
        ],
    });
    if one_of {
        with(reference, json!({"oneOf": [{"required": ["export"]}]}))
    } else {
        reference
    }
}

fn bound_resource() -> Value {
    json!({
        "type": "object",
        "description": "One resource the binding serves and the schema it is served with.",
        "required": ["group", "resource", "schema"],
        "properties": {
            "group": string("API group of the resource; empty for the core group."),
            "resource": string("Plural name of the resource."),
            "schema": {
                "type": "object",
                "description": "The APIResourceSchema the resource is served with.",
                "required": ["UID", "identityHash", "name"],
                "properties": {
                    "name": non_empty_string("Name of the APIResourceSchema."),
                    "UID": non_empty_string("UID of the APIResourceSchema."),
                    "identityHash": non_empty_string(
                        "Identity hash of the export, which keys where the objects are stored."),
                },
            },
            "storageVersions": {
                "type": "array",
                "description": "Every version objects of the resource have been stored in, so a \
                                migration can tell when older ones are gone.",
                "items": {"type": "string"},
                "x-kubernetes-list-type": "set",
            },
        },
    })
}

/// The status fields that do not depend on the version's claim shape.
fn status(applied_claims: Value, export_claims: Value) -> Value {
    json!({
        "type": "object",
        "description": "Observed state of the binding.",
        "properties": {
            "apiExportClusterName": string(
                "Name (not path) of the logical cluster holding the APIExport."),
            "boundResources": map_list(
                "The resources bound so far.",
                bound_resource(),
                &["group", "resource"],
            ),
            "phase": {
                "type": "string",
                "description": "Empty right after creation, Binding while the resources are \
                                being set up, Bound once they are served.",
                "enum": ["", "Binding", "Bound"],
            },
            "conditions": conditions("binding"),
            "appliedPermissionClaims": applied_claims,
            "exportPermissionClaims": export_claims,
        },
    })
}

fn binding(group_version: &str, spec_claims: Value, status: Value, one_of: bool) -> Value {
    json!({
        "description": DESCRIPTION,
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": api_version(group_version),
            "kind": kind("APIBinding"),
            "metadata": object_meta(),
            "spec": {
                "type": "object",
                "description": "Desired state of the binding.",
                "required": ["reference"],
                "properties": {
                    "reference": reference(one_of),
                    "permissionClaims": spec_claims,
                },
            },
            "status": status,
        },
    })
}

const SPEC_CLAIMS: &str = "The workspace's decisions on the export's permission claims: an \
                           accepted claim gives the provider that access here.";
const APPLIED_CLAIMS: &str = "The accepted claims the provider's access has been set up for.";
const EXPORT_CLAIMS: &str = "The claims the export currently asks for, copied from it.";

/// The APIBinding v1alpha1 component schema (OpenAPI v3 JSON).
pub fn api_binding_v1alpha1_schema() -> Value {
    binding(
        "apis.kcp.io/v1alpha1",
        list(SPEC_CLAIMS, v1alpha1_claim(Claim::Accepted, false)),
        status(
            list(APPLIED_CLAIMS, v1alpha1_claim(Claim::Requested, false)),
            list(EXPORT_CLAIMS, v1alpha1_claim(Claim::Requested, false)),
        ),
        true,
    )
}

/// The APIBinding v1alpha2 component schema (OpenAPI v3 JSON).
pub fn api_binding_v1alpha2_schema() -> Value {
    binding(
        "apis.kcp.io/v1alpha2",
        map_list(
            SPEC_CLAIMS,
            v1alpha2_claim(Claim::Accepted),
            &["group", "resource", "identityHash"],
        ),
        status(
            map_list(
                APPLIED_CLAIMS,
                v1alpha2_claim(Claim::Scoped),
                &["group", "resource", "identityHash"],
            ),
            list(EXPORT_CLAIMS, v1alpha2_claim(Claim::Requested)),
        ),
        false,
    )
}
