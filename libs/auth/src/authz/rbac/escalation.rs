//! RBAC escalation prevention: a user may only grant (in a Role, a ClusterRole or through a
//! binding) rights they already hold, as Kubernetes' RBAC registry enforces it.
//!
//! - [`covers`]: which of the wanted rules the held rules leave uncovered, judged on the rules
//!   broken down to one verb, group, resource and name each ([`breakdown_rule`]);
//! - [`compact_rules`] and [`compact_string`]: the uncovered rules as Kubernetes lists them;
//! - [`RbacIndex::confirm_no_escalation`]: the check against a user's rules in one LC and
//!   namespace, refused with Kubernetes' message ([`EscalationError`]).
//!
//! The exceptions (`system:masters`, `escalate` on the role, `bind` on the referenced role) ask
//! the authorizer chain and are the caller's (the API server's admission).

use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;

use kcp_apimachinery::field_error::go_quote;
use serde_json::Value;

use crate::authn::UserInfo;
use crate::authz::rbac::index::RbacIndex;
use crate::authz::rbac::object::parse_rules;
use crate::authz::rbac::rule::{ALL, PolicyRule};

/// The rules a ClusterRole's `aggregationRule` demands of its author: it can gather anything.
pub fn full_authority() -> [PolicyRule; 2] {
    let all = || vec![ALL.to_string()];
    [
        PolicyRule {
            verbs: all(),
            api_groups: all(),
            resources: all(),
            ..PolicyRule::default()
        },
        PolicyRule {
            verbs: all(),
            non_resource_urls: all(),
            ..PolicyRule::default()
        },
    ]
}

/// The `rules` of a Role or ClusterRole as written (absent: none).
pub fn rules_of(object: &Value) -> Result<Vec<PolicyRule>, String> {
    parse_rules(object)
}

/// The equivalent rules of at most one verb, group, resource and resource name (or one verb and
/// non-resource URL) each, in Kubernetes' order.
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| vec![s.clone()];
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..PolicyRule::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    out.extend(rule.resource_names.iter().map(|name| PolicyRule {
                        resource_names: one(name),
                        ..base.clone()
                    }));
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..PolicyRule::default()
            });
        }
    }
    out
}

/// The broken-down parts of `servant` that no rule of `owner` covers (empty: all covered).
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant
        .iter()
        .flat_map(breakdown_rule)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect()
}

/// Whether `owner` covers `sub`, a rule of [`breakdown_rule`]. Unlike request matching, an
/// owner's `res/*` is no pattern and an owner naming resources never covers an unnamed rule.
pub fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs
        && groups
        && resources_cover(&owner.resources, &sub.resources)
        && names
        && urls_cover(&owner.non_resource_urls, &sub.non_resource_urls)
}

fn has(set: &[String], wanted: &str) -> bool {
    set.iter().any(|s| s == wanted)
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

/// `*` covers everything, `*/sub` any resource's `sub`, anything else only itself.
fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    has(owner, ALL)
        || wanted.iter().all(|path| {
            has(owner, path)
                || path
                    .split_once('/')
                    .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
        })
}

/// An owner URL covers itself and, ending in `*`, every path with its prefix.
fn urls_cover(owner: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|path| {
        owner
            .iter()
            .any(|o| o == path || (o.ends_with('*') && path.starts_with(o.trim_end_matches('*'))))
    })
}

/// Merges rules of one group, one resource and at most one name that differ only in their
/// verbs (what [`covers`] answers, made readable). Other rules are kept as they are.
pub fn compact_rules(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut compacted = Vec::with_capacity(rules.len());
    let mut simple: Vec<PolicyRule> = Vec::new();
    let mut by_key: HashMap<(String, String, Option<String>), usize> = HashMap::new();
    for rule in rules {
        let Some(key) = simple_key(&rule) else {
            compacted.push(rule);
            continue;
        };
        match by_key.get(&key) {
            Some(&i) => simple[i].verbs.extend(rule.verbs),
            None => {
                by_key.insert(key, simple.len());
                simple.push(rule);
            }
        }
    }
    compacted.extend(simple);
    compacted
}

