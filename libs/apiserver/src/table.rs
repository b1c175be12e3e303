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
        ColumnValue::Path(p) => match (kcp_api_types::jsonpath::first(obj, p), custom) {
            (Some(v), true) => typed_cell(&column.type_, v),
            (None, true) => Value::Null,
            (None | Some(Value::Null), false) => json!("<none>"),
            (Some(v), false) => v.clone(),
        },
        ColumnValue::Computed(f) => f(obj),
    }
}

/// A custom resource's cell as kube-apiserver's CRD table converter makes it (apiextensions-apiserver
/// tableconvertor cellForJSONValue): a value the column's type cannot show is null (kubectl prints
/// `<none>`); `string` columns print any value; integer columns truncate numbers.
fn typed_cell(type_: &str, value: &Value) -> Value {
    match (type_, value) {
        (_, Value::Null) => Value::Null,
        ("string", Value::String(_)) => value.clone(),
        ("string", other) => Value::String(other.to_string()),
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        ("number", Value::Number(_)) | ("boolean", Value::Bool(_)) => value.clone(),
        ("date", Value::String(ts)) => json!(date_cell(ts)),
        _ => Value::Null,
    }
}

/// A `date` column's text: the time since `ts` (RFC 3339), `<unknown>` for an empty time and
/// `<invalid>` for one that does not parse (metav1.Time's UnmarshalQueryParameter).
fn date_cell(ts: &str) -> String {
    if ts.is_empty() || ts == "null" {
        return "<unknown>".to_string();
    }
    match chrono::DateTime::parse_from_rfc3339(ts) {
        Ok(then) => kcp_api_types::builtin::human_duration(
            chrono::Utc::now().timestamp() - then.timestamp(),
        ),
        Err(_) => "<invalid>".to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_cells_are_typed_as_kube_apiserver_types_them() {
        let cases = [
            ("integer", json!("many"), Value::Null),
            ("integer", json!(2.9), json!(2)),
            ("integer", json!(-2.9), json!(-2)),
            ("integer", json!(7), json!(7)),
            ("boolean", json!("yes"), Value::Null),
            ("boolean", json!(true), json!(true)),
            ("number", json!(1.5), json!(1.5)),
            ("number", json!("1.5"), Value::Null),
            ("string", json!(3), json!("3")),
            ("string", Value::Null, Value::Null),
            ("date", json!("yesterday"), json!("<invalid>")),
            ("date", json!(""), json!("<unknown>")),
            ("date", json!(5), Value::Null),
        ];
        for (type_, value, want) in cases {
            assert_eq!(typed_cell(type_, &value), want, "{type_} {value}");
        }
        let old = (chrono::Utc::now() - chrono::Duration::hours(5)).to_rfc3339();
        assert_eq!(typed_cell("date", &json!(old)), json!("5h"));
    }

    #[test]
    fn missing_custom_cells_are_null() {
        let column = Column {
            name: "Size".into(),
            type_: "integer".into(),
            format: "".into(),
            description: "".into(),
            priority: 0,
            value: ColumnValue::Path(".spec.size".into()),
        };
        let obj = json!({"spec": {}});
        assert_eq!(cell(&column, &obj, true), Value::Null);
        assert_eq!(cell(&column, &obj, false), json!("<none>"));
    }
}
