//! The `/openapi/v2` (Swagger 2.0) document, derived from the group-version v3 documents the
//! same API set serves, the way kube-apiserver publishes both from one model.
//!
//! Conversion rules: component schemas become `definitions` (references rewritten to
//! `#/definitions/`); a request body becomes an `in: body` parameter named `body`; response and
//! parameter schemas lose their media-type wrapper; v3-only keywords (`nullable`, `oneOf`,
//! `anyOf`) are dropped and `allOf: [{$ref}]` wrappers collapse to the reference, as Swagger 2.0
//! cannot express them; int-or-string becomes `type: string, format: int-or-string`.

use serde_json::{Map, Value, json};

use super::{INFO_TITLE, INFO_VERSION};

const V3_REF: &str = "#/components/schemas/";
const V2_REF: &str = "#/definitions/";

/// One Swagger 2.0 document covering every given group-version v3 document.
pub fn v2_from_v3<'a>(documents: impl IntoIterator<Item = &'a Value>) -> Value {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    for doc in documents {
        if let Some(schemas) = doc
            .pointer("/components/schemas")
            .and_then(Value::as_object)
        {
            for (name, schema) in schemas {
                definitions
                    .entry(name.clone())
                    .or_insert_with(|| schema_v2(schema));
            }
        }
        if let Some(doc_paths) = doc.get("paths").and_then(Value::as_object) {
            for (path, item) in doc_paths {
                paths.entry(path.clone()).or_insert_with(|| path_item(item));
            }
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": INFO_TITLE, "version": INFO_VERSION},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": {
            "description": "Bearer Token authentication",
            "type": "apiKey", "name": "authorization", "in": "header"
        }},
        "security": [{"BearerToken": []}],
    })
}

fn path_item(item: &Value) -> Value {
    let Some(map) = item.as_object() else {
        return item.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        let converted = match key.as_str() {
            "parameters" => parameters(value, None),
            "get" | "put" | "post" | "delete" | "patch" | "head" | "options" => operation(value),
            _ => value.clone(),
        };
        out.insert(key.clone(), converted);
    }
    Value::Object(out)
}

fn operation(op: &Value) -> Value {
    let Some(map) = op.as_object() else {
        return op.clone();
    };
    let mut out = Map::new();
    let mut consumes = Vec::new();
    let mut produces = Vec::new();
    for (key, value) in map {
        match key.as_str() {
            "parameters" | "requestBody" => {}
            "responses" => {
                out.insert(key.clone(), responses(value, &mut produces));
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    let params = parameters(
        map.get("parameters").unwrap_or(&Value::Null),
        map.get("requestBody")
            .map(|body| body_parameter(body, &mut consumes)),
    );
    if params.as_array().is_some_and(|p| !p.is_empty()) {
        out.insert("parameters".into(), params);
    }
    if !consumes.is_empty() {
        out.insert("consumes".into(), json!(consumes));
    }
    if !produces.is_empty() {
        out.insert("produces".into(), json!(produces));
    }
    out.insert("schemes".into(), json!(["https"]));
    Value::Object(out)
}

/// A v3 parameter list in v2 form: the schema's type moves up into the parameter.
fn parameters(list: &Value, body: Option<Value>) -> Value {
    let mut out: Vec<Value> = list
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|p| {
                    let mut p = p.clone();
                    if let Some(map) = p.as_object_mut()
                        && let Some(schema) = map.remove("schema")
                    {
                        for field in ["type", "format", "items", "default", "enum"] {
                            if let Some(v) = schema.get(field) {
                                map.insert(field.into(), v.clone());
                            }
                        }
                        if !map.contains_key("type") {
                            map.insert("type".into(), json!("string"));
                        }
                    }
                    if let Some(map) = p.as_object_mut() {
                        map.remove("style");
                        map.remove("explode");
                        if map.get("$ref").is_some() {
                            rewrite_refs(&mut p);
                        }
                    }
                    p
                })
                .collect()
        })
        .unwrap_or_default();
    out.extend(body);
    Value::Array(out)
}

fn body_parameter(body: &Value, consumes: &mut Vec<String>) -> Value {
    let content = body.get("content").and_then(Value::as_object);
    let mut schema = Value::Null;
    if let Some(content) = content {
        for (media, entry) in content {
            consumes.push(media.clone());
            if schema.is_null() {
                schema = entry.get("schema").map(schema_v2).unwrap_or_default();
            }
        }
    }
    json!({
        "name": "body",
        "in": "body",
        "required": body.get("required").and_then(Value::as_bool).unwrap_or(true),
        "schema": schema,
    })
}

