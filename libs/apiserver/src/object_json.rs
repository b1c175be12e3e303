//! The JSON of a cached object, with its large repeated values shared between objects.
//!
//! kcp's logical clusters often hold the same objects: the same CRD (or APIResourceSchema, RBAC
//! role, ...) in thousands of workspaces. Their `spec`s are byte-identical; only metadata differs.
//! Objects written by the same client also repeat their managedFields' field sets (`fieldsV1`),
//! whatever their other content. So the cache keeps an object's JSON as its own bytes with those
//! values cut out, plus the values themselves (interned: one copy for every object that has
//! them) and where they go. Serving copies the pieces out, as it copied one buffer before.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::sync::{Arc, LazyLock, Weak};

use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::Value;

use crate::stored_json::Layout;

/// Top-level fields smaller than this are not worth a table entry (~100 bytes when nothing
/// shares it). At 512, the statuses controllers write alike are shared too: APIBindings of one
/// export bound in the same second have byte-identical statuses (~900 bytes).
const SHARE_FIELD_AT_LEAST: usize = 512;
/// `fieldsV1` of a managedFields entry: smaller, but repeated by every object one client writes.
const SHARE_FIELD_SET_AT_LEAST: usize = 128;

/// An object's JSON as served.
#[derive(Clone, Debug)]
pub struct ObjectJson {
    /// The object's own bytes, shared values cut out.
    own: Bytes,
    /// Shared values, each with the offset in `own` it is spliced in at, in offset order.
    shared: Box<[(usize, Arc<[u8]>)]>,
}

/// Builds an [`ObjectJson`]: compact JSON exactly as serde_json writes it, big values set apart.
struct Encoder {
    own: Vec<u8>,
    shared: Vec<(usize, Arc<[u8]>)>,
}

impl Encoder {
    fn plain<T: serde::Serialize + ?Sized>(&mut self, v: &T) -> serde_json::Result<()> {
        serde_json::to_writer(&mut self.own, v)
    }

    fn share(&mut self, v: &Value) -> serde_json::Result<()> {
        let bytes = exact(serde_json::to_vec(v)?);
        self.shared.push((self.own.len(), intern(bytes)));
        Ok(())
    }

    /// `{"k":v,...}` with `field` writing each value.
    fn object(
        &mut self,
        map: &serde_json::Map<String, Value>,
        mut field: impl FnMut(&mut Self, &str, &Value) -> serde_json::Result<()>,
    ) -> serde_json::Result<()> {
        self.own.push(b'{');
        for (i, (k, v)) in map.iter().enumerate() {
            if i > 0 {
                self.own.push(b',');
            }
            self.plain(k)?;
            self.own.push(b':');
            field(self, k, v)?;
        }
        self.own.push(b'}');
        Ok(())
    }

    fn top_level(&mut self, key: &str, v: &Value) -> serde_json::Result<()> {
        match v {
            Value::Object(meta) if key == "metadata" => self.object(meta, |e, k, v| match v {
                Value::Array(entries) if k == "managedFields" => e.managed_fields(entries),
                _ => e.plain(v),
            }),
            _ if encoded_len_at_least(v, SHARE_FIELD_AT_LEAST) => self.share(v),
            _ => self.plain(v),
        }
    }

    fn managed_fields(&mut self, entries: &[Value]) -> serde_json::Result<()> {
        self.own.push(b'[');
        for (i, entry) in entries.iter().enumerate() {
            if i > 0 {
                self.own.push(b',');
            }
            match entry {
                Value::Object(map) => self.object(map, |e, k, v| {
                    if k == "fieldsV1" && encoded_len_at_least(v, SHARE_FIELD_SET_AT_LEAST) {
                        e.share(v)
                    } else {
                        e.plain(v)
                    }
                })?,
                _ => self.plain(entry)?,
            }
        }
        self.own.push(b']');
        Ok(())
    }
}

