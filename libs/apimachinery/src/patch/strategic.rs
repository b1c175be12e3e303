//! Strategic merge patch (`application/strategic-merge-patch+json`), following Kubernetes'
//! `strategicpatch` package as the API server applies it (`StrategicMergeMapPatch`).
//!
//! Beyond a JSON merge patch: lists tagged `merge` are merged (by merge key, or as a set of
//! scalars) instead of replaced, and the patch may carry directives: `$patch` (`replace`,
//! `delete`; `merge` in maps), `$retainKeys`, `$deleteFromPrimitiveList/<field>` and
//! `$setElementOrder/<field>`.
//!
//! Where upstream would store directive keys or raw `null`s into new sub-objects (Kubernetes
//! drops them when converting to its typed structs), values new to the object are merged into
//! an empty value instead, so the stored JSON never holds directives.

use serde_json::{Map, Value};

use super::meta::{FieldPatchMeta, PatchMeta, PatchStrategy};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// Errors with Kubernetes' messages; [`StrategicMergePatchError::class`] tells the HTTP class.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrategicMergePatchError {
    #[error("invalid JSON document")]
    BadJsonDoc,
    #[error("lists of lists are not supported")]
    NoListOfLists,
    #[error("invalid patch format of primitive list")]
    BadPatchFormatForPrimitiveList,
    #[error("invalid patch format of retainKeys")]
    BadPatchFormatForRetainKeys,
    #[error("invalid patch format of setElementOrder list")]
    BadPatchFormatForSetElementOrderList,
    #[error("expected a {expected}, but received a {actual}")]
    BadArgType {
        expected: &'static str,
        actual: &'static str,
    },
    #[error("map: {map} does not contain declared merge key: {key}")]
    NoMergeKey { map: String, key: String },
    #[error("unknown patch type: {directive} in map: {map}")]
    BadPatchType { directive: String, map: String },
    #[error("merging lists cannot yet be specified in the patch")]
    MergingListsUnsupported,
    #[error("list element types are not identical: {0}")]
    ElementTypesNotIdentical(String),
    #[error("cannot merge lists without merge key for type struct")]
    MissingMergeKeyDeclaration,
    #[error("The order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}\n")]
    SetElementOrderMismatch { patch: String, order: String },
}

/// The HTTP class Kubernetes gives each error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// 400 Bad Request.
    BadRequest,
    /// 422 Unprocessable Entity.
    Unprocessable,
    /// 500: Kubernetes does not classify these, so they surface as internal errors.
    Internal,
}

impl StrategicMergePatchError {
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::BadJsonDoc
            | Self::BadPatchFormatForPrimitiveList
            | Self::BadPatchFormatForRetainKeys
            | Self::BadPatchFormatForSetElementOrderList => ErrorClass::BadRequest,
            Self::NoListOfLists => ErrorClass::Unprocessable,
            _ => ErrorClass::Internal,
        }
    }
}

type Result<T> = std::result::Result<T, StrategicMergePatchError>;

/// Applies `patch` to `original` using `meta` (see [`super::builtin_patch_meta`]). Both must be
/// JSON objects; a `null` patch changes nothing.
pub fn apply_strategic_merge_patch(
    original: &Value,
    patch: &Value,
    meta: &PatchMeta,
) -> Result<Value> {
    let original = match original {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        _ => return Err(StrategicMergePatchError::BadJsonDoc),
    };
    let patch = match patch {
        Value::Object(m) => m.clone(),
        Value::Null => return Ok(Value::Object(original)),
        _ => return Err(StrategicMergePatchError::BadJsonDoc),
    };
    Merger {
        meta,
        path: Vec::new(),
    }
    .merge_map(original, patch)
    .map(Value::Object)
}

/// Type of the elements of a list, as far as merging cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElementKind {
    Map,
    Scalar,
}

struct Merger<'a> {
    meta: &'a PatchMeta,
    /// Field names from the root to the map being merged (list positions skipped).
    path: Vec<String>,
}

