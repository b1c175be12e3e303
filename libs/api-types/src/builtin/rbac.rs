//! Roles, ClusterRoles and their bindings, validated as Kubernetes' RBAC validation does: every
//! rule says what it grants (verbs; api groups and resources, or non-resource URLs for cluster
//! roles only, never both), a binding names a role of a kind it may bind and subjects that are
//! users, groups or service accounts; the role a binding grants is fixed once created.

use kcp_apimachinery::status::Cause;
use serde_json::{Value, json};

use crate::resource::Strategy;

const GROUP: &str = "rbac.authorization.k8s.io";

fn list<'a>(obj: &'a Value, field: &str) -> &'a [Value] {
    obj.get(field)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn text<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or_default()
}

/// Kubernetes' `ValidatePolicyRule` for the rule at `path`.
fn rule_causes(rule: &Value, namespaced: bool, path: &str, causes: &mut Vec<Cause>) {
    if list(rule, "verbs").is_empty() {
        causes.push(Cause::required(
            &format!("{path}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = list(rule, "nonResourceURLs");
    if !urls.is_empty() {
        let urls_path = format!("{path}.nonResourceURLs");
        let value = json!(urls);
        if namespaced {
            causes.push(Cause::invalid(
                &urls_path,
                &value,
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if ["apiGroups", "resources", "resourceNames"]
            .iter()
            .any(|f| !list(rule, f).is_empty())
        {
            causes.push(Cause::invalid(
                &urls_path,
                &value,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if list(rule, "apiGroups").is_empty() {
        causes.push(Cause::required(
            &format!("{path}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if list(rule, "resources").is_empty() {
        causes.push(Cause::required(
            &format!("{path}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
}

/// Role (`namespaced`) and ClusterRole.
pub struct RoleStrategy {
    pub namespaced: bool,
}

impl Strategy for RoleStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        for (i, rule) in list(obj, "rules").iter().enumerate() {
            rule_causes(rule, self.namespaced, &format!("rules[{i}]"), &mut causes);
        }
        causes
    }
}

/// RoleBinding (`namespaced`: may bind a Role or a ClusterRole) and ClusterRoleBinding (a
/// ClusterRole only).
pub struct BindingStrategy {
    pub namespaced: bool,
}

fn subject_causes(subject: &Value, namespaced: bool, path: &str, causes: &mut Vec<Cause>) {
    // A missing name is the schema's required-field cause already; an empty one is this.
    if subject.get("name").and_then(Value::as_str) == Some("") {
        causes.push(Cause::required(&format!("{path}.name"), ""));
    }
    let group = subject.get("apiGroup").unwrap_or(&Value::Null);
    let group_text = group.as_str().unwrap_or_default();
    match text(subject, "kind") {
        "ServiceAccount" => {
            if !group_text.is_empty() {
                causes.push(Cause::not_supported(
                    &format!("{path}.apiGroup"),
                    group,
                    &[""],
                ));
            }
            if !namespaced && text(subject, "namespace").is_empty() {
                causes.push(Cause::required(&format!("{path}.namespace"), ""));
            }
        }
        // An empty apiGroup is defaulted to RBAC's for users and groups (v1 defaulting).
        "User" | "Group" if group_text.is_empty() || group_text == GROUP => {}
        "User" | "Group" => {
            causes.push(Cause::not_supported(
                &format!("{path}.apiGroup"),
                group,
                &[GROUP],
            ));
        }
        _ => causes.push(Cause::not_supported(
            &format!("{path}.kind"),
            subject.get("kind").unwrap_or(&Value::Null),
            &["ServiceAccount", "User", "Group"],
        )),
    }
}

/// The roleRef's fields that are there (a missing one is the schema's required-field cause).
fn role_ref_causes(role_ref: &Value, namespaced: bool, causes: &mut Vec<Cause>) {
    if let Some(group) = role_ref.get("apiGroup")
        && group.as_str() != Some(GROUP)
    {
        causes.push(Cause::not_supported("roleRef.apiGroup", group, &[GROUP]));
    }
    let kinds: &[&str] = match namespaced {
        true => &["Role", "ClusterRole"],
        false => &["ClusterRole"],
    };
    if let Some(kind) = role_ref.get("kind")
        && !kind.as_str().is_some_and(|k| kinds.contains(&k))
    {
        causes.push(Cause::not_supported("roleRef.kind", kind, kinds));
    }
    if role_ref.get("name").and_then(Value::as_str) == Some("") {
        causes.push(Cause::required("roleRef.name", ""));
    }
}

impl Strategy for BindingStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        // A missing roleRef is the schema's required-field cause already.
        if let Some(role_ref) = obj.get("roleRef").filter(|r| r.is_object()) {
            role_ref_causes(role_ref, self.namespaced, &mut causes);
        }
        for (i, subject) in list(obj, "subjects").iter().enumerate() {
            subject_causes(
                subject,
                self.namespaced,
                &format!("subjects[{i}]"),
                &mut causes,
            );
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.validate(new);
        if new.get("roleRef") != old.get("roleRef") {
            causes.push(Cause::invalid(
                "roleRef",
                new.get("roleRef").unwrap_or(&Value::Null),
                "cannot change roleRef",
            ));
        }
        causes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(causes: &[Cause]) -> Vec<&str> {
        causes.iter().map(|c| c.field.as_str()).collect()
    }

    #[test]
    fn rules_say_what_they_grant() {
        let role = RoleStrategy { namespaced: true };
        let ok = json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]});
        assert!(role.validate(&ok).is_empty());
        let bad = json!({"rules": [
            {"verbs": ["get"], "resources": ["pods"]},
            {"verbs": ["get"], "nonResourceURLs": ["/foo"]},
        ]});
        assert_eq!(
            fields(&role.validate(&bad)),
            ["rules[0].apiGroups", "rules[1].nonResourceURLs"]
        );
        let cluster_role = RoleStrategy { namespaced: false };
        let urls = json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]});
        assert!(cluster_role.validate(&urls).is_empty());
        let both = json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"], "resources": ["pods"]}]});
        assert_eq!(
            fields(&cluster_role.validate(&both)),
            ["rules[0].nonResourceURLs"]
        );
    }

    #[test]
    fn bindings_name_a_bindable_role_and_real_subjects() {
        let crb = BindingStrategy { namespaced: false };
        let ok = json!({
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"},
                         {"kind": "ServiceAccount", "name": "sa", "namespace": "default"}],
        });
        assert!(crb.validate(&ok).is_empty());
        let bad = json!({
            "roleRef": {"apiGroup": "foo.io", "kind": "Role", "name": ""},
            "subjects": [{"kind": "User", "name": ""}, {"kind": "ServiceAccount", "name": "sa"},
                         {"kind": "Robot", "name": "r"}],
        });
        assert_eq!(
            fields(&crb.validate(&bad)),
            [
                "roleRef.apiGroup",
                "roleRef.kind",
                "roleRef.name",
                "subjects[0].name",
                "subjects[1].namespace",
                "subjects[2].kind"
            ]
        );
        let rb = BindingStrategy { namespaced: true };
        let role = json!({"roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "r"},
                          "subjects": [{"kind": "ServiceAccount", "name": "sa"}]});
        assert!(rb.validate(&role).is_empty());
    }
}
