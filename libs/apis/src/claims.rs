//! The permission claims every binding accepted, in memory for the admission that stamps claim
//! labels on every write ([`crate::admission::ClaimAdmission`]) and for the controller that
//! relabels existing objects when a binding's claims change. An object of a claimed group and
//! resource matching the claim's selector carries
//! `claimed.internal.apis.kcp.io/<export hash>` = `<claim hash>`
//! ([`kcp_api_types::apis::claims`]); an APIBinding also carries its own export's key with
//! kcp's fixed "reflexive" value.

use std::collections::{BTreeMap, HashSet};

use kcp_api_types::apis::claims::{
    CLAIM_LABEL_PREFIX, claim_key, claim_label_key, claim_label_value, reflexive_label_value,
};
use kcp_api_types::apis::{EXPORT_LABEL, GROUP};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::selector::label::{Selector, from_label_selector};
use kcp_apiserver::registry::keyspace;
use kcp_apiserver::registry::str_at as text;
use kcp_apiserver::watch_cache::WatchCache;
use parking_lot::RwLock;
use serde_json::{Value, json};

use crate::binding::Defs;
use crate::by_cluster::{self, ByCluster};

/// One accepted claim of a binding, with the label it stamps.
struct Accepted {
    group: String,
    resource: String,
    /// `None`: every object (`matchAll`).
    selector: Option<Selector>,
    key: String,
    value: String,
}

/// A binding's accepted claims as of its resourceVersion: the controller and the feed both set
/// them, and an older version never replaces a newer one.
struct OfBinding {
    revision: u64,
    accepted: Vec<Accepted>,
}

#[derive(Default)]
pub struct ClaimIndex {
    /// Per consumer cluster, by binding name.
    by_cluster: RwLock<ByCluster<OfBinding>>,
}

fn revision(binding: &Value) -> u64 {
    text(binding, "/metadata/resourceVersion")
        .parse()
        .unwrap_or_default()
}

/// kcp files `events.k8s.io` events under the core group's, so both versions label alike.
fn normalized<'a>(group: &'a str, resource: &str) -> &'a str {
    match (group, resource) {
        ("events.k8s.io", "events") => "",
        _ => group,
    }
}

/// The accepted claims of `binding` its export makes (`status.exportPermissionClaims`), once
/// the export is known (`status.apiExportClusterName`). kcp labels for every accepted claim, made
/// or not; a claim the export does not make grants nothing, so it labels nothing here.
fn accepted_of(binding: &Value) -> Vec<Accepted> {
    let export_cluster = text(binding, "/status/apiExportClusterName");
    let export_name = text(binding, "/spec/reference/export/name");
    if export_cluster.is_empty() || export_name.is_empty() {
        return Vec::new();
    }
    let key = claim_label_key(export_cluster, export_name);
    let exported: HashSet<String> = (binding.pointer("/status/exportPermissionClaims"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(claim_key)
        .collect();
    let claims = binding
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array);
    (claims.into_iter().flatten())
        .filter(|c| text(c, "/state") == "Accepted" && exported.contains(&claim_key(c)))
        .filter_map(|c| {
            let selector = match c.pointer("/selector") {
                Some(s) if s.get("matchAll").and_then(Value::as_bool) == Some(true) => None,
                Some(s) => {
                    let mut s = s.clone();
                    if let Some(o) = s.as_object_mut() {
                        o.remove("matchAll");
                    }
                    // A selector admission let through always parses; one that does not
                    // claims nothing.
                    Some(from_label_selector(&s).ok()?)
                }
                None => None,
            };
            Some(Accepted {
                group: text(c, "/group").to_string(),
                resource: text(c, "/resource").to_string(),
                selector,
                key: key.clone(),
                value: claim_label_value(c),
            })
        })
        .collect()
}

impl ClaimIndex {
    /// Binding `name` of `cluster` is now `binding` (`None`: gone).
    pub fn set_binding(&self, cluster: &LogicalClusterName, name: &str, binding: Option<&Value>) {
        let mut by_cluster = self.by_cluster.write();
        let Some(binding) = binding else {
            by_cluster::remove(&mut by_cluster, cluster, name);
            return;
        };
        let revision = revision(binding);
        let of_cluster = by_cluster::table(&mut by_cluster, cluster);
        if of_cluster.get(name).is_some_and(|b| b.revision > revision) {
            return;
        }
        let accepted = accepted_of(binding);
        of_cluster.insert(name.to_string(), OfBinding { revision, accepted });
    }

    /// Everything again from the cache (at start-up, before the first request, and on resyncs).
    pub fn rebuild(&self, cache: &WatchCache, defs: &Defs) {
        let mut fresh = ByCluster::new();
        for b in cache.list(keyspace(&defs.bindings).all_clusters(), None) {
            let Ok(binding) = b.value() else { continue };
            let of = OfBinding {
                revision: revision(&binding),
                accepted: accepted_of(&binding),
            };
            by_cluster::table(&mut fresh, &b.cluster).insert(b.name.clone(), of);
        }
        *self.by_cluster.write() = fresh;
    }

    /// The claim labels `object` (of `group`/`resource` in `cluster`) should carry.
    pub fn labels_for(
        &self,
        cluster: &str,
        group: &str,
        resource: &str,
        object: &Value,
    ) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::new();
        let group = normalized(group, resource);
        if let Some(of_cluster) = self.by_cluster.read().get(cluster) {
            for claim in of_cluster.values().flat_map(|b| &b.accepted) {
                if claim.group == group
                    && claim.resource == resource
                    && (claim.selector.as_ref()).is_none_or(|s| s.matches_object(object))
                {
                    labels.insert(claim.key.clone(), claim.value.clone());
                }
            }
        }
        if group == GROUP && resource == "apibindings" {
            let export_hash = (object.pointer("/metadata/labels"))
                .and_then(|l| l.get(EXPORT_LABEL))
                .and_then(Value::as_str);
            if let Some(hash) = export_hash {
                labels
                    .entry(format!("{CLAIM_LABEL_PREFIX}{hash}"))
                    .or_insert_with(reflexive_label_value);
            }
        }
        labels
    }
}

