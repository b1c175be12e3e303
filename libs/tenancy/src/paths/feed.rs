//! What feeds the path index: LogicalClusters and Workspaces as the watch cache sees them, inside
//! its event loop, so a path resolves as soon as both are cached.

use std::sync::Arc;

use kcp_api_types::tenancy::{PHASE_LABEL, home_cluster_name};
use kcp_apimachinery::selector::label::Labels;
use kcp_apiserver::watch_cache::{CacheEvent, CacheEventType, CacheObserver, CachedObject};

use super::{Graph, PATH_ANNOTATION, PathIndex, USER_SEGMENT};

/// Only a Workspace's `spec.cluster`.
#[derive(serde::Deserialize)]
struct ClusterOnly {
    #[serde(default)]
    spec: ClusterSpec,
}

#[derive(serde::Deserialize, Default)]
struct ClusterSpec {
    #[serde(default)]
    cluster: String,
}

impl PathIndex {
    pub(super) fn apply(&self, object: &CachedObject, deleted: bool) {
        if object.key.starts_with(&self.logical_clusters) {
            self.apply_logical_cluster(object, deleted);
        } else if object.key.starts_with(&self.workspaces) {
            self.apply_workspace(object, deleted);
        }
    }

    fn apply_logical_cluster(&self, object: &CachedObject, deleted: bool) {
        if deleted {
            self.graph.write().remove_cluster(&object.cluster);
            return;
        }
        // A home's path is believed only if it is the one its name was made from.
        let home_path = object
            .annotation(PATH_ANNOTATION)
            .filter(|path| match path.split_once(':') {
                // A user name with a `:` has a home, but `user:<name>` leads elsewhere.
                Some((USER_SEGMENT, user)) => {
                    !user.contains(':') && home_cluster_name(user) == object.cluster
                }
                _ => false,
            })
            .map(String::into_boxed_str);
        self.graph.write().add_cluster(&object.cluster, home_path);
    }

    fn apply_workspace(&self, object: &CachedObject, deleted: bool) {
        // kcp's index takes a Workspace once it is past scheduling.
        let child = if deleted || object.label(PHASE_LABEL) == Some("Scheduling") {
            None
        } else {
            object
                .json
                .parse::<ClusterOnly>()
                .ok()
                .map(|w| w.spec.cluster)
                .filter(|c| !c.is_empty())
        };
        let mut graph = self.graph.write();
        match child {
            Some(child) => graph.link(&object.cluster, &object.name, &child),
            None => graph.unlink(&object.cluster, &object.name),
        }
    }
}

impl CacheObserver for PathIndex {
    fn event(&self, event: &CacheEvent) {
        self.apply(&event.object, event.kind == CacheEventType::Deleted);
    }

    fn reloaded(&self, objects: &[Arc<CachedObject>]) {
        *self.graph.write() = Graph::default();
        for object in objects {
            self.apply(object, false);
        }
    }
}
