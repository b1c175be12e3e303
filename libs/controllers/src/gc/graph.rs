//! The ownership graph: for every object that has ownerReferences, its owners; for every owner uid,
//! its dependents. Only objects with ownerReferences (and owners in foreground deletion) take memory.
//!
//! Owners are not stored: they are resolved against the watch cache when an object is examined, so
//! the graph needs no entry for the many objects that own nothing or are owned by nothing.

use std::collections::{HashMap, HashSet};

use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apiserver::watch_cache::{CacheEvent, CacheEventType, CachedObject};
use kcp_store::Revision;

use super::meta::{Meta, OwnerRef};
use kcp_apiserver::registry::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};

/// An owner as the graph knows it: its logical cluster and uid (uids are only compared within a cluster).
pub type OwnerId = (LogicalClusterName, String);

struct Dependent {
    cluster: LogicalClusterName,
    revision: Revision,
    owners: Vec<OwnerRef>,
}

#[derive(Default)]
pub struct Graph {
    /// Cache key of each object with ownerReferences → its references.
    dependents: HashMap<String, Dependent>,
    /// Owner → cache keys of the objects referencing it.
    by_owner: HashMap<OwnerId, HashSet<String>>,
    /// Owners waiting for their dependents (`foregroundDeletion`) → their cache keys.
    foreground: HashMap<OwnerId, String>,
}

impl Graph {
    /// Applies one cache event; returns the keys of objects the collector must look at again.
    pub fn apply(&mut self, event: &CacheEvent) -> Vec<String> {
        self.apply_change(event.kind, &event.object)
    }

    fn apply_change(&mut self, kind: CacheEventType, obj: &CachedObject) -> Vec<String> {
        // Most objects reference no owner and are not being deleted: unless the graph knows them
        // already, they change nothing here, and that is told from the JSON without parsing it
        // (metadata's keys always lie in an object's own bytes). An object in foreground deletion
        // keeps its deletionTimestamp, so it never takes this way.
        if kind != CacheEventType::Deleted
            && !obj.json.may_contain(b"\"ownerReferences\"")
            && !obj.json.may_contain(b"\"deletionTimestamp\"")
            && !self.dependents.contains_key(&obj.key)
        {
            return Vec::new();
        }
        let Some(meta) = Meta::parse(&obj.json.to_bytes()) else {
            return Vec::new();
        };
        match kind {
            CacheEventType::Added | CacheEventType::Modified => self.upsert(obj, &meta),
            CacheEventType::Deleted => self.remove(obj, &meta),
        }
    }

    /// Records an object's current state (an event, or an entry of a full listing).
    pub fn upsert(&mut self, obj: &CachedObject, meta: &Meta) -> Vec<String> {
        let mut work = Vec::new();
        if let Some(known) = self.dependents.get(&obj.key)
            && known.revision >= obj.revision
        {
            // An event older than a listing already applied.
            return work;
        }
        let id = (obj.cluster.clone(), meta.uid.clone());
        let owners = meta.owners().to_vec();
        let before = self.unlink(&obj.key);
        if before.as_deref() != Some(owners.as_slice()) {
            // A reference that disappeared or stopped blocking may release an owner in foreground.
            for gone in before.iter().flatten() {
                if !owners.contains(gone) {
                    work.extend(self.waiting_owner(&obj.cluster, &gone.uid));
                }
            }
            if !owners.is_empty() {
                work.push(obj.key.clone());
            }
        }
        if !owners.is_empty() {
            for owner in &owners {
                self.by_owner
                    .entry((obj.cluster.clone(), owner.uid.clone()))
                    .or_default()
                    .insert(obj.key.clone());
            }
            self.dependents.insert(
                obj.key.clone(),
                Dependent {
                    cluster: obj.cluster.clone(),
                    revision: obj.revision,
                    owners,
                },
            );
        }
        let in_foreground = meta.is_deleting() && meta.has_finalizer(FOREGROUND_FINALIZER);
        if in_foreground {
            self.foreground.insert(id, obj.key.clone());
        } else {
            self.foreground.remove(&id);
        }
        if meta.is_deleting()
            && (in_foreground || meta.has_finalizer(ORPHAN_FINALIZER))
            && !work.contains(&obj.key)
        {
            work.push(obj.key.clone());
        }
        work
    }

    fn remove(&mut self, obj: &CachedObject, meta: &Meta) -> Vec<String> {
        let mut work = Vec::new();
        for gone in self.unlink(&obj.key).iter().flatten() {
            work.extend(self.waiting_owner(&obj.cluster, &gone.uid));
        }
        let id = (obj.cluster.clone(), meta.uid.clone());
        self.foreground.remove(&id);
        // Its dependents may have lost their last owner.
        if let Some(deps) = self.by_owner.get(&id) {
            work.extend(deps.iter().cloned());
        }
        work
    }

    /// Drops an object's references from the indexes; returns them.
    fn unlink(&mut self, key: &str) -> Option<Vec<OwnerRef>> {
        let dep = self.dependents.remove(key)?;
        for owner in &dep.owners {
            let id = (dep.cluster.clone(), owner.uid.clone());
            if let Some(set) = self.by_owner.get_mut(&id) {
                set.remove(key);
                if set.is_empty() {
                    self.by_owner.remove(&id);
                }
            }
        }
        Some(dep.owners)
    }

    fn waiting_owner(&self, cluster: &LogicalClusterName, uid: &str) -> Option<String> {
        self.foreground
            .get(&(cluster.clone(), uid.to_string()))
            .cloned()
    }