/// Whether anything in `map` (an object's top level) would be shared.
fn has_shareable(map: &serde_json::Map<String, Value>) -> bool {
    map.iter().any(|(k, v)| {
        if k != "metadata" {
            return encoded_len_at_least(v, SHARE_FIELD_AT_LEAST);
        }
        v.get("managedFields")
            .and_then(Value::as_array)
            .is_some_and(|entries| {
                entries.iter().any(|e| {
                    e.get("fieldsV1")
                        .is_some_and(|f| encoded_len_at_least(f, SHARE_FIELD_SET_AT_LEAST))
                })
            })
    })
}

impl ObjectJson {
    /// Serializes `value` (compactly, exactly as `serde_json::to_vec` would), sharing its large
    /// top-level fields and large managedFields field sets.
    pub fn encode(value: &Value) -> serde_json::Result<ObjectJson> {
        let Some(map) = value.as_object().filter(|m| has_shareable(m)) else {
            let mut out = Vec::with_capacity(512);
            serde_json::to_writer(&mut out, value)?;
            return Ok(ObjectJson::from(exact(out)));
        };
        let mut encoder = Encoder {
            own: Vec::with_capacity(512),
            shared: Vec::new(),
        };
        encoder.object(map, Encoder::top_level)?;
        Ok(ObjectJson {
            own: Bytes::from(exact(encoder.own)),
            shared: encoder.shared.into_boxed_slice(),
        })
    }

    /// The served form of stored bytes whose [`Layout`] is known: `resourceVersion` set where
    /// setting it in the parsed object would put it (in place, or at the end of `metadata`), large
    /// values shared as [`ObjectJson::encode`] shares them. Byte-identical to encoding the parsed
    /// object.
    pub(crate) fn from_stored(
        stored: &[u8],
        layout: &Layout,
        resource_version: &str,
    ) -> ObjectJson {
        // Edits in document order: a span replaced by text, or cut out to be shared.
        let mut edits: Vec<(Range<usize>, Option<String>)> = layout
            .fields
            .iter()
            .filter(|r| r.len() >= SHARE_FIELD_AT_LEAST)
            .chain(
                layout
                    .field_sets
                    .iter()
                    .filter(|r| r.len() >= SHARE_FIELD_SET_AT_LEAST),
            )
            .map(|r| (r.clone(), None))
            .collect();
        let quoted = format!("\"{resource_version}\"");
        match (&layout.resource_version, layout.metadata_end) {
            (Some(span), _) => edits.push((span.clone(), Some(quoted))),
            (None, Some((end, has_fields))) => {
                let comma = if has_fields { "," } else { "" };
                edits.push((
                    end..end,
                    Some(format!("{comma}\"resourceVersion\":{quoted}")),
                ));
            }
            (None, None) => {}
        }
        // The version never lies inside a shared value, so spans do not overlap.
        edits.sort_by_key(|(r, _)| r.start);
        let mut own = Vec::with_capacity(stored.len() + 32);
        let mut shared = Vec::with_capacity(edits.len());
        let mut at = 0;
        for (span, text) in edits {
            own.extend_from_slice(&stored[at..span.start]);
            match text {
                Some(text) => own.extend_from_slice(text.as_bytes()),
                None => shared.push((own.len(), intern(stored[span.clone()].to_vec()))),
            }
            at = span.end;
        }
        own.extend_from_slice(&stored[at..]);
        ObjectJson {
            own: Bytes::from(exact(own)),
            shared: shared.into_boxed_slice(),
        }
    }

    pub fn len(&self) -> usize {
        self.own.len() + self.shared.iter().map(|(_, v)| v.len()).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the JSON to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let mut at = 0;
        for (offset, value) in self.shared.iter() {
            out.extend_from_slice(&self.own[at..*offset]);
            out.extend_from_slice(value);
            at = *offset;
        }
        out.extend_from_slice(&self.own[at..]);
    }

