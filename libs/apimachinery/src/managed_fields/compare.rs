//! Which fields changed between two versions of an object (structured-merge-diff's `Compare`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::field_set::item_elements;
use super::path::{Path, PathElement, values_equal};
use super::schema::{ListType, Shape, TypeView, resolve};
use super::set::FieldSet;

/// The fields added, modified and removed going from one value to another.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    /// Drops `fields` (and everything below them) from all three sets.
    pub fn exclude(&mut self, fields: &FieldSet) {
        if fields.is_empty() {
            return;
        }
        self.added = self.added.recursive_difference(fields);
        self.modified = self.modified.recursive_difference(fields);
        self.removed = self.removed.recursive_difference(fields);
    }

    /// Fields whose value is new or different.
    pub fn changed(&self) -> FieldSet {
        self.added.union(&self.modified)
    }
}

/// Compares `old` with `new`. A subtree that appears or disappears contributes all of its
/// fields and itself; a leaf (scalar, atomic list or map) that differs is modified.
pub fn compare<T: TypeView>(old: &Value, new: &Value, ty: &T) -> Comparison {
    let mut out = Comparison::default();
    walk(Some(old), Some(new), ty, &mut Vec::new(), &mut out);
    out
}

fn is_empty_container(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

fn leaf(lhs: Option<&Value>, rhs: Option<&Value>, path: &Path, out: &mut Comparison) {
    match (lhs, rhs) {
        (None, None) => {}
        (None, Some(_)) => out.added.insert(path),
        (Some(_), None) => out.removed.insert(path),
        (Some(l), Some(r)) => {
            if !values_equal(l, r) {
                out.modified.insert(path);
            }
        }
    }
}

fn shape_of<T: TypeView>(lhs: Option<&Value>, rhs: Option<&Value>, ty: &T) -> Shape {
    let l = lhs.map(|v| resolve(ty, v));
    let r = rhs.map(|v| resolve(ty, v));
    match (l, r) {
        (Some(l), Some(r)) if l != r => Shape::Scalar,
        (Some(s), _) | (None, Some(s)) => s,
        (None, None) => Shape::Scalar,
    }
}

fn walk<T: TypeView>(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    ty: &T,
    path: &mut Path,
    out: &mut Comparison,
) {
    let is_leaf = match shape_of(lhs, rhs, ty) {
        Shape::Scalar | Shape::Untyped => true,
        Shape::Map { atomic: true } | Shape::List(ListType::Atomic) => true,
        _ if is_empty_container(lhs) && is_empty_container(rhs) => true,
        Shape::Struct | Shape::Map { atomic: false } => {
            walk_map(lhs, rhs, ty, path, out);
            false
        }
        Shape::List(list) => {
            walk_list(&list, lhs, rhs, ty, path, out);
            false
        }
    };
    if is_leaf {
        leaf(lhs, rhs, path, out);
    } else if lhs.is_none() {
        out.added.insert(path);
    } else if rhs.is_none() {
        out.removed.insert(path);
    }
}

fn as_map(v: Option<&Value>) -> Option<&Map<String, Value>> {
    match v {
        Some(Value::Object(m)) => Some(m),
        _ => None,
    }
}

fn walk_map<T: TypeView>(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    ty: &T,
    path: &mut Path,
    out: &mut Comparison,
) {
    let (l, r) = (as_map(lhs), as_map(rhs));
    let mut keys: Vec<&String> = l.into_iter().chain(r).flat_map(|m| m.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        path.push(PathElement::Field(key.clone()));
        walk(
            l.and_then(|m| m.get(key)),
            r.and_then(|m| m.get(key)),
            &ty.field(key),
            path,
            out,
        );
        path.pop();
    }
}

/// Items grouped by identity, with identities in first-seen order.
fn group<'a, T: TypeView>(
    list: &ListType,
    ty: &T,
    v: Option<&'a Value>,
    order: &mut Vec<PathElement>,
) -> BTreeMap<PathElement, Vec<&'a Value>> {
    let mut groups: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    if let Some(Value::Array(items)) = v {
        for (item, pe) in items.iter().zip(item_elements(list, ty, items)) {
            let Some(pe) = pe else { continue };
            let entry = groups.entry(pe.clone()).or_default();
            if entry.is_empty() && !order.contains(&pe) {
                order.push(pe);
            }
            entry.push(item);
        }
    }
    groups
}

