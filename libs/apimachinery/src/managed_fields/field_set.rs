//! The set of fields a value specifies (structured-merge-diff's `ToFieldSet`), how list items
//! are identified, and the checks an applied configuration must pass.

use std::collections::BTreeSet;

use serde_json::Value;

use super::path::{Path, PathElement, display_path};
use super::schema::{ListType, Shape, TypeView, resolve};
use super::set::FieldSet;

/// The path element naming `item` in a list of type `list`; `item_ty` is the items' type.
pub(crate) fn item_element<T: TypeView>(
    list: &ListType,
    item_ty: &T,
    item: &Value,
) -> Result<PathElement, String> {
    match list {
        ListType::Atomic => Err("invalid indexing of non-associative list".to_string()),
        ListType::Set => match item {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".to_string())
            }
            Value::Array(_) => {
                Err("not supported: associative list with lists as elements".to_string())
            }
            Value::Null => Err(
                "associative list without keys has an element that's an explicit null".to_string(),
            ),
            scalar => Ok(PathElement::Value(scalar.clone())),
        },
        ListType::Map { keys } => {
            let fields = match item {
                Value::Null => {
                    return Err(
                        "associative list with keys may not have a null element".to_string()
                    );
                }
                Value::Object(fields) => fields,
                _ => {
                    return Err(
                        "associative list with keys may not have non-map elements".to_string()
                    );
                }
            };
            let mut key = Vec::new();
            for name in keys {
                if let Some(v) = fields.get(name) {
                    key.push((name.clone(), v.clone()));
                } else if let Some(default) = item_ty.field(name).default_value() {
                    key.push((name.clone(), default));
                }
            }
            if !keys.is_empty() && key.is_empty() {
                return Err(format!(
                    "associative list with keys has an element that omits all key fields {keys:?} (and doesn't have default values for any key fields)"
                ));
            }
            Ok(PathElement::key(key))
        }
    }
}

/// The elements of a list's items, in order; `None` for an item that cannot be identified.
pub(crate) fn item_elements<T: TypeView>(
    list: &ListType,
    ty: &T,
    items: &[Value],
) -> Vec<Option<PathElement>> {
    let item_ty = ty.item();
    items
        .iter()
        .map(|item| item_element(list, &item_ty, item).ok())
        .collect()
}

/// The set of fields `value` specifies, with list and map semantics from `ty`: leaves, map
/// keys and list items are members; named struct fields only when null or empty.
pub fn field_set<T: TypeView>(value: &Value, ty: &T) -> FieldSet {
    let mut set = FieldSet::new();
    collect(value, ty, &mut Vec::new(), &mut set);
    set
}

fn collect<T: TypeView>(value: &Value, ty: &T, path: &mut Path, set: &mut FieldSet) {
    match resolve(ty, value) {
        Shape::Scalar | Shape::Untyped => set.insert(path),
        Shape::Map { atomic: true } | Shape::List(ListType::Atomic) => set.insert(path),
        shape @ (Shape::Struct | Shape::Map { atomic: false }) => {
            let Value::Object(fields) = value else {
                return;
            };
            for (name, child) in fields {
                path.push(PathElement::Field(name.clone()));
                collect(child, &ty.field(name), path, set);
                let empty = matches!(child, Value::Null)
                    || matches!(child, Value::Object(m) if m.is_empty());
                if empty || shape != Shape::Struct {
                    set.insert(path);
                }
                path.pop();
            }
        }
        Shape::List(list) => {
            let Value::Array(items) = value else {
                return;
            };
            let elements = item_elements(&list, ty, items);
            // A duplicated item is owned as a whole: its fields cannot be told apart.
            let mut seen = BTreeSet::new();
            let mut duplicates = BTreeSet::new();
            for pe in elements.iter().flatten() {
                if !seen.insert(pe) {
                    duplicates.insert(pe);
                }
            }
            let item_ty = ty.item();
            for (item, pe) in items.iter().zip(&elements) {
                let Some(pe) = pe else { continue };
                path.push(pe.clone());
                if !duplicates.contains(pe) {
                    collect(item, &item_ty, path, set);
                }
                set.insert(path);
                path.pop();
            }
        }
    }
}