/// (group, resource, name) of a rule with exactly one group and resource, at most one name and
/// no non-resource URLs.
fn simple_key(rule: &PolicyRule) -> Option<(String, String, Option<String>)> {
    match (
        rule.api_groups.as_slice(),
        rule.resources.as_slice(),
        rule.resource_names.as_slice(),
        rule.non_resource_urls.is_empty(),
    ) {
        ([group], [resource], names, true) if names.len() <= 1 => {
            Some((group.clone(), resource.clone(), names.first().cloned()))
        }
        _ => None,
    }
}

/// A rule as Kubernetes prints it in escalation messages:
/// `{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}`, empty lists left out.
pub fn compact_string(rule: &PolicyRule) -> String {
    let parts: Vec<String> = [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ]
    .into_iter()
    .filter(|(_, list)| !list.is_empty())
    .map(|(field, list)| format!("{field}:{}", go_quote_list(list)))
    .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_quote_list(list: &[String]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}

/// A grant of rights the user does not hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct EscalationError {
    pub user: String,
    pub groups: Vec<String>,
    /// The uncovered rules, compacted, as [`compact_string`]s: sorted, without duplicates.
    pub missing: Vec<String>,
    /// What went wrong resolving the user's own rules (they may hold more than was seen).
    pub resolution_errors: Vec<String>,
}

impl EscalationError {
    fn new(user: &UserInfo, missing: Vec<PolicyRule>, resolution_errors: Vec<String>) -> Self {
        let missing: BTreeSet<String> = compact_rules(missing).iter().map(compact_string).collect();
        EscalationError {
            user: user.name.clone(),
            groups: user.groups.clone(),
            missing: missing.into_iter().collect(),
            resolution_errors,
        }
    }

    /// Kubernetes' words for the refusal.
    fn message(&self) -> String {
        let mut message = format!(
            "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
            go_quote(&self.user),
            go_quote_list(&self.groups),
            self.missing.join("\n")
        );
        if !self.resolution_errors.is_empty() {
            // Kubernetes prints a list holding one aggregate of the errors.
            message.push_str(&format!(
                "; resolution errors: [{}]",
                aggregate(&self.resolution_errors)
            ));
        }
        message
    }
}

