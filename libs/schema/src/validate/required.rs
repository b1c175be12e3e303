//! Required fields: properties a schema lists in `required` that an object leaves out, reported as
//! Kubernetes does (`spec.roleRef: Required value`). Walks like [`super::unknown_fields`].

use std::fmt::Write;

use serde_json::Value;

use super::{Child, Choice, child, choose};
use crate::structural::{Schema, SchemaNode};

/// The path of every required field that is absent (or null), in document order. Paths use
/// Kubernetes' field notation: `rules[0].verbs`, `roleRef.name`.
pub fn missing_required(schema: &Schema, value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema.root(), value, &mut Vec::new(), true, &mut found);
    found
}

/// A step of the path to a node: a field name or a list index.
enum Step<'v> {
    Key(&'v str),
    Index(usize),
}

/// `steps` then `last` in Kubernetes' field notation. Only built for a field found missing: the
/// walk visits every node of every write, and almost all of them lack nothing.
fn path_of(steps: &[Step<'_>], last: &str) -> String {
    let mut path = String::new();
    for step in steps {
        match step {
            Step::Key(key) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Step::Index(i) => {
                let _ = write!(path, "[{i}]");
            }
        }
    }
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(last);
    path
}

fn walk<'v>(
    node: SchemaNode<'_>,
    value: &'v Value,
    steps: &mut Vec<Step<'v>>,
    resource: bool,
    found: &mut Vec<String>,
) {
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
                    found.push(path_of(steps, name));
                }
            }
            for (key, item) in map {
                if resource && key == "metadata" {
                    continue;
                }
                if let Child::Field(sub) | Child::MapValue(sub) = child(node, key, resource) {
                    steps.push(Step::Key(key));
                    walk(sub, item, steps, sub.embedded_resource(), found);
                    steps.pop();
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = node.items() {
                for (i, item) in items.iter().enumerate() {
                    steps.push(Step::Index(i));
                    walk(sub, item, steps, sub.embedded_resource(), found);
                    steps.pop();
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