impl Merger<'_> {
    fn field_meta(&self, key: &str) -> FieldPatchMeta {
        let mut path: Vec<&str> = self.path.iter().map(String::as_str).collect();
        path.push(key);
        self.meta.lookup(&path)
    }

    fn merge_map(
        &mut self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
    ) -> Result<Map<String, Value>> {
        if let Some(directive) = patch.get(DIRECTIVE) {
            match directive.as_str() {
                Some("replace") => {
                    remove_key(&mut patch, DIRECTIVE);
                    return self.merge_map(Map::new(), patch);
                }
                Some("delete") => return Ok(Map::new()),
                // Upstream rejects `merge` in maps; it can only mean the default, so accept it.
                Some("merge") => {
                    remove_key(&mut patch, DIRECTIVE);
                }
                _ => {
                    return Err(StrategicMergePatchError::BadPatchType {
                        directive: render_directive(directive),
                        map: Value::Object(patch.clone()).to_string(),
                    });
                }
            }
        }
        apply_retain_keys(&mut original, &mut patch)?;
        self.merge_set_element_order(&mut original, &mut patch)?;

        for (key, patch_value) in patch {
            let (key, is_delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
                Some(_) => (extract_key(&key, DELETE_FROM_PRIMITIVE_LIST)?, true),
                None => (key, false),
            };
            if patch_value.is_null() {
                remove_key(&mut original, &key);
                continue;
            }
            if is_delete_list {
                let Value::Array(to_delete) = patch_value else {
                    return Err(StrategicMergePatchError::BadPatchFormatForPrimitiveList);
                };
                // Upstream stores the deletion list as the field when the field is missing;
                // deleting from nothing leaves nothing instead.
                if let Some(Value::Array(current)) = original.get_mut(&key) {
                    current.retain(|v| !to_delete.contains(v));
                }
                continue;
            }
            let fm = self.field_meta(&key);
            self.path.push(key.clone());
            let merged = match original.get_mut(&key) {
                None => self.clean_value(patch_value, fm),
                Some(slot) => {
                    let current = std::mem::take(slot);
                    match (current, patch_value) {
                        (Value::Object(o), Value::Object(p))
                            if fm.strategy != PatchStrategy::Replace =>
                        {
                            self.merge_map(o, p).map(Value::Object)
                        }
                        (Value::Array(o), Value::Array(p)) => {
                            self.merge_list_field(o, p, fm).map(Value::Array)
                        }
                        (_, p) => self.clean_value(p, fm),
                    }
                }
            };
            self.path.pop();
            original.insert(key, merged?);
        }
        Ok(original)
    }

    /// A value new to the object: merged into an empty value so directives and `null`s inside
    /// it take effect instead of being stored.
    fn clean_value(&mut self, v: Value, fm: FieldPatchMeta) -> Result<Value> {
        match v {
            Value::Object(m) => self.merge_map(Map::new(), m).map(Value::Object),
            Value::Array(l) => self.clean_list(l, fm).map(Value::Array),
            other => Ok(other),
        }
    }

    fn clean_list(&mut self, list: Vec<Value>, fm: FieldPatchMeta) -> Result<Vec<Value>> {
        if fm.strategy == PatchStrategy::Merge {
            return self.merge_list(Vec::new(), list, fm.merge_key.unwrap_or(""));
        }
        list.into_iter()
            .map(|item| match item {
                Value::Object(m) => self.merge_map(Map::new(), m).map(Value::Object),
                other => Ok(other),
            })
            .collect()
    }

    /// A list field present in both: merged if tagged `merge`, else replaced.
    fn merge_list_field(
        &mut self,
        original: Vec<Value>,
        patch: Vec<Value>,
        fm: FieldPatchMeta,
    ) -> Result<Vec<Value>> {
        if fm.strategy == PatchStrategy::Merge {
            self.merge_list(original, patch, fm.merge_key.unwrap_or(""))
        } else {
            self.clean_list(patch, fm)
        }
    }

    fn merge_list(
        &mut self,
        original: Vec<Value>,
        patch: Vec<Value>,
        merge_key: &str,
    ) -> Result<Vec<Value>> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        match element_kind(&[&original, &patch])? {
            ElementKind::Scalar => {
                let mut both = original.clone();
                both.extend(patch.iter().cloned());
                let merged = dedup_scalars(both);
                let (patch_items, server_only) = partition_scalars(merged, &patch);
                normalize_element_order(
                    patch_items,
                    server_only,
                    &patch,
                    &original,
                    "",
                    ElementKind::Scalar,
                )
            }
            ElementKind::Map => {
                if merge_key.is_empty() {
                    return Err(StrategicMergePatchError::MissingMergeKeyDeclaration);
                }
                let (original, patch, replaced) =
                    apply_list_directives(original, patch, merge_key)?;
                if replaced {
                    return original
                        .into_iter()
                        .map(|item| match item {
                            Value::Object(m) => self.merge_map(Map::new(), m).map(Value::Object),
                            other => Ok(other),
                        })
                        .collect();
                }
                let merged = self.merge_maps_by_key(original.clone(), &patch, merge_key)?;
                let (patch_items, server_only) = partition_maps(merged, &patch, merge_key)?;
                normalize_element_order(
                    patch_items,
                    server_only,
                    &patch,
                    &original,
                    merge_key,
                    ElementKind::Map,
                )
            }
        }
    }

    /// Merges each patch item into the original item with the same merge-key value, or
    /// appends it.
    fn merge_maps_by_key(
        &mut self,
        mut original: Vec<Value>,
        patch: &[Value],
        merge_key: &str,
    ) -> Result<Vec<Value>> {
        for item in patch {
            let Value::Object(item) = item else {
                return Err(bad_arg_type("map[string]interface {}", item));
            };
            let Some(key_value) = item.get(merge_key) else {
                return Err(no_merge_key(item, merge_key));
            };
            let found = find_by_key(&original, merge_key, key_value)?;
            match found {
                Some(i) => {
                    let current = std::mem::take(&mut original[i]);
                    let current = match current {
                        Value::Object(m) => m,
                        other => return Err(bad_arg_type("map[string]interface {}", &other)),
                    };
                    original[i] = Value::Object(self.merge_map(current, item.clone())?);
                }
                None => original.push(Value::Object(self.merge_map(Map::new(), item.clone())?)),
            }
        }
        Ok(original)
    }

    /// Handles every `$setElementOrder/<field>` of `patch`: merges that field now and orders it
    /// by the directive, then by the patch, then by the original list.
    fn merge_set_element_order(
        &mut self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
    ) -> Result<()> {
        let keys: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
            .cloned()
            .collect();
        for directive_key in keys {
            let order = remove_key(patch, &directive_key).unwrap_or(Value::Null);
            let Value::Array(order) = order else {
                return Err(bad_arg_type("[]interface {}", &order));
            };
            let field = extract_key(&directive_key, SET_ELEMENT_ORDER)?;
            let original_list = list_field(original, &field)?;
            let patch_list = list_field(patch, &field)?;
            let fm = self.field_meta(&field);
            let merge_key = fm.merge_key.unwrap_or("");
            validate_patch_with_set_order_list(
                patch_list.as_deref().unwrap_or_default(),
                &order,
                merge_key,
            )?;

            self.path.push(field.clone());
            let merged = match (&original_list, patch_list) {
                (None, None) => {
                    self.path.pop();
                    continue;
                }
                (Some(o), None) => Ok(o.clone()),
                (None, Some(p)) => self.clean_list(p, fm),
                (Some(o), Some(p)) => self.merge_list_field(o.clone(), p, fm),
            };
            self.path.pop();
            let merged = merged?;
            let original_list = original_list.unwrap_or_default();
            let ordered = if merged.is_empty() {
                merged
            } else {
                let (patch_items, server_only) = if merge_key.is_empty() {
                    partition_scalars(merged, &order)
                } else {
                    partition_maps(merged, &order, merge_key)?
                };
                let kind = if merge_key.is_empty() {
                    ElementKind::Scalar
                } else {
                    ElementKind::Map
                };
                normalize_element_order(
                    patch_items,
                    server_only,
                    &order,
                    &original_list,
                    merge_key,
                    kind,
                )?
            };
            original.insert(field.clone(), Value::Array(ordered));
            remove_key(patch, &field);
        }
        Ok(())
    }
}

