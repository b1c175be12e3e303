//! The per-logical-cluster tables of the binding-fed indexes ([`crate::locks`], [`crate::claims`],
//! [`crate::policy`]). A consumer cluster holds one or two bindings, and there are as many such
//! tables as bound clusters, so each is a sorted vector sized to its entries (a [`LiteMap`]): a
//! `BTreeMap`'s first leaf has room for eleven entries, ~1 KiB per cluster per index at 10,000
//! bound clusters for nothing.

use std::collections::HashMap;

use kcp_apimachinery::logical_cluster::LogicalClusterName;
use litemap::LiteMap;

/// One cluster's entries, by name.
pub type ByName<V> = LiteMap<String, V>;

/// Every cluster's entries; a cluster with none has no table.
pub type ByCluster<V> = HashMap<LogicalClusterName, ByName<V>>;

/// `cluster`'s table, made (for one entry) when it has none.
pub fn table<'a, V>(map: &'a mut ByCluster<V>, cluster: &LogicalClusterName) -> &'a mut ByName<V> {
    map.entry(cluster.clone())
        .or_insert_with(|| LiteMap::with_capacity(1))
}

/// Removes `name` from `cluster`'s table, and the table once empty.
pub fn remove<V>(map: &mut ByCluster<V>, cluster: &str, name: &str) -> Option<V> {
    let of_cluster = map.get_mut(cluster)?;
    let removed = of_cluster.remove(name);
    if of_cluster.is_empty() {
        map.remove(cluster);
    }
    removed
}

/// Keeps in `cluster`'s table only what `keep` says, and drops the table once empty.
pub fn retain<V>(map: &mut ByCluster<V>, cluster: &str, keep: impl FnMut(&String, &V) -> bool) {
    let Some(of_cluster) = map.get_mut(cluster) else {
        return;
    };
    of_cluster.retain(keep);
    if of_cluster.is_empty() {
        map.remove(cluster);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    #[test]
    fn tables_come_and_go_with_their_entries() {
        let mut map: ByCluster<u32> = ByCluster::new();
        let lc = LogicalClusterName::parse("consumer").unwrap();
        table(&mut map, &lc).insert("b".into(), 2);
        table(&mut map, &lc).insert("a".into(), 1);
        let names: Vec<_> = map["consumer"].keys().cloned().collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(remove(&mut map, "consumer", "a"), Some(1));
        assert_eq!(remove(&mut map, "consumer", "a"), None);
        retain(&mut map, "consumer", |_, v| *v != 2);
        assert!(map.is_empty());
        assert_eq!(remove(&mut map, "other", "a"), None);
    }
}
