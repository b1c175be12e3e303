//! kubectl's client-side apply annotation, which server-side apply by `kubectl` takes over:
//! conflicts on fields the annotation still describes are forced, and the annotation is kept
//! in sync with what was applied.

use serde_json::Value;

use super::compare::compare;
use super::field_set::field_set;
use super::json::write_json_value;
use super::schema::TypeView;
use super::set::FieldSet;

/// The annotation client-side `kubectl apply` records its last configuration in.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The only manager Kubernetes upgrades from client-side apply (others opt out by name).
pub const KUBECTL_MANAGER: &str = "kubectl";

fn annotation(object: &Value) -> Option<&str> {
    object
        .get("metadata")?
        .get("annotations")?
        .get(LAST_APPLIED_ANNOTATION)?
        .as_str()
        .filter(|s| !s.is_empty())
}

/// True when the object carries a non-empty last-applied annotation.
pub fn has_last_applied(object: &Value) -> bool {
    annotation(object).is_some()
}

/// The fields the annotation claims that still hold the annotated values in `live`: an apply
/// by `kubectl` may take these from their owners without a conflict. `None` when there is no
/// usable annotation (missing, unreadable, or for another API version).
pub(crate) fn allowed_conflicts<T: TypeView>(
    live: &Value,
    api_version: &str,
    ty: &T,
) -> Option<FieldSet> {
    let last: Value = serde_json::from_str(annotation(live)?).ok()?;
    if last.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return None;
    }
    let cmp = compare(&last, live, ty);
    Some(
        field_set(&last, ty)
            .difference(&cmp.modified)
            .difference(&cmp.added)
            .difference(&cmp.removed),
    )
}

/// The annotation's value for an applied configuration: the configuration without the
/// annotation itself, as compact JSON with sorted keys and a final newline, as Go encodes it.
pub(crate) fn build_last_applied(config: &Value) -> String {
    let mut config = config.clone();
    if let Some(Value::Object(annotations)) = config
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
    let mut out = String::new();
    write_json_value(&mut out, &config);
    out.push('\n');
    out
}

/// Sets the annotation on `object` (which has annotations, since it carried the old value).
pub(crate) fn set_last_applied(object: &mut Value, value: String) {
    if let Some(Value::Object(annotations)) = object
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    {
        annotations.insert(LAST_APPLIED_ANNOTATION.to_string(), Value::String(value));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use crate::managed_fields::schema::Deduced;
    use serde_json::json;

    #[test]
    fn builds_the_annotation_like_go() {
        let config = json!({
            "kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "x", "annotations": {LAST_APPLIED_ANNOTATION: "old", "a": "<b>"}}
        });
        assert_eq!(
            build_last_applied(&config),
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{\"a\":\"\\u003cb\\u003e\"},\"name\":\"x\"}}\n"
        );
    }

    #[test]
    fn allowed_conflicts_are_the_annotated_fields_still_live() {
        let last = json!({"apiVersion": "v1", "data": {"a": "1", "b": "1"}});
        let live = json!({
            "apiVersion": "v1",
            "metadata": {"annotations": {LAST_APPLIED_ANNOTATION: last.to_string()}},
            "data": {"a": "1", "b": "2"}
        });
        let allowed = allowed_conflicts(&live, "v1", &Deduced).unwrap();
        assert_eq!(
            allowed.to_fields_v1_string(),
            r#"{"f:apiVersion":{},"f:data":{".":{},"f:a":{}}}"#
        );
        assert!(allowed_conflicts(&live, "v2", &Deduced).is_none());
        assert!(allowed_conflicts(&json!({}), "v1", &Deduced).is_none());
    }
}
