//! Custom-resource validation against a CRD schema: the causes of the 422 Invalid kube-apiserver
//! answers when an object breaks its schema's value constraints.
//!
//! Messages follow the OpenAPI validator kube-apiserver uses (kube-openapi) as converted to
//! field errors by apiextensions-apiserver: `Required value`, `Unsupported value: "x":
//! supported values: "a", "b"`, `Too long: may not be more than 3 bytes`, `Too many: 4: must
//! have at most 3 items`, and otherwise `Invalid value: <value>: <path> in body <problem>`.
//! List-type (set/map) uniqueness and embedded resources' apiVersion/kind follow
//! apiextensions-apiserver's own checks.
//!
//! The root `metadata` is left alone: the registry validates ObjectMeta itself.

use std::collections::HashMap;

use serde_json::{Map, Number, Value};

use super::path::{go_quote, push_index, push_key};
use super::{CauseReason, FieldCause, builtin, effective_type, fits, formats, gofmt};
use crate::constraints::ListType;
use crate::structural::{AdditionalProperties, Schema, SchemaNode, SchemaType};

/// Every constraint `value` breaks, as 422 causes, in document order per node.
pub fn validate_value(schema: &Schema, value: &Value) -> Vec<FieldCause> {
    validate(schema, value, None)
}

/// Like [`validate_value`] for an update from `old`, with Kubernetes' validation ratcheting:
/// schema violations inside a value that is unchanged from the old object (objects by key,
/// map lists by their keys, sets by value) are not reported, so objects stored under an older,
/// looser schema stay updatable. Embedded-resource and list-uniqueness checks still apply.
pub fn validate_value_update(schema: &Schema, new: &Value, old: &Value) -> Vec<FieldCause> {
    validate(schema, new, Some(old))
}

fn validate(schema: &Schema, value: &Value, old: Option<&Value>) -> Vec<FieldCause> {
    let mut walk = Walk {
        ratchet: old.is_some(),
        ..Walk::default()
    };
    let mut path = String::new();
    walk.node(schema.root(), value, old, &mut path, Place::Root);
    // The root metadata follows ObjectMeta (the registry's business), but a CRD may restrict
    // name and generateName; check those as declared.
    if let Some(declared) = schema.declared_root_property("metadata")
        && let Some(metadata) = value.get("metadata")
    {
        let mut path = String::from("metadata");
        let mut meta = Walk {
            ratchet: old.is_some(),
            ..Walk::default()
        };
        let old_metadata = old.and_then(|o| o.get("metadata"));
        meta.node(declared, metadata, old_metadata, &mut path, Place::Inner);
        let mut found = meta.finish();
        found.append(&mut walk.found);
        walk.found = found;
    }
    walk.finish()
}

/// Validates `value` against a node of a schema, as a value on its own (paths and messages are
/// relative to it; the root path is empty). Used for CRD `default`s.
pub(crate) fn validate_node(node: SchemaNode<'_>, value: &Value) -> Vec<FieldCause> {
    let mut walk = Walk::default();
    let mut path = String::new();
    let place = if node.embedded_resource() {
        Place::Embedded
    } else {
        Place::Inner
    };
    walk.node(node, value, None, &mut path, place);
    walk.finish()
}

/// Where a value sits, for the resource rules.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The object itself: its metadata is the registry's business.
    Root,
    /// An `x-kubernetes-embedded-resource` object.
    Embedded,
    Inner,
}

/// Causes in three groups, reported in Kubernetes' order: the OpenAPI validator's, then the
/// embedded resources' object meta, then list-type uniqueness.
#[derive(Default)]
struct Walk {
    found: Vec<FieldCause>,
    meta: Vec<FieldCause>,
    lists: Vec<FieldCause>,
    /// Validating an update: values equal to their old counterpart are not reported on.
    ratchet: bool,
    /// Inside such an unchanged value.
    unchanged: bool,
}

fn cause(path: &str, reason: CauseReason, message: String) -> FieldCause {
    FieldCause {
        field: path.to_owned(),
        reason,
        message,
    }
}

impl Walk {
    fn finish(mut self) -> Vec<FieldCause> {
        self.found.append(&mut self.meta);
        self.found.append(&mut self.lists);
        self.found
    }

    fn push(&mut self, path: &str, reason: CauseReason, message: String) {
        if !self.unchanged {
            self.found.push(cause(path, reason, message));
        }
    }

    fn extend(&mut self, causes: Vec<FieldCause>) {
        if !self.unchanged {
            self.found.extend(causes);
        }
    }

