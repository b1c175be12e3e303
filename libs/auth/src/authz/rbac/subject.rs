//! Who a binding grants its role to, and whether a user is one of them (Kubernetes' `appliesToUser`).

use std::fmt;

use kcp_apimachinery::field_error::go_quote;
use serde_json::Value;

use crate::authn::UserInfo;

/// The user extra kcp sets on service accounts: the logical cluster that issued the token.
pub use crate::authn::service_account::CLUSTER_NAME_EXTRA;
/// The user name prefix of service accounts: `system:serviceaccount:<namespace>:<name>`.
pub use crate::authn::service_account::USERNAME_PREFIX as SERVICE_ACCOUNT_PREFIX;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SubjectKind {
    User,
    Group,
    ServiceAccount,
    /// A kind Kubernetes does not know; it never matches anyone.
    Other(String),
}

/// One entry of a binding's `subjects`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Subject {
    pub kind: SubjectKind,
    pub name: String,
    /// Only meaningful for service accounts; empty means "the binding's namespace".
    pub namespace: String,
}

impl Subject {
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let obj = v.as_object().ok_or("a subject must be an object")?;
        let text = |field: &str| match obj.get(field) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("subject {field} must be a string")),
        };
        let kind = match text("kind")?.as_str() {
            "User" => SubjectKind::User,
            "Group" => SubjectKind::Group,
            "ServiceAccount" => SubjectKind::ServiceAccount,
            other => SubjectKind::Other(other.to_owned()),
        };
        Ok(Subject {
            kind,
            name: text("name")?,
            namespace: text("namespace")?,
        })
    }

    /// Whether `user` is this subject of a binding in `binding_namespace` (empty for a
    /// ClusterRoleBinding) of logical cluster `binding_cluster`.
    ///
    /// A service-account subject without a namespace means the binding's namespace, so it never matches
    /// in a ClusterRoleBinding. Not in Kubernetes: a service account carrying kcp's cluster-name extra
    /// is only that service account in its own logical cluster, so a binding elsewhere naming the same
    /// `namespace/name` does not apply to it. kcp's authorizer chain already anonymises service
    /// accounts outside their LC before RBAC; this keeps RBAC safe on its own. Foreign service accounts
    /// are bound as the user `system:kcp:serviceaccount:<lc>:<ns>:<name>`, which `User` matching covers.
    pub fn applies_to(
        &self,
        user: &UserInfo,
        binding_namespace: &str,
        binding_cluster: &str,
    ) -> bool {
        match &self.kind {
            SubjectKind::User => user.name == self.name,
            SubjectKind::Group => user.groups.contains(&self.name),
            SubjectKind::ServiceAccount => {
                let namespace = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                !namespace.is_empty()
                    && is_service_account(&user.name, namespace, &self.name)
                    && user
                        .extra
                        .get(CLUSTER_NAME_EXTRA)
                        .is_none_or(|clusters| clusters.iter().any(|c| c == binding_cluster))
            }
            SubjectKind::Other(_) => false,
        }
    }

    /// The subject as Kubernetes names it in a decision's reason, e.g. `User "bob"` or
    /// `ServiceAccount "default/ns"` (name first, as upstream writes it).
    pub fn describe(&self, binding_namespace: &str) -> String {
        Describe {
            subject: self,
            binding_namespace,
        }
        .to_string()
    }
}

struct Describe<'a> {
    subject: &'a Subject,
    binding_namespace: &'a str,
}

impl fmt::Display for Describe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.subject;
        match &s.kind {
            SubjectKind::User => write!(f, "User {}", go_quote(&s.name)),
            SubjectKind::Group => write!(f, "Group {}", go_quote(&s.name)),
            SubjectKind::ServiceAccount => {
                let ns = if s.namespace.is_empty() {
                    self.binding_namespace
                } else {
                    &s.namespace
                };
                write!(
                    f,
                    "ServiceAccount {}",
                    go_quote(&format!("{}/{ns}", s.name))
                )
            }
            SubjectKind::Other(kind) => write!(f, "{kind} {}", go_quote(&s.name)),
        }
    }
}

/// `user == "system:serviceaccount:<namespace>:<name>"` without building the string.
fn is_service_account(user: &str, namespace: &str, name: &str) -> bool {
    user.strip_prefix(SERVICE_ACCOUNT_PREFIX)
        .and_then(|rest| rest.strip_prefix(namespace))
        .and_then(|rest| rest.strip_prefix(':'))
        == Some(name)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use serde_json::json;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    fn subject(v: Value) -> Subject {
        Subject::from_json(&v).unwrap()
    }

    #[test]
    fn users_and_groups() {
        let bob = user("bob", &["devs", "system:authenticated"]);
        assert!(subject(json!({"kind": "User", "name": "bob"})).applies_to(&bob, "", "c"));
        assert!(!subject(json!({"kind": "User", "name": "alice"})).applies_to(&bob, "", "c"));
        assert!(subject(json!({"kind": "Group", "name": "devs"})).applies_to(&bob, "", "c"));
        assert!(!subject(json!({"kind": "Group", "name": "bob"})).applies_to(&bob, "", "c"));
        assert!(!subject(json!({"kind": "Robot", "name": "bob"})).applies_to(&bob, "", "c"));
    }

    #[test]
    fn service_accounts() {
        let sa = user("system:serviceaccount:ns:builder", &[]);
        let explicit =
            subject(json!({"kind": "ServiceAccount", "name": "builder", "namespace": "ns"}));
        let implicit = subject(json!({"kind": "ServiceAccount", "name": "builder"}));
        assert!(explicit.applies_to(&sa, "", "c"));
        assert!(explicit.applies_to(&sa, "other", "c"));
        // No namespace: the RoleBinding's namespace, never a ClusterRoleBinding.
        assert!(implicit.applies_to(&sa, "ns", "c"));
        assert!(!implicit.applies_to(&sa, "other", "c"));
        assert!(!implicit.applies_to(&sa, "", "c"));
        // Prefix tricks do not match.
        for name in [
            "system:serviceaccount:ns:builder2",
            "system:serviceaccount:ns2:builder",
            "system:serviceaccount:nsbuilder",
            "builder",
        ] {
            assert!(!explicit.applies_to(&user(name, &[]), "", "c"), "{name}");
        }
    }

    #[test]
    fn service_accounts_belong_to_their_cluster() {
        let mut sa = user("system:serviceaccount:ns:builder", &[]);
        sa.extra
            .insert(CLUSTER_NAME_EXTRA.into(), vec!["home".into()]);
        let s = subject(json!({"kind": "ServiceAccount", "name": "builder", "namespace": "ns"}));
        assert!(s.applies_to(&sa, "", "home"));
        assert!(!s.applies_to(&sa, "", "elsewhere"));
    }

    #[test]
    fn descriptions() {
        let sa = subject(json!({"kind": "ServiceAccount", "name": "builder"}));
        assert_eq!(sa.describe("ns"), r#"ServiceAccount "builder/ns""#);
        assert_eq!(
            subject(json!({"kind": "Group", "name": "g"})).describe("ns"),
            r#"Group "g""#
        );
    }

    #[test]
    fn malformed_subjects() {
        assert!(Subject::from_json(&json!(["User"])).is_err());
        assert!(Subject::from_json(&json!({"kind": "User", "name": 3})).is_err());
    }
}