/// Several errors as apimachinery's aggregate prints them: one alone, else `[a, b]` without
/// repeated messages.
fn aggregate(errors: &[String]) -> String {
    let mut seen = BTreeSet::new();
    let unique: Vec<&str> = errors
        .iter()
        .filter(|e| seen.insert(e.as_str()))
        .map(String::as_str)
        .collect();
    match unique.as_slice() {
        [one] => (*one).to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

impl RbacIndex {
    /// Refuses `rules` unless `user` holds every one of them in `cluster` and `namespace`
    /// (empty: cluster-wide rules only), as Kubernetes' `ConfirmNoEscalation`.
    pub fn confirm_no_escalation(
        &self,
        user: &UserInfo,
        cluster: &str,
        namespace: &str,
        rules: &[PolicyRule],
    ) -> Result<(), EscalationError> {
        let wanted: Vec<PolicyRule> = rules.iter().flat_map(breakdown_rule).collect();
        let mut covered = vec![false; wanted.len()];
        let mut left = wanted.len();
        if left == 0 {
            return Ok(());
        }
        // Each held rule is matched as it is visited, so the user's rules are never copied and
        // the walk stops once everything is covered (errors matter only when something is not).
        let errors = self.visit_rules(user, cluster, namespace, |_, owner| {
            for (sub, done) in wanted.iter().zip(covered.iter_mut()) {
                if !*done && rule_covers(owner, sub) {
                    *done = true;
                    left -= 1;
                }
            }
            if left == 0 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        if left == 0 {
            return Ok(());
        }
        let missing = wanted
            .into_iter()
            .zip(covered)
            .filter(|(_, done)| !done)
            .map(|(rule, _)| rule)
            .collect();
        Err(EscalationError::new(user, missing, errors))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(v: Value) -> PolicyRule {
        PolicyRule::from_json(&v).unwrap()
    }

    fn rules(v: Value) -> Vec<PolicyRule> {
        v.as_array().unwrap().iter().cloned().map(rule).collect()
    }

    /// Kubernetes' `Covers` table, in part, plus the cases this port could get wrong.
    #[test]
    fn covers_cases() {
        let cases = [
            // exact and partial verbs
            (
                json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
                json!([]),
            ),
            (
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
                json!([{"verbs": ["get", "delete"], "apiGroups": [""], "resources": ["pods"]}]),
                json!([{"verbs": ["delete"], "apiGroups": [""], "resources": ["pods"]}]),
            ),
            // stars
            (
                json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
                json!([{"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments/scale"],
                        "resourceNames": ["x"]}]),
                json!([]),
            ),
            // a wanted star is only covered by a star
            (
                json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]),
                json!([{"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}]),
                json!([{"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}]),
            ),
            // */sub covers any resource's sub, not the resource
            (
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["*/status"]}]),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/status", "pods"]}]),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
            ),
            // res/* is no pattern
            (
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/*"]}]),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/status"]}]),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods/status"]}]),
            ),
            // names: an owner naming resources covers only those names
            (
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"],
                        "resourceNames": ["a"]}]),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"],
                        "resourceNames": ["a", "b"]}]),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"],
                        "resourceNames": ["b"]}]),
            ),
            (
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"],
                        "resourceNames": ["a"]}]),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]),
            ),
            // non-resource URLs: prefixes
            (
                json!([{"verbs": ["get"], "nonResourceURLs": ["/api/*"]}]),
                json!([{"verbs": ["get"], "nonResourceURLs": ["/api/v1", "/apis", "/api/"]}]),
                json!([{"verbs": ["get"], "nonResourceURLs": ["/apis"]}]),
            ),
            // a resource rule does not cover a URL rule, nor the other way round
            (
                json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
                json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]),
                json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]),
            ),
            (
                json!([{"verbs": ["*"], "nonResourceURLs": ["*"]}]),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
            ),
            // groups
            (
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
                json!([{"verbs": ["get"], "apiGroups": ["", "apps"], "resources": ["pods"]}]),
                json!([{"verbs": ["get"], "apiGroups": ["apps"], "resources": ["pods"]}]),
            ),
            // nothing wanted
            (json!([]), json!([{"verbs": ["get"]}]), json!([])),
        ];
        for (i, (owner, servant, missing)) in cases.into_iter().enumerate() {
            assert_eq!(
                covers(&rules(owner), &rules(servant)),
                rules(missing),
                "case {i}"
            );
        }
    }

    #[test]
    fn breakdown_order() {
        let parts = breakdown_rule(&rule(json!({
            "verbs": ["get", "list"], "apiGroups": ["a", "b"], "resources": ["r"],
            "resourceNames": ["n1", "n2"], "nonResourceURLs": ["/x"]
        })));
        let shown: Vec<String> = parts.iter().map(compact_string).collect();
        assert_eq!(
            shown,
            [
                r#"{APIGroups:["a"], Resources:["r"], ResourceNames:["n1"], Verbs:["get"]}"#,
                r#"{APIGroups:["a"], Resources:["r"], ResourceNames:["n2"], Verbs:["get"]}"#,
                r#"{APIGroups:["a"], Resources:["r"], ResourceNames:["n1"], Verbs:["list"]}"#,
                r#"{APIGroups:["a"], Resources:["r"], ResourceNames:["n2"], Verbs:["list"]}"#,
                r#"{APIGroups:["b"], Resources:["r"], ResourceNames:["n1"], Verbs:["get"]}"#,
                r#"{APIGroups:["b"], Resources:["r"], ResourceNames:["n2"], Verbs:["get"]}"#,
                r#"{APIGroups:["b"], Resources:["r"], ResourceNames:["n1"], Verbs:["list"]}"#,
                r#"{APIGroups:["b"], Resources:["r"], ResourceNames:["n2"], Verbs:["list"]}"#,
                r#"{NonResourceURLs:["/x"], Verbs:["get"]}"#,
                r#"{NonResourceURLs:["/x"], Verbs:["list"]}"#,
            ]
        );
    }

    #[test]
    fn compaction() {
        let compacted = compact_rules(rules(json!([
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
            {"verbs": ["get"], "nonResourceURLs": ["/x"]},
            {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]},
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]},
            {"verbs": ["delete"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]},
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["b"]},
            {"verbs": ["get"], "apiGroups": ["", "apps"], "resources": ["pods"]},
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a", "b"]},
        ])));
        assert_eq!(
            compacted,
            rules(json!([
                {"verbs": ["get"], "nonResourceURLs": ["/x"]},
                {"verbs": ["get"], "apiGroups": ["", "apps"], "resources": ["pods"]},
                {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a", "b"]},
                {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]},
                {"verbs": ["get", "delete"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]},
                {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["b"]},
            ]))
        );
    }

    #[test]
    fn compact_strings() {
        assert_eq!(
            compact_string(&rule(json!({"verbs": ["get", "list"], "apiGroups": [""],
                                        "resources": ["secrets"]}))),
            r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}"#
        );
        assert_eq!(
            compact_string(&rule(
                json!({"verbs": ["get"], "nonResourceURLs": ["/a\"b"]})
            )),
            r#"{NonResourceURLs:["/a\"b"], Verbs:["get"]}"#
        );
        assert_eq!(compact_string(&PolicyRule::default()), "{}");
    }

    fn alice() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            groups: vec!["team".into(), "system:authenticated".into()],
            ..UserInfo::default()
        }
    }

    fn index(objects: Value) -> RbacIndex {
        let index = RbacIndex::new();
        for object in objects.as_array().unwrap() {
            index.apply_object("lc", object).unwrap();
        }
        index
    }

    #[test]
    fn confirm_against_the_index() {
        let index = index(json!([
            {"kind": "Role", "metadata": {"name": "cm", "namespace": "ns"},
             "rules": [{"verbs": ["*"], "apiGroups": [""], "resources": ["configmaps"]}]},
            {"kind": "RoleBinding", "metadata": {"name": "cm", "namespace": "ns"},
             "roleRef": {"kind": "Role", "name": "cm"},
             "subjects": [{"kind": "Group", "name": "team"}]},
            {"kind": "RoleBinding", "metadata": {"name": "dangling", "namespace": "ns"},
             "roleRef": {"kind": "ClusterRole", "name": "gone"},
             "subjects": [{"kind": "User", "name": "alice"}]},
        ]));
        let wanted = rules(json!([
            {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]},
        ]));
        assert_eq!(
            index.confirm_no_escalation(&alice(), "lc", "ns", &wanted),
            Ok(())
        );
        // Not in another namespace, nor cluster-wide, nor in another LC.
        for (cluster, ns) in [("lc", "other"), ("lc", ""), ("other-lc", "ns")] {
            assert!(
                index
                    .confirm_no_escalation(&alice(), cluster, ns, &wanted)
                    .is_err()
            );
        }
        let wanted = rules(json!([
            {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps", "secrets"]},
            {"verbs": ["get"], "nonResourceURLs": ["/metrics"]},
        ]));
        let err = index
            .confirm_no_escalation(&alice(), "lc", "ns", &wanted)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "user \"alice\" (groups=[\"team\" \"system:authenticated\"]) is attempting to grant \
             RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}\n\
             {NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}; resolution errors: \
             [clusterrole.rbac.authorization.k8s.io \"gone\" not found]"
        );
        // Nothing wanted is always held.
        assert_eq!(
            index.confirm_no_escalation(&UserInfo::default(), "lc", "", &[]),
            Ok(())
        );
    }

    #[test]
    fn full_authority_is_cluster_admin() {
        let index = RbacIndex::new();
        crate::authz::rbac::bootstrap::load(&index).unwrap();
        let admin = UserInfo {
            name: "admin".into(),
            groups: vec![crate::authz::KCP_ADMIN.into()],
            ..UserInfo::default()
        };
        assert_eq!(
            index.confirm_no_escalation(&admin, "any-lc", "", &full_authority()),
            Ok(())
        );
        assert!(
            index
                .confirm_no_escalation(&alice(), "any-lc", "", &full_authority())
                .is_err()
        );
    }

    #[test]
    fn role_refs_resolve_through_the_bootstrap_lc() {
        let index = RbacIndex::new();
        crate::authz::rbac::bootstrap::load(&index).unwrap();
        let cluster_admin = crate::authz::rbac::RoleRef {
            kind: "ClusterRole".into(),
            name: "cluster-admin".into(),
        };
        assert_eq!(
            index.role_ref_rules("any-lc", "", &cluster_admin).unwrap(),
            full_authority().to_vec()
        );
        let missing = crate::authz::rbac::RoleRef {
            kind: "Role".into(),
            name: "nope".into(),
        };
        assert_eq!(
            index.role_ref_rules("any-lc", "ns", &missing).unwrap_err(),
            "role.rbac.authorization.k8s.io \"nope\" not found"
        );
    }

    #[test]
    fn aggregated_errors() {
        assert_eq!(aggregate(&["a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "b".into(), "a".into()]), "[a, b]");
    }
}