    fn push_meta(&mut self, path: &str, reason: CauseReason, message: String) {
        self.meta.push(cause(path, reason, message));
    }

    fn push_list(&mut self, path: &str, reason: CauseReason, message: String) {
        self.lists.push(cause(path, reason, message));
    }

    /// `field.Invalid(path, value, "<path> in body <problem>")`.
    fn invalid(&mut self, path: &str, shown: String, problem: &str) {
        self.push(
            path,
            CauseReason::FieldValueInvalid,
            format!("Invalid value: {shown}: {path} in body {problem}"),
        );
    }

    fn type_invalid(&mut self, path: &str, found: &str, expected: &str) {
        self.push(
            path,
            CauseReason::FieldValueTypeInvalid,
            format!(
                "Invalid value: {q}: {path} in body must be of type {expected}: {q}",
                q = go_quote(found)
            ),
        );
    }

    fn node(
        &mut self,
        node: SchemaNode<'_>,
        value: &Value,
        old: Option<&Value>,
        path: &mut String,
        place: Place,
    ) {
        let outer = self.unchanged;
        if self.ratchet && old == Some(value) {
            self.unchanged = true;
        }
        self.check(node, value, old, path, place);
        self.unchanged = outer;
    }

    fn check(
        &mut self,
        node: SchemaNode<'_>,
        value: &Value,
        old: Option<&Value>,
        path: &mut String,
        place: Place,
    ) {
        if value.is_null() {
            let typed = node.int_or_string() || effective_type(node).is_some();
            if typed && !node.nullable() {
                let expected = expected_type(node);
                self.type_invalid(path, "null", &expected);
            }
            return;
        }
        if !self.type_and_format(node, value, path) {
            return;
        }
        self.enumeration(node, value, path);
        match value {
            Value::String(text) => self.string(node, text, path),
            Value::Number(number) => self.number(node, number, path),
            Value::Array(items) => self.array(node, items, old, path),
            Value::Object(map) => self.object(node, map, old, path, place),
            Value::Bool(_) | Value::Null => {}
        }
        self.composition(node, value, path);
    }

    /// False when the value has the wrong type (nothing else is checked then).
    fn type_and_format(&mut self, node: SchemaNode<'_>, value: &Value, path: &str) -> bool {
        if node.int_or_string() {
            if value.is_string() || fits(SchemaType::Integer, value) {
                return true;
            }
            self.type_invalid(path, super::json_type_name(value), "integer,string");
            return false;
        }
        let Some(ty) = effective_type(node) else {
            return true;
        };
        if !fits(ty, value) {
            self.type_invalid(path, super::json_type_name(value), ty.as_str());
            return false;
        }
        // Only string formats are checked: kube-openapi accepts any integer for int32/int64.
        match (value, node.format()) {
            (Value::String(text), Some(format))
                if ty == SchemaType::String && formats::check(format, text) == Some(false) =>
            {
                let q = go_quote(text);
                self.push(
                    path,
                    CauseReason::FieldValueTypeInvalid,
                    format!("Invalid value: {q}: {path} in body must be of type {format}: {q}"),
                );
            }
            _ => {}
        }
        true
    }

    fn enumeration(&mut self, node: SchemaNode<'_>, value: &Value, path: &str) {
        let allowed = node.enum_values();
        if allowed.is_empty() || allowed.iter().any(|candidate| json_equal(candidate, value)) {
            return;
        }
        let supported: Vec<String> = allowed
            .iter()
            .map(|candidate| match candidate {
                Value::String(text) => go_quote(text),
                other => go_quote(&other.to_string()),
            })
            .collect();
        self.push(
            path,
            CauseReason::FieldValueNotSupported,
            format!(
                "Unsupported value: {}: supported values: {}",
                gofmt::error_value(value),
                supported.join(", ")
            ),
        );
    }

    fn string(&mut self, node: SchemaNode<'_>, text: &str, path: &str) {
        // Lengths count code points, as Go's utf8.RuneCountInString.
        let length = i64::try_from(text.chars().count()).unwrap_or(i64::MAX);
        if let Some(max) = node.max_length()
            && length > max
        {
            let unit = if max == 1 { "byte" } else { "bytes" };
            self.push(
                path,
                CauseReason::FieldValueTooLong,
                format!("Too long: may not be more than {max} {unit}"),
            );
        }
        if let Some(min) = node.min_length()
            && length < min
        {
            self.invalid(
                path,
                go_quote(text),
                &format!("should be at least {min} chars long"),
            );
        }
        if let Some(pattern) = node.pattern()
            && let Some(regex) = pattern.regex()
            && !regex.is_match(text)
        {
            self.invalid(
                path,
                go_quote(text),
                &format!("should match '{}'", pattern.as_str()),
            );
        }
    }

