//! JSON values as CEL sees them, typed by the schema (kube-apiserver's `UnstructuredToVal`).
//!
//! * objects with `properties` expose only the declared properties, under escaped names
//!   (`foo-bar` is `self.foo__dash__bar`; names that cannot be escaped are out of reach);
//! * maps (`additionalProperties`) keep their keys as they are;
//! * resource roots expose `apiVersion`, `kind` and only `metadata.name`/`generateName`;
//! * `date-time`/`date` strings are timestamps, `duration` strings durations;
//! * `number` values are doubles even when written as integers.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use kube_cel::cel::Value;
use kube_cel::cel::functions::time;
use kube_cel::cel::objects::{Key, Map};
use serde_json::Value as Json;

use super::tree::{Format, ListType, Node};

/// `value` typed by `node`.
pub(super) fn to_cel(value: &Json, node: &Node) -> Value {
    match value {
        Json::Object(fields) => object(fields, node, None),
        Json::Array(items) => Value::List(Arc::new(
            items
                .iter()
                .map(|item| match &node.items {
                    Some(items) => to_cel(item, items),
                    None => untyped(item),
                })
                .collect(),
        )),
        Json::String(s) => string(s, node.format),
        Json::Number(_) if node.type_name == "number" => {
            Value::Float(value.as_f64().unwrap_or_default())
        }
        other => untyped(other),
    }
}

/// [`to_cel`] of an object with only the `wanted` fields (as CEL sees their names); anything else
/// converts whole.
pub(super) fn to_cel_fields(value: &Json, node: &Node, wanted: &[String]) -> Value {
    match value {
        Json::Object(fields) if !node.resource_root => object(fields, node, Some(wanted)),
        _ => to_cel(value, node),
    }
}

/// An object as CEL sees it; with `wanted`, only the fields whose CEL names it lists.
fn object(fields: &serde_json::Map<String, Json>, node: &Node, wanted: Option<&[String]>) -> Value {
    let skip = |cel_name: &str| wanted.is_some_and(|w| !w.iter().any(|f| f == cel_name));
    let mut map: HashMap<Key, Value> = HashMap::new();
    if node.resource_root {
        for name in ["apiVersion", "kind"] {
            if let Some(Json::String(s)) = fields.get(name) {
                map.insert(key(name), Value::String(Arc::new(s.clone())));
            }
        }
        if let Some(Json::Object(meta)) = fields.get("metadata") {
            let mut visible = HashMap::new();
            for name in ["name", "generateName"] {
                if let Some(Json::String(s)) = meta.get(name) {
                    visible.insert(key(name), Value::String(Arc::new(s.clone())));
                }
            }
            map.insert(key("metadata"), Value::Map(Map::from(visible)));
        }
    }
    for (name, value) in fields {
        if node.resource_root && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(property) = node.properties.get(name) {
            if let Some(escaped) = escape(name)
                && !skip(&escaped)
            {
                map.insert(key(&escaped), to_cel(value, property));
            }
        } else if skip(name) {
            // Map keys and unknown fields keep their names in CEL.
        } else if let Some(additional) = &node.additional {
            map.insert(key(name), to_cel(value, additional));
        } else if node.preserve_unknown {
            map.insert(key(name), untyped(value));
        }
    }
    Value::Map(Map::from(map))
}

fn string(s: &str, format: Option<Format>) -> Value {
    let text = Arc::new(s.to_owned());
    let typed = match format {
        Some(Format::Timestamp) if s.len() == 10 => {
            time::timestamp(Arc::new(format!("{s}T00:00:00Z")))
        }
        Some(Format::Timestamp) => time::timestamp(text.clone()),
        Some(Format::Duration) => time::duration(text.clone()),
        _ => return Value::String(text),
    };
    // A value that does not parse was refused by format validation already; keep the string.
    typed.unwrap_or(Value::String(text))
}

/// A value without schema (inside `x-kubernetes-preserve-unknown-fields`).
pub(super) fn untyped(value: &Json) -> Value {
    match value {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            _ => Value::Float(n.as_f64().unwrap_or_default()),
        },
        Json::String(s) => Value::String(Arc::new(s.clone())),
        Json::Array(items) => Value::List(Arc::new(items.iter().map(untyped).collect())),
        Json::Object(fields) => Value::Map(Map::from(
            fields
                .iter()
                .map(|(k, v)| (key(k), untyped(v)))
                .collect::<HashMap<_, _>>(),
        )),
    }
}

