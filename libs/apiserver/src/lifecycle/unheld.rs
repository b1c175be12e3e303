//! Which objects of a logical cluster being deleted can go several to a store write: those nothing
//! holds (no finalizer, no kind-specific hold, not already going), and a namespace together with
//! or after the last of its content, when nothing holds any of it. A namespace's own `kubernetes`
//! finalizer only waits for its content, so it does not hold it here.
//!
//! Each write deletes at most one object of a resource: etcd gives one revision to all deletions
//! of a write, and a client resuming a watch after that revision would miss the rest of them.

use std::collections::{HashMap, HashSet};

use kcp_store::{MAX_WRITE_ALL, Revision, Write};

/// One object of the logical cluster, as the plan needs it.
pub(super) struct Candidate<'a> {
    pub key: &'a str,
    pub revision: Revision,
    /// Its resource's key prefix: objects of one resource share it.
    pub resource: &'a str,
    /// The namespace it lives in, or its own name if it is a namespace.
    pub namespace: Option<&'a str>,
    pub is_namespace: bool,
    /// Something (a finalizer, a deletion under way, its kind) keeps it from going at once.
    pub held: bool,
}

/// The deletions, write by write, to run in order (a namespace never before its content), then
/// `finally`: writes of the caller's, each with its resource's key prefix, joined to the last
/// write when it has room and none of their resources, else in a write of their own after it.
pub(super) fn plan(candidates: &[Candidate<'_>], finally: &[(&str, Write)]) -> Vec<Vec<Write>> {
    let held_namespaces: HashSet<&str> = candidates
        .iter()
        .filter(|c| c.held)
        .filter_map(|c| c.namespace)
        .collect();
    let mut writes: Vec<Batch<'_>> = Vec::new();
    // The last write holding content of each namespace.
    let mut last_of: HashMap<&str, usize> = HashMap::new();
    for c in candidates.iter().filter(|c| !c.held && !c.is_namespace) {
        let at = place(&mut writes, c, 0);
        if let Some(ns) = c.namespace {
            let last = last_of.entry(ns).or_insert(at);
            *last = (*last).max(at);
        }
    }
    for c in candidates.iter().filter(|c| c.is_namespace && !c.held) {
        let Some(name) = c.namespace else { continue };
        if held_namespaces.contains(name) {
            continue;
        }
        place(&mut writes, c, last_of.get(name).copied().unwrap_or(0));
    }
    if !finally.is_empty() {
        let joins = writes.last().is_some_and(|w| {
            w.items.len() + finally.len() <= MAX_WRITE_ALL
                && finally.iter().all(|(r, _)| !w.resources.contains(r))
        });
        if !joins {
            writes.push(Batch::default());
        }
        if let Some(last) = writes.last_mut() {
            last.items.extend(finally.iter().map(|(_, w)| w.clone()));
        }
    }
    writes.into_iter().map(|w| w.items).collect()
}

#[derive(Default)]
struct Batch<'a> {
    resources: HashSet<&'a str>,
    items: Vec<Write>,
}

