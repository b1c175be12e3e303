//! `metadata.managedFields` entries (`metav1.ManagedFieldsEntry`) read from and written to JSON.

use serde_json::{Map, Value};

use super::set::{FieldSet, FieldsV1Error};

/// The operation that made a manager own its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One entry of `metadata.managedFields`. `fieldsType` is always `FieldsV1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedFieldsEntry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    /// RFC 3339 time of the manager's last change (seconds, UTC), as Kubernetes writes it.
    pub time: Option<String>,
    pub fields: FieldSet,
    /// Empty for the main resource.
    pub subresource: String,
}

/// Why `metadata.managedFields` could not be read. Kubernetes then drops (for updates) or
/// rejects (for applies) what it cannot read; callers decide which.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManagedFieldsError {
    #[error("managedFields must be a list")]
    NotAList,
    #[error("managed fields entry {0} must be an object")]
    NotAnObject(usize),
    #[error("managed fields entry {0}: {1} must be a string")]
    NotAString(usize, &'static str),
    #[error("operation must be `Apply` or `Update`")]
    Operation,
    #[error("apiVersion must not be empty")]
    EmptyApiVersion,
    #[error("missing fieldsType in managed fields entry {0}")]
    MissingFieldsType(usize),
    #[error("invalid fieldsType {1:?} in managed fields entry {0}")]
    InvalidFieldsType(usize, String),
    #[error("error decoding set of managed fields entry {0}: {1}")]
    Fields(usize, FieldsV1Error),
}

fn string_field(
    entry: &Map<String, Value>,
    index: usize,
    name: &'static str,
) -> Result<String, ManagedFieldsError> {
    match entry.get(name) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ManagedFieldsError::NotAString(index, name)),
    }
}

impl ManagedFieldsEntry {
    /// Reads the entry at `index` of a `managedFields` list, checking what Kubernetes checks.
    pub fn from_json(value: &Value, index: usize) -> Result<Self, ManagedFieldsError> {
        let Value::Object(entry) = value else {
            return Err(ManagedFieldsError::NotAnObject(index));
        };
        let operation = match string_field(entry, index, "operation")?.as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err(ManagedFieldsError::Operation),
        };
        let api_version = string_field(entry, index, "apiVersion")?;
        if api_version.is_empty() {
            return Err(ManagedFieldsError::EmptyApiVersion);
        }
        match string_field(entry, index, "fieldsType")?.as_str() {
            "FieldsV1" => {}
            "" => return Err(ManagedFieldsError::MissingFieldsType(index)),
            other => {
                return Err(ManagedFieldsError::InvalidFieldsType(
                    index,
                    other.to_string(),
                ));
            }
        }
        let fields = match entry.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(v) => {
                FieldSet::from_fields_v1(v).map_err(|e| ManagedFieldsError::Fields(index, e))?
            }
        };
        let time = Some(string_field(entry, index, "time")?).filter(|t| !t.is_empty());
        Ok(ManagedFieldsEntry {
            manager: string_field(entry, index, "manager")?,
            operation,
            api_version,
            time,
            fields,
            subresource: string_field(entry, index, "subresource")?,
        })
    }

    /// The entry as Kubernetes serializes it (empty strings omitted, fields in Go's order).
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        if !self.manager.is_empty() {
            out.insert("manager".into(), Value::String(self.manager.clone()));
        }
        out.insert(
            "operation".into(),
            Value::String(self.operation.as_str().into()),
        );
        if !self.api_version.is_empty() {
            out.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        }
        if let Some(time) = &self.time {
            out.insert("time".into(), Value::String(time.clone()));
        }
        out.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        out.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            out.insert(
                "subresource".into(),
                Value::String(self.subresource.clone()),
            );
        }
        Value::Object(out)
    }
}

/// Reads a `managedFields` list (`null` is the empty list).
pub fn decode_managed_fields(value: &Value) -> Result<Vec<ManagedFieldsEntry>, ManagedFieldsError> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| ManagedFieldsEntry::from_json(v, i))
            .collect(),
        _ => Err(ManagedFieldsError::NotAList),
    }
}

/// Writes a `managedFields` list.
pub fn encode_managed_fields(entries: &[ManagedFieldsEntry]) -> Value {
    Value::Array(entries.iter().map(ManagedFieldsEntry::to_json).collect())
}

/// `metadata.managedFields` of an object, if present.
pub fn raw_managed_fields(object: &Value) -> Option<&Value> {
    object
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .filter(|v| !v.is_null())
}

/// The entries of an object's `metadata.managedFields` (none when absent).
pub fn managed_fields_of(object: &Value) -> Result<Vec<ManagedFieldsEntry>, ManagedFieldsError> {
    raw_managed_fields(object).map_or(Ok(Vec::new()), decode_managed_fields)
}

/// Stores entries in `metadata.managedFields`; no entries removes the field, as Kubernetes
/// omits an empty list.
pub fn set_managed_fields(object: &mut Value, entries: &[ManagedFieldsEntry]) {
    let Value::Object(root) = object else { return };
    if entries.is_empty() {
        if let Some(Value::Object(meta)) = root.get_mut("metadata") {
            meta.remove("managedFields");
        }
        return;
    }
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.insert("managedFields".into(), encode_managed_fields(entries));
    }
}

