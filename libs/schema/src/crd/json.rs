//! Small readers over a CRD's JSON (the registry has already checked its types).

use serde_json::{Map, Value};

pub(crate) type Obj = Map<String, Value>;

pub(crate) fn obj<'a>(map: &'a Obj, key: &str) -> Option<&'a Obj> {
    map.get(key).and_then(Value::as_object)
}

pub(crate) fn str_of<'a>(map: &'a Obj, key: &str) -> &'a str {
    map.get(key).and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn opt_str<'a>(map: &'a Obj, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Value::as_str)
}

pub(crate) fn bool_of(map: &Obj, key: &str) -> bool {
    map.get(key).and_then(Value::as_bool).unwrap_or(false)
}

pub(crate) fn list<'a>(map: &'a Obj, key: &str) -> &'a [Value] {
    map.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

pub(crate) fn strings<'a>(map: &'a Obj, key: &str) -> Vec<&'a str> {
    list(map, key).iter().filter_map(Value::as_str).collect()
}

/// Properties sorted by name (Go walks maps in random order; sorting keeps output stable).
pub(crate) fn sorted_props(map: &Obj) -> Vec<(&String, &Obj)> {
    let mut props: Vec<(&String, &Obj)> = obj(map, "properties")
        .map(|p| {
            p.iter()
                .filter_map(|(k, v)| v.as_object().map(|o| (k, o)))
                .collect()
        })
        .unwrap_or_default();
    props.sort_by(|a, b| a.0.cmp(b.0));
    props
}

/// Go's `%#v` of a `[]string`.
pub(crate) fn go_strings(items: &[&str]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| crate::validate::path::go_quote(s))
        .collect();
    format!("[]string{{{}}}", quoted.join(", "))
}