/// Removes `key` keeping the order of the other keys.
fn remove_key(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    let value = map.get(key).cloned();
    if value.is_some() {
        map.retain(|k, _| k != key);
    }
    value
}

fn list_field(map: &Map<String, Value>, field: &str) -> Result<Option<Vec<Value>>> {
    match map.get(field) {
        None => Ok(None),
        Some(Value::Array(l)) => Ok(Some(l.clone())),
        Some(other) => Err(bad_arg_type("[]interface {}", other)),
    }
}

/// `$retainKeys: [...]`: keys of the original not listed are cleared; the patch may only set
/// listed keys.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<()> {
    let Some(retain) = remove_key(patch, RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(StrategicMergePatchError::BadPatchFormatForRetainKeys);
    };
    let listed = |k: &str| retain.iter().any(|v| v.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !listed(k) {
            return Err(StrategicMergePatchError::BadPatchFormatForRetainKeys);
        }
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// `$prefix/field` → `field`.
fn extract_key(s: &str, prefix: &str) -> Result<String> {
    match s.split_once('/') {
        Some((p, field)) if p == prefix => Ok(field.to_owned()),
        _ if prefix == DELETE_FROM_PRIMITIVE_LIST => {
            Err(StrategicMergePatchError::BadPatchFormatForPrimitiveList)
        }
        _ => Err(StrategicMergePatchError::BadPatchFormatForSetElementOrderList),
    }
}

/// Splits `$patch` items off a patch list of maps: `delete` removes matching originals,
/// `replace` makes the rest of the patch list the whole result (third value `true`).
fn apply_list_directives(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>, bool)> {
    let mut rest = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Some(directive) = item.get(DIRECTIVE) else {
            rest.push(item);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let Some(key_value) = item.get(merge_key) else {
                    return Err(no_merge_key_value(&item, merge_key));
                };
                original.retain(|o| o.get(merge_key) != Some(key_value));
            }
            Some("replace") => replace = true,
            Some("merge") => return Err(StrategicMergePatchError::MergingListsUnsupported),
            _ => {
                return Err(StrategicMergePatchError::BadPatchType {
                    directive: render_directive(directive),
                    map: item.to_string(),
                });
            }
        }
    }
    if replace {
        Ok((rest, Vec::new(), true))
    } else {
        Ok((original, rest, false))
    }
}