    /// Keys of the objects referencing the owner `(cluster, uid)`, each with whether its reference
    /// blocks the owner's foreground deletion.
    pub fn dependents_of(&self, cluster: &LogicalClusterName, uid: &str) -> Vec<(String, bool)> {
        let Some(keys) = self.by_owner.get(&(cluster.clone(), uid.to_string())) else {
            return Vec::new();
        };
        keys.iter()
            .map(|key| {
                let blocks = self
                    .dependents
                    .get(key)
                    .is_some_and(|d| d.owners.iter().any(|o| o.uid == uid && o.blocks()));
                (key.clone(), blocks)
            })
            .collect()
    }

    /// Objects with ownerReferences known to the graph.
    pub fn tracked(&self) -> usize {
        self.dependents.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(cluster: &str) -> LogicalClusterName {
        LogicalClusterName::parse(cluster).expect("a test cluster")
    }

    fn object(key: &str, cluster: &str, revision: Revision, json: &str) -> CachedObject {
        CachedObject {
            key: key.into(),
            cluster: name(cluster),
            namespace: Some("default".into()),
            name: key.rsplit('/').next().unwrap_or_default().into(),
            revision,
            labels: Default::default(),
            json: json.as_bytes().to_vec().into(),
        }
    }

    fn upsert(g: &mut Graph, obj: &CachedObject) -> Vec<String> {
        let meta = Meta::parse(&obj.json.to_bytes()).expect("metadata");
        g.upsert(obj, &meta)
    }

    fn owned(uid: &str, owner_uid: &str, block: bool) -> String {
        format!(
            r#"{{"metadata":{{"uid":"{uid}","ownerReferences":[{{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"{owner_uid}","blockOwnerDeletion":{block}}}]}}}}"#
        )
    }

    /// Through the event path: objects without owners are passed over (they are not tracked),
    /// but one the graph knows is followed when it drops its references.
    #[test]
    fn unowned_objects_are_passed_over_unless_known() {
        let mut g = Graph::default();
        let key = "/core/secrets/local/root/default/a";
        let plain = object(key, "root", 2, r#"{"metadata":{"uid":"a"},"data":{}}"#);
        assert!(g.apply_change(CacheEventType::Added, &plain).is_empty());
        assert_eq!(g.tracked(), 0);
        let owned_now = object(key, "root", 3, &owned("a", "o1", true));
        assert_eq!(
            g.apply_change(CacheEventType::Modified, &owned_now),
            vec![key.to_string()]
        );
        assert_eq!(g.tracked(), 1);
        let freed = object(key, "root", 4, r#"{"metadata":{"uid":"a"}}"#);
        g.apply_change(CacheEventType::Modified, &freed);
        assert_eq!(g.tracked(), 0);
        assert!(g.dependents_of(&name("root"), "o1").is_empty());
        // A deleting object with a finalizer of the collector's is work, owners or not.
        let orphaning = object(
            "/core/configmaps/local/root/default/o",
            "root",
            5,
            r#"{"metadata":{"uid":"o1","deletionTimestamp":"t","finalizers":["orphan"]}}"#,
        );
        assert_eq!(
            g.apply_change(CacheEventType::Modified, &orphaning),
            vec![orphaning.key.clone()]
        );
    }

    #[test]
    fn indexes_dependents_per_cluster_and_owner() {
        let mut g = Graph::default();
        let a = object(
            "/core/secrets/local/root/default/a",
            "root",
            2,
            &owned("a", "o1", true),
        );
        let b = object(
            "/core/secrets/local/other/default/b",
            "other",
            3,
            &owned("b", "o1", false),
        );
        assert_eq!(upsert(&mut g, &a), vec![a.key.clone()]);
        upsert(&mut g, &b);
        assert_eq!(
            g.dependents_of(&name("root"), "o1"),
            vec![(a.key.clone(), true)]
        );
        assert_eq!(
            g.dependents_of(&name("other"), "o1"),
            vec![(b.key.clone(), false)]
        );
        assert!(g.dependents_of(&name("root"), "o2").is_empty());
        // The same state again is no news; an older one is ignored.
        assert!(upsert(&mut g, &a).is_empty());
        let stale = object(&a.key, "root", 1, r#"{"metadata":{"uid":"a"}}"#);
        assert!(upsert(&mut g, &stale).is_empty());
        assert_eq!(g.tracked(), 2);
    }

    #[test]
    fn dropping_a_reference_wakes_an_owner_in_foreground() {
        let mut g = Graph::default();
        let owner = object(
            "/core/configmaps/local/root/default/o",
            "root",
            2,
            r#"{"metadata":{"uid":"o1","deletionTimestamp":"t","finalizers":["foregroundDeletion"]}}"#,
        );
        assert_eq!(upsert(&mut g, &owner), vec![owner.key.clone()]);
        let dep = object(
            "/core/secrets/local/root/default/a",
            "root",
            3,
            &owned("a", "o1", true),
        );
        upsert(&mut g, &dep);
        let freed = object(&dep.key, "root", 4, r#"{"metadata":{"uid":"a"}}"#);
        assert_eq!(upsert(&mut g, &freed), vec![owner.key.clone()]);
        assert_eq!(g.tracked(), 0);
    }

    #[test]
    fn deleting_an_owner_wakes_its_dependents() {
        let mut g = Graph::default();
        let dep = object(
            "/core/secrets/local/root/default/a",
            "root",
            3,
            &owned("a", "o1", false),
        );
        upsert(&mut g, &dep);
        let owner = object(
            "/core/configmaps/local/root/default/o",
            "root",
            4,
            r#"{"metadata":{"uid":"o1"}}"#,
        );
        let meta = Meta::parse(&owner.json.to_bytes()).expect("metadata");
        assert_eq!(g.remove(&owner, &meta), vec![dep.key.clone()]);
    }
}