fn walk_list<T: TypeView>(
    list: &ListType,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    ty: &T,
    path: &mut Path,
    out: &mut Comparison,
) {
    let mut order = Vec::new();
    let left = group(list, ty, lhs, &mut order);
    let right = group(list, ty, rhs, &mut order);
    let item_ty = ty.item();
    let none = Vec::new();
    for pe in order {
        let l = left.get(&pe).unwrap_or(&none);
        let r = right.get(&pe).unwrap_or(&none);
        path.push(pe);
        match (l.len(), r.len()) {
            (0..=1, 0..=1) => walk(l.first().copied(), r.first().copied(), &item_ty, path, out),
            // Duplicated items cannot be compared field by field: the item changes as a whole.
            (2.., 2..) => {
                let same = l.len() == r.len() && l.iter().zip(r).all(|(a, b)| values_equal(a, b));
                if !same {
                    out.modified.insert(path);
                }
            }
            (2.., _) => {
                if let Some(first) = r.first() {
                    walk(None, Some(first), &item_ty, path, out);
                }
                out.removed.insert(path);
            }
            (_, _) => {
                if let Some(first) = l.first() {
                    walk(Some(first), None, &item_ty, path, out);
                }
                out.added.insert(path);
            }
        }
        path.pop();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use crate::managed_fields::schema::Deduced;
    use crate::managed_fields::test_schema::pods;
    use serde_json::json;

    fn v1(set: &FieldSet) -> String {
        set.to_fields_v1_string()
    }

    #[test]
    fn added_subtrees_include_their_parents() {
        let c = compare(
            &json!({"data": {"a": "1"}}),
            &json!({"data": {"a": "2", "b": "3"}, "metadata": {"labels": {"x": "y"}}}),
            &Deduced,
        );
        assert_eq!(
            v1(&c.added),
            r#"{"f:data":{"f:b":{}},"f:metadata":{".":{},"f:labels":{".":{},"f:x":{}}}}"#
        );
        assert_eq!(v1(&c.modified), r#"{"f:data":{"f:a":{}}}"#);
        assert!(c.removed.is_empty());
    }

    #[test]
    fn removed_items_and_atomic_leaves() {
        let old = json!({"spec": {
            "containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}],
            "nodeSelector": {"k": "v"},
            "finalizers": ["x", "y"]
        }});
        let new = json!({"spec": {
            "containers": [{"name": "a", "image": "1"}],
            "nodeSelector": {"k": "w"},
            "finalizers": ["y", "z"]
        }});
        let c = compare(&old, &new, &pods());
        assert_eq!(
            v1(&c.removed),
            r#"{"f:spec":{"f:containers":{"k:{\"name\":\"b\"}":{".":{},"f:image":{},"f:name":{}}},"f:finalizers":{"v:\"x\"":{}}}}"#
        );
        assert_eq!(v1(&c.modified), r#"{"f:spec":{"f:nodeSelector":{}}}"#);
        assert_eq!(
            v1(&c.added),
            r#"{"f:spec":{"f:finalizers":{"v:\"z\"":{}}}}"#
        );
    }

    #[test]
    fn equal_values_compare_empty_and_reordering_a_map_list_is_no_change() {
        let a = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let b = json!({"spec": {"containers": [{"name": "b"}, {"name": "a"}]}});
        assert_eq!(compare(&a, &b, &pods()), Comparison::default());
        // A deduced (atomic) list changes when reordered.
        let c = compare(&json!({"l": [1, 2]}), &json!({"l": [2, 1]}), &Deduced);
        assert_eq!(v1(&c.modified), r#"{"f:l":{}}"#);
    }

    #[test]
    fn exclude_drops_subtrees() {
        let mut c = compare(
            &json!({}),
            &json!({"status": {"a": 1}, "spec": {"replicas": 1}}),
            &pods(),
        );
        c.exclude(&FieldSet::from_paths([vec![PathElement::Field(
            "status".into(),
        )]]));
        assert_eq!(v1(&c.added), r#"{"f:spec":{".":{},"f:replicas":{}}}"#);
    }
}
