//! RBAC escalation prevention, as Kubernetes' RBAC registry (and so kcp) enforces it on creates
//! and updates: nobody grants rights they do not hold.
//!
//! - A Role or ClusterRole passes when the requester may `escalate` it, or holds every rule it
//!   lists in its LC and namespace; an `aggregationRule` (which can gather anything) takes `*` on
//!   everything.
//! - A RoleBinding or ClusterRoleBinding passes when the requester may `bind` the role it names,
//!   or holds every rule of that role (resolved as the RBAC index resolves it: a ClusterRole the
//!   LC lacks comes from the bootstrap LC) in the binding's namespace.
//! - `system:masters` is never checked, nor is an update that only changes what the garbage
//!   collector changes. The shard's own writes carry no user and are not admitted at all.
//!
//! The check runs as validation, right before the store write, so it sees every mutation and
//! dry runs are refused alike. Refusals are Kubernetes' 403s, word for word.

use std::sync::Arc;

use async_trait::async_trait;
use kcp_apimachinery::status::ApiError;
use kcp_auth::authz::rbac::escalation::{full_authority, rules_of};
use kcp_auth::authz::rbac::{EscalationError, PolicyRule, RbacKind, RoleRef};
use kcp_auth::authz::{
    Attributes as AuthzAttributes, Authorizer, AuthorizerChain, Decision, RbacIndex, scope_user,
};
use serde_json::Value;

use super::{Admission, Attributes, Operation};
use crate::registry::metadata::str_at;

const GROUP: &str = "rbac.authorization.k8s.io";

/// Kubernetes' refusal of an `aggregationRule` to a requester without `*` on everything.
const AGGREGATION_RULE: &str = "must have cluster-admin privileges to use the aggregationRule";

pub struct RbacEscalationAdmission {
    rbac: Arc<RbacIndex>,
    authorizer: AuthorizerChain,
}

/// The RBAC kind a write is of, if it is one this admission checks.
fn rbac_kind(attrs: &Attributes<'_>) -> Option<RbacKind> {
    if attrs.def.group != GROUP || attrs.subresource.is_some() {
        return None;
    }
    Some(match attrs.def.plural.as_str() {
        "roles" => RbacKind::Role,
        "clusterroles" => RbacKind::ClusterRole,
        "rolebindings" => RbacKind::RoleBinding,
        "clusterrolebindings" => RbacKind::ClusterRoleBinding,
        _ => return None,
    })
}

/// Whether `new` differs from `old` only where the garbage collector writes (owner references,
/// finalizers) or the server keeps its books (selfLink, resourceVersion, managed fields): none of
/// those grants anything. Kubernetes skips its check for such updates so the collector needs no
/// rights beyond its own.
fn only_gc_fields_change(new: &Value, old: &Value) -> bool {
    let mut new = new.clone();
    let (Some(meta), Some(old_meta)) = (
        new.get_mut("metadata").and_then(Value::as_object_mut),
        old.get("metadata").and_then(Value::as_object),
    ) else {
        return false;
    };
    for field in [
        "ownerReferences",
        "finalizers",
        "selfLink",
        "resourceVersion",
        "managedFields",
    ] {
        match old_meta.get(field) {
            Some(value) => meta.insert(field.into(), value.clone()),
            None => meta.remove(field),
        };
    }
    &new == old
}

fn has_aggregation_rule(role: &Value) -> bool {
    role.pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
        .is_some_and(|selectors| !selectors.is_empty())
}

impl RbacEscalationAdmission {
    pub fn new(rbac: Arc<RbacIndex>, authorizer: AuthorizerChain) -> Self {
        RbacEscalationAdmission { rbac, authorizer }
    }

    fn allows(&self, attrs: &AuthzAttributes<'_>) -> bool {
        self.authorizer.authorize(attrs) == Decision::Allow
    }