/// Checks what structured-merge-diff checks when it types an object: every item of an
/// associative list can be identified, and (unless `allow_duplicates`, as for live objects)
/// no two items share an identity. Errors read like Kubernetes' (`.spec.ports: duplicate
/// entries for key [containerPort=80,protocol="TCP"]`).
pub fn validate<T: TypeView>(value: &Value, ty: &T, allow_duplicates: bool) -> Vec<String> {
    let mut errors = Vec::new();
    check(value, ty, &mut Vec::new(), allow_duplicates, &mut errors);
    errors
}

fn check<T: TypeView>(
    value: &Value,
    ty: &T,
    path: &mut Path,
    allow_duplicates: bool,
    errors: &mut Vec<String>,
) {
    match resolve(ty, value) {
        Shape::Struct | Shape::Map { atomic: false } => {
            if let Value::Object(fields) = value {
                for (name, child) in fields {
                    path.push(PathElement::Field(name.clone()));
                    check(child, &ty.field(name), path, allow_duplicates, errors);
                    path.pop();
                }
            }
        }
        Shape::List(list) if list != ListType::Atomic => {
            let Value::Array(items) = value else { return };
            let item_ty = ty.item();
            let mut seen = BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                match item_element(&list, &item_ty, item) {
                    Err(e) => errors.push(format!("{}: element {i}: {e}", display_path(path))),
                    Ok(pe) => {
                        if !seen.insert(pe.clone()) && !allow_duplicates {
                            errors.push(format!(
                                "{}: duplicate entries for key {pe}",
                                display_path(path)
                            ));
                        }
                        path.push(pe);
                        check(item, &item_ty, path, allow_duplicates, errors);
                        path.pop();
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use crate::managed_fields::schema::Deduced;
    use crate::managed_fields::test_schema::pods;
    use serde_json::json;

    #[test]
    fn deduced_objects_are_granular_and_lists_atomic() {
        let set = field_set(
            &json!({"a": {"b": 1, "c": []}, "d": [1, 2], "e": {}, "f": null}),
            &Deduced,
        );
        assert_eq!(
            set.to_fields_v1_string(),
            r#"{"f:a":{".":{},"f:b":{},"f:c":{}},"f:d":{},"f:e":{},"f:f":{}}"#
        );
    }

    #[test]
    fn struct_fields_are_not_members_but_map_keys_and_items_are() {
        let pod = json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}],
                "finalizers": ["x"],
                "nodeSelector": {"disk": "ssd"},
                "empty": {}
            }
        });
        let set = field_set(&pod, &pods());
        assert_eq!(
            set.to_fields_v1_string(),
            r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}},"f:empty":{},"f:finalizers":{"v:\"x\"":{}},"f:nodeSelector":{}}}"#
        );
    }

    #[test]
    fn duplicated_items_are_owned_whole() {
        let set = field_set(
            &json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "a", "image": "2"}]}}),
            &pods(),
        );
        assert_eq!(
            set.to_fields_v1_string(),
            r#"{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{}}}}"#
        );
    }

    #[test]
    fn validation_reports_duplicates_and_unkeyed_items() {
        let value = json!({"spec": {
            "containers": [{"name": "a"}, {"name": "a"}, {"image": "x"}],
            "finalizers": ["a", {"b": 1}]
        }});
        assert_eq!(
            validate(&value, &pods(), false),
            vec![
                ".spec.containers: duplicate entries for key [name=\"a\"]".to_string(),
                ".spec.containers: element 2: associative list with keys has an element that omits all key fields [\"name\"] (and doesn't have default values for any key fields)".to_string(),
                ".spec.finalizers: element 1: associative list without keys has an element that's a map type".to_string(),
            ]
        );
        assert_eq!(validate(&value, &pods(), true).len(), 2);
    }
}