/// Puts `c` in the first write from `from` on with room and none of its resource; answers which.
fn place<'a>(writes: &mut Vec<Batch<'a>>, c: &Candidate<'a>, from: usize) -> usize {
    let found = (from..writes.len()).find(|&i| {
        writes[i].items.len() < MAX_WRITE_ALL && !writes[i].resources.contains(c.resource)
    });
    let at = found.unwrap_or_else(|| {
        writes.resize_with(writes.len().max(from) + 1, Batch::default);
        writes.len() - 1
    });
    writes[at].resources.insert(c.resource);
    writes[at].items.push(Write::Delete {
        key: c.key.to_string(),
        expected: c.revision,
    });
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object<'a>(key: &'a str, resource: &'a str, ns: Option<&'a str>) -> Candidate<'a> {
        Candidate {
            key,
            revision: 1,
            resource,
            namespace: ns,
            is_namespace: false,
            held: false,
        }
    }

    fn namespace(key: &str) -> Candidate<'_> {
        Candidate {
            key,
            revision: 1,
            resource: "ns",
            namespace: key.rsplit('/').next(),
            is_namespace: true,
            held: false,
        }
    }

    fn keys(plan: &[Vec<Write>]) -> Vec<Vec<&str>> {
        plan.iter()
            .map(|w| w.iter().map(Write::key).collect())
            .collect()
    }

    #[test]
    fn an_empty_workspace_goes_in_two_writes() {
        let objects = [
            namespace("ns/default"),
            namespace("ns/kube-system"),
            object("sa/default/default", "sa", Some("default")),
            object("sa/kube-system/default", "sa", Some("kube-system")),
            object("cm/default/root-ca", "cm", Some("default")),
            object("cm/kube-system/root-ca", "cm", Some("kube-system")),
            object("crb/admin", "crb", None),
        ];
        assert_eq!(
            keys(&plan(&objects, &[])),
            [
                vec![
                    "sa/default/default",
                    "cm/default/root-ca",
                    "crb/admin",
                    "ns/default"
                ],
                vec![
                    "sa/kube-system/default",
                    "cm/kube-system/root-ca",
                    "ns/kube-system"
                ],
            ]
        );
    }

    #[test]
    fn the_callers_writes_join_the_last_write() {
        let release = |key: &str| Write::Delete {
            key: key.into(),
            expected: 1,
        };
        let objects = [namespace("ns/a"), object("cm/a/1", "cm", Some("a"))];
        let finally = [("lc", release("lc/cluster")), ("ws", release("ws/a"))];
        assert_eq!(
            keys(&plan(&objects, &finally)),
            [vec!["cm/a/1", "ns/a", "lc/cluster", "ws/a"]]
        );
        // Nothing else to delete: they are the only write.
        assert_eq!(keys(&plan(&[], &finally)), [vec!["lc/cluster", "ws/a"]]);
        // Their resource is in the last write: a write of their own.
        let finally = [("cm", release("cm/a/2"))];
        assert_eq!(
            keys(&plan(&objects, &finally)),
            [vec!["cm/a/1", "ns/a"], vec!["cm/a/2"]]
        );
    }

    #[test]
    fn a_namespace_never_goes_before_its_content() {
        let objects = [
            object("cm/a/1", "cm", Some("a")),
            object("cm/a/2", "cm", Some("a")),
            object("cm/a/3", "cm", Some("a")),
            namespace("ns/a"),
            namespace("ns/b"),
        ];
        assert_eq!(
            keys(&plan(&objects, &[])),
            [
                vec!["cm/a/1", "ns/b"],
                vec!["cm/a/2"],
                vec!["cm/a/3", "ns/a"]
            ]
        );
    }

    #[test]
    fn held_objects_stay_and_so_do_their_namespaces() {
        let mut held = object("cm/a/held", "cm", Some("a"));
        held.held = true;
        let mut held_ns = namespace("ns/c");
        held_ns.held = true;
        let objects = [
            held,
            object("cm/a/free", "cm", Some("a")),
            object("sa/c/free", "sa", Some("c")),
            namespace("ns/a"),
            held_ns,
        ];
        assert_eq!(keys(&plan(&objects, &[])), [vec!["cm/a/free", "sa/c/free"]]);
    }

    #[test]
    fn writes_stay_within_the_store_limit() {
        let names: Vec<String> = (0..MAX_WRITE_ALL + 1).map(|i| format!("r{i}/x")).collect();
        let objects: Vec<_> = names.iter().map(|n| object(n, n.as_str(), None)).collect();
        let sizes: Vec<usize> = plan(&objects, &[]).iter().map(Vec::len).collect();
        assert_eq!(sizes, [MAX_WRITE_ALL, 1]);
    }
}
