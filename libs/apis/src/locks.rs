//! Who holds each group/resource of a logical cluster: one APIBinding, or a CRD. kcp records this
//! in the `internal.apis.kcp.io/resource-bindings` annotation of the LC's LogicalCluster and
//! takes it by optimistic writes; here a binding and a CRD of one LC always meet on the same
//! shard, so the table is held in memory under one lock, which both CRD admission and the
//! binding controller take before they commit to a resource. The annotation is written from it
//! for clients that read it ([`ResourceLocks::annotation`]).
//!
//! After a restart the table starts empty: what the stored bindings' `boundResources` and the
//! stored CRDs say is checked beside it by both sides.

use std::time::{Duration, Instant};

use kcp_apimachinery::logical_cluster::LogicalClusterName;
use serde_json::{Value, json};

use crate::by_cluster::{self, ByCluster, ByName};

/// The annotation kcp keeps the locks in.
pub const LOCK_ANNOTATION: &str = "internal.apis.kcp.io/resource-bindings";

/// A CRD claim whose CRD never appeared (its create failed after admission) lapses after this.
pub const CRD_CLAIM_GRACE: Duration = Duration::from_secs(10);

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Holder {
    Binding(String),
    /// Claimed by the admission of a CRD create at this time.
    Crd {
        at: Instant,
        stamp: String,
    },
}

/// `<plural>.<group>`, or `<plural>` in the core group, as kcp keys the annotation.
pub fn resource_key(group: &str, plural: &str) -> String {
    match group {
        "" => plural.to_string(),
        g => format!("{plural}.{g}"),
    }
}

#[derive(Default)]
pub struct ResourceLocks {
    clusters: parking_lot::Mutex<ByCluster<Holder>>,
}

impl ResourceLocks {
    /// A CRD create of `resource` in `cluster`: refused with the holding binding's name, else
    /// recorded. `binding_exists` says whether a binding named so is still there;
    /// `bound_elsewhere` names a stored binding that already binds the resource.
    pub fn claim_for_crd(
        &self,
        cluster: &LogicalClusterName,
        resource: &str,
        stamp: &str,
        binding_exists: impl Fn(&str) -> bool,
        bound_elsewhere: Option<String>,
    ) -> Result<(), String> {
        let mut clusters = self.clusters.lock();
        let locks = by_cluster::table(&mut clusters, cluster);
        Self::crd_refused(locks, resource, binding_exists, bound_elsewhere)?;
        let holder = Holder::Crd {
            at: Instant::now(),
            stamp: stamp.to_string(),
        };
        locks.insert(resource.to_string(), holder);
        Ok(())
    }

    /// What [`Self::claim_for_crd`] would answer, taking nothing (a dry run).
    pub fn check_for_crd(
        &self,
        cluster: &LogicalClusterName,
        resource: &str,
        binding_exists: impl Fn(&str) -> bool,
        bound_elsewhere: Option<String>,
    ) -> Result<(), String> {
        let mut clusters = self.clusters.lock();
        match clusters.get_mut(cluster) {
            Some(locks) => Self::crd_refused(locks, resource, binding_exists, bound_elsewhere),
            None => bound_elsewhere.map_or(Ok(()), Err),
        }
    }

    fn crd_refused(
        locks: &mut ByName<Holder>,
        resource: &str,
        binding_exists: impl Fn(&str) -> bool,
        bound_elsewhere: Option<String>,
    ) -> Result<(), String> {
        if let Some(Holder::Binding(name)) = locks.get(resource)
            && binding_exists(name)
        {
            return Err(name.clone());
        }
        if let Some(name) = bound_elsewhere {
            locks.insert(resource.to_string(), Holder::Binding(name.clone()));
            return Err(name);
        }
        Ok(())
    }

    /// Binding `me` takes `resource` in `cluster`, unless another holds it: a binding that still
    /// exists, a CRD that exists (`crd_exists`), or a CRD create admitted moments ago. The holder
    /// is described as kcp describes it.
    pub fn claim_for_binding(
        &self,
        cluster: &LogicalClusterName,
        resource: &str,
        me: &str,
        binding_exists: impl Fn(&str) -> bool,
        crd_exists: bool,
    ) -> Result<(), String> {
        let mut clusters = self.clusters.lock();
        let locks = by_cluster::table(&mut clusters, cluster);
        match locks.get(resource) {
            Some(Holder::Binding(name)) if name == me => return Ok(()),
            Some(Holder::Binding(name)) if binding_exists(name) => {
                return Err(format!("APIBinding {name}"));
            }
            Some(Holder::Crd { at, .. }) if crd_exists || at.elapsed() < CRD_CLAIM_GRACE => {
                return Err("CRD".to_string());
            }
            _ if crd_exists => return Err("CRD".to_string()),
            _ => {}
        }
        locks.insert(resource.to_string(), Holder::Binding(me.to_string()));
        Ok(())
    }

