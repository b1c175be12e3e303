//! Merging an applied configuration into a live object (structured-merge-diff's `Merge`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::field_set::item_elements;
use super::path::PathElement;
use super::schema::{ListType, Shape, TypeView, resolve};

/// Merges `config` into `live`: structs and granular maps key by key, set and map lists item
/// by item, everything else (scalars, atomic maps and lists) replaced by the config's value.
pub fn merge<T: TypeView>(live: &Value, config: &Value, ty: &T) -> Value {
    merge_value(Some(live), config, ty)
}

fn is_empty_container(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    }
}

fn merge_value<T: TypeView>(lhs: Option<&Value>, rhs: &Value, ty: &T) -> Value {
    let Some(lhs) = lhs else {
        return rhs.clone();
    };
    // With a schema, `null` for a granular object or associative list merges as an empty one,
    // so it keeps the live contents (schema-less, it is a scalar that replaces them).
    if rhs.is_null() && !is_empty_container(Some(lhs)) {
        let granular = match ty.shape(rhs) {
            Shape::Struct | Shape::Map { atomic: false } => lhs.is_object(),
            Shape::List(ListType::Set | ListType::Map { .. }) => lhs.is_array(),
            _ => false,
        };
        if granular {
            return lhs.clone();
        }
    }
    let (ls, rs) = (resolve(ty, lhs), resolve(ty, rhs));
    if ls != rs || is_empty_container(Some(lhs)) && is_empty_container(Some(rhs)) {
        return rhs.clone();
    }
    match (rs, lhs, rhs) {
        (Shape::Struct | Shape::Map { atomic: false }, Value::Object(l), Value::Object(r)) => {
            Value::Object(merge_map(l, r, ty))
        }
        (Shape::List(list), Value::Array(l), Value::Array(r)) if list != ListType::Atomic => {
            Value::Array(merge_list(&list, l, r, ty))
        }
        _ => rhs.clone(),
    }
}

fn merge_map<T: TypeView>(
    l: &Map<String, Value>,
    r: &Map<String, Value>,
    ty: &T,
) -> Map<String, Value> {
    // Live keys keep their place; new keys follow in the config's order.
    let mut out = Map::new();
    for (k, lv) in l {
        let merged = match r.get(k) {
            Some(rv) => merge_value(Some(lv), rv, &ty.field(k)),
            None => lv.clone(),
        };
        out.insert(k.clone(), merged);
    }
    for (k, rv) in r {
        if !l.contains_key(k) {
            out.insert(k.clone(), rv.clone());
        }
    }
    out
}

