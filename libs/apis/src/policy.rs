//! Which bound resources an export's maximal permission policy bounds, kept in memory for the
//! authorizer ([`kcp_auth::authz::maximal_policy`]), which asks on every resource request: the
//! resources each binding binds and its export, and which exports have a local policy.

use std::collections::HashSet;
use std::sync::Arc;

use kcp_apimachinery::intern::Interner;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apiserver::registry::keyspace;
use kcp_apiserver::registry::str_at as text;
use kcp_apiserver::watch_cache::WatchCache;
use kcp_auth::authz::{PermissionPolicies, PolicyExport};
use parking_lot::RwLock;
use serde_json::Value;

use crate::binding::Defs;
use crate::by_cluster::{self, ByCluster};

type ExportId = (LogicalClusterName, String);

#[derive(PartialEq, Eq, Hash)]
struct Bound {
    export: ExportId,
    /// Group and resource of each bound resource.
    resources: Vec<(String, String)>,
}

#[derive(Default)]
struct Index {
    /// Per consumer cluster, by binding name; the bindings of one export share one `Bound`.
    bindings: ByCluster<Arc<Bound>>,
    shared: Interner<Bound>,
    with_policy: HashSet<ExportId>,
}

impl Index {
    fn insert(&mut self, cluster: &LogicalClusterName, name: &str, bound: Bound) {
        let bound = self.shared.intern(Arc::new(bound));
        by_cluster::table(&mut self.bindings, cluster).insert(name.to_string(), bound);
    }
}

#[derive(Default)]
pub struct BoundPolicies {
    index: RwLock<Index>,
}

fn bound_of(binding: &Value) -> Option<Bound> {
    let cluster = LogicalClusterName::parse(text(binding, "/status/apiExportClusterName")).ok()?;
    let name = text(binding, "/spec/reference/export/name").to_string();
    let resources: Vec<(String, String)> = (binding.pointer("/status/boundResources"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| {
            (
                text(r, "/group").to_string(),
                text(r, "/resource").to_string(),
            )
        })
        .collect();
    (!resources.is_empty()).then_some(Bound {
        export: (cluster, name),
        resources,
    })
}

/// Whether `export` bounds what it serves by a local maximal permission policy.
pub fn has_local_policy(export: &Value) -> bool {
    export
        .pointer("/spec/maximalPermissionPolicy/local")
        .is_some_and(|p| !p.is_null())
}

impl BoundPolicies {
    /// Binding `name` of `cluster` is now `binding` (`None`: gone).
    pub fn set_binding(&self, cluster: &LogicalClusterName, name: &str, binding: Option<&Value>) {
        let bound = binding.and_then(bound_of);
        let mut index = self.index.write();
        match bound {
            Some(bound) => index.insert(cluster, name, bound),
            None => {
                by_cluster::remove(&mut index.bindings, cluster, name);
            }
        }
    }

    /// Export `name` of `cluster` is now `export` (`None`: gone).
    pub fn set_export(&self, cluster: &LogicalClusterName, name: &str, export: Option<&Value>) {
        let id = (cluster.clone(), name.to_string());
        let mut index = self.index.write();
        if export.is_some_and(has_local_policy) {
            index.with_policy.insert(id);
        } else {
            index.with_policy.remove(&id);
        }
    }

    /// Everything again from the cache (at start-up, before the first request, and on resyncs).
    pub fn rebuild(&self, cache: &WatchCache, defs: &Defs) {
        let mut fresh = Index::default();
        for e in cache.list(keyspace(&defs.exports).all_clusters(), None) {
            if e.value().is_ok_and(|v| has_local_policy(&v)) {
                fresh
                    .with_policy
                    .insert((e.cluster.clone(), e.name.clone()));
            }
        }
        for b in cache.list(keyspace(&defs.bindings).all_clusters(), None) {
            if let Some(bound) = b.value().ok().as_ref().and_then(bound_of) {
                fresh.insert(&b.cluster, &b.name, bound);
            }
        }
        *self.index.write() = fresh;
    }
}

impl PermissionPolicies for BoundPolicies {
    fn bounding(&self, cluster: &str, group: &str, resource: &str) -> Option<PolicyExport> {
        let index = self.index.read();
        let bound = (index.bindings.get(cluster)?.values())
            .find(|b| (b.resources.iter()).any(|(g, r)| g == group && r == resource))?;
        index
            .with_policy
            .contains(&bound.export)
            .then(|| PolicyExport {
                cluster: bound.export.0.to_string(),
                name: bound.export.1.clone(),
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bounds_only_what_a_policy_export_bound() {
        let policies = BoundPolicies::default();
        let consumer = LogicalClusterName::parse("consumer").unwrap();
        let provider = LogicalClusterName::parse("provider").unwrap();
        let binding = json!({
            "spec": {"reference": {"export": {"name": "cowboys"}}},
            "status": {
                "apiExportClusterName": "provider",
                "boundResources": [{"group": "wildwest.dev", "resource": "cowboys"}],
            },
        });
        policies.set_binding(&consumer, "cowboys", Some(&binding));
        // No policy on the export yet.
        assert_eq!(
            policies.bounding("consumer", "wildwest.dev", "cowboys"),
            None
        );
        let export = json!({"spec": {"maximalPermissionPolicy": {"local": {}}}});
        policies.set_export(&provider, "cowboys", Some(&export));
        assert_eq!(
            policies.bounding("consumer", "wildwest.dev", "cowboys"),
            Some(PolicyExport {
                cluster: "provider".into(),
                name: "cowboys".into()
            })
        );
        assert_eq!(
            policies.bounding("consumer", "wildwest.dev", "horses"),
            None
        );
        assert_eq!(policies.bounding("other", "wildwest.dev", "cowboys"), None);
        policies.set_binding(&consumer, "cowboys", None);
        assert_eq!(
            policies.bounding("consumer", "wildwest.dev", "cowboys"),
            None
        );
    }
}
