//! Schemas of kcp's `apis.kcp.io` kinds: APIs a workspace offers (APIResourceSchema, APIExport,
//! APIConversion, APIExportEndpointSlice) and binds (APIBinding). Fields, patterns, defaults, list
//! types and CEL rules (with their messages) are those of kcp's CRDs; the descriptions are ours.

use serde_json::{Value, json};

use super::string;

mod api_binding;
mod api_conversion;
mod api_export;
mod api_resource_schema;
mod claims;
mod endpoint_slice;

pub use api_binding::{api_binding_v1alpha1_schema, api_binding_v1alpha2_schema};
pub use api_conversion::api_conversion_schema;
pub use api_export::{api_export_v1alpha1_schema, api_export_v1alpha2_schema};
pub use api_resource_schema::api_resource_schema_schema;
pub use endpoint_slice::api_export_endpoint_slice_schema;

/// A logical cluster path such as `root:org:team`.
const CLUSTER_PATH_PATTERN: &str =
    "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// A CRD-style version name: `v1`, `v2beta1`, ...
const VERSION_PATTERN: &str = "^v[1-9][0-9]*([a-z]+[1-9][0-9]*)?$";

/// `schema` with the keywords of `extra` added (patterns, defaults, list types, rules, ...).
fn with(mut schema: Value, extra: Value) -> Value {
    if let (Some(map), Value::Object(extra)) = (schema.as_object_mut(), extra) {
        map.extend(extra);
    }
    schema
}

/// One `x-kubernetes-validations` entry.
fn rule(expression: &str, message: &str) -> Value {
    json!({"rule": expression, "message": message})
}

/// A described reference to a Kubernetes component, e.g. an apiextensions.k8s.io type.
fn k8s_ref(component: &str, description: &str) -> Value {
    json!({
        "description": description,
        "allOf": [{"$ref": format!("#/components/schemas/{component}")}],
    })
}

/// A string of at least one character.
fn non_empty_string(description: &str) -> Value {
    with(string(description), json!({"minLength": 1}))
}

/// A list of `items` kept as `x-kubernetes-list-type: map` keyed by `keys`.
fn map_list(description: &str, items: Value, keys: &[&str]) -> Value {
    json!({
        "type": "array",
        "description": description,
        "items": items,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": keys,
    })
}

/// A plain (atomic) list of `items`.
fn list(description: &str, items: Value) -> Value {
    json!({"type": "array", "description": description, "items": items})
}

