//! kcp's maximal permission policy: a request on a resource a logical cluster binds from an
//! APIExport whose `spec.maximalPermissionPolicy.local` is set must also be allowed by the RBAC
//! of the export's logical cluster, asked for the caller with `apis.kcp.io:binding:` before its
//! name and each of its groups. What binds what is known to kcp-apis, behind [`PermissionPolicies`].

use crate::authn::UserInfo;

/// kcp's prefix of the user and groups the export's RBAC is asked about.
pub const POLICY_PREFIX: &str = "apis.kcp.io:binding:";

/// The export whose policy bounds a bound resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyExport {
    pub cluster: String,
    pub name: String,
}

impl PolicyExport {
    /// kcp's reason when the policy refuses.
    pub fn refusal(&self) -> String {
        format!(
            "API export {:?}|{:?} policy does not allow it",
            self.cluster, self.name
        )
    }
}

/// Which exports bound which resources, with a local maximal permission policy.
pub trait PermissionPolicies: Send + Sync + 'static {
    /// The export bounding `group`/`resource` in `cluster`, when it has a local policy. Called on
    /// every resource request: it must answer from memory.
    fn bounding(&self, cluster: &str, group: &str, resource: &str) -> Option<PolicyExport>;
}

/// `user` as the export's RBAC is asked about it.
pub fn prefixed(user: &UserInfo) -> UserInfo {
    UserInfo {
        name: format!("{POLICY_PREFIX}{}", user.name),
        uid: user.uid.clone(),
        groups: (user.groups.iter())
            .map(|g| format!("{POLICY_PREFIX}{g}"))
            .collect(),
        extra: user.extra.clone(),
    }
}
