//! Workspace paths (`root:org:team`) to logical-cluster names, for the LCs of this shard.
//!
//! Every LogicalCluster created for a workspace carries its canonical path in the `kcp.io/path`
//! annotation; the index follows those annotations inside the watch cache's event loop
//! ([`CacheObserver`]), so a path resolves as soon as its LogicalCluster is cached — never by
//! polling, and never by scanning every LC per request.

use std::collections::HashMap;
use std::sync::Arc;

use kcp_store::keys::ResourceKeyspace;
use parking_lot::RwLock;

use crate::tenancy::TypeSpecs;
use crate::watch_cache::{CacheEvent, CacheEventType, CacheObserver, CachedObject};

/// The annotation holding an LC's canonical path.
pub const PATH_ANNOTATION: &str = "kcp.io/path";

#[derive(Default)]
struct Maps {
    by_path: HashMap<String, String>,
    by_cluster: HashMap<String, String>,
}

/// The path → LC index of one shard.
pub struct PathIndex {
    maps: RwLock<Maps>,
    logical_clusters: String,
    /// Kept here because every type lookup goes through this index (`tenancy::Types`).
    type_specs: TypeSpecs,
}

impl Default for PathIndex {
    fn default() -> Self {
        PathIndex::new()
    }
}

impl PathIndex {
    pub fn new() -> PathIndex {
        PathIndex {
            maps: RwLock::new(Maps::default()),
            logical_clusters: ResourceKeyspace::new("core.kcp.io", "logicalclusters", None, false)
                .all_clusters()
                .to_string(),
            type_specs: TypeSpecs::default(),
        }
    }

    /// The memo of parsed WorkspaceType specs.
    pub(crate) fn type_specs(&self) -> &TypeSpecs {
        &self.type_specs
    }

    /// The LC a path names, if it is one of this shard's.
    pub fn resolve(&self, path: &str) -> Option<String> {
        self.maps.read().by_path.get(path).cloned()
    }

    /// The canonical path of an LC, if it has one.
    pub fn path_of(&self, cluster: &str) -> Option<String> {
        self.maps.read().by_cluster.get(cluster).cloned()
    }

    fn apply(&self, object: &CachedObject, deleted: bool) {
        if !object.key.starts_with(&self.logical_clusters) {
            return;
        }
        let path = if deleted {
            None
        } else {
            object.annotation(PATH_ANNOTATION)
        };
        let mut maps = self.maps.write();
        if let Some(old) = maps.by_cluster.remove(&object.cluster) {
            // Only if it still points here: another LC may have taken the path meanwhile.
            if maps.by_path.get(&old) == Some(&object.cluster) {
                maps.by_path.remove(&old);
            }
        }
        if let Some(path) = path.filter(|p| kcp_apimachinery::names::is_valid_path(p)) {
            maps.by_path.insert(path.clone(), object.cluster.clone());
            maps.by_cluster.insert(object.cluster.clone(), path);
        }
    }
}

impl CacheObserver for PathIndex {
    fn event(&self, event: &CacheEvent) {
        self.apply(&event.object, event.kind == CacheEventType::Deleted);
    }

    fn reloaded(&self, objects: &[Arc<CachedObject>]) {
        *self.maps.write() = Maps::default();
        for object in objects {
            self.apply(object, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lc(cluster: &str, path: Option<&str>) -> CachedObject {
        let annotations = match path {
            Some(p) => serde_json::json!({ PATH_ANNOTATION: p }),
            None => serde_json::json!({}),
        };
        CachedObject::logical_cluster(cluster, annotations)
    }

    #[test]
    fn follows_path_annotations() {
        let index = PathIndex::new();
        index.apply(&lc("abc", Some("root:org")), false);
        index.apply(&lc("def", None), false);
        assert_eq!(index.resolve("root:org").as_deref(), Some("abc"));
        assert_eq!(index.path_of("abc").as_deref(), Some("root:org"));
        assert_eq!(index.path_of("def"), None);
        // A moved path: the old one no longer resolves.
        index.apply(&lc("abc", Some("root:team")), false);
        assert_eq!(index.resolve("root:org"), None);
        assert_eq!(index.resolve("root:team").as_deref(), Some("abc"));
        // Deleted LCs leave the index; invalid paths never enter it.
        index.apply(&lc("abc", Some("root:team")), true);
        assert_eq!(index.resolve("root:team"), None);
        index.apply(&lc("ghi", Some("Root::x")), false);
        assert_eq!(index.path_of("ghi"), None);
        index.reloaded(&[Arc::new(lc("xyz", Some("root:a")))]);
        assert_eq!(index.resolve("root:a").as_deref(), Some("xyz"));
    }
}