/// Makes `object`'s claim labels exactly `expected`; whether anything changed.
pub fn restamp(object: &mut Value, expected: &BTreeMap<String, String>) -> bool {
    let has_claim_labels = (object
        .pointer("/metadata/labels")
        .and_then(Value::as_object))
    .is_some_and(|l| l.keys().any(|k| k.starts_with(CLAIM_LABEL_PREFIX)));
    if expected.is_empty() && !has_claim_labels {
        return false;
    }
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return false;
    };
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    let Some(labels) = labels.as_object_mut() else {
        return false;
    };
    let before = labels.clone();
    labels.retain(|k, _| !k.starts_with(CLAIM_LABEL_PREFIX) || expected.contains_key(k));
    for (k, v) in expected {
        labels.insert(k.clone(), json!(v));
    }
    *labels != before
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    #[test]
    fn accepted_claims_label_what_their_selectors_match() {
        let index = ClaimIndex::default();
        let consumer = LogicalClusterName::parse("consumer").unwrap();
        let binding = json!({
            "spec": {
                "reference": {"export": {"name": "cowboys"}},
                "permissionClaims": [
                    {"group": "", "resource": "configmaps", "verbs": ["get"],
                     "selector": {"matchLabels": {"ride": "yes"}}, "state": "Accepted"},
                    {"group": "", "resource": "secrets", "verbs": ["get"],
                     "selector": {"matchAll": true}, "state": "Rejected"},
                ],
            },
            "status": {
                "apiExportClusterName": "provider",
                "exportPermissionClaims": [
                    {"group": "", "resource": "configmaps", "verbs": ["get"]},
                ],
            },
        });
        index.set_binding(&consumer, "cowboys", Some(&binding));
        let key = claim_label_key("provider", "cowboys");
        let riding = json!({"metadata": {"labels": {"ride": "yes"}}});
        let labels = index.labels_for("consumer", "", "configmaps", &riding);
        assert_eq!(labels.len(), 1);
        assert!(labels.contains_key(&key));
        let walking = json!({"metadata": {"labels": {"ride": "no"}}});
        assert!(
            index
                .labels_for("consumer", "", "configmaps", &walking)
                .is_empty()
        );
        assert!(
            index
                .labels_for("consumer", "", "secrets", &riding)
                .is_empty()
        );
        assert!(
            index
                .labels_for("elsewhere", "", "configmaps", &riding)
                .is_empty()
        );

        // Stamping adds the claim's label and drops a stale one, keeping the others.
        let mut object = json!({"metadata": {"labels": {
            "ride": "yes", "claimed.internal.apis.kcp.io/old": "x"}}});
        assert!(restamp(&mut object, &labels));
        assert_eq!(object["metadata"]["labels"]["ride"], "yes");
        assert!(
            object["metadata"]["labels"]
                .get("claimed.internal.apis.kcp.io/old")
                .is_none()
        );
        assert!(!restamp(&mut object, &labels));
        index.set_binding(&consumer, "cowboys", None);
        assert!(
            index
                .labels_for("consumer", "", "configmaps", &riding)
                .is_empty()
        );
    }

    #[test]
    fn a_binding_carries_its_exports_reflexive_label() {
        let index = ClaimIndex::default();
        let binding = json!({"metadata": {"labels": {EXPORT_LABEL: "abc"}}});
        let labels = index.labels_for("c", GROUP, "apibindings", &binding);
        assert_eq!(
            labels.get("claimed.internal.apis.kcp.io/abc"),
            Some(&reflexive_label_value())
        );
    }
}