/// All elements must share one kind; lists of lists are refused.
fn element_kind(lists: &[&[Value]]) -> Result<ElementKind> {
    let mut seen: Option<(&'static str, ElementKind)> = None;
    for v in lists.iter().flat_map(|l| l.iter()) {
        let this = match v {
            Value::Array(_) => return Err(StrategicMergePatchError::NoListOfLists),
            Value::Object(_) => ("map", ElementKind::Map),
            Value::String(_) => ("string", ElementKind::Scalar),
            Value::Number(_) => ("number", ElementKind::Scalar),
            Value::Bool(_) => ("bool", ElementKind::Scalar),
            Value::Null => ("null", ElementKind::Scalar),
        };
        match seen {
            None => seen = Some(this),
            Some(prev) if prev.0 != this.0 => {
                let rendered: Vec<String> = lists
                    .iter()
                    .map(|l| Value::from(l.to_vec()).to_string())
                    .collect();
                return Err(StrategicMergePatchError::ElementTypesNotIdentical(
                    rendered.join(" "),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(seen.map_or(ElementKind::Scalar, |s| s.1))
}

/// Kubernetes' in-place de-duplication (it moves the last element into each removed slot; the
/// order is fixed later by `normalize_element_order`).
fn dedup_scalars(mut s: Vec<Value>) -> Vec<Value> {
    let mut i = 0;
    while i + 1 < s.len() {
        let mut j = i + 1;
        while j < s.len() {
            if s[i] == s[j] {
                let last = s.len() - 1;
                s.swap(j, last);
                s.truncate(last);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    s
}

fn partition_scalars(merged: Vec<Value>, by: &[Value]) -> (Vec<Value>, Vec<Value>) {
    merged.into_iter().partition(|v| by.contains(v))
}

fn partition_maps(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut in_by = Vec::new();
    let mut rest = Vec::new();
    for v in merged {
        let Value::Object(m) = &v else {
            return Err(bad_arg_type("map[string]interface {}", &v));
        };
        let Some(key_value) = m.get(merge_key) else {
            return Err(no_merge_key(m, merge_key));
        };
        if find_by_key(by, merge_key, key_value)?.is_some() {
            in_by.push(v);
        } else {
            rest.push(v);
        }
    }
    Ok((in_by, rest))
}

fn find_by_key(list: &[Value], merge_key: &str, key_value: &Value) -> Result<Option<usize>> {
    for (i, v) in list.iter().enumerate() {
        let Value::Object(m) = v else {
            return Err(StrategicMergePatchError::BadArgType {
                expected: "map[string]interface {}",
                actual: go_type_name(v),
            });
        };
        if m.get(merge_key) == Some(key_value) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Position of `item` in `list`: by merge-key value for maps, by value for scalars.
fn index_of(list: &[Value], item: &Value, merge_key: &str, kind: ElementKind) -> Option<usize> {
    match kind {
        ElementKind::Map => {
            let wanted = item.get(merge_key);
            list.iter().position(|v| v.get(merge_key) == wanted)
        }
        ElementKind::Scalar => list.iter().position(|v| v == item),
    }
}

/// Orders patch items by `patch_order` and server-only items by `server_order`, then
/// interleaves them: a patch item that also exists in the original keeps its original
/// neighbours; new patch items come as early as possible.
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: ElementKind,
) -> Result<Vec<Value>> {
    let patch_items = normalize_slice_order(patch_items, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    let (left, right) = (server_only, patch_items);
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (index_of(server_order, l, merge_key, kind), index_of(server_order, r, merge_key, kind)),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    Ok(out)
}

/// Stable sort by position in `order`; for maps, items carrying `$patch: delete` go last.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: ElementKind,
) -> Result<Vec<Value>> {
    let (mut keep, deleted) = if kind == ElementKind::Map {
        for list in [to_sort.as_slice(), order] {
            for item in list {
                let Value::Object(m) = item else {
                    return Err(bad_arg_type("map[string]interface {}", item));
                };
                if !m.contains_key(merge_key) {
                    return Err(no_merge_key(m, merge_key));
                }
            }
        }
        to_sort.into_iter().partition::<Vec<Value>, _>(|v| {
            v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete")
        })
    } else {
        (to_sort, Vec::new())
    };
    keep.sort_by_key(|v| index_of(order, v, merge_key, kind).unwrap_or(usize::MAX));
    keep.extend(deleted);
    Ok(keep)
}

/// Checks the patch list is a subsequence of the `$setElementOrder` list (deletions and
/// directive items aside).
fn validate_patch_with_set_order_list(
    patch: &[Value],
    order: &[Value],
    merge_key: &str,
) -> Result<()> {
    if order.is_empty() || patch.is_empty() {
        return Ok(());
    }
    let mut items: Vec<&Value> = Vec::with_capacity(patch.len());
    for item in patch {
        if !merge_key.is_empty() {
            if !item.is_object() {
                return Err(bad_arg_type("map[string]interface {}", item));
            }
            if item.get(DIRECTIVE).and_then(Value::as_str) == Some("delete") {
                continue;
            }
        }
        items.push(item);
    }
    let (mut p, mut s) = (0, 0);
    while p < items.len() && s < order.len() {
        if items[p].get(DIRECTIVE).is_some() {
            p += 1;
            continue;
        }
        if merge_key_value_equal(items[p], &order[s], merge_key)? {
            p += 1;
        }
        s += 1;
    }
    if p < items.len() && s >= order.len() {
        return Err(StrategicMergePatchError::SetElementOrderMismatch {
            patch: Value::from(patch.to_vec()).to_string(),
            order: Value::from(order.to_vec()).to_string(),
        });
    }
    Ok(())
}

fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let (Value::Object(l), Value::Object(r)) = (left, right) else {
        let bad = if left.is_object() { right } else { left };
        return Err(bad_arg_type("map[string]interface {}", bad));
    };
    match (l.get(merge_key), r.get(merge_key)) {
        (Some(a), Some(b)) => Ok(a == b),
        (None, _) => Err(no_merge_key(l, merge_key)),
        (_, None) => Err(no_merge_key(r, merge_key)),
    }
}

fn render_directive(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Go's type names, as Kubernetes' messages print them.
fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn bad_arg_type(expected: &'static str, actual: &Value) -> StrategicMergePatchError {
    StrategicMergePatchError::BadArgType {
        expected,
        actual: go_type_name(actual),
    }
}

fn no_merge_key(map: &Map<String, Value>, key: &str) -> StrategicMergePatchError {
    StrategicMergePatchError::NoMergeKey {
        map: Value::Object(map.clone()).to_string(),
        key: key.to_owned(),
    }
}

fn no_merge_key_value(v: &Value, key: &str) -> StrategicMergePatchError {
    StrategicMergePatchError::NoMergeKey {
        map: v.to_string(),
        key: key.to_owned(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::super::meta::{PatchMetaEntry, builtin_patch_meta};
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Fields named like the ones in Kubernetes' own strategic-patch tests.
    fn test_meta() -> PatchMeta {
        PatchMeta::new([
            PatchMetaEntry {
                path: "mergingList",
                meta: FieldPatchMeta::merge_by("name"),
            },
            PatchMetaEntry {
                path: "mergingList.mergingList",
                meta: FieldPatchMeta::merge_by("name"),
            },
            PatchMetaEntry {
                path: "mergingIntList",
                meta: FieldPatchMeta::merge_set(),
            },
            PatchMetaEntry {
                path: "replacedMap",
                meta: FieldPatchMeta::replace(),
            },
        ])
    }

    fn smp(original: Value, patch: Value, meta: &PatchMeta) -> Value {
        apply_strategic_merge_patch(&original, &patch, meta)
            .unwrap_or_else(|e| panic!("{patch}: {e}"))
    }

    #[test]
    fn table() {
        let meta = test_meta();
        let cases = [
            (
                "maps merge, null deletes",
                json!({"m": {"a": 1, "b": 2}, "s": "x"}),
                json!({"m": {"a": null, "c": 3}}),
                json!({"m": {"b": 2, "c": 3}, "s": "x"}),
            ),
            (
                "null for a missing key is dropped",
                json!({}),
                json!({"a": null, "m": {"b": null}}),
                json!({"m": {}}),
            ),
            (
                "scalars replace, types may change",
                json!({"a": 1, "b": {"c": 1}}),
                json!({"a": "x", "b": [1]}),
                json!({"a": "x", "b": [1]}),
            ),
            (
                "lists without strategy are replaced",
                json!({"l": [1, 2, 3]}),
                json!({"l": [4]}),
                json!({"l": [4]}),
            ),
            (
                "replace strategy on a map",
                json!({"replacedMap": {"a": 1}}),
                json!({"replacedMap": {"b": 2, "c": null}}),
                json!({"replacedMap": {"b": 2}}),
            ),
            (
                "scalar set union puts new items first",
                json!({"mergingIntList": [1, 2]}),
                json!({"mergingIntList": [3]}),
                json!({"mergingIntList": [3, 1, 2]}),
            ),
            (
                "scalar set union keeps existing order",
                json!({"mergingIntList": ["a", "b"]}),
                json!({"mergingIntList": ["b", "c"]}),
                json!({"mergingIntList": ["a", "b", "c"]}),
            ),
            (
                "scalar set union drops duplicates",
                json!({"mergingIntList": [1, 1, 2]}),
                json!({"mergingIntList": [2, 2]}),
                json!({"mergingIntList": [1, 2]}),
            ),
            (
                "merge list by key",
                json!({"mergingList": [{"name": "1", "v": 1}, {"name": "2", "v": 2}]}),
                json!({"mergingList": [{"name": "2", "v": 3, "w": 1}, {"name": "3"}]}),
                json!({"mergingList": [{"name": "1", "v": 1}, {"name": "2", "v": 3, "w": 1}, {"name": "3"}]}),
            ),
            (
                "nested merge lists",
                json!({"mergingList": [{"name": "a", "mergingList": [{"name": "x", "v": 1}]}]}),
                json!({"mergingList": [{"name": "a", "mergingList": [{"name": "y"}]}]}),
                json!({"mergingList": [{"name": "a", "mergingList": [{"name": "y"}, {"name": "x", "v": 1}]}]}),
            ),
            (
                "$patch: delete in a merge list",
                json!({"mergingList": [{"name": "1"}, {"name": "2"}]}),
                json!({"mergingList": [{"name": "1", "$patch": "delete"}]}),
                json!({"mergingList": [{"name": "2"}]}),
            ),
            (
                "$patch: replace in a merge list",
                json!({"mergingList": [{"name": "1"}, {"name": "2"}]}),
                json!({"mergingList": [{"$patch": "replace"}, {"name": "3", "x": null}]}),
                json!({"mergingList": [{"name": "3"}]}),
            ),
            (
                "$patch: replace in a map",
                json!({"m": {"a": 1, "n": {"b": 2}}}),
                json!({"m": {"$patch": "replace", "n": {"c": 3}}}),
                json!({"m": {"n": {"c": 3}}}),
            ),
            (
                "$patch: delete in a map",
                json!({"m": {"a": 1}, "k": 1}),
                json!({"m": {"$patch": "delete"}}),
                json!({"m": {}, "k": 1}),
            ),
            (
                "$patch: merge in a map is the default",
                json!({"m": {"a": 1}}),
                json!({"m": {"$patch": "merge", "b": 2}}),
                json!({"m": {"a": 1, "b": 2}}),
            ),
            (
                "$patch: delete at the top",
                json!({"a": 1}),
                json!({"$patch": "delete"}),
                json!({}),
            ),
            (
                "$retainKeys clears unlisted keys",
                json!({"s": {"a": 1, "b": 2, "c": 3}}),
                json!({"s": {"$retainKeys": ["a", "c"], "c": 4}}),
                json!({"s": {"a": 1, "c": 4}}),
            ),
            (
                "$deleteFromPrimitiveList on a merge list",
                json!({"mergingIntList": [1, 2, 3]}),
                json!({"$deleteFromPrimitiveList/mergingIntList": [2]}),
                json!({"mergingIntList": [1, 3]}),
            ),
            (
                "$deleteFromPrimitiveList on a plain list",
                json!({"nonMergingIntList": [1, 2, 3]}),
                json!({"$deleteFromPrimitiveList/nonMergingIntList": [2]}),
                json!({"nonMergingIntList": [1, 3]}),
            ),
            (
                "$deleteFromPrimitiveList of a missing item",
                json!({"mergingIntList": [1, 2]}),
                json!({"$deleteFromPrimitiveList/mergingIntList": [3]}),
                json!({"mergingIntList": [1, 2]}),
            ),
            (
                "$deleteFromPrimitiveList never creates the list",
                json!({"foo": ["bar"]}),
                json!({"$deleteFromPrimitiveList/mergingIntList": [3]}),
                json!({"foo": ["bar"]}),
            ),
            (
                "add and delete scalars together",
                json!({"mergingIntList": [1, 2]}),
                json!({"$setElementOrder/mergingIntList": [1, 3], "mergingIntList": [3], "$deleteFromPrimitiveList/mergingIntList": [2]}),
                json!({"mergingIntList": [1, 3]}),
            ),
            (
                "$setElementOrder on scalars",
                json!({"mergingIntList": [1, 2, 4]}),
                json!({"$setElementOrder/mergingIntList": [1, 2, 3], "mergingIntList": [3]}),
                json!({"mergingIntList": [1, 2, 3, 4]}),
            ),
            (
                "$setElementOrder with server-only items",
                json!({"mergingList": [{"name": "1", "other": "a"}, {"name": "3", "value": 3}, {"name": "4", "value": 4}, {"name": "2", "value": 2}, {"name": "9"}]}),
                json!({"$setElementOrder/mergingList": [{"name": "4"}, {"name": "2"}, {"name": "3"}, {"name": "1"}]}),
                json!({"mergingList": [{"name": "4", "value": 4}, {"name": "2", "value": 2}, {"name": "3", "value": 3}, {"name": "1", "other": "a"}, {"name": "9"}]}),
            ),
            (
                "$setElementOrder with server-only items in the middle",
                json!({"mergingList": [{"name": "1", "other": "a"}, {"name": "2", "value": 2}, {"name": "7"}, {"name": "9"}, {"name": "8"}, {"name": "3", "value": 3}, {"name": "4", "value": 4}]}),
                json!({"$setElementOrder/mergingList": [{"name": "2"}, {"name": "1"}, {"name": "4"}, {"name": "3"}]}),
                json!({"mergingList": [{"name": "2", "value": 2}, {"name": "1", "other": "a"}, {"name": "7"}, {"name": "9"}, {"name": "8"}, {"name": "4", "value": 4}, {"name": "3", "value": 3}]}),
            ),
            (
                "$setElementOrder with duplicate keys",
                json!({"mergingList": [{"name": "1"}, {"name": "2", "value": "dup1"}, {"name": "3"}, {"name": "2", "value": "dup2"}, {"name": "4"}]}),
                json!({"$setElementOrder/mergingList": [{"name": "2"}, {"name": "1"}, {"name": "4"}, {"name": "3"}, {"name": "2"}]}),
                json!({"mergingList": [{"name": "2", "value": "dup1"}, {"name": "2", "value": "dup2"}, {"name": "1"}, {"name": "4"}, {"name": "3"}]}),
            ),
            (
                "$setElementOrder with additions and changes",
                json!({"mergingList": [{"name": "1", "v": 1}, {"name": "2"}]}),
                json!({"$setElementOrder/mergingList": [{"name": "2"}, {"name": "3"}, {"name": "1"}],
                    "mergingList": [{"name": "3"}, {"name": "1", "v": 2}]}),
                json!({"mergingList": [{"name": "2"}, {"name": "3"}, {"name": "1", "v": 2}]}),
            ),
            (
                "new sub-objects are merged into nothing, so directives vanish",
                json!({}),
                json!({"m": {"$setElementOrder/mergingIntList": [1], "a": null, "b": {"$patch": "replace", "c": 1}},
                    "mergingList": [{"name": "x", "$patch": "delete"}, {"name": "y", "z": null}],
                    "l": [{"$retainKeys": [], "k": null}]}),
                json!({"m": {"b": {"c": 1}}, "mergingList": [{"name": "y"}], "l": [{}]}),
            ),
            (
                "null patch is identity",
                json!({"a": 1}),
                Value::Null,
                json!({"a": 1}),
            ),
        ];
        for (name, original, patch, want) in cases {
            assert_eq!(smp(original, patch, &meta), want, "{name}");
        }
    }

    #[test]
    fn errors() {
        use StrategicMergePatchError as E;
        let meta = test_meta();
        let cases = [
            (json!([]), json!({}), E::BadJsonDoc, ErrorClass::BadRequest),
            (json!({}), json!([1]), E::BadJsonDoc, ErrorClass::BadRequest),
            (
                json!({"m": {}}),
                json!({"m": {"$patch": "bogus"}}),
                E::BadPatchType {
                    directive: "bogus".into(),
                    map: r#"{"$patch":"bogus"}"#.into(),
                },
                ErrorClass::Internal,
            ),
            (
                json!({"mergingList": []}),
                json!({"mergingList": [{"$patch": "merge"}]}),
                E::MergingListsUnsupported,
                ErrorClass::Internal,
            ),
            (
                json!({"mergingList": [{"name": "a"}]}),
                json!({"mergingList": [{"v": 1}]}),
                E::NoMergeKey {
                    map: r#"{"v":1}"#.into(),
                    key: "name".into(),
                },
                ErrorClass::Internal,
            ),
            (
                json!({"mergingIntList": [1]}),
                json!({"mergingIntList": [[2]]}),
                E::NoListOfLists,
                ErrorClass::Unprocessable,
            ),
            (
                json!({"mergingIntList": [1]}),
                json!({"mergingIntList": ["a"]}),
                E::ElementTypesNotIdentical("[1] [\"a\"]".into()),
                ErrorClass::Internal,
            ),
            (
                json!({"s": {"a": 1}}),
                json!({"s": {"$retainKeys": ["a"], "b": 1}}),
                E::BadPatchFormatForRetainKeys,
                ErrorClass::BadRequest,
            ),
            (
                json!({"s": {"a": 1}}),
                json!({"s": {"$retainKeys": "a"}}),
                E::BadPatchFormatForRetainKeys,
                ErrorClass::BadRequest,
            ),
            (
                json!({}),
                json!({"$deleteFromPrimitiveListx": [1]}),
                E::BadPatchFormatForPrimitiveList,
                ErrorClass::BadRequest,
            ),
            (
                json!({"mergingIntList": [1]}),
                json!({"$deleteFromPrimitiveList/mergingIntList": 1}),
                E::BadPatchFormatForPrimitiveList,
                ErrorClass::BadRequest,
            ),
            (
                json!({}),
                json!({"$setElementOrderx": [1]}),
                E::BadPatchFormatForSetElementOrderList,
                ErrorClass::BadRequest,
            ),
            (
                json!({}),
                json!({"$setElementOrder/l": 1}),
                E::BadArgType {
                    expected: "[]interface {}",
                    actual: "int64",
                },
                ErrorClass::Internal,
            ),
            (
                json!({"l": [{"a": 1}]}),
                json!({"l": [{"a": 2}], "$dummy": 1, "x": 1, "mergingList": [{"name": "a"}], "$setElementOrder/mergingList": [{"name": "b"}]}),
                E::SetElementOrderMismatch {
                    patch: r#"[{"name":"a"}]"#.into(),
                    order: r#"[{"name":"b"}]"#.into(),
                },
                ErrorClass::Internal,
            ),
        ];
        for (original, patch, want, class) in cases {
            let err = apply_strategic_merge_patch(&original, &patch, &meta)
                .expect_err(&patch.to_string());
            assert_eq!(err, want, "{patch}");
            assert_eq!(err.class(), class, "{patch}");
        }
        assert_eq!(
            E::NoMergeKey {
                map: "{}".into(),
                key: "uid".into()
            }
            .to_string(),
            "map: {} does not contain declared merge key: uid"
        );
    }

    #[test]
    fn builtin_kinds() {
        let ns = builtin_patch_meta("", "Namespace");
        let original = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "x", "finalizers": ["a"], "labels": {"k": "v"},
                         "ownerReferences": [{"uid": "1", "name": "o1"}, {"uid": "2", "name": "o2"}]},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active", "conditions": [{"type": "A", "status": "True"}]}
        });
        let patch = json!({
            "metadata": {"finalizers": ["b"], "labels": {"k": null},
                         "ownerReferences": [{"uid": "2", "name": "renamed"}, {"uid": "1", "$patch": "delete"}]},
            "spec": {"finalizers": ["other"]},
            "status": {"conditions": [{"type": "B", "status": "False"}]}
        });
        let got = smp(original, patch, &ns);
        assert_eq!(got["metadata"]["finalizers"], json!(["b", "a"]));
        assert_eq!(got["metadata"]["labels"], json!({}));
        assert_eq!(
            got["metadata"]["ownerReferences"],
            json!([{"uid": "2", "name": "renamed"}])
        );
        assert_eq!(
            got["spec"]["finalizers"],
            json!(["other"]),
            "spec.finalizers has no strategy upstream"
        );
        assert_eq!(
            got["status"]["conditions"],
            json!([{"type": "B", "status": "False"}, {"type": "A", "status": "True"}])
        );

        // kubectl apply on a ValidatingWebhookConfiguration: changes one webhook, adds another.
        let hooks = builtin_patch_meta(
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
        );
        let original = json!({"webhooks": [
            {"name": "a.example.com", "sideEffects": "None", "matchConditions": [{"name": "m1", "expression": "true"}]},
            {"name": "b.example.com", "sideEffects": "None"}
        ]});
        let patch = json!({
            "$setElementOrder/webhooks": [{"name": "a.example.com"}, {"name": "c.example.com"}, {"name": "b.example.com"}],
            "webhooks": [
                {"name": "a.example.com", "matchConditions": [{"name": "m2", "expression": "false"}]},
                {"name": "c.example.com", "sideEffects": "None"}
            ]
        });
        let got = smp(original, patch, &hooks);
        let names: Vec<&str> = got["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a.example.com", "c.example.com", "b.example.com"]);
        assert_eq!(
            got["webhooks"][0]["matchConditions"],
            json!([{"name": "m2", "expression": "false"}, {"name": "m1", "expression": "true"}])
        );

        // Roles replace their rules.
        let role = builtin_patch_meta("rbac.authorization.k8s.io", "Role");
        let got = smp(
            json!({"rules": [{"verbs": ["get"]}]}),
            json!({"rules": [{"verbs": ["list"]}]}),
            &role,
        );
        assert_eq!(got["rules"], json!([{"verbs": ["list"]}]));

        // ServiceAccount secrets merge by name.
        let sa = builtin_patch_meta("", "ServiceAccount");
        let got = smp(
            json!({"secrets": [{"name": "a"}]}),
            json!({"secrets": [{"name": "b"}]}),
            &sa,
        );
        assert_eq!(got["secrets"], json!([{"name": "b"}, {"name": "a"}]));

        // Unknown kinds: lists replaced, maps merged.
        let plain = builtin_patch_meta("example.com", "Widget");
        let got = smp(
            json!({"metadata": {"finalizers": ["a"]}, "spec": {"x": 1}}),
            json!({"metadata": {"finalizers": ["b"]}, "spec": {"y": 2}}),
            &plain,
        );
        assert_eq!(
            got,
            json!({"metadata": {"finalizers": ["b"]}, "spec": {"x": 1, "y": 2}})
        );
    }

    #[test]
    fn kubectl_apply_configmap() {
        let cm = builtin_patch_meta("", "ConfigMap");
        let original = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "demo", "namespace": "default", "resourceVersion": "5",
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "data": {"a": "1", "b": "2"}});
        let patch = json!({"data": {"a": "10", "b": null, "c": "3"},
            "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{\"new\":1}"}}});
        let got = smp(original, patch, &cm);
        assert_eq!(got["data"], json!({"a": "10", "c": "3"}));
        assert_eq!(got["metadata"]["resourceVersion"], "5");
        assert_eq!(
            got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
            "{\"new\":1}"
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let key = prop::sample::select(vec![
            "metadata",
            "finalizers",
            "ownerReferences",
            "uid",
            "name",
            "spec",
            "a",
            "b",
            "$patch",
            "$retainKeys",
            "$setElementOrder/finalizers",
            "$deleteFromPrimitiveList/finalizers",
            "$setElementOrder/ownerReferences",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (0i64..4).prop_map(Value::from),
            prop::sample::select(vec!["delete", "replace", "merge", "a", "b", "uid"])
                .prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 5, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec((key.clone(), inner), 0..5).prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                )),
            ]
        })
    }

    /// Values without directives: what a plain `kubectl patch` sends.
    fn plain_value() -> impl Strategy<Value = Value> {
        let key = prop::sample::select(vec![
            "metadata",
            "finalizers",
            "ownerReferences",
            "uid",
            "spec",
            "a",
            "b",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            (0i64..3).prop_map(Value::from),
            prop::sample::select(vec!["x", "y", "z"]).prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 5, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec((key.clone(), inner), 0..5).prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
                )),
            ]
        })
    }

    fn object(v: Value) -> Value {
        if v.is_object() { v } else { json!({"a": v}) }
    }

    fn has_directive(v: &Value) -> bool {
        match v {
            Value::Object(m) => m
                .iter()
                .any(|(k, v)| k.starts_with('$') || has_directive(v)),
            Value::Array(l) => l.iter().any(has_directive),
            _ => false,
        }
    }

    fn namespace_like_meta() -> PatchMeta {
        PatchMeta::new([
            PatchMetaEntry {
                path: "metadata.finalizers",
                meta: FieldPatchMeta::merge_set(),
            },
            PatchMetaEntry {
                path: "metadata.ownerReferences",
                meta: FieldPatchMeta::merge_by("uid"),
            },
            PatchMetaEntry {
                path: "finalizers",
                meta: FieldPatchMeta::merge_set(),
            },
            PatchMetaEntry {
                path: "ownerReferences",
                meta: FieldPatchMeta::merge_by("uid"),
            },
        ])
    }

    proptest! {
        #[test]
        fn empty_patch_is_identity(original in json_value()) {
            let original = object(original);
            let meta = namespace_like_meta();
            prop_assert_eq!(apply_strategic_merge_patch(&original, &json!({}), &meta).unwrap(), original);
        }

        #[test]
        fn never_panics_and_never_stores_directives(original in plain_value(), patch in json_value()) {
            let original = object(original);
            let meta = namespace_like_meta();
            if let Ok(out) = apply_strategic_merge_patch(&original, &patch, &meta) {
                prop_assert!(!has_directive(&out), "{}", out);
            }
        }

        #[test]
        fn plain_patches_are_idempotent(original in plain_value(), patch in plain_value()) {
            let original = object(original);
            let patch = object(patch);
            let meta = namespace_like_meta();
            if let Ok(once) = apply_strategic_merge_patch(&original, &patch, &meta) {
                let twice = apply_strategic_merge_patch(&once, &patch, &meta).unwrap();
                prop_assert_eq!(twice, once);
            }
        }
    }
}
