//! Required fields: properties a schema lists in `required` that an object leaves out, reported as
//! Kubernetes does (`spec.roleRef: Required value`). Walks like [`super::unknown_fields`].

use serde_json::Value;

use super::{Child, Choice, child, choose};
use crate::structural::{Schema, SchemaNode};

/// The path of every required field that is absent (or null), in document order. Paths use
/// Kubernetes' field notation: `rules[0].verbs`, `roleRef.name`.
pub fn missing_required(schema: &Schema, value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema.root(), value, "", true, &mut found);
    found
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(node: SchemaNode<'_>, value: &Value, path: &str, resource: bool, found: &mut Vec<String>) {
    let Choice::Node(node) = choose(node, value) else {
        return;
    };
    match value {
        Value::Object(map) => {
            for name in node.required() {
                // metadata is the server's to fill; its own rules are checked elsewhere.
                if resource && name == "metadata" {
                    continue;
                }
                if map.get(name).is_none_or(Value::is_null) {
                    found.push(join(path, name));
                }
            }
            for (key, item) in map {
                if resource && key == "metadata" {
                    continue;
                }
                if let Child::Field(sub) | Child::MapValue(sub) = child(node, key, resource) {
                    walk(sub, item, &join(path, key), sub.embedded_resource(), found);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = node.items() {
                for (i, item) in items.iter().enumerate() {
                    walk(
                        sub,
                        item,
                        &format!("{path}[{i}]"),
                        sub.embedded_resource(),
                        found,
                    );
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::builtin_schema;

    #[test]
    fn reports_missing_required_fields_by_path() {
        let rb = builtin_schema("rbac.authorization.k8s.io", "v1", "RoleBinding").expect("schema");
        let body = json!({"metadata": {"name": "rb"}, "subjects": [{"kind": "User"}]});
        assert_eq!(
            missing_required(&rb, &body),
            vec!["roleRef", "subjects[0].name"]
        );
        let ok = json!({"metadata": {"name": "rb"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}});
        assert!(missing_required(&rb, &ok).is_empty());
        let role = builtin_schema("rbac.authorization.k8s.io", "v1", "Role").expect("schema");
        assert_eq!(
            missing_required(&role, &json!({"rules": [{"resources": ["pods"]}]})),
            vec!["rules[0].verbs"]
        );
        let cm = builtin_schema("", "v1", "ConfigMap").expect("schema");
        assert!(missing_required(&cm, &json!({"data": {"a": "b"}})).is_empty());
    }
}
