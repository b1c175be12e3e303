//! Pruning: dropping the fields a schema does not know, as decoding into Go types (built-ins) or
//! structural pruning (custom resources) does. Walks exactly like [`super::unknown_fields`], so what
//! is reported as unknown is what is dropped.

use serde_json::Value;

use super::{Child, Choice, child, choose};
use crate::structural::{Schema, SchemaNode};

/// `value` without its unknown fields.
pub fn prune(schema: &Schema, mut value: Value) -> Value {
    prune_node(schema.root(), &mut value, true);
    value
}

/// Prunes `value` against `node`; `resource` says it is a whole (embedded) resource.
pub(crate) fn prune_node(node: SchemaNode<'_>, value: &mut Value, resource: bool) {
    let Choice::Node(node) = choose(node, value) else {
        return;
    };
    match value {
        Value::Object(map) => {
            map.retain(|key, item| match child(node, key, resource) {
                Child::Field(sub) | Child::MapValue(sub) => {
                    prune_node(sub, item, sub.embedded_resource());
                    true
                }
                Child::Allowed => true,
                Child::Unknown => false,
            });
        }
        Value::Array(items) => {
            if let Some(sub) = node.items() {
                for item in items.iter_mut() {
                    prune_node(sub, item, sub.embedded_resource());
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
    use crate::{builtin_schema, unknown_fields};

    #[test]
    fn drops_exactly_the_unknown_fields() {
        let schema = builtin_schema("", "v1", "Namespace").expect("schema");
        let body = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "demo", "foo": "x", "labels": {"a": "b"}},
            "spec": {"finalizers": ["kubernetes"], "foo": {"deep": 1}},
            "bar": 1
        });
        let pruned = prune(&schema, body);
        assert_eq!(
            pruned,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo", "labels": {"a": "b"}}, "spec": {"finalizers": ["kubernetes"]}})
        );
        assert!(unknown_fields(&schema, &pruned).is_empty());
    }

    #[test]
    fn keeps_free_form_maps() {
        let schema = builtin_schema("", "v1", "ConfigMap").expect("schema");
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "annotations": {"x/y": "z"}}, "data": {"any-key": "v"}});
        assert_eq!(prune(&schema, body.clone()), body);
    }

    #[test]
    fn crd_structural_pruning() {
        let schema = crate::crd::compile_version_schema(&json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "known": {"type": "string"},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                             "properties": {"typed": {"type": "object", "properties": {"a": {"type": "integer"}}}}},
                    "anything": {"x-kubernetes-preserve-unknown-fields": true,
                                 "anyOf": [{"properties": {"x": {}}}]},
                    "size": {"x-kubernetes-int-or-string": true},
                    "empty": {"type": "object"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                 "properties": {"spec": {"type": "object", "properties": {"n": {"type": "integer"}}}}},
                    "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
                }}
            }
        }))
        .expect("compiles");
        let body = json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default", "unknownMeta": 1},
            "spec": {
                "known": "k", "dropped": 1,
                "free": {"kept": {"deep": true}, "typed": {"a": 1, "b": 2}},
                "anything": {"y": [1, 2], "x": 1},
                "size": "50%",
                "empty": {"gone": 1},
                "labels": {"a": "b"},
                "template": {"apiVersion": "v1", "kind": "Pod",
                             "metadata": {"name": "p", "junk": 1},
                             "spec": {"n": 1, "m": 2}, "status": {}},
                "items": [{"name": "a", "extra": 1}]
            },
            "status": {"x": 1}
        });
        let pruned = prune(&schema, body);
        assert_eq!(
            pruned,
            json!({
                "apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "namespace": "default"},
                "spec": {
                    "known": "k",
                    "free": {"kept": {"deep": true}, "typed": {"a": 1}},
                    "anything": {"y": [1, 2], "x": 1},
                    "size": "50%",
                    "empty": {},
                    "labels": {"a": "b"},
                    "template": {"apiVersion": "v1", "kind": "Pod",
                                 "metadata": {"name": "p"}, "spec": {"n": 1}},
                    "items": [{"name": "a"}]
                }
            })
        );
        assert!(unknown_fields(&schema, &pruned).is_empty());
    }
}
