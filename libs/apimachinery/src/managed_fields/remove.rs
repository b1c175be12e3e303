//! Removing a set of fields from a value (structured-merge-diff's `RemoveItems`).

use serde_json::{Map, Value};

use super::field_set::{item_element, item_elements};
use super::path::PathElement;
use super::schema::{ListType, Shape, TypeView, resolve};
use super::set::FieldSet;

/// Removes the members of `set` (each with everything below it) from `value`.
///
/// Unlike structured-merge-diff, which leaves `null` where a map or list lost all of its
/// contents, the emptied field is dropped: that is what Kubernetes ends up storing once the
/// object is converted back to its type.
pub fn remove_items<T: TypeView>(value: &Value, set: &FieldSet, ty: &T) -> Value {
    remove(value, set, ty).unwrap_or_else(|| Value::Object(Map::new()))
}

/// `None` when removal emptied a non-empty value.
fn remove<T: TypeView>(value: &Value, set: &FieldSet, ty: &T) -> Option<Value> {
    match (resolve(ty, value), value) {
        (Shape::Struct | Shape::Map { atomic: false }, Value::Object(fields))
            if !fields.is_empty() =>
        {
            let mut out = Map::new();
            for (name, child) in fields {
                let pe = PathElement::Field(name.clone());
                if set.has_member(&pe) {
                    continue;
                }
                let kept = match set.child(&pe) {
                    Some(below) => remove(child, below, &ty.field(name)),
                    None => Some(child.clone()),
                };
                if let Some(kept) = kept {
                    out.insert(name.clone(), kept);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        (Shape::List(list), Value::Array(items))
            if list != ListType::Atomic && !items.is_empty() =>
        {
            let item_ty = ty.item();
            let mut out = Vec::new();
            for (item, pe) in items.iter().zip(item_elements(&list, ty, items)) {
                let Some(pe) = pe else {
                    out.push(item.clone());
                    continue;
                };
                if set.has_member(&pe) {
                    continue;
                }
                let kept = match set.child(&pe) {
                    Some(below) => remove(item, below, &item_ty),
                    None => Some(item.clone()),
                };
                out.extend(kept);
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        _ => Some(value.clone()),
    }
}

/// Adds, as members, the named struct fields under which `set` has paths
/// (structured-merge-diff's `EnsureNamedFieldsAreMembers`), so that removing the set also
/// removes a struct field none of whose contents remain owned. `value` supplies the shapes.
pub(crate) fn ensure_named_fields_are_members<T: TypeView>(
    set: &FieldSet,
    value: Option<&Value>,
    ty: &T,
) -> FieldSet {
    let null = Value::Null;
    let here = value.unwrap_or(&null);
    let is_struct = resolve(ty, here) == Shape::Struct || ty.shape(here) == Shape::Struct;
    let mut out = set.clone();
    for (pe, below) in set.children() {
        let (child_value, child_ty) = match pe {
            PathElement::Field(name) => {
                if is_struct {
                    out.add_member(pe.clone());
                }
                (here.get(name), ty.field(name))
            }
            PathElement::Key(_) => {
                let item_ty = ty.item();
                let found = match (resolve(ty, here), here) {
                    (Shape::List(list), Value::Array(items)) => items
                        .iter()
                        .find(|item| item_element(&list, &item_ty, item).ok().as_ref() == Some(pe)),
                    _ => None,
                };
                (found, item_ty)
            }
            _ => (None, ty.item()),
        };
        out.set_child(
            pe.clone(),
            ensure_named_fields_are_members(below, child_value, &child_ty),
        );
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use crate::managed_fields::path::PathElement as PE;
    use crate::managed_fields::test_schema::pods;
    use serde_json::json;

    #[test]
    fn removes_fields_items_and_emptied_parents() {
        let value = json!({
            "data": {"a": "1", "b": "2"},
            "spec": {
                "containers": [{"name": "x", "image": "1"}, {"name": "y", "image": "2"}],
                "finalizers": ["f"]
            }
        });
        let set = FieldSet::from_fields_v1_str(
            r#"{"f:data":{"f:a":{}},"f:spec":{"f:containers":{"k:{\"name\":\"x\"}":{},"k:{\"name\":\"y\"}":{"f:image":{}}},"f:finalizers":{"v:\"f\"":{}}}}"#,
        )
        .unwrap();
        assert_eq!(
            remove_items(&value, &set, &pods()),
            json!({"data": {"b": "2"}, "spec": {"containers": [{"name": "y"}]}})
        );
    }

    #[test]
    fn a_member_removes_its_whole_subtree() {
        let value = json!({"data": {"a": "1"}, "spec": {"replicas": 1}});
        let set = FieldSet::from_paths([vec![PE::Field("data".into())]]);
        assert_eq!(
            remove_items(&value, &set, &pods()),
            json!({"spec": {"replicas": 1}})
        );
    }

    #[test]
    fn named_fields_become_members() {
        let value =
            json!({"spec": {"containers": [{"name": "x", "image": "1"}]}, "data": {"k": {"a": 1}}});
        let set = FieldSet::from_fields_v1_str(
            r#"{"f:data":{"f:k":{"f:a":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"x\"}":{"f:image":{}}}}}"#,
        )
        .unwrap();
        // `spec` (struct field of the root) becomes a member, `containers` (struct field of
        // spec) too; `data` is a struct field of the root but `k` is a map key.
        assert_eq!(
            ensure_named_fields_are_members(&set, Some(&value), &pods()).to_fields_v1_string(),
            r#"{"f:data":{".":{},"f:k":{"f:a":{}}},"f:spec":{".":{},"f:containers":{".":{},"k:{\"name\":\"x\"}":{"f:image":{}}}}}"#
        );
    }
}
