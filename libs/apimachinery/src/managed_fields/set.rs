//! Sets of field paths (structured-merge-diff's `fieldpath.Set`) and their `fieldsV1` form.
//!
//! A set is a tree: at each level, `members` are the paths that end there and `children` hold
//! the paths that continue. A path can be both a member and have children (a list item that is
//! owned as a whole and whose fields are owned too); `fieldsV1` marks that with a `"."` key.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::json::write_json_string;
use super::path::{Path, PathElement, PathElementError, display_path};

/// A set of paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    // Invariant: no child set is empty, so equality and emptiness are structural.
    children: BTreeMap<PathElement, FieldSet>,
}

/// Why a `fieldsV1` value is not a set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldsV1Error {
    #[error("fieldsV1 must be a JSON object")]
    NotAnObject,
    #[error("invalid fieldsV1 JSON: {0}")]
    Json(String),
    #[error("parsing key as path element: {0}")]
    PathElement(#[from] PathElementError),
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set holding the given paths.
    pub fn from_paths<I: IntoIterator<Item = Path>>(paths: I) -> Self {
        let mut set = Self::new();
        for p in paths {
            set.insert(&p);
        }
        set
    }

    /// True when the set holds no path.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Adds a path. The empty path (the whole object) is never tracked.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// True when the set holds exactly this path.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// True when `pe` is a member at this level.
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    /// The paths under `pe`, with `pe` taken off.
    pub fn child(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children.get(pe)
    }

    /// The members at this level, in order.
    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    /// The children at this level, in order.
    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &FieldSet)> {
        self.children.iter()
    }

    /// Number of paths in the set.
    pub fn len(&self) -> usize {
        self.members.len() + self.children.values().map(FieldSet::len).sum::<usize>()
    }

    /// All paths, members of a level before the paths below it (structured-merge-diff's order,
    /// which is also the order of conflicts in a Kubernetes error).
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(p);
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                let both = child.intersection(theirs);
                if !both.is_empty() {
                    children.insert(pe.clone(), both);
                }
            }
        }
        FieldSet { members, children }
    }

    /// Paths of `self` that are not paths of `other` (exact paths only: removing `a` keeps
    /// `a.b`).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        self.minus(other, false)
    }

    /// [`FieldSet::difference`] in place: no copy of the parts `other` does not touch.
    pub fn remove_all(&mut self, other: &FieldSet) {
        for pe in &other.members {
            self.members.remove(pe);
        }
        for (pe, theirs) in &other.children {
            if let Some(mine) = self.children.get_mut(pe) {
                mine.remove_all(theirs);
                if mine.is_empty() {
                    self.children.remove(pe);
                }
            }
        }
    }

    /// Like [`FieldSet::difference`], but a path of `other` also removes everything below it.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        self.minus(other, true)
    }

    fn minus(&self, other: &FieldSet, recursive: bool) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if recursive && other.members.contains(pe) {
                continue;
            }
            let rest = match other.children.get(pe) {
                Some(theirs) => child.minus(theirs, recursive),
                None => child.clone(),
            };
            if !rest.is_empty() {
                children.insert(pe.clone(), rest);
            }
        }
        FieldSet { members, children }
    }

    pub(crate) fn add_member(&mut self, pe: PathElement) {
        self.members.insert(pe);
    }

    pub(crate) fn set_child(&mut self, pe: PathElement, child: FieldSet) {
        if child.is_empty() {
            self.children.remove(&pe);
        } else {
            self.children.insert(pe, child);
        }
    }

    /// Parses a `fieldsV1` object.
    pub fn from_fields_v1(value: &Value) -> Result<FieldSet, FieldsV1Error> {
        match value {
            Value::Object(map) => Ok(Self::read_level(map)?.0),
            _ => Err(FieldsV1Error::NotAnObject),
        }
    }

    /// Parses `fieldsV1` text (the raw bytes of the protobuf form, or of the JSON field).
    pub fn from_fields_v1_str(text: &str) -> Result<FieldSet, FieldsV1Error> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| FieldsV1Error::Json(e.to_string()))?;
        Self::from_fields_v1(&value)
    }

    /// Reads one level; returns the set below it and whether the level itself is a member.
    fn read_level(map: &Map<String, Value>) -> Result<(FieldSet, bool), FieldsV1Error> {
        let mut set = FieldSet::new();
        let mut is_member = false;
        for (key, value) in map {
            if key == "." {
                is_member = true;
                continue;
            }
            let pe = match PathElement::parse(key) {
                Ok(pe) => pe,
                // Newer writers may add element kinds; structured-merge-diff skips them.
                Err(PathElementError::UnknownType(_)) => continue,
                Err(e) => return Err(e.into()),
            };
            let Value::Object(inner) = value else {
                return Err(FieldsV1Error::NotAnObject);
            };
            let (grandchildren, child_is_member) = Self::read_level(inner)?;
            if child_is_member {
                set.members.insert(pe.clone());
            }
            if !grandchildren.is_empty() {
                let merged = match set.children.remove(&pe) {
                    Some(existing) => existing.union(&grandchildren),
                    None => grandchildren,
                };
                set.children.insert(pe, merged);
            }
        }
        // A key with nothing below it (`{}`) is a member.
        if set.is_empty() {
            is_member = true;
        }
        Ok((set, is_member))
    }

    /// The `fieldsV1` text, byte for byte as kube-apiserver writes it.
    pub fn to_fields_v1_string(&self) -> String {
        let mut out = String::from("{");
        self.write_level(&mut out, false);
        out.push('}');
        out
    }

    /// The `fieldsV1` object, keys in the order kube-apiserver writes them.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.level_value(false))
    }

    /// Visits members and children merged in element order; an element that is both is
    /// written once, with `"."` first inside it.
    fn level_entries(&self) -> Vec<(&PathElement, bool, Option<&FieldSet>)> {
        let mut entries: BTreeMap<&PathElement, (bool, Option<&FieldSet>)> = BTreeMap::new();
        for m in &self.members {
            entries.entry(m).or_default().0 = true;
        }
        for (pe, child) in &self.children {
            entries.entry(pe).or_default().1 = Some(child);
        }
        entries
            .into_iter()
            .map(|(pe, (member, child))| (pe, member, child))
            .collect()
    }

    fn write_level(&self, out: &mut String, include_self: bool) {
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !first {
                out.push(',');
            }
            first = false;
        };
        if include_self && !self.is_empty() {
            sep(out);
            out.push_str("\".\":{}");
        }
        for (pe, member, child) in self.level_entries() {
            sep(out);
            write_json_string(out, &pe.encode());
            out.push_str(":{");
            if let Some(child) = child {
                child.write_level(out, member);
            }
            out.push('}');
        }
    }

    fn level_value(&self, include_self: bool) -> Map<String, Value> {
        let mut map = Map::new();
        if include_self && !self.is_empty() {
            map.insert(".".to_string(), Value::Object(Map::new()));
        }
        for (pe, member, child) in self.level_entries() {
            let inner = child.map(|c| c.level_value(member)).unwrap_or_default();
            map.insert(pe.encode(), Value::Object(inner));
        }
        map
    }
}

