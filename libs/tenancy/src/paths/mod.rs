//! Workspace paths (`root:org:team`) to logical-cluster names, for the LCs of this shard.
//!
//! A path is walked as kcp's index walks it: its first segment names a logical cluster (`root`, any
//! LC by name, or `user:<name>` for that user's home), and each further segment is the name of a
//! scheduled Workspace in the LC reached so far, leading to the LC in its `spec.cluster`. Each step
//! must reach an LC this shard holds. Workspaces can only be written by those allowed in their
//! parent, so nobody can graft a path onto another's tree; the `kcp.io/path` annotation of an LC,
//! which its own admins may edit, plays no part in routing.
//!
//! The index follows Workspaces and LogicalClusters inside the watch cache's event loop
//! ([`CacheObserver`]), so a path resolves as soon as both are cached — never by polling, and never
//! by scanning per request.

use std::collections::HashMap;
use std::sync::Arc;

use kcp_api_types::tenancy::home_cluster_name;
use kcp_apimachinery::logical_cluster::{LogicalClusterName, WorkspacePath};
use parking_lot::RwLock;

use kcp_apiserver::hooks::ClusterResolver;

use crate::workspace_types::TypeSpecs;

mod feed;

/// The annotation holding an LC's canonical path.
pub const PATH_ANNOTATION: &str = "kcp.io/path";
/// A home's path begins with this segment, followed by its user's name.
const USER_SEGMENT: &str = "user";

#[derive(Default)]
struct Graph {
    /// This shard's LCs (each with its LogicalCluster object): where a path may start and what a
    /// step may lead to. A home holds its path (`user:<name>`), checked against its name's hash.
    clusters: HashMap<Arc<str>, Option<Box<str>>>,
    /// Parent LC → workspace name → the workspace's LC.
    children: HashMap<Arc<str>, HashMap<Box<str>, Arc<str>>>,
    /// A workspace's LC → (parent LC, workspace name): the reverse of `children`.
    parents: HashMap<Arc<str>, (Arc<str>, Box<str>)>,
}

impl Graph {
    fn add_cluster(&mut self, cluster: &str, home_path: Option<Box<str>>) {
        match self.clusters.get_mut(cluster) {
            Some(path) => *path = home_path,
            None => {
                self.clusters.insert(cluster.into(), home_path);
            }
        }
    }

    fn remove_cluster(&mut self, cluster: &str) {
        self.clusters.remove(cluster);
        // Its own workspaces' edges go with it (the child Workspaces' events may come later or not at
        // all); its edge from the parent stays until that Workspace goes, and leads nowhere now.
        if let Some(children) = self.children.remove(cluster) {
            for child in children.values() {
                if self
                    .parents
                    .get(child)
                    .is_some_and(|(p, _)| &**p == cluster)
                {
                    self.parents.remove(child);
                }
            }
        }
    }

    fn link(&mut self, parent: &str, name: &str, child: &str) {
        if self
            .children
            .get(parent)
            .and_then(|c| c.get(name))
            .is_some_and(|c| &**c == child)
        {
            return;
        }
        self.unlink(parent, name);
        let parent = self.key(parent);
        // Shared with the LC's own entry when it is known already.
        let child = self.key(child);
        self.children
            .entry(parent.clone())
            .or_default()
            .insert(name.into(), child.clone());
        self.parents.insert(child, (parent, name.into()));
    }

    fn unlink(&mut self, parent: &str, name: &str) {
        let Some(children) = self.children.get_mut(parent) else {
            return;
        };
        if let Some(child) = children.remove(name)
            && self
                .parents
                .get(&child)
                .is_some_and(|(p, n)| &**p == parent && &**n == name)
        {
            self.parents.remove(&child);
        }
        if children.is_empty() {
            self.children.remove(parent);
        }
    }