    /// `escalate` on the role being written. Kubernetes asks about the role the request's path
    /// names, so a create (a POST to the collection) asks about no name in particular.
    fn may_escalate(&self, attrs: &Attributes<'_>, kind: RbacKind) -> bool {
        let name = match attrs.operation {
            Operation::Create => "",
            _ => attrs.name,
        };
        self.allows(&AuthzAttributes {
            user: Some(attrs.user),
            cluster: attrs.cluster,
            verb: "escalate",
            resource_request: true,
            api_group: GROUP,
            api_version: "*",
            resource: kind.resource(),
            namespace: attrs.namespace.unwrap_or_default(),
            name,
            ..AuthzAttributes::default()
        })
    }

    /// `bind` on the role `binding` refers to, in the binding's namespace (empty for a
    /// ClusterRoleBinding). The roleRef's own apiGroup is asked about, as Kubernetes does.
    fn may_bind(&self, attrs: &Attributes<'_>, binding: &Value, namespace: &str) -> bool {
        let resource = match str_at(binding, "/roleRef/kind") {
            "Role" => "roles",
            "ClusterRole" => "clusterroles",
            _ => return false,
        };
        self.allows(&AuthzAttributes {
            user: Some(attrs.user),
            cluster: attrs.cluster,
            verb: "bind",
            resource_request: true,
            api_group: str_at(binding, "/roleRef/apiGroup"),
            api_version: "*",
            resource,
            namespace,
            name: str_at(binding, "/roleRef/name"),
            ..AuthzAttributes::default()
        })
    }

    /// Refuses `rules` unless the requester holds them in the write's LC and `namespace`.
    fn confirm(
        &self,
        attrs: &Attributes<'_>,
        namespace: &str,
        rules: &[PolicyRule],
    ) -> Result<(), EscalationError> {
        // The rules the requester holds here are those the authorizer would judge it by: a
        // foreign ServiceAccount acts as its scoped identity.
        let user = scope_user(attrs.user, attrs.cluster);
        self.rbac
            .confirm_no_escalation(&user, attrs.cluster, namespace, rules)
    }

    fn check_role(
        &self,
        attrs: &Attributes<'_>,
        kind: RbacKind,
        role: &Value,
    ) -> Result<(), ApiError> {
        if self.may_escalate(attrs, kind) {
            return Ok(());
        }
        let forbidden =
            |detail: &str| ApiError::forbidden(GROUP, kind.resource(), attrs.name, detail);
        // Validation has read the rules already; a failure here is not the requester's doing.
        let rules = rules_of(role).map_err(ApiError::internal)?;
        let namespace = match kind {
            RbacKind::Role => attrs.namespace.unwrap_or_default(),
            _ => "",
        };
        self.confirm(attrs, namespace, &rules)
            .map_err(|e| forbidden(&e.to_string()))?;
        let aggregates = kind == RbacKind::ClusterRole
            && (has_aggregation_rule(role) || attrs.old_object.is_some_and(has_aggregation_rule));
        if aggregates && self.confirm(attrs, "", &full_authority()).is_err() {
            return Err(forbidden(AGGREGATION_RULE));
        }
        Ok(())
    }

    fn check_binding(
        &self,
        attrs: &Attributes<'_>,
        kind: RbacKind,
        binding: &Value,
    ) -> Result<(), ApiError> {
        let namespace = match kind {
            RbacKind::RoleBinding => attrs.namespace.unwrap_or_default(),
            _ => "",
        };
        if self.may_bind(attrs, binding, namespace) {
            return Ok(());
        }
        let role_ref = RoleRef {
            kind: str_at(binding, "/roleRef/kind").to_string(),
            name: str_at(binding, "/roleRef/name").to_string(),
        };
        // A role that is not there is not found, as Kubernetes answers; an unknown kind is the
        // internal error it gives (validation refuses both kinds of binding first anyway).
        let rules = self
            .rbac
            .role_ref_rules(attrs.cluster, namespace, &role_ref)
            .map_err(|message| match role_ref.kind.as_str() {
                "Role" => ApiError::not_found(GROUP, "roles", &role_ref.name),
                "ClusterRole" => ApiError::not_found(GROUP, "clusterroles", &role_ref.name),
                _ => ApiError::internal(message),
            })?;
        self.confirm(attrs, namespace, &rules)
            .map_err(|e| ApiError::forbidden(GROUP, kind.resource(), attrs.name, &e.to_string()))
    }
}

