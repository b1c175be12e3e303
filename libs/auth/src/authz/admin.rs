//! The foundation's authorizer: a fixed set of administrator groups may do anything, in any logical
//! cluster. Everything else is refused until RBAC arrives (it will sit behind this in the chain).

use crate::authz::{Attributes, Authorizer, Decision};

/// Kubernetes' superuser group.
pub const SYSTEM_MASTERS: &str = "system:masters";
/// kcp's administrator group.
pub const KCP_ADMIN: &str = "system:kcp:admin";

/// Allows identities in any of its groups everything; denies all others.
#[derive(Clone, Debug)]
pub struct AdminAuthorizer {
    groups: Vec<String>,
}

impl AdminAuthorizer {
    /// Admits `system:masters` and `system:kcp:admin`.
    pub fn new() -> Self {
        Self::with_groups([SYSTEM_MASTERS, KCP_ADMIN])
    }

    pub fn with_groups<I, S>(groups: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        AdminAuthorizer {
            groups: groups.into_iter().map(Into::into).collect(),
        }
    }
}

impl Default for AdminAuthorizer {
    fn default() -> Self {
        Self::new()
    }
}

impl Authorizer for AdminAuthorizer {
    fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        if let Some(user) = attrs.user
            && user.groups.iter().any(|g| self.groups.contains(g))
        {
            return Decision::Allow;
        }
        Decision::Deny(forbidden_reason(attrs))
    }
}

/// The message kube-apiserver puts in a 403, e.g.
/// `User "bob" cannot list resource "configmaps" in API group "" in the namespace "default"`.
pub fn forbidden_reason(attrs: &Attributes<'_>) -> String {
    let user = match attrs.user {
        Some(user) => format!("User \"{}\"", user.name),
        None => "User \"system:anonymous\"".to_string(),
    };
    let mut reason = if attrs.resource_request {
        let resource = if attrs.subresource.is_empty() {
            attrs.resource.to_string()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        let mut reason = format!(
            "{user} cannot {} resource \"{resource}\" in API group \"{}\"",
            attrs.verb, attrs.api_group
        );
        if attrs.namespace.is_empty() {
            reason.push_str(" at the cluster scope");
        } else {
            reason.push_str(&format!(" in the namespace \"{}\"", attrs.namespace));
        }
        reason
    } else {
        format!("{user} cannot {} path \"{}\"", attrs.verb, attrs.path)
    };
    // kcp adds the workspace so the caller knows where the refusal applies.
    if !attrs.cluster.is_empty() {
        reason.push_str(&format!(" in logical cluster \"{}\"", attrs.cluster));
    }
    reason
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use crate::authn::UserInfo;

    fn user(groups: &[&str]) -> UserInfo {
        UserInfo {
            name: "u".into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    fn attrs<'a>(user: Option<&'a UserInfo>) -> Attributes<'a> {
        Attributes {
            user,
            cluster: "root",
            verb: "list",
            resource_request: true,
            api_version: "v1",
            resource: "configmaps",
            namespace: "default",
            ..Attributes::default()
        }
    }

    #[test]
    fn admins_are_allowed() {
        let authz = AdminAuthorizer::new();
        for group in [SYSTEM_MASTERS, KCP_ADMIN] {
            let u = user(&["system:authenticated", group]);
            assert_eq!(authz.authorize(&attrs(Some(&u))), Decision::Allow);
        }
    }

    #[test]
    fn others_are_denied_with_a_kubernetes_reason() {
        let u = user(&["system:authenticated"]);
        assert_eq!(
            AdminAuthorizer::new().authorize(&attrs(Some(&u))),
            Decision::Deny(
                "User \"u\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\" in logical cluster \"root\"".into()
            )
        );
        let Decision::Deny(anon) = AdminAuthorizer::new().authorize(&attrs(None)) else {
            panic!()
        };
        assert!(anon.starts_with("User \"system:anonymous\""), "{anon}");
    }

    #[test]
    fn non_resource_reason() {
        let a = Attributes {
            verb: "get",
            path: "/metrics",
            ..Attributes::default()
        };
        assert_eq!(
            forbidden_reason(&a),
            "User \"system:anonymous\" cannot get path \"/metrics\""
        );
    }

    #[test]
    fn cluster_scoped_subresource_reason() {
        let a = Attributes {
            verb: "update",
            resource_request: true,
            api_group: "core.kcp.io",
            resource: "logicalclusters",
            subresource: "status",
            ..Attributes::default()
        };
        assert_eq!(
            forbidden_reason(&a),
            "User \"system:anonymous\" cannot update resource \"logicalclusters/status\" in API group \"core.kcp.io\" at the cluster scope"
        );
    }
}