    /// The shared name of a known cluster, or a new one.
    fn key(&self, cluster: &str) -> Arc<str> {
        self.clusters
            .get_key_value(cluster)
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| cluster.into())
    }

    fn resolve(&self, path: &str) -> Option<&Arc<str>> {
        let mut segments = path.split(':');
        let first = segments.next()?;
        let home;
        let top = if first == USER_SEGMENT {
            home = home_cluster_name(segments.next()?);
            home.as_str()
        } else {
            first
        };
        let (mut cluster, _) = self.clusters.get_key_value(top)?;
        for name in segments {
            cluster = self.children.get(cluster)?.get(name)?;
            if !self.clusters.contains_key(cluster) {
                return None;
            }
        }
        Some(cluster)
    }

    fn path_of(&self, cluster: &str) -> Option<String> {
        let mut names = Vec::new();
        let mut at = cluster;
        while let Some((parent, name)) = self.parents.get(at) {
            names.push(&**name);
            at = parent;
            // A cycle cannot be built through admission; never loop on one all the same.
            if names.len() > 64 {
                return None;
            }
        }
        // Paths start at `root`, a home, or (for LCs made without a workspace) an LC's name.
        let mut path = match self.clusters.get(at)? {
            Some(home) => home.to_string(),
            None if at == kcp_api_types::tenancy::ROOT || !names.is_empty() => at.to_string(),
            None => return None,
        };
        for name in names.iter().rev() {
            path.push(':');
            path.push_str(name);
        }
        Some(path)
    }
}

impl ClusterResolver for PathIndex {
    fn cluster_of(&self, path: &WorkspacePath) -> Option<LogicalClusterName> {
        PathIndex::cluster_of(self, path)
    }

    fn path_of(&self, cluster: &LogicalClusterName) -> Option<WorkspacePath> {
        WorkspacePath::parse(&PathIndex::path_of(self, cluster)?).ok()
    }
}

/// The path → LC index of one shard.
pub struct PathIndex {
    graph: RwLock<Graph>,
    logical_clusters: String,
    workspaces: String,
    /// Kept here because every type lookup goes through this index (`workspace_types::Types`).
    type_specs: TypeSpecs,
}

impl Default for PathIndex {
    fn default() -> Self {
        PathIndex::new()
    }
}

impl PathIndex {
    pub fn new() -> PathIndex {
        use kcp_apiserver::registry::keyspaces;
        PathIndex {
            graph: RwLock::new(Graph::default()),
            logical_clusters: keyspaces::logical_clusters().all_clusters().to_string(),
            workspaces: keyspaces::workspaces().all_clusters().to_string(),
            type_specs: TypeSpecs::default(),
        }
    }

    /// The memo of parsed WorkspaceType specs.
    pub(crate) fn type_specs(&self) -> &TypeSpecs {
        &self.type_specs
    }

    /// The LC a path leads to, if it is one of this shard's.
    pub fn resolve(&self, path: &str) -> Option<String> {
        self.graph.read().resolve(path).map(|c| c.to_string())
    }

    /// [`PathIndex::resolve`] of a request's path, as the name requests are served under.
    pub fn cluster_of(&self, path: &WorkspacePath) -> Option<LogicalClusterName> {
        let graph = self.graph.read();
        LogicalClusterName::parse(graph.resolve(path.as_str())?).ok()
    }

    /// The canonical path of an LC: the path that leads to it through Workspaces from `root` or a
    /// home (`user:<name>`). `None` for an LC that no workspace leads to, other than those tops.
    pub fn path_of(&self, cluster: &str) -> Option<String> {
        self.graph.read().path_of(cluster)
    }
}

#[cfg(test)]
mod tests {
    use kcp_api_types::tenancy::PHASE_LABEL;
    use kcp_apimachinery::selector::label::Labels;
    use kcp_apiserver::watch_cache::{CacheObserver, CachedObject};

    use super::*;

    fn lc(cluster: &str, path: Option<&str>) -> CachedObject {
        let annotations = match path {
            Some(p) => serde_json::json!({ PATH_ANNOTATION: p }),
            None => serde_json::json!({}),
        };
        CachedObject::logical_cluster(cluster, annotations)
    }

