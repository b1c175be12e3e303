//! Unknown fields: keys the schema neither lists nor allows.

use serde_json::Value;

use super::path::{go_quote, push_index, push_key};
use super::{Child, Choice, MAX_STRICT_ERRORS, child, choose};
use crate::structural::{Schema, SchemaNode};

/// Every unknown field of `value`, as `unknown field "<path>"` in document order (the Go
/// decoder's wording and order; kube-apiserver uses the same text for the Warn header).
/// The walk does not descend into an unknown field, and values of the wrong type are left to
/// [`super::type_errors`].
pub fn unknown_fields(schema: &Schema, value: &Value) -> Vec<String> {
    let mut walk = Walk { found: Vec::new() };
    let mut path = String::new();
    walk.value(schema.root(), value, &mut path, true);
    walk.found
}

struct Walk {
    found: Vec<String>,
}

impl Walk {
    fn value(&mut self, node: SchemaNode<'_>, value: &Value, path: &mut String, resource: bool) {
        if self.found.len() >= MAX_STRICT_ERRORS {
            return;
        }
        let Choice::Node(node) = choose(node, value) else {
            return;
        };
        match value {
            Value::Object(map) => {
                for (key, item) in map {
                    let mark = path.len();
                    push_key(path, key);
                    match child(node, key, resource) {
                        Child::Field(sub) | Child::MapValue(sub) => {
                            self.value(sub, item, path, sub.embedded_resource());
                        }
                        Child::Allowed => {}
                        Child::Unknown => self.report(path),
                    }
                    path.truncate(mark);
                }
            }
            Value::Array(items) => {
                if let Some(sub) = node.items() {
                    for (index, item) in items.iter().enumerate() {
                        let mark = path.len();
                        push_index(path, index);
                        self.value(sub, item, path, sub.embedded_resource());
                        path.truncate(mark);
                    }
                }
            }
            _ => {}
        }
    }

    fn report(&mut self, path: &str) {
        let message = format!("unknown field {}", go_quote(path));
        // The Go decoder reports each distinct error once.
        if self.found.len() < MAX_STRICT_ERRORS && !self.found.contains(&message) {
            self.found.push(message);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::builtin_schema;
    use crate::structural::Schema;

    fn schema(group: &str, version: &str, kind: &str) -> std::sync::Arc<Schema> {
        builtin_schema(group, version, kind).expect("built-in schema")
    }

    #[test]
    fn flags_unknown_spec_top_level_and_metadata_fields() {
        let namespace = schema("", "v1", "Namespace");
        let body = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "demo", "foo": "x", "labels": {"a": "b"}},
            "spec": {"finalizers": ["kubernetes"], "foo": {"deep": 1}},
            "bar": 1
        });
        assert_eq!(
            unknown_fields(&namespace, &body),
            vec![
                r#"unknown field "metadata.foo""#,
                r#"unknown field "spec.foo""#,
                r#"unknown field "bar""#,
            ]
        );
    }

    #[test]
    fn valid_objects_have_no_unknown_fields() {
        let cases = [
            (
                ("", "v1", "ConfigMap"),
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "c", "namespace": "default",
                                    "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
                                    "managedFields": [{"manager": "kubectl", "operation": "Apply",
                                                       "apiVersion": "v1", "fieldsType": "FieldsV1",
                                                       "fieldsV1": {"f:data": {"f:a": {}}}}]},
                       "data": {"a": "1"}, "binaryData": {"b": "AAE="}, "immutable": false}),
            ),
            (
                ("", "v1", "Secret"),
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                       "type": "Opaque", "data": {"k": "dg=="}, "stringData": {"x": "y"}}),
            ),
            (
                ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                       "metadata": {"name": "rb", "namespace": "default"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                       "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}),
            ),
            (
                ("coordination.k8s.io", "v1", "Lease"),
                json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                       "metadata": {"name": "l", "namespace": "kube-system"},
                       "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                                "renewTime": "2024-01-01T00:00:00.000000Z", "leaseTransitions": 2}}),
            ),
            (
                ("core.kcp.io", "v1alpha1", "LogicalCluster"),
                json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster",
                       "metadata": {"name": "cluster"},
                       "spec": {"owner": {"apiVersion": "tenancy.kcp.io/v1alpha1", "resource": "workspaces",
                                          "name": "ws", "cluster": "root", "uid": "u"},
                                "initializers": ["root:universal"]},
                       "status": {"phase": "Ready", "URL": "https://shard/clusters/x",
                                  "conditions": [{"type": "Ready", "status": "True",
                                                  "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}),
            ),
        ];
        for ((group, version, kind), body) in cases {
            assert_eq!(
                unknown_fields(&schema(group, version, kind), &body),
                Vec::<String>::new(),
                "{kind}"
            );
        }
    }

    #[test]
    fn paths_include_list_indices_and_map_keys() {
        let role = schema("rbac.authorization.k8s.io", "v1", "Role");
        let body = json!({"metadata": {"name": "r"},
                          "rules": [{"verbs": ["get"]}, {"verbs": ["list"], "nope": true}]});
        assert_eq!(
            unknown_fields(&role, &body),
            vec![r#"unknown field "rules[1].nope""#]
        );

        let quota = schema("", "v1", "ResourceQuota");
        let body = json!({"spec": {"hard": {"pods": "10", "cpu": 4}, "scopeSelector": {
            "matchExpressions": [{"scopeName": "x", "operator": "In", "values": [], "extra": 1}]}}});
        assert_eq!(
            unknown_fields(&quota, &body),
            vec![r#"unknown field "spec.scopeSelector.matchExpressions[0].extra""#]
        );
    }

    #[test]
    fn opaque_and_recursive_types_are_handled() {
        let crd = schema("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
        let body = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "default": {"anything": [1, "x"]},
                                     "properties": {"size": {"type": "integer", "enum": [1, 2]}},
                                     "additionalProperties": false,
                                     "x-kubernetes-validations": [{"rule": "self.size > 0"}]},
                            "list": {"type": "array", "items": {"type": "string", "bogus": 1}}
                        }
                    }}
                }]
            }
        });
        assert_eq!(
            unknown_fields(&crd, &body),
            vec![
                r#"unknown field "spec.versions[0].schema.openAPIV3Schema.properties.list.items.bogus""#
            ]
        );
    }

    #[test]
    fn custom_resource_schemas_check_metadata_and_respect_preserve() {
        let cr = Schema::compile(&json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}},
                "spec": {"type": "object", "properties": {
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                                 "properties": {"spec": {"type": "object"}}}
                }}
            }
        }))
        .expect("compiles");
        let body = json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "labels": {"a": "b"}, "bogus": 1},
            "spec": {"free": {"x": 1}, "embedded": {"apiVersion": "v1", "kind": "ConfigMap",
                                                    "metadata": {"name": "e", "nope": 2}}, "other": 3}
        });
        assert_eq!(
            unknown_fields(&cr, &body),
            vec![
                r#"unknown field "metadata.bogus""#,
                r#"unknown field "spec.embedded.metadata.nope""#,
                r#"unknown field "spec.other""#,
            ]
        );
    }
}