/// kcp's ExportBindingReference: an APIExport by name, in the workspace at `path`.
fn export_reference(description: &str) -> Value {
    json!({
        "type": "object",
        "description": description,
        "required": ["name"],
        "properties": {
            "path": with(
                string("Logical cluster path of the workspace holding the APIExport, e.g. \
                        root:org; unset means the referring object's own logical cluster."),
                json!({"pattern": CLUSTER_PATH_PATTERN}),
            ),
            "name": string("Name of the APIExport."),
        },
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::builtin::{builtin_schema, component_schema};
    use crate::kcp::KINDS;
    use crate::structural::SchemaType;
    use crate::{CelRules, apply_defaults, validate_value};

    const APIS: [(&str, &str); 7] = [
        ("v1alpha1", "APIResourceSchema"),
        ("v1alpha1", "APIExport"),
        ("v1alpha2", "APIExport"),
        ("v1alpha1", "APIBinding"),
        ("v1alpha2", "APIBinding"),
        ("v1alpha1", "APIExportEndpointSlice"),
        ("v1alpha1", "APIConversion"),
    ];

    #[test]
    fn every_apis_kind_compiles_with_its_rules() {
        // (version, kind, component name) of every registered apis.kcp.io kind.
        let registered: Vec<(&str, &str, &str)> = KINDS
            .iter()
            .filter(|k| k.group == "apis.kcp.io")
            .map(|k| (k.version, k.kind, k.schema_name))
            .collect();
        assert_eq!(registered.len(), APIS.len());
        for (version, kind) in APIS {
            let schema_name = registered
                .iter()
                .find(|(v, k, _)| *v == version && *k == kind)
                .map(|(_, _, name)| *name)
                .unwrap_or_else(|| panic!("{version} {kind} is not registered"));
            assert_eq!(schema_name, format!("io.kcp.apis.{version}.{kind}"));
            let schema = builtin_schema("apis.kcp.io", version, kind)
                .unwrap_or_else(|| panic!("no schema for {version} {kind}"));
            let root = schema.root();
            assert_eq!(root.schema_type(), Some(SchemaType::Object), "{kind}");
            assert!(
                root.property("spec").is_some(),
                "{version} {kind} has no spec"
            );
            // kcp's CEL rules compile with ours, as they would in a CRD.
            let component = component_schema(schema_name).expect("registered component");
            if let Err(causes) = CelRules::compile(component, "spec.validation.openAPIV3Schema") {
                panic!("{version} {kind}: {causes:?}");
            }
        }
    }

    #[test]
    fn api_export_v1alpha2_defaults_storage_and_claims() {
        let schema = builtin_schema("apis.kcp.io", "v1alpha2", "APIExport").expect("APIExport");
        let mut export = json!({
            "apiVersion": "apis.kcp.io/v1alpha2",
            "kind": "APIExport",
            "metadata": {"name": "widgets.example.io"},
            "spec": {
                "resources": [
                    {"name": "widgets", "group": "example.io", "schema": "v1.widgets.example.io"},
                ],
                "permissionClaims": [{"resource": "configmaps", "verbs": ["get", "list"]}],
            },
        });
        apply_defaults(&schema, &mut export);
        assert_eq!(
            export["spec"]["resources"][0]["storage"],
            json!({"crd": {}})
        );
        assert_eq!(export["spec"]["permissionClaims"][0]["group"], "");
        assert_eq!(export["spec"]["permissionClaims"][0]["identityHash"], "");
        let causes = validate_value(&schema, &export);
        assert!(causes.is_empty(), "{causes:?}");

        export["spec"]["permissionClaims"][0]["verbs"] = json!([]);
        let causes = validate_value(&schema, &export);
        assert!(
            causes
                .iter()
                .any(|c| c.field == "spec.permissionClaims[0].verbs"),
            "{causes:?}"
        );
    }

    #[test]
    fn api_binding_v1alpha2_needs_a_reference() {
        let schema = builtin_schema("apis.kcp.io", "v1alpha2", "APIBinding").expect("APIBinding");
        let binding = json!({
            "apiVersion": "apis.kcp.io/v1alpha2",
            "kind": "APIBinding",
            "metadata": {"name": "widgets"},
            "spec": {"reference": {"export": {"name": "widgets.example.io"}}},
        });
        let causes = validate_value(&schema, &binding);
        assert!(causes.is_empty(), "{causes:?}");

        let with_path = json!({
            "metadata": {"name": "widgets"},
            "spec": {"reference": {"export": {"name": "widgets.example.io", "path": "root:org"}}},
        });
        assert!(validate_value(&schema, &with_path).is_empty());

        let bad_path = json!({
            "metadata": {"name": "widgets"},
            "spec": {"reference": {"export": {"name": "widgets.example.io", "path": "Root/org"}}},
        });
        let causes = validate_value(&schema, &bad_path);
        assert!(
            causes
                .iter()
                .any(|c| c.field == "spec.reference.export.path"),
            "{causes:?}"
        );

        let missing = json!({
            "apiVersion": "apis.kcp.io/v1alpha2",
            "kind": "APIBinding",
            "metadata": {"name": "widgets"},
            "spec": {},
        });
        let causes = validate_value(&schema, &missing);
        assert!(
            causes.iter().any(|c| c.field == "spec.reference"),
            "{causes:?}"
        );
    }

    #[test]
    fn api_resource_schema_refers_to_apiextensions_types() {
        let schema = builtin_schema("apis.kcp.io", "v1alpha1", "APIResourceSchema")
            .expect("APIResourceSchema");
        let spec = schema.root().property("spec").expect("spec");
        let names = spec.property("names").expect("names");
        assert!(names.property("plural").is_some(), "names resolved");
        let version = spec
            .property("versions")
            .and_then(|versions| versions.items())
            .expect("version");
        let subresources = version.property("subresources").expect("subresources");
        assert!(
            subresources.property("scale").is_some(),
            "subresources resolved"
        );
        assert!(
            version
                .property("schema")
                .is_some_and(|schema| schema.preserve_unknown_fields())
        );
    }
}
