//! What kube-apiserver publishes of a CRD version's schema in `/openapi/v3` beyond the schema as
//! written (apiextensions-apiserver's OpenAPI builder): int-or-string fields spelled out as
//! `anyOf` (the structural schema's Unfold), and embedded resources given their type and object
//! metadata (addEmbeddedProperties). kubectl explain reads both.

use serde_json::{Map, Value, json};

/// Applies both, everywhere in `schema` a structural schema may nest (properties, items,
/// additionalProperties).
pub(super) fn unfold(schema: &mut Value) {
    let Some(node) = schema.as_object_mut() else {
        return;
    };
    if let Some(props) = node.get_mut("properties").and_then(Value::as_object_mut) {
        props.values_mut().for_each(unfold);
    }
    for nested in ["items", "additionalProperties"] {
        if let Some(child) = node.get_mut(nested) {
            unfold(child);
        }
    }
    if is_true(node, "x-kubernetes-int-or-string") {
        spell_out_int_or_string(node);
    }
    if is_true(node, "x-kubernetes-embedded-resource") {
        add_embedded_properties(node);
    }
}

fn is_true(node: &Map<String, Value>, extension: &str) -> bool {
    node.get(extension) == Some(&Value::Bool(true))
}

/// `anyOf: [{type: integer}, {type: string}]`, or that as the first `allOf` when the field has an
/// `anyOf` of its own; nothing when either is there already.
fn spell_out_int_or_string(node: &mut Map<String, Value>) {
    let pattern = json!([{"type": "integer"}, {"type": "string"}]);
    let first_all_of = node
        .get("allOf")
        .and_then(|a| a.get(0))
        .and_then(|a| a.get("anyOf"));
    if node.get("anyOf") == Some(&pattern) || first_all_of == Some(&pattern) {
        return;
    }
    match node.get("anyOf") {
        Some(Value::Array(own)) if !own.is_empty() => {
            let mut all_of = vec![json!({ "anyOf": pattern })];
            if let Some(Value::Array(rest)) = node.remove("allOf") {
                all_of.extend(rest);
            }
            node.insert("allOf".into(), Value::Array(all_of));
        }
        _ => {
            node.insert("anyOf".into(), pattern);
        }
    }
}

/// An embedded object's `apiVersion`, `kind` and `metadata`, the first two required.
fn add_embedded_properties(node: &mut Map<String, Value>) {
    let props = node
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(props) = props.as_object_mut() {
        props.insert(
            "apiVersion".into(),
            json!({
                "description": "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
                "type": "string",
            }),
        );
        props.insert(
            "kind".into(),
            json!({
                "description": "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "type": "string",
            }),
        );
        props.insert("metadata".into(), super::object_meta_property());
    }
    let required = node.entry("required").or_insert_with(|| json!([]));
    if let Some(required) = required.as_array_mut() {
        for field in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == field) {
                required.push(json!(field));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_or_string_is_spelled_out_once() {
        let mut schema = json!({"type": "object", "properties": {
            "port": {"x-kubernetes-int-or-string": true},
            "ports": {"type": "array", "items": {"x-kubernetes-int-or-string": true,
                "anyOf": [{"type": "integer"}, {"type": "string"}]}},
            "limited": {"x-kubernetes-int-or-string": true,
                "anyOf": [{"maxLength": 3}, {"minimum": 1}], "allOf": [{"pattern": "x"}]},
        }});
        unfold(&mut schema);
        let props = &schema["properties"];
        let pattern = json!([{"type": "integer"}, {"type": "string"}]);
        assert_eq!(props["port"]["anyOf"], pattern);
        assert_eq!(props["ports"]["items"]["anyOf"], pattern);
        assert!(props["ports"]["items"].get("allOf").is_none());
        assert_eq!(
            props["limited"]["allOf"],
            json!([{"anyOf": pattern}, {"pattern": "x"}])
        );
        assert_eq!(
            props["limited"]["anyOf"],
            json!([{"maxLength": 3}, {"minimum": 1}])
        );
    }

    #[test]
    fn embedded_resources_get_type_and_object_metadata() {
        let mut schema = json!({"type": "object", "properties": {"template": {
            "type": "object", "x-kubernetes-embedded-resource": true, "required": ["spec"],
            "properties": {"spec": {"type": "object"}},
        }}});
        unfold(&mut schema);
        let template = &schema["properties"]["template"];
        assert_eq!(template["required"], json!(["spec", "kind", "apiVersion"]));
        assert_eq!(template["properties"]["apiVersion"]["type"], "string");
        assert_eq!(template["properties"]["kind"]["type"], "string");
        assert!(
            template["properties"]["metadata"]["allOf"][0]["$ref"]
                .as_str()
                .is_some_and(|r| r.ends_with("ObjectMeta"))
        );
        assert!(template["properties"]["spec"].is_object());
    }
}
