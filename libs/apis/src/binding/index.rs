//! Which bindings name which export, kept from the binding feed so that an export's or a schema's
//! change queues only its own bindings instead of reading every binding of the shard.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kcp_apimachinery::logical_cluster::LogicalClusterName;
use serde_json::Value;

/// A binding: its logical cluster and name.
pub type BindingId = (LogicalClusterName, String);

/// [`BindingId`] as the index holds it: each binding is in three tables, with one copy of its name.
type Id = (LogicalClusterName, Arc<str>);

#[derive(Default)]
pub struct ExportIndex {
    /// By `spec.reference.export.name`: also the bindings still waiting for their export.
    by_name: HashMap<Arc<str>, HashSet<Id>>,
    /// By `status.apiExportClusterName`: where the bound schemas live.
    by_cluster: HashMap<LogicalClusterName, HashSet<Id>>,
    entries: HashMap<Id, (Arc<str>, Option<LogicalClusterName>)>,
}

impl ExportIndex {
    /// Records `binding` as it is now (`None`: gone).
    pub fn set(&mut self, (cluster, name): BindingId, binding: Option<&Value>) {
        let id: Id = match self
            .entries
            .get_key_value(&(cluster.clone(), Arc::from(name.as_str())))
        {
            Some((held, _)) => held.clone(),
            None => (cluster, Arc::from(name)),
        };
        self.remove(&id);
        let Some(binding) = binding else { return };
        let text = |p: &str| {
            binding
                .pointer(p)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let export = text("/spec/reference/export/name");
        let export: Arc<str> = match self.by_name.get_key_value(export) {
            Some((held, _)) => held.clone(),
            None => Arc::from(export),
        };
        let cluster = LogicalClusterName::parse(text("/status/apiExportClusterName")).ok();
        self.by_name
            .entry(export.clone())
            .or_default()
            .insert(id.clone());
        if let Some(c) = &cluster {
            self.by_cluster
                .entry(c.clone())
                .or_default()
                .insert(id.clone());
        }
        self.entries.insert(id, (export, cluster));
    }

    pub fn clear(&mut self) {
        *self = ExportIndex::default();
    }

    fn remove(&mut self, id: &Id) {
        let Some((name, cluster)) = self.entries.remove(id) else {
            return;
        };
        remove_from(&mut self.by_name, &name, id);
        if let Some(c) = cluster {
            remove_from(&mut self.by_cluster, &c, id);
        }
    }

    /// Bindings naming an export called `name`, wherever it is.
    pub fn naming(&self, name: &str) -> Vec<BindingId> {
        ids(self.by_name.get(name))
    }

    /// Bindings whose export lives in `cluster`.
    pub fn bound_to(&self, cluster: &LogicalClusterName) -> Vec<BindingId> {
        ids(self.by_cluster.get(cluster))
    }
}

fn ids(set: Option<&HashSet<Id>>) -> Vec<BindingId> {
    (set.into_iter().flatten())
        .map(|(c, n)| (c.clone(), n.to_string()))
        .collect()
}

fn remove_from<K: std::hash::Hash + Eq>(map: &mut HashMap<K, HashSet<Id>>, key: &K, id: &Id) {
    if let Some(set) = map.get_mut(key) {
        set.remove(id);
        if set.is_empty() {
            map.remove(key);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use serde_json::json;

    fn id(c: &str, n: &str) -> BindingId {
        (LogicalClusterName::parse(c).unwrap(), n.to_string())
    }

    #[test]
    fn follows_a_binding_through_its_changes() {
        let mut index = ExportIndex::default();
        let waiting = json!({"spec": {"reference": {"export": {"name": "cowboys"}}}});
        index.set(id("c1", "b"), Some(&waiting));
        assert_eq!(index.naming("cowboys"), vec![id("c1", "b")]);
        let provider = LogicalClusterName::parse("p1").unwrap();
        assert!(index.bound_to(&provider).is_empty());

        let bound = json!({
            "spec": {"reference": {"export": {"name": "cowboys"}}},
            "status": {"apiExportClusterName": "p1"},
        });
        index.set(id("c1", "b"), Some(&bound));
        assert_eq!(index.bound_to(&provider), vec![id("c1", "b")]);
        assert_eq!(index.naming("cowboys").len(), 1);

        index.set(id("c1", "b"), None);
        assert!(index.naming("cowboys").is_empty());
        assert!(index.bound_to(&provider).is_empty());
        assert!(
            index.entries.is_empty() && index.by_name.is_empty() && index.by_cluster.is_empty()
        );
    }
}