    /// The JSON in one buffer (no copy when nothing is shared).
    pub fn to_bytes(&self) -> Bytes {
        if self.shared.is_empty() {
            return self.own.clone();
        }
        let mut out = Vec::with_capacity(self.len());
        self.write_to(&mut out);
        Bytes::from(out)
    }

    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> serde_json::Result<T> {
        if self.shared.is_empty() {
            serde_json::from_slice(&self.own)
        } else {
            serde_json::from_slice(&self.to_bytes())
        }
    }

    /// Whether `needle` may occur in the JSON. A `false` is certain for bytes outside the values
    /// set apart (top-level fields of 1 KiB or more, managedFields' `fieldsV1`): the keys of
    /// `metadata`, for one. Tells most objects from the rest before parsing them.
    pub fn may_contain(&self, needle: &[u8]) -> bool {
        memchr::memmem::find(&self.own, needle).is_some()
    }

    /// Whether some values are kept apart, in the table of shared values.
    pub fn is_split(&self) -> bool {
        !self.shared.is_empty()
    }

    /// Whether both hold one same shared value (one copy in memory).
    pub fn shares_with(&self, other: &ObjectJson) -> bool {
        self.shared
            .iter()
            .any(|(_, a)| other.shared.iter().any(|(_, b)| Arc::ptr_eq(a, b)))
    }
}

impl From<Vec<u8>> for ObjectJson {
    fn from(bytes: Vec<u8>) -> Self {
        ObjectJson::from(Bytes::from(bytes))
    }
}

impl From<Bytes> for ObjectJson {
    fn from(own: Bytes) -> Self {
        ObjectJson {
            own,
            shared: Box::default(),
        }
    }
}

impl PartialEq<[u8]> for ObjectJson {
    fn eq(&self, other: &[u8]) -> bool {
        self.len() == other.len() && *self.to_bytes() == *other
    }
}

/// `bytes` in an allocation of its size: the cache keeps it for the object's lifetime, and growth
/// by doubling would leave up to half of it unused.
fn exact(mut bytes: Vec<u8>) -> Vec<u8> {
    bytes.shrink_to_fit();
    bytes
}

/// Whether `v` serializes to at least `n` bytes, without serializing it: scalar sizes are
/// estimated from below, so only large strings and containers count.
fn encoded_len_at_least(v: &Value, n: usize) -> bool {
    fn size(v: &Value, budget: usize) -> usize {
        match v {
            Value::String(s) => s.len() + 2,
            Value::Array(items) => {
                let mut total = 2;
                for item in items {
                    total += size(item, budget) + 1;
                    if total >= budget {
                        break;
                    }
                }
                total
            }
            Value::Object(map) => {
                let mut total = 2;
                for (k, item) in map {
                    total += k.len() + 4 + size(item, budget);
                    if total >= budget {
                        break;
                    }
                }
                total
            }
            _ => 1,
        }
    }
    size(v, n) >= n
}

/// The table of shared values, keyed by content hash; entries die with their last object.
struct Interner {
    table: HashMap<u64, Vec<Weak<[u8]>>>,
    /// Entries at the last sweep of dead ones; the next sweep comes when the table doubles.
    swept_at: usize,
}

static INTERNER: LazyLock<Mutex<Interner>> = LazyLock::new(|| {
    Mutex::new(Interner {
        table: HashMap::new(),
        swept_at: 1024,
    })
});