/// Merges associative lists in structured-merge-diff's order: live items stay in place, the
/// config's items keep their relative order, and an item that moved in the config is placed
/// where the config puts it among the shared items.
fn merge_list<T: TypeView>(list: &ListType, l: &[Value], r: &[Value], ty: &T) -> Vec<Value> {
    let lpes = item_elements(list, ty, l);
    let rpes = item_elements(list, ty, r);
    let item_ty = ty.item();

    // Live items by identity; a duplicated identity maps to None (it cannot be merged into).
    let mut live: BTreeMap<&PathElement, Option<&Value>> = BTreeMap::new();
    for (item, pe) in l.iter().zip(&lpes) {
        if let Some(pe) = pe {
            live.entry(pe)
                .and_modify(|slot| *slot = None)
                .or_insert(Some(item));
        }
    }
    let config: BTreeMap<&PathElement, &Value> = r
        .iter()
        .zip(&rpes)
        .filter_map(|(item, pe)| pe.as_ref().map(|pe| (pe, item)))
        .collect();

    let merge_item = |pe: &PathElement, rhs: &Value| -> Value {
        match live.get(pe) {
            Some(Some(lhs)) => merge_value(Some(lhs), rhs, &item_ty),
            _ => rhs.clone(),
        }
    };

    // Config items also present live, in config order: the order shared items end up in.
    let mut shared = rpes
        .iter()
        .flatten()
        .filter(|pe| live.contains_key(pe))
        .collect::<Vec<_>>()
        .into_iter();
    let mut next_shared = shared.next();

    let mut out = Vec::with_capacity(l.len().max(r.len()));
    let mut merged: BTreeSet<&PathElement> = BTreeSet::new();
    let (mut li, mut ri) = (0, 0);
    while li < l.len() || ri < r.len() {
        if li < l.len() && ri < r.len() {
            if let (Some(lpe), Some(rpe)) = (&lpes[li], &rpes[ri])
                && lpe == rpe
            {
                merged.insert(rpe);
                out.push(merge_item(rpe, &r[ri]));
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            // A shared live item that the config places later: skip it here, it is emitted
            // when the config reaches it.
            if let Some(lpe) = &lpes[li]
                && config.contains_key(lpe)
                && next_shared.is_some_and(|n| n != lpe)
            {
                li += 1;
                continue;
            }
        }
        if li < l.len() {
            match &lpes[li] {
                // Unidentifiable live items and items the config does not mention stay.
                None => {
                    out.push(l[li].clone());
                    li += 1;
                    continue;
                }
                Some(lpe) if !config.contains_key(lpe) => {
                    out.push(l[li].clone());
                    li += 1;
                    continue;
                }
                Some(lpe) if merged.contains(lpe) => {
                    li += 1;
                }
                Some(_) => {}
            }
        }
        if ri < r.len() {
            match &rpes[ri] {
                Some(rpe) => {
                    if merged.insert(rpe) {
                        out.push(merge_item(rpe, &r[ri]));
                    }
                    if next_shared == Some(rpe) {
                        next_shared = shared.next();
                    }
                }
                // The config was validated; an unidentifiable item cannot get here, but keep
                // it rather than lose data.
                None => out.push(r[ri].clone()),
            }
            ri += 1;
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use crate::managed_fields::schema::Deduced;
    use crate::managed_fields::test_schema::pods;
    use serde_json::json;

    fn names(v: &Value) -> Vec<String> {
        v["spec"]["containers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    }

    fn containers(names: &[&str]) -> Value {
        json!({"spec": {"containers": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()}})
    }

    #[test]
    fn maps_merge_and_atomic_values_are_replaced() {
        let live =
            json!({"data": {"a": "1", "b": "2"}, "spec": {"nodeSelector": {"x": "1", "y": "2"}}});
        let config = json!({"data": {"b": "3", "c": "4"}, "spec": {"nodeSelector": {"z": "3"}}});
        assert_eq!(
            merge(&live, &config, &pods()),
            json!({"data": {"a": "1", "b": "3", "c": "4"}, "spec": {"nodeSelector": {"z": "3"}}})
        );
        // Deduced lists are atomic.
        assert_eq!(
            merge(
                &json!({"l": [1, 2], "m": {"a": 1}}),
                &json!({"l": [3]}),
                &Deduced
            ),
            json!({"l": [3], "m": {"a": 1}})
        );
    }

    #[test]
    fn null_keeps_typed_granular_contents_but_replaces_schema_less_ones() {
        let live = json!({"spec": {"containers": [{"name": "a"}], "nodeSelector": {"a": "b"}}, "data": {"a": "1"}});
        let config = json!({"spec": {"containers": null, "nodeSelector": null}, "data": null});
        assert_eq!(
            merge(&live, &config, &pods()),
            json!({"spec": {"containers": [{"name": "a"}], "nodeSelector": null}, "data": {"a": "1"}})
        );
        assert_eq!(
            merge(
                &json!({"data": {"a": "1"}}),
                &json!({"data": null}),
                &Deduced
            ),
            json!({"data": null})
        );
    }

    #[test]
    fn map_list_items_merge_by_key() {
        let live = json!({"spec": {"containers": [
            {"name": "a", "image": "1", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]},
            {"name": "b", "image": "1"}
        ]}});
        let config = json!({"spec": {"containers": [
            {"name": "a", "image": "2", "ports": [{"containerPort": 80, "hostPort": 8080}]},
            {"name": "c", "image": "3"}
        ]}});
        assert_eq!(
            merge(&live, &config, &pods()),
            json!({"spec": {"containers": [
                {"name": "a", "image": "2", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http", "hostPort": 8080}]},
                {"name": "b", "image": "1"},
                {"name": "c", "image": "3"}
            ]}})
        );
    }

    #[test]
    fn set_lists_are_unioned() {
        let merged = merge(
            &json!({"spec": {"finalizers": ["a", "b"]}}),
            &json!({"spec": {"finalizers": ["c", "a"]}}),
            &pods(),
        );
        assert_eq!(merged, json!({"spec": {"finalizers": ["c", "a", "b"]}}));
    }

    #[test]
    fn list_order_follows_structured_merge_diff() {
        let merge_names =
            |l: &[&str], r: &[&str]| names(&merge(&containers(l), &containers(r), &pods()));
        assert_eq!(merge_names(&["a", "b", "c"], &["c", "b"]), ["a", "c", "b"]);
        assert_eq!(merge_names(&["a", "b"], &["b", "x", "a"]), ["b", "x", "a"]);
        assert_eq!(
            merge_names(&["a", "b", "c"], &["x", "b"]),
            ["a", "x", "b", "c"]
        );
        assert_eq!(
            merge_names(&["a", "b", "c", "d"], &["d", "a"]),
            ["b", "c", "d", "a"]
        );
        assert_eq!(merge_names(&[], &["a"]), ["a"]);
        assert_eq!(merge_names(&["a"], &[]), ["a"]);
    }

    #[test]
    fn set_merge_order_matches_structured_merge_diff() {
        // (live, config, merged), behaviour observed from structured-merge-diff.
        let cases = [
            (
                json!(["a", "b", "c"]),
                json!(["a", "b"]),
                json!(["a", "b", "c"]),
            ),
            (json!(["a", "b"]), json!(["b", "a"]), json!(["b", "a"])),
            (
                json!(["c", "d", "e", "f"]),
                json!(["a", "c", "e"]),
                json!(["a", "c", "d", "e", "f"]),
            ),
            (
                json!(["a", "b", "c", "x", "y", "z"]),
                json!(["d", "e", "f", "x", "y", "z"]),
                json!(["a", "b", "c", "d", "e", "f", "x", "y", "z"]),
            ),
            (
                json!(["c", "a", "g", "f"]),
                json!(["c", "f", "a", "g"]),
                json!(["c", "f", "a", "g"]),
            ),
            (
                json!(["a", "b", "c", "d"]),
                json!(["d", "e", "f", "a"]),
                json!(["b", "c", "d", "e", "f", "a"]),
            ),
            (
                json!(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]),
                json!(["1", "b", "2", "h", "3", "e", "4", "k", "l"]),
                json!([
                    "a", "1", "b", "c", "d", "f", "g", "2", "h", "i", "j", "3", "e", "4", "k", "l"
                ]),
            ),
            // Duplicates in the live list.
            (
                json!(["a", "b", "b"]),
                json!(["c"]),
                json!(["a", "b", "b", "c"]),
            ),
            (json!(["a", "b", "b"]), json!(["b"]), json!(["a", "b"])),
            (json!(["a", "b", "b"]), json!(["a"]), json!(["a", "b", "b"])),
            (
                json!(["a", "b", "c", "d", "e", "c"]),
                json!(["1", "b", "2", "e", "d"]),
                json!(["a", "1", "b", "c", "2", "e", "c", "d"]),
            ),
            (
                json!(["a", "b", "c", "d", "e", "c"]),
                json!(["1", "b", "2", "c", "e", "d"]),
                json!(["a", "1", "b", "2", "c", "e", "d"]),
            ),
            (
                json!(["a", "a", "b", "b"]),
                json!(["b", "c", "d"]),
                json!(["a", "a", "b", "c", "d"]),
            ),
            (
                json!(["a", "a", "b", "b"]),
                json!([]),
                json!(["a", "a", "b", "b"]),
            ),
            (
                json!(["c", "a", "g", "f", "c", "a"]),
                json!(["c", "f", "a", "g"]),
                json!(["c", "f", "a", "g"]),
            ),
            (json!([1, 2, 2.5]), json!([1, 2, 3]), json!([1, 2, 2.5, 3])),
            (
                json!([1, 2, 2.5, 1, 2]),
                json!([1, 2, 3]),
                json!([1, 2, 2.5, 3]),
            ),
            (
                json!([true, false, true]),
                json!([false]),
                json!([true, false, true]),
            ),
            (
                json!([true, false, true]),
                json!([true]),
                json!([true, false]),
            ),
        ];
        for (live, config, expected) in cases {
            let merged = merge(
                &json!({"spec": {"finalizers": live.clone()}}),
                &json!({"spec": {"finalizers": config.clone()}}),
                &pods(),
            );
            assert_eq!(merged["spec"]["finalizers"], expected, "{live} + {config}");
        }
    }

    #[test]
    fn duplicated_live_items_are_replaced_by_the_configs_item() {
        let live = json!({"spec": {"containers": [
            {"name": "a", "image": "1"}, {"name": "b"}, {"name": "a", "image": "2"}
        ]}});
        let merged = merge(
            &live,
            &json!({"spec": {"containers": [{"name": "a", "image": "3"}]}}),
            &pods(),
        );
        assert_eq!(
            merged,
            json!({"spec": {"containers": [{"name": "a", "image": "3"}, {"name": "b"}]}})
        );
    }
}