    /// Drops what binding `me` holds in `cluster` (it is gone).
    pub fn release_binding(&self, cluster: &LogicalClusterName, me: &str) {
        let mut clusters = self.clusters.lock();
        by_cluster::retain(
            &mut clusters,
            cluster,
            |_, h| !matches!(h, Holder::Binding(name) if name == me),
        );
    }

    /// The annotation's value for `cluster`: the bindings' entries, and `crds` (the resources of
    /// its stored CRDs) as CRD entries; a CRD claim still within its grace keeps its expiry.
    pub fn annotation(&self, cluster: &LogicalClusterName, crds: &[String]) -> Value {
        let mut out = serde_json::Map::new();
        for r in crds {
            out.insert(r.clone(), json!({"c": true}));
        }
        let clusters = self.clusters.lock();
        for (resource, holder) in clusters.get(cluster).into_iter().flat_map(|m| m.iter()) {
            match holder {
                Holder::Binding(name) => {
                    out.insert(resource.clone(), json!({"n": name}));
                }
                Holder::Crd { at, stamp } if at.elapsed() < CRD_CLAIM_GRACE => {
                    out.entry(resource.clone())
                        .or_insert_with(|| json!({"c": true, "e": stamp}));
                }
                Holder::Crd { .. } => {}
            }
        }
        Value::Object(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn lc() -> LogicalClusterName {
        LogicalClusterName::parse("consumer").unwrap()
    }

    #[test]
    fn a_binding_holds_off_a_crd_and_the_reverse() {
        let locks = ResourceLocks::default();
        let exists = |_: &str| true;
        locks
            .claim_for_binding(&lc(), "cowboys.wildwest.dev", "cowboys", exists, false)
            .unwrap();
        // Again for the same binding: still its own.
        locks
            .claim_for_binding(&lc(), "cowboys.wildwest.dev", "cowboys", exists, false)
            .unwrap();
        assert_eq!(
            locks.claim_for_crd(&lc(), "cowboys.wildwest.dev", "t", exists, None),
            Err("cowboys".to_string())
        );
        assert_eq!(
            locks.claim_for_binding(&lc(), "cowboys.wildwest.dev", "other", exists, false),
            Err("APIBinding cowboys".to_string())
        );
        // A CRD of another resource is fine and holds that one off.
        locks
            .claim_for_crd(&lc(), "horses.wildwest.dev", "t", exists, None)
            .unwrap();
        assert_eq!(
            locks.claim_for_binding(&lc(), "horses.wildwest.dev", "cowboys", exists, false),
            Err("CRD".to_string())
        );
        assert_eq!(
            locks.annotation(&lc(), &[]),
            json!({"cowboys.wildwest.dev": {"n": "cowboys"}, "horses.wildwest.dev": {"c": true, "e": "t"}})
        );
        locks.release_binding(&lc(), "cowboys");
        locks
            .claim_for_crd(&lc(), "cowboys.wildwest.dev", "t", exists, None)
            .unwrap();
    }

    #[test]
    fn a_holder_that_is_gone_holds_nothing() {
        let locks = ResourceLocks::default();
        locks
            .claim_for_binding(&lc(), "widgets", "old", |_| true, false)
            .unwrap();
        // The old binding was deleted without passing through the controller's release.
        locks
            .claim_for_crd(&lc(), "widgets", "t", |_| false, None)
            .unwrap();
        // A stored binding binding it already (seen after a restart) refuses the CRD.
        let fresh = ResourceLocks::default();
        assert_eq!(
            fresh.claim_for_crd(&lc(), "widgets", "t", |_| true, Some("b".into())),
            Err("b".to_string())
        );
        // An existing CRD refuses a binding whatever the table says.
        assert_eq!(
            ResourceLocks::default().claim_for_binding(&lc(), "widgets", "b", |_| true, true),
            Err("CRD".to_string())
        );
        assert_eq!(resource_key("", "configmaps"), "configmaps");
    }
}
