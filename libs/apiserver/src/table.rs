//! Table output (`as=Table;g=meta.k8s.io;v=v1`): the columns kube-apiserver prints for each kind.

use kcp_api_types::{Column, ColumnValue, ResourceDef};
use serde_json::{Map, Value, json};

/// What `includeObject` asks rows to carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn parse(value: Option<&str>) -> Result<IncludeObject, kcp_apimachinery::status::ApiError> {
        match value.unwrap_or("Metadata") {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "None" => Ok(IncludeObject::None),
            "Object" => Ok(IncludeObject::Object),
            other => Err(kcp_apimachinery::status::ApiError::bad_request(format!(
                "includeObject: Unsupported value: {other:?}: supported values: \"Metadata\", \"None\", \"Object\""
            ))),
        }
    }
}

fn cell(column: &Column, obj: &Value, custom: bool) -> Value {
    match &column.value {
        ColumnValue::Name => obj
            .pointer("/metadata/name")
            .cloned()
            .unwrap_or(Value::Null),
        ColumnValue::Age => {
            let ts = obj
                .pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .unwrap_or_default();
            json!(kcp_api_types::builtin::age_since(ts))
        }
        ColumnValue::Path(p) => match kcp_api_types::jsonpath::first(obj, p) {
            None | Some(Value::Null) => json!("<none>"),
            Some(v) if custom => typed_cell(&column.type_, v),
            Some(v) => v.clone(),
        },
        ColumnValue::Computed(f) => f(obj),
    }
}

/// A custom resource's cell as kube-apiserver's CRD table converter types it: `string` columns print any value as text,
/// the others keep the JSON value.
fn typed_cell(type_: &str, value: &Value) -> Value {
    match (type_, value) {
        // Dates print as ages ("5m"), as kube-apiserver renders them for custom resources.
        ("date", Value::String(ts)) => json!(kcp_api_types::builtin::age_since(ts)),
        ("string", Value::String(_)) | (_, Value::String(_)) => value.clone(),
        ("string", other) => Value::String(other.to_string()),
        _ => value.clone(),
    }
}

/// `PartialObjectMetadata` of an object.
pub fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

fn row(def: &ResourceDef, obj: &Value, include: IncludeObject) -> Value {
    let cells: Vec<Value> = def
        .columns
        .iter()
        .map(|c| cell(c, obj, def.custom_schema.is_some()))
        .collect();
    let mut row = Map::new();
    row.insert("cells".into(), Value::Array(cells));
    match include {
        IncludeObject::None => {}
        IncludeObject::Metadata => {
            row.insert("object".into(), partial_metadata(obj));
        }
        IncludeObject::Object => {
            row.insert("object".into(), obj.clone());
        }
    }
    Value::Object(row)
}

/// A Table of `objects`; `list_meta` becomes the table's metadata (resourceVersion, continue).
pub fn table(
    def: &ResourceDef,
    objects: &[Value],
    list_meta: Value,
    include: IncludeObject,
) -> Value {
    let columns: Vec<Value> = def
        .columns
        .iter()
        .map(|c| json!({"name": c.name, "type": c.type_, "format": c.format, "description": c.description, "priority": c.priority}))
        .collect();
    let rows: Vec<Value> = objects.iter().map(|o| row(def, o, include)).collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns,
        "rows": rows,
    })
}
