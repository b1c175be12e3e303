//! Permission claims: the access to other resources of a consumer's workspace an APIExport asks
//! for, and an APIBinding grants. v1alpha1 claims name objects (`all` or `resourceSelector`);
//! v1alpha2 claims list verbs and select objects by label.

use serde_json::{Value, json};

use super::{rule, with};
use crate::kcp::{boolean, string, string_list};

/// An API group name; empty for the core group.
const GROUP_PATTERN: &str = r"^(|[a-z0-9]([-a-z0-9]*[a-z0-9](\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?)$";

/// A plural resource name.
const RESOURCE_PATTERN: &str = "^[a-z][-a-z0-9]*[a-z0-9]$";

/// The name of a claimed object (v1alpha1 resource selectors).
const OBJECT_NAME_PATTERN: &str = "^([a-z0-9][-a-z0-9_.]*)?[a-z0-9]$";

/// Which form of claim a list holds. kcp nests them: an accepted claim is a scoped claim with a
/// decision, a scoped claim is a requested claim with a selector.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Claim {
    /// As the APIExport asks for it (and APIBinding status copies it).
    Requested,
    /// With the objects it reaches (v1alpha2 only): what the binding has applied.
    Scoped,
    /// With the consumer's decision: what APIBinding's spec holds.
    Accepted,
}

fn group(defaulted: bool) -> Value {
    let group = with(
        string("API group of the claimed resource; empty for the core group."),
        json!({"pattern": GROUP_PATTERN}),
    );
    if defaulted {
        with(group, json!({"default": ""}))
    } else {
        group
    }
}

fn resource() -> Value {
    with(
        string("Plural name of the claimed resource."),
        json!({"pattern": RESOURCE_PATTERN}),
    )
}

fn state() -> Value {
    json!({
        "type": "string",
        "description": "The consumer's decision on the claim.",
        "enum": ["Accepted", "Rejected"],
    })
}

/// One v1alpha1 resource selector: objects by name, by namespace, or both.
fn resource_selector() -> Value {
    json!({
        "type": "object",
        "description": "Claimed objects by name and/or namespace; at least one must be given.",
        "properties": {
            "name": with(
                string("Name of the claimed objects (in every namespace when no namespace is given)."),
                json!({"pattern": OBJECT_NAME_PATTERN, "minLength": 1, "maxLength": 253}),
            ),
            "namespace": with(
                string("Namespace of the claimed objects (all of them when no name is given)."),
                json!({"minLength": 1}),
            ),
        },
        "x-kubernetes-validations": [
            rule("has(self.__namespace__) || has(self.name)", "at least one field must be set"),
        ],
    })
}

/// A v1alpha1 claim. Only APIExport's claims default their group (a list-map key there).
pub(super) fn v1alpha1_claim(form: Claim, group_defaulted: bool) -> Value {
    let mut properties = json!({
        "group": group(group_defaulted),
        "resource": resource(),
        "identityHash": string(
            "Identity hash of the APIExport serving the claimed resource; empty for built-in kinds."),
        "all": boolean("Claims every object of the resource; excludes resourceSelector."),
        "resourceSelector": {
            "type": "array",
            "description": "Claims the objects these selectors match; excludes all.",
            "items": resource_selector(),
        },
    });
    let mut required = vec!["resource"];
    if form == Claim::Accepted {
        properties["state"] = state();
        required.push("state");
    }
    json!({
        "type": "object",
        "description": "Access to one resource, by group, resource and identity.",
        "required": required,
        "properties": properties,
        "x-kubernetes-validations": [
            rule(
                "(has(self.all) && self.all) != (has(self.resourceSelector) && size(self.resourceSelector) > 0)",
                "either \"all\" or \"resourceSelector\" must be set",
            ),
        ],
    })
}

/// kcp's PermissionClaimSelector: a label selector, or every object.
fn claim_selector(description: &str) -> Value {
    json!({
        "type": "object",
        "description": description,
        "properties": {
            "matchAll": boolean("Selects every object of the claimed resource."),
            "matchLabels": {
                "type": "object",
                "description": "Selects objects carrying all these labels.",
                "additionalProperties": {"type": "string"},
            },
            "matchExpressions": {
                "type": "array",
                "description": "Selects objects meeting all these label requirements.",
                "items": {
                    "type": "object",
                    "required": ["key", "operator"],
                    "properties": {
                        "key": string("The label key."),
                        "operator": string("How the label relates to the values: In, NotIn, Exists or DoesNotExist."),
                        "values": with(
                            string_list("The values for In and NotIn; empty for Exists and DoesNotExist."),
                            json!({"x-kubernetes-list-type": "atomic"}),
                        ),
                    },
                },
                "x-kubernetes-list-type": "atomic",
            },
        },
        "x-kubernetes-map-type": "atomic",
    })
}

/// A v1alpha2 claim.
pub(super) fn v1alpha2_claim(form: Claim) -> Value {
    let mut properties = json!({
        "group": group(true),
        "resource": resource(),
        "identityHash": with(
            string("Identity hash of the APIExport serving the claimed resource; empty for built-in kinds."),
            json!({"default": ""}),
        ),
        "verbs": {
            "type": "array",
            "description": "The verbs claimed on the resource, e.g. get, list, watch; * for all.",
            "items": {"type": "string"},
            "minItems": 1,
            "x-kubernetes-list-type": "set",
        },
        "defaultSelector": claim_selector(
            "The selector bindings created for a WorkspaceType's defaultAPIBindings use; \
             unset selects every object."),
    });
    let mut required = vec!["resource"];
    if form != Claim::Requested {
        properties["selector"] = with(
            claim_selector(
                "The objects of the claimed resource the provider may reach: matchAll, or \
                 labels or expressions (one of them). Immutable.",
            ),
            json!({
                "x-kubernetes-validations": [
                    rule("self == oldSelf", "Permission claim selector is immutable"),
                ],
            }),
        );
        required.push("selector");
    }
    if form == Claim::Accepted {
        properties["state"] = state();
        required.push("state");
    }
    required.push("verbs");
    json!({
        "type": "object",
        "description": "Access to one resource, by group, resource and identity, with the verbs allowed.",
        "required": required,
        "properties": properties,
    })
}