fn responses(responses: &Value, produces: &mut Vec<String>) -> Value {
    let Some(map) = responses.as_object() else {
        return responses.clone();
    };
    let mut out = Map::new();
    for (code, response) in map {
        let mut converted = Map::new();
        converted.insert(
            "description".into(),
            response.get("description").cloned().unwrap_or(json!(code)),
        );
        if let Some(content) = response.get("content").and_then(Value::as_object) {
            for (media, entry) in content {
                if !produces.contains(media) {
                    produces.push(media.clone());
                }
                if !converted.contains_key("schema")
                    && let Some(schema) = entry.get("schema")
                {
                    converted.insert("schema".into(), schema_v2(schema));
                }
            }
        }
        out.insert(code.clone(), Value::Object(converted));
    }
    Value::Object(out)
}

/// A v3 schema in Swagger 2.0 form.
fn schema_v2(schema: &Value) -> Value {
    let mut out = schema.clone();
    simplify(&mut out);
    rewrite_refs(&mut out);
    out
}

fn simplify(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("nullable");
            map.remove("oneOf");
            map.remove("anyOf");
            if map
                .get("x-kubernetes-int-or-string")
                .is_some_and(|v| v == &Value::Bool(true))
            {
                map.insert("type".into(), json!("string"));
                map.insert("format".into(), json!("int-or-string"));
            }
            // `allOf: [{$ref}]` (a v3 way to describe a reference) is the reference itself.
            if let Some(Value::Array(all)) = map.get("allOf")
                && let [only] = all.as_slice()
                && only.get("$ref").is_some()
            {
                let reference = only.clone();
                map.remove("allOf");
                if let Some(r) = reference.get("$ref") {
                    map.insert("$ref".into(), r.clone());
                }
            }
            for child in map.values_mut() {
                simplify(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(simplify),
        _ => {}
    }
}

fn rewrite_refs(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref")
                && let Some(name) = r.strip_prefix(V3_REF)
            {
                *r = format!("{V2_REF}{name}");
            }
            map.values_mut().for_each(rewrite_refs);
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_bodies_responses_refs_and_v3_keywords() {
        let v3 = json!({
            "paths": {"/api/v1/namespaces/{namespace}/configmaps": {
                "parameters": [{"name": "namespace", "in": "path", "required": true, "schema": {"type": "string"}}],
                "post": {
                    "operationId": "createCoreV1NamespacedConfigMap",
                    "requestBody": {"required": true, "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/io.k8s.api.core.v1.ConfigMap"}}}},
                    "responses": {"201": {"description": "Created", "content": {"application/json": {
                        "schema": {"$ref": "#/components/schemas/io.k8s.api.core.v1.ConfigMap"}}}}}
                }
            }},
            "components": {"schemas": {"io.k8s.api.core.v1.ConfigMap": {
                "type": "object",
                "properties": {
                    "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "description": "meta"},
                    "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "data": {"type": "object", "nullable": true, "additionalProperties": {"type": "string"}}
                }
            }}}
        });
        let v2 = v2_from_v3([&v3]);
        assert_eq!(v2["swagger"], "2.0");
        let post = &v2["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["post"];
        assert_eq!(post["parameters"][0]["in"], "body");
        assert_eq!(
            post["parameters"][0]["schema"]["$ref"],
            "#/definitions/io.k8s.api.core.v1.ConfigMap"
        );
        assert_eq!(post["consumes"], json!(["application/json"]));
        assert_eq!(
            post["responses"]["201"]["schema"]["$ref"],
            "#/definitions/io.k8s.api.core.v1.ConfigMap"
        );
        let path_params = &v2["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["parameters"];
        assert_eq!(path_params[0]["type"], "string");
        assert!(path_params[0].get("schema").is_none());
        let cm = &v2["definitions"]["io.k8s.api.core.v1.ConfigMap"];
        assert_eq!(
            cm["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(cm["properties"]["metadata"].get("allOf").is_none());
        assert_eq!(cm["properties"]["port"]["format"], "int-or-string");
        assert!(cm["properties"]["port"].get("anyOf").is_none());
        assert!(cm["properties"]["data"].get("nullable").is_none());
    }
}