#[async_trait]
impl Admission for RbacEscalationAdmission {
    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        let (Some(kind), Some(object)) = (rbac_kind(attrs), object) else {
            return Ok(());
        };
        if attrs.operation == Operation::Delete || attrs.user.is_system_masters() {
            return Ok(());
        }
        if attrs.operation == Operation::Update
            && attrs
                .old_object
                .is_some_and(|old| only_gc_fields_change(object, old))
        {
            return Ok(());
        }
        match kind {
            RbacKind::Role | RbacKind::ClusterRole => self.check_role(attrs, kind, object),
            RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => {
                self.check_binding(attrs, kind, object)
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use kcp_api_types::ResourceDef;
    use kcp_apimachinery::status::Reason;
    use kcp_auth::UserInfo;
    use kcp_auth::authz::RbacAuthorizer;
    use kcp_auth::authz::rbac::bootstrap;
    use serde_json::json;

    use super::*;

    const LC: &str = "lc";

    fn def(plural: &str) -> ResourceDef {
        kcp_api_types::builtin::catalogue()
            .into_iter()
            .find(|d| d.is(GROUP, plural))
            .unwrap()
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    /// `dana` may do anything with configmaps in `ns` and write RBAC objects; `(verb, resource,
    /// name)` grants more, cluster-wide.
    fn admission(extra: &[(&str, &str, &str)]) -> RbacEscalationAdmission {
        let rbac = Arc::new(RbacIndex::new());
        bootstrap::load(&rbac).unwrap();
        let mut objects = vec![
            json!({"kind": "Role", "metadata": {"name": "cm", "namespace": "ns"},
                   "rules": [{"verbs": ["*"], "apiGroups": [""], "resources": ["configmaps"]}]}),
            json!({"kind": "RoleBinding", "metadata": {"name": "cm", "namespace": "ns"},
                   "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "cm"},
                   "subjects": [{"kind": "User", "name": "dana"}]}),
            json!({"kind": "ClusterRole", "metadata": {"name": "rbac-writer"},
                   "rules": [{"verbs": ["create", "update"], "apiGroups": [GROUP], "resources": ["*"]}]}),
            json!({"kind": "ClusterRoleBinding", "metadata": {"name": "rbac-writer"},
                   "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "rbac-writer"},
                   "subjects": [{"kind": "User", "name": "dana"}]}),
        ];
        for (i, (verb, resource, name)) in extra.iter().enumerate() {
            let names: Vec<&str> = if name.is_empty() { vec![] } else { vec![*name] };
            objects.push(
                json!({"kind": "ClusterRole", "metadata": {"name": format!("extra-{i}")},
                "rules": [{"verbs": [verb], "apiGroups": [GROUP], "resources": [resource],
                           "resourceNames": names}]}),
            );
            objects.push(
                json!({"kind": "ClusterRoleBinding", "metadata": {"name": format!("extra-{i}")},
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": format!("extra-{i}")},
                "subjects": [{"kind": "User", "name": "dana"}]}),
            );
        }
        for object in &objects {
            rbac.apply_object(LC, object).unwrap();
        }
        let authorizer = AuthorizerChain::new(vec![Arc::new(RbacAuthorizer::new(rbac.clone()))]);
        RbacEscalationAdmission::new(rbac, authorizer)
    }

    async fn write(
        admission: &RbacEscalationAdmission,
        who: &UserInfo,
        operation: Operation,
        object: &Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let kind = RbacKind::from_kind(str_at(object, "/kind")).unwrap();
        let def = def(kind.resource());
        let namespace = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str);
        let attrs = Attributes {
            def: &def,
            cluster: LC,
            namespace,
            name: str_at(object, "/metadata/name"),
            operation,
            subresource: None,
            user: who,
            dry_run: false,
            old_object: old,
        };
        admission.validate(&attrs, Some(object)).await
    }

    fn role(resource: &str) -> Value {
        json!({"kind": "Role", "metadata": {"name": "mine", "namespace": "ns"},
               "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": [resource]}]})
    }

