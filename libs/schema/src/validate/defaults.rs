//! Structural defaulting of custom resources, as kube-apiserver applies it to request bodies and to
//! objects read from storage.
//!
//! Two passes, in Kubernetes' order: nulls in non-nullable fields without a default are dropped;
//! then every absent property with a `default` (and every null in a non-nullable field that has
//! one) gets a deep copy of the default, through properties, `additionalProperties` and `items`.
//! Defaults are themselves defaulted further, so nested defaults compose. The root's own default
//! and the root `metadata` are left alone (metadata is the registry's).

use serde_json::Value;

use crate::structural::{AdditionalProperties, Schema, SchemaNode};

/// Applies the schema's defaults to `value` in place.
pub fn apply_defaults(schema: &Schema, value: &mut Value) {
    prune_nulls(Some(schema.root()), value, true);
    default(schema.root(), value, true);
}

/// The schema of key `key` of an object under `node`: a property, else the map's value schema.
fn field_schema<'a>(node: SchemaNode<'a>, key: &str) -> Option<SchemaNode<'a>> {
    node.property(key).or(match node.additional_properties() {
        AdditionalProperties::Schema(inner) => Some(inner),
        _ => None,
    })
}

fn is_non_nullable_null(value: &Value, node: SchemaNode<'_>) -> bool {
    value.is_null() && !node.nullable()
}

fn prune_nulls(node: Option<SchemaNode<'_>>, value: &mut Value, root: bool) {
    match value {
        Value::Object(map) => {
            map.retain(|key, item| {
                if root && key == "metadata" {
                    return true;
                }
                let sub = node.and_then(|node| field_schema(node, key));
                match sub {
                    Some(sub) if is_non_nullable_null(item, sub) && sub.default().is_none() => {
                        false
                    }
                    _ => {
                        prune_nulls(sub, item, false);
                        true
                    }
                }
            });
        }
        Value::Array(items) => {
            let sub = node.and_then(SchemaNode::items);
            for item in items {
                prune_nulls(sub, item, false);
            }
        }
        _ => {}
    }
}

fn default(node: SchemaNode<'_>, value: &mut Value, root: bool) {
    match value {
        Value::Object(map) => {
            for (name, property) in node.properties() {
                if root && name == "metadata" {
                    continue;
                }
                let Some(fallback) = property.default() else {
                    continue;
                };
                let missing = map
                    .get(name)
                    .is_none_or(|item| is_non_nullable_null(item, property));
                if missing {
                    map.insert(name.to_owned(), fallback.clone());
                }
            }
            let additional = match node.additional_properties() {
                AdditionalProperties::Schema(inner) => Some(inner),
                _ => None,
            };
            for (key, item) in map.iter_mut() {
                if root && key == "metadata" {
                    continue;
                }
                if let Some(property) = node.property(key) {
                    default(property, item, false);
                } else if let Some(inner) = additional {
                    if is_non_nullable_null(item, inner)
                        && let Some(fallback) = inner.default()
                    {
                        *item = fallback.clone();
                    }
                    default(inner, item, false);
                }
            }
        }
        Value::Array(items) => {
            let Some(inner) = node.items() else {
                return;
            };
            for item in items {
                if is_non_nullable_null(item, inner)
                    && let Some(fallback) = inner.default()
                {
                    *item = fallback.clone();
                }
                default(inner, item, false);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Schema {
        Schema::compile(&json!({
            "type": "object",
            "default": {"ignored": true},
            "properties": {
                "metadata": {"type": "object", "properties": {"name": {"type": "string", "default": "x"}}},
                "spec": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "replicas": {"type": "integer", "default": 1},
                        "image": {"type": "string"},
                        "note": {"type": "string", "nullable": true, "default": "n"},
                        "policy": {"type": "object", "default": {"kind": "Allow"},
                                   "properties": {"kind": {"type": "string"},
                                                  "limit": {"type": "integer", "default": 5}}},
                        "ports": {"type": "array", "items": {"type": "object", "properties": {
                            "protocol": {"type": "string", "default": "TCP"}}}},
                        "names": {"type": "array", "items": {"type": "string", "default": "anon"}},
                        "limits": {"type": "object", "additionalProperties": {
                            "type": "object", "properties": {"max": {"type": "integer", "default": 10}}}}
                    }
                }
            }
        }))
        .expect("compiles")
    }

    #[test]
    fn fills_missing_properties_recursively() {
        let mut value = json!({"metadata": {}});
        apply_defaults(&schema(), &mut value);
        assert_eq!(
            value,
            json!({"metadata": {}, "spec": {"replicas": 1, "note": "n",
                                            "policy": {"kind": "Allow", "limit": 5}}})
        );
    }

    #[test]
    fn through_items_maps_and_nulls() {
        let mut value = json!({"spec": {
            "replicas": null, "image": null, "note": null, "policy": {"kind": "Forbid"},
            "ports": [{}, {"protocol": "UDP"}], "names": [null, "b"],
            "limits": {"cpu": {}, "mem": {"max": 3}}
        }});
        apply_defaults(&schema(), &mut value);
        assert_eq!(
            value,
            json!({"spec": {
                "replicas": 1, "note": null, "policy": {"kind": "Forbid", "limit": 5},
                "ports": [{"protocol": "TCP"}, {"protocol": "UDP"}], "names": ["anon", "b"],
                "limits": {"cpu": {"max": 10}, "mem": {"max": 3}}
            }})
        );
    }

    #[test]
    fn defaults_are_copies() {
        let schema = schema();
        let mut first = json!({});
        apply_defaults(&schema, &mut first);
        if let Some(kind) = first.pointer_mut("/spec/policy/kind") {
            *kind = json!("Changed");
        }
        let mut second = json!({});
        apply_defaults(&schema, &mut second);
        assert_eq!(second.pointer("/spec/policy/kind"), Some(&json!("Allow")));
    }
}
