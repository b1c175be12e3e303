//! A resource's cached objects in key order, keyed by the key each object already carries: a map
//! from a key string would hold every key twice, ~70 bytes per object of a shard that caches
//! millions.

use std::borrow::Borrow;
use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::Arc;

use crate::watch_cache::CachedObject;

/// An object ordered, compared and looked up by its key alone.
#[derive(Clone)]
struct ByKey(Arc<CachedObject>);

impl Borrow<str> for ByKey {
    fn borrow(&self) -> &str {
        &self.0.key
    }
}

impl PartialEq for ByKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key
    }
}

impl Eq for ByKey {}

impl PartialOrd for ByKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.key.cmp(&other.0.key)
    }
}

#[derive(Default)]
pub(crate) struct ObjectMap(BTreeSet<ByKey>);

impl ObjectMap {
    pub(crate) fn get(&self, key: &str) -> Option<&Arc<CachedObject>> {
        self.0.get(key).map(|o| &o.0)
    }

    /// Puts `obj` in place of the object of its key, if any.
    pub(crate) fn insert(&mut self, obj: Arc<CachedObject>) {
        self.0.replace(ByKey(obj));
    }

    pub(crate) fn remove(&mut self, key: &str) {
        self.0.remove(key);
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &Arc<CachedObject>> {
        self.0.iter().map(|o| &o.0)
    }

    /// The objects whose keys start with `prefix`, from `lower` on, in key order.
    pub(crate) fn under<'a>(
        &'a self,
        prefix: &'a str,
        lower: Bound<&'a str>,
    ) -> impl Iterator<Item = &'a Arc<CachedObject>> {
        self.0
            .range::<str, _>((lower, Bound::Unbounded))
            .take_while(move |o| o.0.key.starts_with(prefix))
            .map(|o| &o.0)
    }
}

/// Built at once from objects in any order; of equal keys the last wins, as with inserts.
impl FromIterator<Arc<CachedObject>> for ObjectMap {
    fn from_iter<I: IntoIterator<Item = Arc<CachedObject>>>(iter: I) -> Self {
        let mut objects: Vec<ByKey> = iter.into_iter().map(ByKey).collect();
        // Stable, so equal keys keep their order; the dedup keeps the last of each run.
        objects.sort();
        let mut deduped: Vec<ByKey> = Vec::with_capacity(objects.len());
        for o in objects {
            match deduped.last_mut() {
                Some(last) if *last == o => *last = o,
                _ => deduped.push(o),
            }
        }
        ObjectMap(deduped.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(key: &str, revision: i64) -> Arc<CachedObject> {
        let mut o = CachedObject::logical_cluster("c", serde_json::json!({}));
        o.key = key.to_string();
        o.revision = revision;
        Arc::new(o)
    }

    fn keys<'a>(it: impl Iterator<Item = &'a Arc<CachedObject>>) -> Vec<(String, i64)> {
        it.map(|o| (o.key.clone(), o.revision)).collect()
    }

    #[test]
    fn keeps_one_object_per_key_in_key_order() {
        let mut map: ObjectMap = [obj("/r/c/b", 1), obj("/r/c/a", 2), obj("/r/c/b", 3)]
            .into_iter()
            .collect();
        assert_eq!(
            keys(map.values()),
            [("/r/c/a".into(), 2), ("/r/c/b".into(), 3)]
        );
        map.insert(obj("/r/c/a", 4));
        map.insert(obj("/r/d/a", 5));
        assert_eq!(map.get("/r/c/a").map(|o| o.revision), Some(4));
        assert_eq!(map.len(), 3);
        assert_eq!(
            keys(map.under("/r/c/", Bound::Included("/r/c/"))),
            [("/r/c/a".into(), 4), ("/r/c/b".into(), 3)]
        );
        assert_eq!(
            keys(map.under("/r/c/", Bound::Excluded("/r/c/a"))),
            [("/r/c/b".into(), 3)]
        );
        map.remove("/r/c/a");
        assert!(map.get("/r/c/a").is_none());
        assert_eq!(map.len(), 2);
    }
}
