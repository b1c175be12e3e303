//! The JSON of a cached object, with its largest field shared between identical objects.
//!
//! kcp's logical clusters often hold the same objects: the same CRD (or APIResourceSchema, RBAC
//! role, ...) in thousands of workspaces. Their `spec`s are byte-identical; only metadata differs.
//! So the cache keeps an object's JSON as up to three pieces: the bytes before its largest
//! top-level field's value, that value (interned: one copy for every object that has it), and the
//! bytes after. Serving copies the pieces out, as it copied the single buffer before.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Weak};

use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::Value;

/// Values smaller than this are not worth a table entry.
const SHARE_AT_LEAST: usize = 1024;

/// An object's JSON as served.
#[derive(Clone, Debug)]
pub struct ObjectJson {
    head: Bytes,
    shared: Option<(Arc<[u8]>, Bytes)>,
}

impl ObjectJson {
    /// Serializes `value` (compactly, exactly as `serde_json::to_vec` would), sharing its largest
    /// top-level field when that is big.
    pub fn encode(value: &Value) -> serde_json::Result<ObjectJson> {
        let Some(map) = value.as_object() else {
            return Ok(ObjectJson::from(exact(serde_json::to_vec(value)?)));
        };
        let largest = map
            .iter()
            .filter(|(k, _)| k.as_str() != "metadata")
            .map(|(k, v)| (k, encoded_len_at_least(v, SHARE_AT_LEAST)))
            .filter(|(_, big)| *big)
            .map(|(k, _)| k)
            .next();
        let Some(shared_key) = largest else {
            let mut out = Vec::with_capacity(512);
            serde_json::to_writer(&mut out, value)?;
            return Ok(ObjectJson::from(exact(out)));
        };
        let mut head = Vec::with_capacity(512);
        let mut tail = Vec::new();
        let mut middle = None;
        head.push(b'{');
        for (i, (k, v)) in map.iter().enumerate() {
            let out = if middle.is_some() {
                &mut tail
            } else {
                &mut head
            };
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut *out, k)?;
            out.push(b':');
            if k == shared_key {
                middle = Some(intern(serde_json::to_vec(v)?));
            } else {
                serde_json::to_writer(&mut *out, v)?;
            }
        }
        tail.push(b'}');
        Ok(ObjectJson {
            head: Bytes::from(exact(head)),
            shared: middle.map(|m| (m, Bytes::from(exact(tail)))),
        })
    }

    pub fn len(&self) -> usize {
        self.head.len()
            + self
                .shared
                .as_ref()
                .map_or(0, |(middle, tail)| middle.len() + tail.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends the JSON to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.head);
        if let Some((middle, tail)) = &self.shared {
            out.extend_from_slice(middle);
            out.extend_from_slice(tail);
        }
    }

    /// The JSON in one buffer (no copy when it is not split).
    pub fn to_bytes(&self) -> Bytes {
        if self.shared.is_none() {
            return self.head.clone();
        }
        let mut out = Vec::with_capacity(self.len());
        self.write_to(&mut out);
        Bytes::from(out)
    }

    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> serde_json::Result<T> {
        match &self.shared {
            None => serde_json::from_slice(&self.head),
            Some(_) => serde_json::from_slice(&self.to_bytes()),
        }
    }

    /// Whether the largest field is kept apart, in the table of shared values.
    pub fn is_split(&self) -> bool {
        self.shared.is_some()
    }

    /// Whether both hold the same shared value (one copy in memory).
    pub fn shares_with(&self, other: &ObjectJson) -> bool {
        match (&self.shared, &other.shared) {
            (Some((a, _)), Some((b, _))) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl From<Vec<u8>> for ObjectJson {
    fn from(bytes: Vec<u8>) -> Self {
        ObjectJson::from(Bytes::from(bytes))
    }
}

impl From<Bytes> for ObjectJson {
    fn from(head: Bytes) -> Self {
        ObjectJson { head, shared: None }
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

    #[test]
    fn encodes_exactly_as_serde_json() {
        for value in [
            json!({"metadata": {"name": "a"}, "data": {"k": "v"}}),
            json!({"apiVersion": "v1", "metadata": {"name": "a", "uid": "1"}, "spec": big_spec(), "status": {"x": 1}}),
            json!({"spec": big_spec()}),
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
    fn identical_large_fields_are_stored_once() {
        let a = json!({"metadata": {"name": "a"}, "spec": big_spec()});
        let b = json!({"metadata": {"name": "b"}, "spec": big_spec()});
        let (a, b) = (
            ObjectJson::encode(&a).unwrap(),
            ObjectJson::encode(&b).unwrap(),
        );
        assert!(a.is_split() && b.is_split());
        let (Some((ma, _)), Some((mb, _))) = (&a.shared, &b.shared) else {
            unreachable!()
        };
        assert!(Arc::ptr_eq(ma, mb));
        // Small objects stay whole.
        let small = ObjectJson::encode(&json!({"metadata": {}, "spec": {"a": 1}})).unwrap();
        assert!(!small.is_split());
    }

    #[test]
    fn shared_values_die_with_their_objects() {
        let spec = json!({"unique": "y".repeat(3000)});
        let obj = ObjectJson::encode(&json!({"spec": spec})).unwrap();
        let Some((middle, _)) = &obj.shared else {
            unreachable!()
        };
        let weak = Arc::downgrade(middle);
        drop(obj);
        assert!(weak.upgrade().is_none());
    }
}
