//! rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding, ClusterRoleBinding.

use serde_json::Value;

use super::{Obj, Result, head, label_selector, object_meta};
use crate::protobuf::types::{ClusterRole, PolicyRule, Role, RoleBinding};

fn policy_rule(r: &PolicyRule) -> Value {
    Obj::default()
        .strings_or_null("verbs", &r.verbs)
        .strings("apiGroups", &r.api_groups)
        .strings("resources", &r.resources)
        .strings("resourceNames", &r.resource_names)
        .strings("nonResourceURLs", &r.non_resource_urls)
        .done()
}

/// `rules` has no `omitempty`: an empty list is `null`.
fn rules(rules: &[PolicyRule]) -> Value {
    if rules.is_empty() {
        Value::Null
    } else {
        Value::from(rules.iter().map(policy_rule).collect::<Vec<_>>())
    }
}

pub(crate) fn role(r: &Role, api_version: &str) -> Result<Value> {
    Ok(head(api_version, "Role")
        .put("metadata", object_meta(r.metadata.as_ref())?)
        .put("rules", rules(&r.rules))
        .done())
}

pub(crate) fn cluster_role(r: &ClusterRole, api_version: &str) -> Result<Value> {
    let mut o = head(api_version, "ClusterRole");
    o.put("metadata", object_meta(r.metadata.as_ref())?)
        .put("rules", rules(&r.rules));
    if let Some(aggregation) = &r.aggregation_rule {
        o.put(
            "aggregationRule",
            Obj::default()
                .list(
                    "clusterRoleSelectors",
                    aggregation
                        .cluster_role_selectors
                        .iter()
                        .map(label_selector)
                        .collect(),
                )
                .done(),
        );
    }
    Ok(o.done())
}

/// RoleBinding or ClusterRoleBinding (`kind` says which).
pub(crate) fn role_binding(b: &RoleBinding, api_version: &str, kind: &str) -> Result<Value> {
    let subjects = b
        .subjects
        .iter()
        .map(|s| {
            Obj::default()
                .str_always("kind", &s.kind)
                .str("apiGroup", &s.api_group)
                .str_always("name", &s.name)
                .str("namespace", &s.namespace)
                .done()
        })
        .collect();
    let role_ref = b.role_ref.clone().unwrap_or_default();
    Ok(head(api_version, kind)
        .put("metadata", object_meta(b.metadata.as_ref())?)
        .list("subjects", subjects)
        .put(
            "roleRef",
            Obj::default()
                .str_always("apiGroup", &role_ref.api_group)
                .str_always("kind", &role_ref.kind)
                .str_always("name", &role_ref.name)
                .done(),
        )
        .done())
}