    fn cluster_binding(role: &str) -> Value {
        json!({"kind": "ClusterRoleBinding", "metadata": {"name": "mine"},
               "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role},
               "subjects": [{"kind": "User", "name": "dana"}]})
    }

    fn dana() -> UserInfo {
        user("dana", &["team", "system:authenticated"])
    }

    #[tokio::test]
    async fn roles_grant_only_what_is_held() {
        let a = admission(&[]);
        write(&a, &dana(), Operation::Create, &role("configmaps"), None)
            .await
            .unwrap();
        let err = write(&a, &dana(), Operation::Create, &role("secrets"), None)
            .await
            .unwrap_err();
        assert_eq!(err.reason, Reason::Forbidden);
        assert_eq!(
            err.message,
            "roles.rbac.authorization.k8s.io \"mine\" is forbidden: user \"dana\" \
             (groups=[\"team\" \"system:authenticated\"]) is attempting to grant RBAC permissions \
             not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}"
        );
        assert_eq!(err.details.group.as_deref(), Some(GROUP));
        assert_eq!(err.details.kind.as_deref(), Some("roles"));
        assert_eq!(err.details.name.as_deref(), Some("mine"));
        // An update adding secrets is refused as well; one that keeps to configmaps passes.
        let old = role("configmaps");
        let mut both = old.clone();
        both["rules"][0]["resources"] = json!(["configmaps", "secrets"]);
        assert!(
            write(&a, &dana(), Operation::Update, &both, Some(&old))
                .await
                .is_err()
        );
        let mut labelled = old.clone();
        labelled["metadata"]["labels"] = json!({"a": "b"});
        write(&a, &dana(), Operation::Update, &labelled, Some(&old))
            .await
            .unwrap();
        // Namespace-scoped rights do not make a ClusterRole.
        let mut cluster_role = role("configmaps");
        cluster_role["kind"] = json!("ClusterRole");
        cluster_role["metadata"] = json!({"name": "mine"});
        assert!(
            write(&a, &dana(), Operation::Create, &cluster_role, None)
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn escalate_lets_anything_through() {
        let a = admission(&[("escalate", "roles", "")]);
        write(&a, &dana(), Operation::Create, &role("secrets"), None)
            .await
            .unwrap();
        // A named grant is about the role of the request's path: a create has none.
        let a = admission(&[("escalate", "roles", "mine")]);
        assert!(
            write(&a, &dana(), Operation::Create, &role("secrets"), None)
                .await
                .is_err()
        );
        let old = role("configmaps");
        write(&a, &dana(), Operation::Update, &role("secrets"), Some(&old))
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn aggregation_takes_cluster_admin() {
        let aggregated = json!({"kind": "ClusterRole", "metadata": {"name": "agg"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}});
        let err = write(
            &admission(&[]),
            &dana(),
            Operation::Create,
            &aggregated,
            None,
        )
        .await
        .unwrap_err();
        assert_eq!(
            err.message,
            "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have \
             cluster-admin privileges to use the aggregationRule"
        );
        let a = admission(&[("escalate", "clusterroles", "")]);
        write(&a, &dana(), Operation::Create, &aggregated, None)
            .await
            .unwrap();
        let admin = user("admin", &["system:kcp:admin"]);
        write(
            &admission(&[]),
            &admin,
            Operation::Create,
            &aggregated,
            None,
        )
        .await
        .unwrap();
        // Dropping the rule is a change of it too.
        let plain = json!({"kind": "ClusterRole", "metadata": {"name": "agg"}, "rules": []});
        assert!(
            write(
                &admission(&[]),
                &dana(),
                Operation::Update,
                &plain,
                Some(&aggregated)
            )
            .await
            .is_err()
        );
    }

    #[tokio::test]
    async fn bindings_need_bind_or_the_rules() {
        let a = admission(&[]);
        let err = write(
            &a,
            &dana(),
            Operation::Create,
            &cluster_binding("cluster-admin"),
            None,
        )
        .await
        .unwrap_err();
        assert_eq!(err.reason, Reason::Forbidden);
        assert!(
            err.message.starts_with(
                "clusterrolebindings.rbac.authorization.k8s.io \"mine\" is forbidden: user \
                 \"dana\" (groups=[\"team\" \"system:authenticated\"]) is attempting to grant \
                 RBAC permissions not currently held:\n{APIGroups:[\"*\"], Resources:[\"*\"], \
                 Verbs:[\"*\"]}\n{NonResourceURLs:[\"*\"], Verbs:[\"*\"]}"
            ),
            "{}",
            err.message
        );
        let a = admission(&[("bind", "clusterroles", "cluster-admin")]);
        write(
            &a,
            &dana(),
            Operation::Create,
            &cluster_binding("cluster-admin"),
            None,
        )
        .await
        .unwrap();
        // A role the requester holds entirely may be bound without `bind`.
        let a = admission(&[]);
        write(
            &a,
            &dana(),
            Operation::Create,
            &cluster_binding("rbac-writer"),
            None,
        )
        .await
        .unwrap();
        // In a RoleBinding, the rules count in its namespace.
        let role_binding = json!({"kind": "RoleBinding",
            "metadata": {"name": "mine", "namespace": "ns"},
            "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "cm"},
            "subjects": [{"kind": "User", "name": "someone"}]});
        write(&a, &dana(), Operation::Create, &role_binding, None)
            .await
            .unwrap();
        let mut elsewhere = role_binding.clone();
        elsewhere["metadata"]["namespace"] = json!("other");
        let err = write(&a, &dana(), Operation::Create, &elsewhere, None)
            .await
            .unwrap_err();
        assert_eq!(err.reason, Reason::NotFound);
        assert_eq!(
            err.message,
            "roles.rbac.authorization.k8s.io \"cm\" not found"
        );
    }

    #[tokio::test]
    async fn masters_and_the_collector_pass() {
        let a = admission(&[]);
        let masters = user("shard-admin", &["system:masters"]);
        write(
            &a,
            &masters,
            Operation::Create,
            &cluster_binding("cluster-admin"),
            None,
        )
        .await
        .unwrap();
        // An update of owner references and finalizers only is not checked ...
        let old = cluster_binding("cluster-admin");
        let mut collected = old.clone();
        collected["metadata"]["finalizers"] = json!(["x"]);
        collected["metadata"]["ownerReferences"] = json!([{"name": "o"}]);
        collected["metadata"]["resourceVersion"] = json!("7");
        write(&a, &dana(), Operation::Update, &collected, Some(&old))
            .await
            .unwrap();
        // ... one of the subjects is.
        let mut more = old.clone();
        more["subjects"] = json!([{"kind": "User", "name": "eve"}]);
        assert!(
            write(&a, &dana(), Operation::Update, &more, Some(&old))
                .await
                .is_err()
        );
        // Deletions are never checked.
        let attrs_def = def("clusterrolebindings");
        let attrs = Attributes {
            def: &attrs_def,
            cluster: LC,
            namespace: None,
            name: "mine",
            operation: Operation::Delete,
            subresource: None,
            user: &dana(),
            dry_run: false,
            old_object: Some(&old),
        };
        a.validate(&attrs, None).await.unwrap();
    }
}
