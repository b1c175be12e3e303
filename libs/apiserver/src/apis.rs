//! The API set of each logical cluster, composed from sources: the built-ins, then what each source
//! serves in that cluster (the APIs it binds, then its own CRDs). A source hands over its part of a
//! cluster's APIs whenever that part changes; the composed set is kept per cluster and shared by
//! every cluster composed of the same parts, so an LC costs an entry here, never a set of its own.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use parking_lot::{Mutex, RwLock};

use crate::discovery::ApiSet;

/// Where a part of a cluster's APIs comes from; parts are composed in this order, and the first
/// to serve a group, version and resource keeps it (a built-in before all of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ApiSource {
    /// The APIs the cluster's APIBindings bind (kcp serves bound APIs before local CRDs).
    Bindings,
    /// The cluster's established CustomResourceDefinitions.
    Crds,
}

/// A fingerprint of what a part was made from: equal parts have equal fingerprints.
pub type Fingerprint = [u8; 32];

/// One source's resources in one cluster (in a stable order).
pub struct ApiPart {
    pub resources: Vec<Arc<ResourceDef>>,
    pub fingerprint: Fingerprint,
}

/// What a composed set is made of: each source's part, by its fingerprint.
type PartsKey = Vec<(ApiSource, Fingerprint)>;

/// A cluster's parts and the set they compose.
struct Composed {
    parts: Parts,
    set: Arc<ApiSet>,
}

/// Each source's part, in the sources' order: a slot per source, not a map (an entry per bound
/// cluster, so no allocation of its own).
#[derive(Clone, Default)]
struct Parts([Option<Arc<ApiPart>>; ApiSource::ALL.len()]);

impl ApiSource {
    /// Every source, in composition order: a part's slot is its place here.
    const ALL: [ApiSource; 2] = [ApiSource::Bindings, ApiSource::Crds];

    fn slot(self) -> usize {
        // Every source is in ALL (the unit tests compose sets of each).
        ApiSource::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }
}

impl Parts {
    fn set(&mut self, source: ApiSource, part: Option<Arc<ApiPart>>) {
        self.0[source.slot()] = part;
    }

    fn has(&self, source: ApiSource) -> bool {
        self.0[source.slot()].is_some()
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(Option::is_none)
    }

    /// The parts there are, in the sources' order.
    fn iter(&self) -> impl Iterator<Item = (ApiSource, &Arc<ApiPart>)> {
        (ApiSource::ALL.into_iter())
            .zip(&self.0)
            .filter_map(|(source, part)| Some((source, part.as_ref()?)))
    }
}

/// The API sets of every logical cluster.
pub struct ClusterApis {
    builtins: Arc<ApiSet>,
    /// Only clusters with a part; the others serve the built-ins.
    by_cluster: RwLock<HashMap<LogicalClusterName, Composed>>,
    /// Held by whoever changes a cluster's parts, so parts set at once by two sources both
    /// count, while requests go on reading `by_cluster`.
    changing: Mutex<()>,
    interned: Mutex<HashMap<PartsKey, Weak<ApiSet>>>,
}

impl ClusterApis {
    pub fn new(builtins: Arc<ApiSet>) -> ClusterApis {
        ClusterApis {
            builtins,
            by_cluster: RwLock::new(HashMap::new()),
            changing: Mutex::new(()),
            interned: Mutex::new(HashMap::new()),
        }
    }

    /// What every logical cluster serves, and the wildcard (`/clusters/*`) too.
    pub fn builtins(&self) -> &Arc<ApiSet> {
        &self.builtins
    }

    /// The APIs a logical cluster serves now.
    pub fn for_cluster(&self, cluster: &str) -> Arc<ApiSet> {
        (self.by_cluster.read().get(cluster))
            .map(|c| c.set.clone())
            .unwrap_or_else(|| self.builtins.clone())
    }

    /// Replaces what `source` serves in `cluster` (`None`: nothing).
    pub fn set_part(
        &self,
        source: ApiSource,
        cluster: &LogicalClusterName,
        part: Option<Arc<ApiPart>>,
    ) {
        let _changing = self.changing.lock();
        let mut parts = (self.by_cluster.read().get(cluster.as_str()))
            .map(|c| c.parts.clone())
            .unwrap_or_default();
        parts.set(source, part);
        if parts.is_empty() {
            self.by_cluster.write().remove(cluster.as_str());
            return;
        }
        let set = self.compose(&parts);
        (self.by_cluster.write()).insert(cluster.clone(), Composed { parts, set });
    }