/// A CEL value back as JSON (a ValidatingAdmissionPolicy variable's result, given to later
/// expressions): maps need string keys; timestamps and durations are not carried.
pub(super) fn to_json(value: &Value) -> Result<Json, String> {
    Ok(match value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::UInt(u) => Json::from(*u),
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Json::Number)
            .ok_or_else(|| format!("{f} is not a JSON number"))?,
        Value::String(s) => Json::String(s.to_string()),
        Value::List(items) => Json::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Value::Map(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map.map.iter() {
                let Key::String(k) = k else {
                    return Err("a map with non-string keys".into());
                };
                out.insert(k.to_string(), to_json(v)?);
            }
            Json::Object(out)
        }
        other => return Err(format!("unsupported value of type {}", other.type_of())),
    })
}

fn key(name: &str) -> Key {
    Key::String(Arc::new(name.to_owned()))
}

/// CEL's reserved words; a property named so is reached as `__name__`.
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The CEL name of property `name` (kube-apiserver's escaping), or `None` when it has none.
pub(super) fn escape(name: &str) -> Option<Cow<'_, str>> {
    if RESERVED.contains(&name) {
        return Some(Cow::Owned(format!("__{name}__")));
    }
    // The common case, a plain identifier, is its own escape: no allocation.
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.contains("__");
    if plain {
        return Some(Cow::Borrowed(name));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/');
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '.' | '-' | '/'));
    if !first_ok || !chars.all(allowed) {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(Cow::Owned(out))
}

/// `old` with the items of its set and map lists in the order of the matching items of `new`.
///
/// kube-apiserver compares set lists regardless of order and map lists by key, so
/// `self == oldSelf` holds across a reordering; this interpreter compares lists in order.
/// Binding an aligned `oldSelf` gives the same answer (while `oldSelf[i]` may name another
/// item than upstream would).
pub(super) fn aligned<'a>(old: &'a Json, new: &Json, node: &Node) -> Cow<'a, Json> {
    match (old, new) {
        (Json::Object(old_fields), Json::Object(new_fields)) => {
            let mut out: Option<serde_json::Map<String, Json>> = None;
            for (name, old_value) in old_fields {
                let (Some(new_value), Some(child)) = (
                    new_fields.get(name),
                    node.properties.get(name).or(node.additional.as_deref()),
                ) else {
                    continue;
                };
                if let Cow::Owned(value) = aligned(old_value, new_value, child) {
                    out.get_or_insert_with(|| old_fields.clone())
                        .insert(name.clone(), value);
                }
            }
            out.map_or(Cow::Borrowed(old), |fields| {
                Cow::Owned(Json::Object(fields))
            })
        }
        (Json::Array(old_items), Json::Array(new_items)) => {
            let Some(items) = node.items.as_deref() else {
                return Cow::Borrowed(old);
            };
            let keys: Option<&[String]> = match &node.list_type {
                Some(ListType::Map(keys)) => Some(keys),
                Some(ListType::Set) => None,
                _ => return Cow::Borrowed(old),
            };
            // A map-list item is known by its keys, a set item by its whole value.
            let identity = |item: &Json| match keys {
                Some(keys) => {
                    let key: Vec<&Json> = keys
                        .iter()
                        .map(|k| item.get(k).unwrap_or(&Json::Null))
                        .collect();
                    serde_json::to_string(&key).unwrap_or_default()
                }
                None => item.to_string(),
            };
            let mut by_identity: HashMap<String, VecDeque<usize>> = HashMap::new();
            for (i, item) in old_items.iter().enumerate() {
                by_identity.entry(identity(item)).or_default().push_back(i);
            }
            let mut rest: Vec<Option<&Json>> = old_items.iter().map(Some).collect();
            let mut out = Vec::with_capacity(old_items.len());
            for new_item in new_items {
                if let Some(i) = by_identity
                    .get_mut(&identity(new_item))
                    .and_then(VecDeque::pop_front)
                    && let Some(old_item) = rest.get_mut(i).and_then(Option::take)
                {
                    out.push(aligned(old_item, new_item, items).into_owned());
                }
            }
            out.extend(rest.into_iter().flatten().cloned());
            if out == *old_items {
                Cow::Borrowed(old)
            } else {
                Cow::Owned(Json::Array(out))
            }
        }
        _ => Cow::Borrowed(old),
    }
}
