//! `apis.kcp.io/v1alpha1` APIConversion: field-by-field rules converting objects between the
//! versions of the APIResourceSchema of the same name.

use serde_json::{Value, json};

use super::{VERSION_PATTERN, map_list, non_empty_string, with};
use crate::kcp::{api_version, kind, object_meta, string, string_list};

fn version_name(description: &str) -> Value {
    with(
        non_empty_string(description),
        json!({"pattern": VERSION_PATTERN}),
    )
}

fn conversion_rule() -> Value {
    json!({
        "type": "object",
        "description": "How one field is carried over.",
        "required": ["destination", "field"],
        "properties": {
            "field": non_empty_string(
                "JSONPath of the field in the source version, from the object's root, e.g. \
                 .spec.name.first."),
            "destination": non_empty_string(
                "JSONPath of the field it becomes in the target version, from the object's root."),
            "transformation": string(
                "A CEL expression computing the new value from the old one (self); unset copies it."),
        },
    })
}

fn version_conversion() -> Value {
    json!({
        "type": "object",
        "description": "The conversion from one version to another.",
        "required": ["from", "rules", "to"],
        "properties": {
            "from": version_name("The source version."),
            "to": version_name("The target version."),
            "rules": map_list(
                "The fields converted, one rule per destination.",
                conversion_rule(),
                &["destination"],
            ),
            "preserve": string_list(
                "JSONPaths of source fields the target version cannot hold, kept in an annotation \
                 (preserve.conversion.apis.kcp.io/<version>) so converting back restores them."),
        },
    })
}

/// The APIConversion component schema (OpenAPI v3 JSON).
pub fn api_conversion_schema() -> Value {
    json!({
        "description": "APIConversion holds the rules converting objects between the versions of \
                        an APIResourceSchema; it applies to the schema of the same name.",
        "type": "object",
        "required": ["metadata", "spec"],
        "properties": {
            "apiVersion": api_version("apis.kcp.io/v1alpha1"),
            "kind": kind("APIConversion"),
            "metadata": object_meta(),
            "spec": {
                "type": "object",
                "description": "The conversions.",
                "required": ["conversions"],
                "properties": {
                    "conversions": map_list(
                        "One entry per pair of versions converted.",
                        version_conversion(),
                        &["from", "to"],
                    ),
                },
            },
        },
    })
}
