//! ClusterRole aggregation (`aggregationRule.clusterRoleSelectors`), computed in the index instead of by
//! a controller.
//!
//! Kubernetes' aggregation controller rewrites an aggregated ClusterRole's `rules` to the union of the
//! rules of the other ClusterRoles whose labels match any of its selectors, and re-runs when any of
//! those change, so aggregation is transitive (`admin` picks up `edit`, which picked up `view`). We
//! compute that fixed point directly: the rules of the non-aggregated roles reachable through the
//! selectors, deduplicated, in the controller's order (selector by selector, matched roles by name).
//! The aggregated role's own `rules` never count, as the controller overwrites them.
//!
//! Aggregation reads the ClusterRoles of one logical cluster only, with one exception, decided here:
//! when LC X binds a ClusterRole it does not have itself and which resolves to an aggregated role of
//! the bootstrap LC (`admin`, `edit`, `view`), the role also takes in X's own ClusterRoles that match
//! its selectors or those of the aggregated roles it takes in (so a role in X labelled
//! `rbac.authorization.k8s.io/aggregate-to-view: "true"` widens `view`, and through it `edit` and
//! `admin`, as if X's roles sat next to the bootstrap ones). This is what a CRD author expects from a
//! plain Kubernetes cluster, and it cannot leak across tenants: X's roles only widen roles bound in X,
//! for requests to X. The converse is not done: an aggregated role defined in X does not take in
//! bootstrap roles, which keeps X's computed rules independent of the bootstrap LC (a change there
//! would otherwise recompute every LC).

use std::collections::{BTreeMap, HashSet};

use kcp_apimachinery::selector::Selector;

use crate::authz::rbac::object::ClusterRole;
use crate::authz::rbac::rule::PolicyRule;

/// Recomputes the rules of every aggregated ClusterRole of one logical cluster.
pub(crate) fn recompute(roles: &mut BTreeMap<String, ClusterRole>) {
    let aggregated: Vec<String> = roles
        .iter()
        .filter(|(_, r)| r.selectors.is_some())
        .map(|(name, _)| name.clone())
        .collect();
    for name in aggregated {
        let (rules, selectors) = aggregate(roles, &name);
        if let Some(role) = roles.get_mut(&name) {
            role.aggregated = rules;
            role.aggregated_selectors = selectors;
        }
    }
}

/// The union of the rules of the non-aggregated roles reachable from `root` through selectors, and
/// the selectors of the aggregated roles met on the way (`root` included).
fn aggregate(
    roles: &BTreeMap<String, ClusterRole>,
    root: &str,
) -> (Vec<PolicyRule>, Vec<Selector>) {
    let mut visited: HashSet<&str> = HashSet::from([root]);
    let mut seen: HashSet<&PolicyRule> = HashSet::new();
    let mut out = Vec::new();
    let mut all_selectors: Vec<Selector> = Vec::new();
    // An explicit stack: selector chains are user data and may be long.
    let mut stack: Vec<&str> = vec![root];
    while let Some(name) = stack.pop() {
        let Some(role) = roles.get(name) else {
            continue;
        };
        match &role.selectors {
            Some(selectors) => {
                for selector in selectors {
                    if !all_selectors.contains(selector) {
                        all_selectors.push(selector.clone());
                    }
                }
                let children: Vec<&str> = matching(roles, selectors)
                    .filter(|(child, _)| visited.insert(child))
                    .map(|(child, _)| child)
                    .collect();
                stack.extend(children.into_iter().rev());
            }
            None => {
                for rule in &role.rules {
                    if seen.insert(rule) {
                        out.push(rule.clone());
                    }
                }
            }
        }
    }
    (out, all_selectors)
}

/// The roles matched by any of `selectors`, selector by selector, each in name order (a role matched
/// twice appears twice; callers deduplicate).
pub(crate) fn matching<'a>(
    roles: &'a BTreeMap<String, ClusterRole>,
    selectors: &'a [Selector],
) -> impl Iterator<Item = (&'a str, &'a ClusterRole)> + 'a {
    selectors.iter().flat_map(move |selector| {
        roles
            .iter()
            .filter(move |(_, role)| selector.matches(&role.labels))
            .map(|(name, role)| (name.as_str(), role))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use crate::authz::rbac::object::parse_cluster_role;
    use serde_json::{Value, json};

    fn roles(objects: &[(&str, Value)]) -> BTreeMap<String, ClusterRole> {
        let mut roles: BTreeMap<String, ClusterRole> = objects
            .iter()
            .map(|(name, v)| (name.to_string(), parse_cluster_role(v).unwrap()))
            .collect();
        recompute(&mut roles);
        roles
    }

    fn rule(resource: &str) -> Value {
        json!({"verbs": ["get"], "apiGroups": [""], "resources": [resource]})
    }

    fn resources(role: &ClusterRole) -> Vec<&str> {
        role.effective()
            .iter()
            .map(|r| r.resources[0].as_str())
            .collect()
    }

    #[test]
    fn transitive_and_deduplicated() {
        let roles = roles(&[
            (
                "admin",
                json!({"aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"to-admin": "true"}}]}, "rules": [rule("ignored")]}),
            ),
            (
                "edit",
                json!({"metadata": {"labels": {"to-admin": "true"}}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"to-edit": "true"}}]}}),
            ),
            (
                "a-admin-part",
                json!({"metadata": {"labels": {"to-admin": "true"}}, "rules": [rule("roles"), rule("secrets")]}),
            ),
            (
                "edit-part",
                json!({"metadata": {"labels": {"to-edit": "true"}}, "rules": [rule("secrets"), rule("configmaps")]}),
            ),
            (
                "unrelated",
                json!({"metadata": {"labels": {"to-edit": "false"}}, "rules": [rule("nope")]}),
            ),
        ]);
        assert_eq!(
            resources(&roles["admin"]),
            ["roles", "secrets", "configmaps"]
        );
        assert_eq!(resources(&roles["edit"]), ["secrets", "configmaps"]);
        assert_eq!(resources(&roles["unrelated"]), ["nope"]);
        assert_eq!(roles["admin"].aggregated_selectors.len(), 2);
        assert_eq!(roles["edit"].aggregated_selectors.len(), 1);
    }

    #[test]
    fn match_expressions_and_cycles() {
        let roles = roles(&[
            (
                "a",
                json!({"metadata": {"labels": {"tier": "x"}}, "aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [{"key": "tier", "operator": "In", "values": ["x", "y"]}]}]}}),
            ),
            (
                "b",
                json!({"metadata": {"labels": {"tier": "y"}}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"tier": "x"}}]}}),
            ),
            (
                "c",
                json!({"metadata": {"labels": {"tier": "y"}}, "rules": [rule("c")]}),
            ),
        ]);
        assert_eq!(resources(&roles["a"]), ["c"]);
        // b reaches c only through a: the cycle a <-> b still terminates.
        assert_eq!(resources(&roles["b"]), ["c"]);
    }

    #[test]
    fn empty_selector_list_aggregates_nothing() {
        let roles = roles(&[
            ("a", json!({"aggregationRule": {}, "rules": [rule("own")]})),
            ("b", json!({"rules": [rule("b")]})),
        ]);
        assert!(roles["a"].effective().is_empty());
    }
}