    fn ws(parent: &str, name: &str, cluster: &str, phase: &str) -> CachedObject {
        let value = serde_json::json!({
            "metadata": {"name": name, "labels": {PHASE_LABEL: phase}},
            "spec": {"cluster": cluster},
        });
        let object = CachedObject {
            key: kcp_apiserver::registry::keyspaces::workspaces().object(parent, None, name),
            cluster: LogicalClusterName::parse(parent).expect("a cluster name"),
            namespace: None,
            name: name.into(),
            revision: 1,
            labels: kcp_apiserver::watch_cache::CachedLabels::new(vec![(
                PHASE_LABEL.into(),
                phase.into(),
            )]),
            json: kcp_apiserver::object_json::ObjectJson::encode(&value).expect("JSON"),
        };
        assert_eq!(object.label(PHASE_LABEL), Some(phase));
        object
    }

    #[test]
    fn walks_workspaces_not_annotations() {
        let index = PathIndex::new();
        index.apply(&lc("root", Some("root")), false);
        index.apply(&lc("abc", Some("root:org")), false);
        // Not yet scheduled: no path.
        index.apply(&ws("root", "org", "", "Scheduling"), false);
        assert_eq!(index.resolve("root:org"), None);
        index.apply(&ws("root", "org", "abc", "Ready"), false);
        assert_eq!(index.resolve("root:org").as_deref(), Some("abc"));
        assert_eq!(index.path_of("abc").as_deref(), Some("root:org"));
        assert_eq!(index.path_of("root").as_deref(), Some("root"));
        // Any LC may start a path.
        index.apply(&lc("def", Some("root:org:team")), false);
        index.apply(&ws("abc", "team", "def", "Initializing"), false);
        assert_eq!(index.resolve("abc:team").as_deref(), Some("def"));
        assert_eq!(index.resolve("root:org:team").as_deref(), Some("def"));
        assert_eq!(index.path_of("def").as_deref(), Some("root:org:team"));
        // An LC's own annotation claims nothing.
        index.apply(&lc("evil", Some("root:victim")), false);
        assert_eq!(index.resolve("root:victim"), None);
        assert_eq!(index.path_of("evil"), None);
        // A step must reach an LC this shard holds.
        index.apply(&ws("root", "ghost", "nowhere", "Ready"), false);
        assert_eq!(index.resolve("root:ghost"), None);
        // A deleted Workspace or LC takes its edges along.
        index.apply(&ws("abc", "team", "def", "Ready"), true);
        assert_eq!(index.resolve("root:org:team"), None);
        assert_eq!(index.path_of("def"), None);
        index.apply(&lc("abc", None), true);
        assert_eq!(index.resolve("root:org"), None);
        index.reloaded(&[
            Arc::new(lc("root", None)),
            Arc::new(lc("xyz", None)),
            Arc::new(ws("root", "a", "xyz", "Ready")),
        ]);
        assert_eq!(index.resolve("root:a").as_deref(), Some("xyz"));
    }

    #[test]
    fn homes_by_the_hash_of_their_user() {
        let index = PathIndex::new();
        let alice = home_cluster_name("alice");
        index.apply(&lc(&alice, Some("user:alice")), false);
        index.apply(&lc("sub", None), false);
        index.apply(&ws(&alice, "sub1", "sub", "Ready"), false);
        assert_eq!(index.resolve("user:alice").as_deref(), Some(&*alice));
        assert_eq!(index.resolve("user:alice:sub1").as_deref(), Some("sub"));
        assert_eq!(index.path_of("sub").as_deref(), Some("user:alice:sub1"));
        assert_eq!(index.path_of(&alice).as_deref(), Some("user:alice"));
        // A user named `alice:sub1` has a home of its own; the path stays alice's.
        let other = home_cluster_name("alice:sub1");
        index.apply(&lc(&other, Some("user:alice:sub1")), false);
        assert_eq!(index.resolve("user:alice:sub1").as_deref(), Some("sub"));
        assert_eq!(index.path_of(&other), None);
        // A home path on an LC not made from that user is not believed.
        index.apply(&lc("mallory", Some("user:bob")), false);
        assert_eq!(index.path_of("mallory"), None);
        assert_eq!(index.resolve("user:bob"), None);
    }
}