fn intern(bytes: Vec<u8>) -> Arc<[u8]> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    let hash = hasher.finish();
    let mut interner = INTERNER.lock();
    if let Some(found) = interner.table.get(&hash).and_then(|candidates| {
        candidates
            .iter()
            .filter_map(Weak::upgrade)
            .find(|c| **c == *bytes)
    }) {
        return found;
    }
    let shared: Arc<[u8]> = Arc::from(bytes);
    let candidates = interner.table.entry(hash).or_default();
    candidates.retain(|c| c.strong_count() > 0);
    candidates.push(Arc::downgrade(&shared));
    if interner.table.len() > interner.swept_at * 2 {
        interner.table.retain(|_, candidates| {
            candidates.retain(|c| c.strong_count() > 0);
            !candidates.is_empty()
        });
        interner.swept_at = interner.table.len().max(1024);
    }
    shared
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use serde_json::json;

    fn big_spec() -> Value {
        json!({"schema": "x".repeat(2000), "names": {"plural": "widgets"}})
    }

    /// A field set of managedFields as large as a real object's.
    fn big_field_set(prefix: &str) -> Value {
        let fields: serde_json::Map<String, Value> = (0..20)
            .map(|i| (format!("f:{prefix}{i}"), json!({})))
            .collect();
        json!({"f:spec": fields})
    }

    #[test]
    fn field_sets_are_shared_between_objects() {
        let entry = |time: &str| json!([{"manager": "kubectl", "fieldsType": "FieldsV1", "fieldsV1": big_field_set("x"), "time": time}]);
        let a = json!({"metadata": {"name": "a", "managedFields": entry("1")}, "spec": {"a": 1}});
        let b = json!({"metadata": {"name": "b", "managedFields": entry("2")}, "spec": {"a": 2}});
        let (a, b) = (
            ObjectJson::encode(&a).unwrap(),
            ObjectJson::encode(&b).unwrap(),
        );
        assert!(a.shares_with(&b));
        // A small field set stays inline.
        let small = json!({"metadata": {"managedFields": [{"fieldsV1": {"f:a": {}}}]}});
        assert!(!ObjectJson::encode(&small).unwrap().is_split());
    }

    #[test]
    fn metadata_keys_are_found_in_split_objects() {
        let entry = json!({"manager": "m", "fieldsType": "FieldsV1", "fieldsV1": big_field_set("x"), "time": "t"});
        let deleting = json!({"metadata": {"name": "a", "uid": "u-1", "managedFields": [entry],
                              "deletionTimestamp": "t"}, "spec": big_spec()});
        let split = ObjectJson::encode(&deleting).unwrap();
        assert!(split.is_split());
        for needle in [&b"\"deletionTimestamp\""[..], b"u-1", b"\"name\":\"a\""] {
            assert!(
                split.may_contain(needle),
                "{}",
                String::from_utf8_lossy(needle)
            );
        }
        let live = json!({"metadata": {"name": "a"}, "data": {"k": "v"}});
        assert!(
            !ObjectJson::encode(&live)
                .unwrap()
                .may_contain(b"\"deletionTimestamp\"")
        );
    }

    #[test]
    fn encodes_exactly_as_serde_json() {
        for value in [
            json!({"metadata": {"name": "a"}, "data": {"k": "v"}}),
            json!({"apiVersion": "v1", "metadata": {"name": "a", "uid": "1"}, "spec": big_spec(), "status": {"x": 1}}),
            json!({"spec": big_spec()}),
            json!({"metadata": {"name": "a", "managedFields": [
                {"manager": "m", "fieldsType": "FieldsV1", "fieldsV1": big_field_set("f"), "time": "t"},
                {"manager": "n", "fieldsV1": {"f:a": {}}},
                "not an entry",
            ]}, "spec": big_spec(), "status": {"s": "\u{2603}\"q"}}),
            json!({"metadata": {"managedFields": "not a list"}}),
            json!([1, 2, 3]),
            json!({}),
        ] {
            let encoded = ObjectJson::encode(&value).unwrap();
            let plain = serde_json::to_vec(&value).unwrap();
            assert_eq!(&*encoded.to_bytes(), plain.as_slice());
            assert_eq!(encoded.len(), plain.len());
            let mut out = b"[".to_vec();
            encoded.write_to(&mut out);
            assert_eq!(&out[1..], plain.as_slice());
            assert_eq!(encoded.parse::<Value>().unwrap(), value);
        }
    }

    #[test]
    fn stored_bytes_spliced_exactly_as_encoded() {
        let entry = |m: &str| json!({"manager": m, "fieldsType": "FieldsV1", "fieldsV1": big_field_set(m), "time": "t"});
        for value in [
            json!({"metadata": {"name": "a"}, "data": {"k": "v"}}),
            json!({"metadata": {}, "data": {"k": "v"}}),
            json!({"metadata": {"name": "a", "resourceVersion": "7", "uid": "u"}, "spec": big_spec()}),
            json!({"kind": "NoMetadata", "spec": big_spec()}),
            json!({"spec": big_spec(), "metadata": {"name": "a", "labels": {"b": "1", "a": "\u{2603}"}}, "status": big_spec()}),
            json!({"apiVersion": "v1", "metadata": {"name": "a", "managedFields": [
                entry("m"), {"manager": "n", "fieldsV1": {"f:a": {}}}, "not an entry", entry("o"),
            ], "uid": "u"}, "spec": big_spec(), "status": {"s": "\u{2603}\"q"}}),
        ] {
            let stored = serde_json::to_vec(&value).unwrap();
            let layout = crate::stored_json::scan(&stored).unwrap();
            let spliced = ObjectJson::from_stored(&stored, &layout, "42");
            let mut decorated = value.clone();
            if let Some(meta) = decorated.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("resourceVersion".into(), json!("42"));
            }
            let encoded = ObjectJson::encode(&decorated).unwrap();
            assert_eq!(spliced.to_bytes(), encoded.to_bytes(), "{value}");
            assert_eq!(spliced.shared.len(), encoded.shared.len(), "{value}");
            assert!(
                spliced
                    .shared
                    .iter()
                    .all(|(_, a)| encoded.shared.iter().any(|(_, b)| Arc::ptr_eq(a, b)))
            );
        }
    }

    #[test]
    fn equal_statuses_of_a_bindings_size_are_shared_small_ones_stay_inline() {
        // An APIBinding's status once Bound: ~900 bytes, equal for bindings bound together.
        let condition = |t: &str| json!({"lastTransitionTime": "2026-12-07T13:56:52Z", "status": "True", "type": t});
        let conditions = [
            "Ready",
            "APIExportValid",
            "BindingUpToDate",
            "InitialBindingCompleted",
            "PermissionClaimsApplied",
            "PermissionClaimsValid",
        ]
        .map(condition);
        let status = json!({
            "apiExportClusterName": "mxdc3iryd2dqpqq3",
            "conditions": conditions,
            "phase": "Bound",
        });
        assert!((512..1024).contains(&serde_json::to_vec(&status).unwrap().len()));
        let binding = |name: &str| {
            let stored =
                serde_json::to_vec(&json!({"metadata": {"name": name}, "status": status})).unwrap();
            let layout = crate::stored_json::scan(&stored).unwrap();
            ObjectJson::from_stored(&stored, &layout, "1")
        };
        assert!(binding("a").shares_with(&binding("b")));
        let small = json!({"metadata": {"name": "a"}, "status": {"phase": "Bound"}});
        assert!(!ObjectJson::encode(&small).unwrap().is_split());
    }

    #[test]
    fn identical_large_fields_are_stored_once() {
        let a = json!({"metadata": {"name": "a"}, "spec": big_spec()});
        let b = json!({"metadata": {"name": "b"}, "spec": big_spec()});
        let (a, b) = (
            ObjectJson::encode(&a).unwrap(),
            ObjectJson::encode(&b).unwrap(),
        );
        assert!(a.is_split() && b.is_split());
        assert!(a.shares_with(&b));
        // Small objects stay whole.
        let small = ObjectJson::encode(&json!({"metadata": {}, "spec": {"a": 1}})).unwrap();
        assert!(!small.is_split());
    }

    #[test]
    fn shared_values_die_with_their_objects() {
        let spec = json!({"unique": "y".repeat(3000)});
        let obj = ObjectJson::encode(&json!({"spec": spec})).unwrap();
        let [(_, middle)] = &*obj.shared else {
            unreachable!()
        };
        let weak = Arc::downgrade(middle);
        drop(obj);
        assert!(weak.upgrade().is_none());
    }
}