impl std::fmt::Display for FieldSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let paths: Vec<String> = self.paths().iter().map(|p| display_path(p)).collect();
        write!(f, "{}", paths.join("\n"))
    }
}

/// Builds a path from field names, e.g. `field_path(&["metadata", "labels"])`.
pub fn field_path(names: &[&str]) -> Path {
    names
        .iter()
        .map(|n| PathElement::Field((*n).to_string()))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    #[test]
    fn real_deployment_fields_round_trip_byte_for_byte() {
        // As written by kube-apiserver for `kubectl create deployment nginx --image=nginx`.
        let text = r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}}"#;
        let set = FieldSet::from_fields_v1_str(text).unwrap();
        assert_eq!(set.to_fields_v1_string(), text);
        assert_eq!(serde_json::to_string(&set.to_fields_v1()).unwrap(), text);
        assert!(set.has(&[f("metadata"), f("labels")]));
        assert!(set.has(&[f("metadata"), f("labels"), f("app")]));
        assert!(!set.has(&[f("metadata")]));
        let nginx = PathElement::key(vec![("name".into(), json!("nginx"))]);
        assert!(set.has(&[f("spec"), f("template"), f("spec"), f("containers"), nginx]));
    }

    #[test]
    fn real_status_and_ports_fields_round_trip() {
        // A Service's ports (map-list keyed by port and protocol) and a finalizer set.
        let text = r#"{"f:metadata":{"f:finalizers":{".":{},"v:\"example.com/cleanup\"":{}}},"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:protocol":{},"f:targetPort":{}}},"f:type":{}}}"#;
        let set = FieldSet::from_fields_v1_str(text).unwrap();
        assert_eq!(set.to_fields_v1_string(), text);
        // A ConfigMap written by client-side apply.
        let cm = r#"{"f:data":{".":{},"f:key":{}},"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}}}"#;
        assert_eq!(
            FieldSet::from_fields_v1_str(cm)
                .unwrap()
                .to_fields_v1_string(),
            cm
        );
    }

    #[test]
    fn fields_are_written_in_element_order_not_input_order() {
        let set = FieldSet::from_fields_v1_str(
            r#"{"i:1":{},"v:2":{},"k:{\"a\":1}":{},"f:z":{},"f:a":{".":{},"f:b":{}}}"#,
        )
        .unwrap();
        assert_eq!(
            set.to_fields_v1_string(),
            r#"{"f:a":{".":{},"f:b":{}},"f:z":{},"k:{\"a\":1}":{},"v:2":{},"i:1":{}}"#
        );
    }

    #[test]
    fn unknown_kinds_are_skipped_and_bad_keys_rejected() {
        let set = FieldSet::from_fields_v1_str(r#"{"x:future":{},"f:a":{}}"#).unwrap();
        assert_eq!(set.to_fields_v1_string(), r#"{"f:a":{}}"#);
        assert!(FieldSet::from_fields_v1_str(r#"{"k:nope":{}}"#).is_err());
        assert!(FieldSet::from_fields_v1_str(r#"{"f:a":1}"#).is_err());
        assert!(FieldSet::from_fields_v1_str("[]").is_err());
        assert!(FieldSet::from_fields_v1_str("{").is_err());
    }

    #[test]
    fn html_characters_are_escaped_in_keys() {
        let mut set = FieldSet::new();
        set.insert(&[f("data"), f("a<b")]);
        set.insert(&[f("items"), PathElement::Value(json!("x&y"))]);
        let text = set.to_fields_v1_string();
        assert_eq!(
            text,
            r#"{"f:data":{"f:a\u003cb":{}},"f:items":{"v:\"x\\u0026y\"":{}}}"#
        );
        assert_eq!(FieldSet::from_fields_v1_str(&text).unwrap(), set);
    }

    #[test]
    fn set_operations() {
        let a = FieldSet::from_paths([vec![f("a")], vec![f("a"), f("b")], vec![f("c"), f("d")]]);
        let b = FieldSet::from_paths([vec![f("a")], vec![f("c"), f("e")]]);
        assert_eq!(
            a.difference(&b),
            FieldSet::from_paths([vec![f("a"), f("b")], vec![f("c"), f("d")]])
        );
        assert_eq!(
            a.recursive_difference(&b),
            FieldSet::from_paths([vec![f("c"), f("d")]])
        );
        assert_eq!(a.intersection(&b), FieldSet::from_paths([vec![f("a")]]));
        assert_eq!(a.union(&b).len(), 4);
        assert!(a.difference(&a).is_empty());
        assert_eq!(
            a.paths(),
            vec![vec![f("a")], vec![f("a"), f("b")], vec![f("c"), f("d")]]
        );
    }

    fn arb_element() -> impl Strategy<Value = PathElement> {
        prop_oneof![
            "[a-zA-Z0-9./<&-]{1,8}".prop_map(PathElement::Field),
            ("[a-y]{1,3}", "[a-z0-9\"]{0,4}", 0i64..100).prop_map(|(k, v, n)| {
                PathElement::key(vec![(k, json!(v)), ("zz".into(), json!(n))])
            }),
            "[a-z\\\\ ]{0,5}".prop_map(|s| PathElement::Value(json!(s))),
            (-5i64..5).prop_map(|n| PathElement::Value(json!(n))),
            (0usize..4).prop_map(PathElement::Index),
        ]
    }

    proptest! {
        #[test]
        fn fields_v1_round_trips(paths in prop::collection::vec(prop::collection::vec(arb_element(), 1..4), 0..12)) {
            let set = FieldSet::from_paths(paths.clone());
            let text = set.to_fields_v1_string();
            let back = FieldSet::from_fields_v1_str(&text).unwrap();
            prop_assert_eq!(&back, &set);
            prop_assert_eq!(back.to_fields_v1_string(), text.clone());
            prop_assert_eq!(FieldSet::from_fields_v1(&set.to_fields_v1()).unwrap(), set.clone());
            for p in &paths {
                prop_assert!(back.has(p));
            }
        }

        #[test]
        fn remove_all_is_difference(
            a in prop::collection::vec(prop::collection::vec(arb_element(), 1..4), 0..12),
            b in prop::collection::vec(prop::collection::vec(arb_element(), 1..4), 0..12),
        ) {
            let (a, b) = (FieldSet::from_paths(a), FieldSet::from_paths(b));
            let mut in_place = a.clone();
            in_place.remove_all(&b);
            prop_assert_eq!(in_place, a.difference(&b));
        }
    }
}
