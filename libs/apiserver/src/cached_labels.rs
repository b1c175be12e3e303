//! An object's labels as the watch cache keeps them beside its JSON, for label selectors that
//! match without a parse.
//!
//! Every version of an object, and often thousands of objects (the bindings of one export, the
//! pods of one ReplicaSet), carry the same labels: equal sets are stored once
//! ([`kcp_apimachinery::intern`]).

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

use kcp_apimachinery::intern::Interner;
use parking_lot::Mutex;

type Pairs = [(Box<str>, Box<str>)];

/// Labels in document order; no labels take no allocation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CachedLabels(Option<Arc<Pairs>>);

/// Several tables, by the labels' hash: objects are decoded on several threads at start-up.
const SHARDS: usize = 16;

static INTERNERS: LazyLock<[Mutex<Interner<Pairs>>; SHARDS]> =
    LazyLock::new(|| std::array::from_fn(|_| Mutex::default()));

impl CachedLabels {
    /// `pairs` as a shared set: the one already held for equal labels, if any.
    pub fn new(pairs: Vec<(String, String)>) -> CachedLabels {
        if pairs.is_empty() {
            return CachedLabels(None);
        }
        let pairs: Arc<Pairs> = pairs
            .into_iter()
            .map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str()))
            .collect();
        let mut hasher = std::hash::DefaultHasher::new();
        pairs.hash(&mut hasher);
        let shard = (hasher.finish() % SHARDS as u64) as usize;
        CachedLabels(Some(INTERNERS[shard].lock().intern(pairs)))
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        (self.0.iter())
            .flat_map(|p| p.iter())
            .map(|(k, v)| (&**k, &**v))
    }

    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> CachedLabels {
        CachedLabels::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn shared(a: &CachedLabels, b: &CachedLabels) -> bool {
        matches!((&a.0, &b.0), (Some(a), Some(b)) if Arc::ptr_eq(a, b))
    }

    #[test]
    fn equal_label_sets_are_stored_once_and_keep_their_order() {
        let a = labels(&[("z", "1"), ("a", "2")]);
        let b = labels(&[("z", "1"), ("a", "2")]);
        assert!(shared(&a, &b));
        assert_eq!(a.iter().collect::<Vec<_>>(), [("z", "1"), ("a", "2")]);
        assert_eq!(a.get("a"), Some("2"));
        assert_eq!(a.get("b"), None);
        assert!(!shared(&a, &labels(&[("a", "2"), ("z", "1")])));
        assert_eq!(labels(&[]), CachedLabels::default());
        assert_eq!(labels(&[]).iter().count(), 0);
    }
}