/// Removes `metadata.managedFields`.
pub fn strip_managed_fields(object: &mut Value) {
    if let Some(Value::Object(meta)) = object.get_mut("metadata") {
        meta.remove("managedFields");
    }
}

/// True when a request asks to clear managedFields: an empty list, or a list of one empty
/// entry.
pub fn is_reset_request(object: &Value) -> bool {
    match raw_managed_fields(object) {
        Some(Value::Array(items)) => match items.as_slice() {
            [] => true,
            [Value::Object(only)] => only.is_empty(),
            _ => false,
        },
        _ => false,
    }
}

/// The managedFields an update (or non-apply patch) starts from, as Kubernetes picks them: the
/// request's own when it sets valid ones (not for subresources), none when it asks for a
/// reset, otherwise the live object's (none if those cannot be read).
pub fn managed_fields_for_update(
    live: Option<&Value>,
    new: &Value,
    is_subresource: bool,
) -> Vec<ManagedFieldsEntry> {
    let from_live = || {
        live.and_then(|l| managed_fields_of(l).ok())
            .unwrap_or_default()
    };
    if is_subresource {
        return from_live();
    }
    if is_reset_request(new) {
        return Vec::new();
    }
    match managed_fields_of(new) {
        Ok(entries) if !entries.is_empty() => entries,
        _ => from_live(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use serde_json::json;

    fn entry_json() -> Value {
        json!({
            "manager": "kubectl-client-side-apply",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2024-03-01T10:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:key": {}}}
        })
    }

    #[test]
    fn round_trips_an_entry_in_kubernetes_field_order() {
        let entry = ManagedFieldsEntry::from_json(&entry_json(), 0).unwrap();
        assert_eq!(entry.operation, Operation::Update);
        assert_eq!(entry.time.as_deref(), Some("2024-03-01T10:00:00Z"));
        assert_eq!(
            serde_json::to_string(&entry.to_json()).unwrap(),
            r#"{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1","time":"2024-03-01T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:key":{}}}}"#
        );
        let mut status = entry_json();
        status["subresource"] = json!("status");
        let entry = ManagedFieldsEntry::from_json(&status, 0).unwrap();
        assert_eq!(entry.subresource, "status");
        assert_eq!(entry.to_json(), status);
    }

    #[test]
    fn rejects_what_kubernetes_rejects() {
        let with = |key: &str, v: Value| {
            let mut e = entry_json();
            e[key] = v;
            ManagedFieldsEntry::from_json(&e, 3).unwrap_err()
        };
        assert_eq!(
            with("operation", json!("Patch")),
            ManagedFieldsError::Operation
        );
        assert_eq!(
            with("apiVersion", json!("")),
            ManagedFieldsError::EmptyApiVersion
        );
        assert_eq!(
            with("fieldsType", json!("")),
            ManagedFieldsError::MissingFieldsType(3)
        );
        assert_eq!(
            with("fieldsType", json!("FieldsV2")).to_string(),
            "invalid fieldsType \"FieldsV2\" in managed fields entry 3"
        );
        assert!(matches!(
            with("fieldsV1", json!({"k:bad": {}})),
            ManagedFieldsError::Fields(3, _)
        ));
        assert_eq!(
            with("manager", json!(1)),
            ManagedFieldsError::NotAString(3, "manager")
        );
        assert_eq!(
            decode_managed_fields(&json!({})),
            Err(ManagedFieldsError::NotAList)
        );
    }

    #[test]
    fn update_picks_request_reset_or_live_fields() {
        let live = json!({"metadata": {"managedFields": [entry_json()]}});
        let mut other = entry_json();
        other["manager"] = json!("other");
        let new_with = |mf: Value| json!({"metadata": {"managedFields": mf}});
        let pick = |new: &Value, sub: bool| {
            managed_fields_for_update(Some(&live), new, sub)
                .into_iter()
                .map(|e| e.manager)
                .collect::<Vec<_>>()
        };
        assert_eq!(pick(&new_with(json!([other.clone()])), false), ["other"]);
        assert_eq!(
            pick(&new_with(json!([other])), true),
            ["kubectl-client-side-apply"]
        );
        assert!(pick(&new_with(json!([])), false).is_empty());
        assert!(pick(&new_with(json!([{}])), false).is_empty());
        assert_eq!(pick(&json!({}), false), ["kubectl-client-side-apply"]);
        assert_eq!(
            pick(&new_with(json!([{"bad": 1}])), false),
            ["kubectl-client-side-apply"]
        );
    }

    #[test]
    fn set_managed_fields_writes_and_clears() {
        let mut obj = json!({"metadata": {"name": "x"}});
        let entry = ManagedFieldsEntry::from_json(&entry_json(), 0).unwrap();
        set_managed_fields(&mut obj, std::slice::from_ref(&entry));
        assert_eq!(managed_fields_of(&obj).unwrap(), vec![entry]);
        set_managed_fields(&mut obj, &[]);
        assert_eq!(obj, json!({"metadata": {"name": "x"}}));
    }
}