    /// The clusters `source` serves something in.
    pub fn clusters_of(&self, source: ApiSource) -> Vec<LogicalClusterName> {
        (self.by_cluster.read().iter())
            .filter(|(_, c)| c.parts.has(source))
            .map(|(cluster, _)| cluster.clone())
            .collect()
    }

    /// A bound resource by its export's identity, as wildcard requests name it
    /// (`<resource>:<identity>`), from whichever set serves it: all share its storage.
    pub fn bound_by_identity(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        identity: &str,
    ) -> Option<Arc<ResourceDef>> {
        if identity == kcp_api_types::custom::LOCAL_CRD_IDENTITY {
            return None;
        }
        let interned = self.interned.lock();
        interned.values().filter_map(Weak::upgrade).find_map(|set| {
            (set.resources().iter())
                .find(|d| {
                    d.group == group
                        && d.version == version
                        && d.plural == plural
                        && d.storage_identity.as_deref() == Some(identity)
                })
                .cloned()
        })
    }

    /// How many distinct composed sets are alive (for tests and benchmarks of their sharing).
    pub fn interned_sets(&self) -> usize {
        (self.interned.lock().values())
            .filter(|w| w.strong_count() > 0)
            .count()
    }

    /// The set of the built-ins and `parts`, shared with every cluster of the same parts.
    fn compose(&self, parts: &Parts) -> Arc<ApiSet> {
        let key: PartsKey = (parts.iter())
            .map(|(source, part)| (source, part.fingerprint))
            .collect();
        if let Some(set) = self.interned.lock().get(&key).and_then(Weak::upgrade) {
            return set;
        }
        let mut resources: Vec<Arc<ResourceDef>> = self.builtins.resources().to_vec();
        for (_, part) in parts.iter() {
            for def in &part.resources {
                let taken = resources.iter().any(|d| {
                    d.group == def.group && d.version == def.version && d.plural == def.plural
                });
                if !taken {
                    resources.push(def.clone());
                }
            }
        }
        let set = Arc::new(ApiSet::new(resources));
        let mut interned = self.interned.lock();
        interned.retain(|_, w| w.strong_count() > 0);
        interned.insert(key, Arc::downgrade(&set));
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(group: &str, plural: &str) -> Arc<ResourceDef> {
        let mut def = kcp_api_types::builtin::catalogue()
            .into_iter()
            .find(|d| d.is("", "configmaps"))
            .expect("configmaps");
        def.group = group.to_string();
        def.plural = plural.to_string();
        Arc::new(def)
    }

    fn part(resources: Vec<Arc<ResourceDef>>, tag: u8) -> Arc<ApiPart> {
        Arc::new(ApiPart {
            resources,
            fingerprint: [tag; 32],
        })
    }

    fn lc(name: &str) -> LogicalClusterName {
        LogicalClusterName::parse(name).expect("a cluster name")
    }

    fn builtins() -> Arc<ApiSet> {
        Arc::new(ApiSet::new(vec![def("", "configmaps")]))
    }

    #[test]
    fn clusters_of_the_same_parts_share_one_set() {
        let apis = ClusterApis::new(builtins());
        let widgets = part(vec![def("example.com", "widgets")], 1);
        apis.set_part(ApiSource::Crds, &lc("a"), Some(widgets.clone()));
        apis.set_part(ApiSource::Crds, &lc("b"), Some(widgets));
        assert!(Arc::ptr_eq(&apis.for_cluster("a"), &apis.for_cluster("b")));
        assert_eq!(apis.interned_sets(), 1);
        assert!(
            apis.for_cluster("a")
                .find("example.com", "v1", "widgets")
                .is_some()
        );
        // Another cluster serves the built-ins alone.
        assert!(Arc::ptr_eq(&apis.for_cluster("c"), apis.builtins()));
        assert_eq!(apis.clusters_of(ApiSource::Crds).len(), 2);
        // Without its part, a cluster is back to the built-ins.
        apis.set_part(ApiSource::Crds, &lc("a"), None);
        assert!(Arc::ptr_eq(&apis.for_cluster("a"), apis.builtins()));
        assert_eq!(apis.clusters_of(ApiSource::Crds), ["b"]);
    }

    #[test]
    fn a_built_in_keeps_its_resource() {
        let apis = ClusterApis::new(builtins());
        let mut shadow = (*def("", "configmaps")).clone();
        shadow.kind = "Shadow".to_string();
        apis.set_part(
            ApiSource::Crds,
            &lc("a"),
            Some(part(vec![Arc::new(shadow)], 2)),
        );
        let set = apis.for_cluster("a");
        let served = set.find("", "v1", "configmaps").expect("configmaps");
        assert_eq!(served.kind, "ConfigMap");
        assert_eq!(set.resources().len(), 1);
    }
}
