//! Labels a request may only see and write objects with: a virtual workspace's view of part of
//! a resource (an object partition, an export's own bindings). An object without them is not
//! there for the request (404, as Kubernetes answers for what a caller cannot see); a write gets
//! them, and one that sets another value is refused, so nothing written through the view leaves
//! it. Lists and watches select by them ([`super::Selectors`]).

use kcp_api_types::ResourceDef;
use kcp_apimachinery::status::ApiError;
use serde_json::{Map, Value};

/// `(key, value)` pairs; empty: every object.
pub type RequiredLabels = [(String, String)];

/// Whether `labels` (an object's `metadata.labels`) carry every required label.
pub fn carried<'a>(
    required: &RequiredLabels,
    mut label: impl FnMut(&str) -> Option<&'a str>,
) -> bool {
    (required.iter()).all(|(key, value)| label(key) == Some(value.as_str()))
}

/// Whether the object `obj` carries every required label.
pub fn carried_by(required: &RequiredLabels, obj: &Value) -> bool {
    let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
    carried(required, |key| {
        labels.and_then(|l| l.get(key)).and_then(Value::as_str)
    })
}

/// The object as written through the view: the required labels set; 403 when it sets one to
/// another value.
pub fn force(
    def: &ResourceDef,
    name: &str,
    required: &RequiredLabels,
    obj: &mut Value,
) -> Result<(), ApiError> {
    if required.is_empty() {
        return Ok(());
    }
    let Some(object) = obj.as_object_mut() else {
        return Ok(());
    };
    let meta = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    let Some(meta) = meta.as_object_mut() else {
        return Ok(());
    };
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if !labels.is_object() {
        *labels = Value::Object(Map::new());
    }
    let Some(labels) = labels.as_object_mut() else {
        return Ok(());
    };
    for (key, value) in required {
        match labels.get(key) {
            Some(Value::String(set)) if set == value => {}
            None | Some(Value::Null) => {
                labels.insert(key.clone(), Value::String(value.clone()));
            }
            Some(_) => {
                return Err(ApiError::forbidden(
                    &def.group,
                    &def.plural,
                    name,
                    &format!("protected label {key} must have value {value}"),
                ));
            }
        }
    }
    Ok(())
}

/// 403 when the object as it is about to be written (after admission) lacks a required label:
/// the write would leave the view.
pub fn check_kept(
    def: &ResourceDef,
    name: &str,
    required: &RequiredLabels,
    obj: &Value,
) -> Result<(), ApiError> {
    if carried_by(required, obj) {
        return Ok(());
    }
    let wanted: Vec<String> = required.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Err(ApiError::forbidden(
        &def.group,
        &def.plural,
        name,
        &format!(
            "the object would not carry the labels this endpoint requires: {}",
            wanted.join(", ")
        ),
    ))
}

/// 404 for an object the view does not show.
pub fn not_found(def: &ResourceDef, name: &str) -> ApiError {
    ApiError::not_found(&def.group, &def.plural, name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn required() -> Vec<(String, String)> {
        vec![("region".to_string(), "east".to_string())]
    }

    #[test]
    fn objects_carry_the_labels_or_are_not_seen() {
        let required = required();
        assert!(carried_by(
            &required,
            &json!({"metadata": {"labels": {"region": "east", "x": "y"}}})
        ));
        assert!(!carried_by(
            &required,
            &json!({"metadata": {"labels": {"region": "west"}}})
        ));
        assert!(!carried_by(&required, &json!({"metadata": {}})));
        assert!(carried_by(&[], &json!({"metadata": {}})));
    }

    #[test]
    fn writes_are_forced_into_the_view() {
        let def = kcp_api_types::builtin::catalogue()
            .into_iter()
            .find(|d| d.group.is_empty() && d.plural == "configmaps")
            .expect("configmaps");
        let required = required();
        let mut unlabelled = json!({"metadata": {"name": "a"}});
        force(&def, "a", &required, &mut unlabelled).expect("forced");
        assert_eq!(unlabelled["metadata"]["labels"], json!({"region": "east"}));
        let mut same = json!({"metadata": {"labels": {"region": "east", "k": "v"}}});
        force(&def, "a", &required, &mut same).expect("kept");
        assert_eq!(same["metadata"]["labels"]["k"], "v");
        let mut other = json!({"metadata": {"labels": {"region": "west"}}});
        let err = force(&def, "a", &required, &mut other).expect_err("refused");
        assert_eq!(err.code, 403);
        assert!(
            err.message
                .contains("protected label region must have value east"),
            "{}",
            err.message
        );
    }
}