    fn number(&mut self, node: SchemaNode<'_>, number: &Number, path: &str) {
        let Some(value) = number.as_f64() else {
            return;
        };
        let integral = number.is_i64() || number.is_u64();
        // kube-openapi prints the limit in the value's own kind (int64 for integer data).
        let limit = |limit: f64| {
            if integral {
                (limit.trunc() as i64).to_string()
            } else {
                gofmt::float(limit)
            }
        };
        let shown = gofmt::number(number);
        if let Some(factor) = node.multiple_of()
            && factor > 0.0
            && !is_multiple(value, factor)
        {
            self.invalid(
                path,
                shown.clone(),
                &format!("should be a multiple of {}", gofmt::float(factor)),
            );
        }
        if let Some(max) = node.maximum() {
            let broken = if max.exclusive {
                value >= max.limit
            } else {
                value > max.limit
            };
            if broken {
                let relation = if max.exclusive {
                    "less than"
                } else {
                    "less than or equal to"
                };
                self.invalid(
                    path,
                    shown.clone(),
                    &format!("should be {relation} {}", limit(max.limit)),
                );
            }
        }
        if let Some(min) = node.minimum() {
            let broken = if min.exclusive {
                value <= min.limit
            } else {
                value < min.limit
            };
            if broken {
                let relation = if min.exclusive {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                self.invalid(
                    path,
                    shown,
                    &format!("should be {relation} {}", limit(min.limit)),
                );
            }
        }
    }

    fn array(
        &mut self,
        node: SchemaNode<'_>,
        items: &[Value],
        old: Option<&Value>,
        path: &mut String,
    ) {
        let count = items.len();
        if let Some(max) = node.max_items()
            && count as i64 > max
        {
            let unit = if max == 1 { "item" } else { "items" };
            self.push(
                path,
                CauseReason::FieldValueTooMany,
                format!("Too many: {count}: must have at most {max} {unit}"),
            );
        }
        if let Some(min) = node.min_items()
            && (count as i64) < min
        {
            self.invalid(
                path,
                count.to_string(),
                &format!("should have at least {min} items"),
            );
        }
        if node.unique_items() && has_duplicates(items) {
            self.invalid(path, "\"\"".into(), "shouldn't contain duplicates");
        }
        if let Some(item_schema) = node.items() {
            let place = if item_schema.embedded_resource() {
                Place::Embedded
            } else {
                Place::Inner
            };
            let old_items = old.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
            for (index, item) in items.iter().enumerate() {
                let mark = path.len();
                push_index(path, index);
                let old_item = correlate(node, item, old_items);
                self.node(item_schema, item, old_item, path, place);
                path.truncate(mark);
            }
        }
        match node.list_type() {
            Some(ListType::Set) => {
                for index in first_repeats(items.iter().cloned()) {
                    let mut at = path.clone();
                    push_index(&mut at, index);
                    self.duplicate(&at, &items[index]);
                }
            }
            Some(ListType::Map) => self.list_map(node, items, path),
            Some(ListType::Atomic) | None => {}
        }
    }

    fn duplicate(&mut self, path: &str, value: &Value) {
        self.push_list(
            path,
            CauseReason::FieldValueDuplicate,
            format!("Duplicate value: {}", gofmt::error_value(value)),
        );
    }

    fn list_map(&mut self, node: SchemaNode<'_>, items: &[Value], path: &str) {
        for (index, item) in items.iter().enumerate() {
            if !item.is_object() && !item.is_null() {
                let mut at = path.to_owned();
                push_index(&mut at, index);
                let shown = gofmt::error_value(item);
                self.push_list(
                    &at,
                    CauseReason::FieldValueInvalid,
                    format!(
                        "Invalid value: {shown}: must be an object for an array of list-type map"
                    ),
                );
                return;
            }
        }
        let keys = node.list_map_keys();
        let identities: Vec<Value> = items.iter().map(|item| identity(keys, item)).collect();
        for index in first_repeats(identities.iter().cloned()) {
            let mut at = path.to_owned();
            push_index(&mut at, index);
            self.duplicate(&at, &identities[index]);
        }
    }

    fn object(
        &mut self,
        node: SchemaNode<'_>,
        map: &Map<String, Value>,
        old: Option<&Value>,
        path: &mut String,
        place: Place,
    ) {
        let count = map.len();
        if let Some(max) = node.max_properties()
            && count as i64 > max
        {
            // kube-openapi reports the limit as the value here.
            let unit = if max == 1 { "item" } else { "items" };
            self.push(
                path,
                CauseReason::FieldValueTooMany,
                format!("Too many: {max}: must have at most {max} {unit}"),
            );
        }
        if let Some(min) = node.min_properties()
            && (count as i64) < min
        {
            self.invalid(
                path,
                min.to_string(),
                &format!("should have at least {min} properties"),
            );
        }
        for name in node.required() {
            if place == Place::Root && name == "metadata" {
                continue;
            }
            if !map.contains_key(name) {
                let mut at = path.clone();
                push_key(&mut at, name);
                self.push(
                    &at,
                    CauseReason::FieldValueRequired,
                    "Required value".into(),
                );
            }
        }
        if place == Place::Embedded {
            self.embedded(map, path);
        }
        for (key, item) in map {
            let resource_key = place != Place::Inner && key == "metadata";
            if place == Place::Root && resource_key {
                continue;
            }
            let sub = if resource_key {
                Some(builtin::object_meta_node())
            } else if let Some(property) = node.property(key) {
                Some(property)
            } else if let AdditionalProperties::Schema(inner) = node.additional_properties() {
                Some(inner)
            } else {
                None
            };
            if let Some(sub) = sub {
                let mark = path.len();
                push_key(path, key);
                let place = if sub.embedded_resource() {
                    Place::Embedded
                } else {
                    Place::Inner
                };
                let old_item = old.and_then(|o| o.get(key));
                self.node(sub, item, old_item, path, place);
                path.truncate(mark);
            }
        }
    }

    /// apiextensions' checks of an embedded resource's type and object meta.
    fn embedded(&mut self, map: &Map<String, Value>, path: &str) {
        let at = |name: &str| {
            let mut at = path.to_owned();
            push_key(&mut at, name);
            at
        };
        for name in ["apiVersion", "kind"] {
            let field = at(name);
            match map.get(name) {
                None => self.push_meta(
                    &field,
                    CauseReason::FieldValueRequired,
                    "Required value".into(),
                ),
                Some(Value::String(text)) if text.is_empty() => self.push_meta(
                    &field,
                    CauseReason::FieldValueInvalid,
                    "Invalid value: \"\": must not be empty".into(),
                ),
                Some(Value::String(text)) => {
                    let problem = if name == "apiVersion" {
                        (text.matches('/').count() > 1)
                            .then(|| format!("unexpected GroupVersion string: {text}"))
                    } else {
                        let errors = crate::crd::dns1035_label(&text.to_lowercase());
                        (!errors.is_empty()).then(|| {
                            format!(
                                "may have mixed case, but should otherwise match: {}",
                                errors.join(",")
                            )
                        })
                    };
                    if let Some(problem) = problem {
                        self.push_meta(
                            &field,
                            CauseReason::FieldValueInvalid,
                            format!("Invalid value: {}: {problem}", go_quote(text)),
                        );
                    }
                }
                Some(other) => self.push_meta(
                    &field,
                    CauseReason::FieldValueInvalid,
                    format!(
                        "Invalid value: {}: must be a string",
                        gofmt::error_value(other)
                    ),
                ),
            }
        }
        // Embedded names are path segments (the object is never stored under its name).
        if let Some(name) = map
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
        {
            let problem = match name {
                "." => Some("may not be '.'"),
                ".." => Some("may not be '..'"),
                _ if name.contains('/') => Some("may not contain '/'"),
                _ if name.contains('%') => Some("may not contain '%'"),
                _ => None,
            };
            if let Some(problem) = problem {
                self.push_meta(
                    &format!("{}.name", at("metadata")),
                    CauseReason::FieldValueInvalid,
                    format!("Invalid value: {}: {problem}", go_quote(name)),
                );
            }
        }
    }

    /// allOf/anyOf/oneOf/not. kube-openapi reports the combined failure without a field
    /// (apiextensions-apiserver then prints the nil path as `<nil>`).
    fn composition(&mut self, node: SchemaNode<'_>, value: &Value, path: &mut String) {
        let all_of = node.all_of();
        if !all_of.is_empty() {
            let mut passed = 0;
            for branch in &all_of {
                let found = self.branch(*branch, value, path);
                if found.is_empty() {
                    passed += 1;
                }
                self.extend(found);
            }
            if passed != all_of.len() {
                let none = if passed == 0 { ". None validated" } else { "" };
                self.composite(format!(
                    "{} must validate all the schemas (allOf){none}",
                    go_quote(path)
                ));
            }
        }
        let any_of = node.any_of();
        if !any_of.is_empty() {
            let results: Vec<Vec<FieldCause>> = any_of
                .iter()
                .map(|branch| self.branch(*branch, value, path))
                .collect();
            if !results.iter().any(Vec::is_empty) {
                self.composite(format!(
                    "{} must validate at least one schema (anyOf)",
                    go_quote(path)
                ));
                if let Some(best) = results.into_iter().min_by_key(Vec::len) {
                    self.extend(best);
                }
            }
        }
        let one_of = node.one_of();
        if !one_of.is_empty() {
            let results: Vec<Vec<FieldCause>> = one_of
                .iter()
                .map(|branch| self.branch(*branch, value, path))
                .collect();
            let valid = results.iter().filter(|found| found.is_empty()).count();
            if valid != 1 {
                let detail = if valid == 0 {
                    "Found none valid".to_owned()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                self.composite(format!(
                    "{} must validate one and only one schema (oneOf). {detail}",
                    go_quote(path)
                ));
                if valid == 0
                    && let Some(best) = results.into_iter().min_by_key(Vec::len)
                {
                    self.extend(best);
                }
            }
        }
        if let Some(not) = node.not_schema()
            && self.branch(not, value, path).is_empty()
        {
            self.composite(format!(
                "{} must not validate the schema (not)",
                go_quote(path)
            ));
        }
    }

    fn branch(&self, branch: SchemaNode<'_>, value: &Value, path: &mut String) -> Vec<FieldCause> {
        let mut inner = Walk::default();
        inner.node(branch, value, None, path, Place::Inner);
        inner.finish()
    }

    fn composite(&mut self, message: String) {
        self.push(
            "<nil>",
            CauseReason::FieldValueInvalid,
            format!("Invalid value: \"\": {message}"),
        );
    }
}

/// The identity of a map-list item: the key fields it has (absent ones left out).
fn identity(keys: &[String], item: &Value) -> Value {
    let mut identity = Map::new();
    if let Some(map) = item.as_object() {
        for key in keys {
            if let Some(field) = map.get(key) {
                identity.insert(key.clone(), field.clone());
            }
        }
    }
    Value::Object(identity)
}

/// The old counterpart of a list item, where Kubernetes can tell: map lists by keys, sets by
/// value; items of atomic lists have none.
fn correlate<'v>(list: SchemaNode<'_>, item: &Value, old_items: &'v [Value]) -> Option<&'v Value> {
    match list.list_type() {
        Some(ListType::Map) => {
            let keys = list.list_map_keys();
            let wanted = identity(keys, item);
            old_items.iter().find(|old| identity(keys, old) == wanted)
        }
        Some(ListType::Set) => old_items.iter().find(|old| *old == item),
        Some(ListType::Atomic) | None => None,
    }
}

/// The type named in a null's message.
fn expected_type(node: SchemaNode<'_>) -> String {
    if node.int_or_string() {
        return "integer,string".into();
    }
    effective_type(node).map_or_else(String::new, |ty| ty.as_str().to_owned())
}

/// JSON equality with numbers compared by value (1 == 1.0).
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, value)| y.get(key).is_some_and(|other| json_equal(value, other)))
        }
        _ => a == b,
    }
}

fn has_duplicates(items: &[Value]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(i, a)| items[i + 1..].iter().any(|b| json_equal(a, b)))
}

/// The index of the second occurrence of every value that occurs more than once (later
/// repeats are not reported again), as apiextensions' set validation does.
fn first_repeats(items: impl Iterator<Item = Value>) -> Vec<usize> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut repeats = Vec::new();
    for (index, item) in items.enumerate() {
        let count = seen.entry(canonical(&item)).or_insert(0);
        *count += 1;
        if *count == 2 {
            repeats.push(index);
        }
    }
    repeats
}

/// A key equal for equal JSON values (object keys sorted, as Go's encoder does).
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|key| format!("{}:{}", Value::String(key.clone()), canonical(&map[key])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", parts.join(","))
        }
        other => other.to_string(),
    }
}

fn is_multiple(value: f64, factor: f64) -> bool {
    let quotient = value / factor;
    (quotient - quotient.round()).abs() <= 1e-9 * quotient.abs().max(1.0)
}

#[cfg(test)]
mod tests;
