//! Authorization: may this user do this, in this logical cluster?

pub mod chain;
pub mod generations;
pub mod kcp;
pub mod maximal_policy;
pub mod rbac;
pub mod scope;

use crate::authn::UserInfo;

/// Kubernetes' superuser group: always allowed.
pub const SYSTEM_MASTERS: &str = "system:masters";
/// The header that makes a SubjectAccessReview of a `system:masters` caller deep (kcp's name).
pub const DEEP_SAR_HEADER: &str = "X-Kcp-Internal-Deep-SubjectAccessReview";
/// kcp's administrator group, bound to cluster-admin in every logical cluster by the bootstrap policy.
pub const KCP_ADMIN: &str = "system:kcp:admin";

pub use chain::{AuthorizerChain, authorize_chain};
pub use kcp::{ClusterFacts, KcpAuthorizer, NoRequiredGroups};
pub use maximal_policy::{PermissionPolicies, PolicyExport};
pub use rbac::{RbacAuthorizer, RbacIndex};
pub use scope::scope_user;

/// What a request wants to do, as Kubernetes' `authorizer.Attributes`, plus the logical cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes<'a> {
    pub user: Option<&'a UserInfo>,
    /// The target logical cluster, `"*"` for wildcard requests, empty for top-level paths.
    pub cluster: &'a str,
    /// Kubernetes verb: get, list, watch, create, update, patch, delete, deletecollection, or the HTTP
    /// method in lower case for non-resource requests.
    pub verb: &'a str,
    pub resource_request: bool,
    pub api_group: &'a str,
    pub api_version: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// The path, for non-resource requests.
    pub path: &'a str,
    /// A deep SubjectAccessReview (kcp): only the RBAC of the logical cluster decides, without the
    /// required-groups and workspace-access steps. Set only for reviews a privileged caller asked
    /// for with [`DEEP_SAR_HEADER`].
    pub deep_review: bool,
}

impl<'a> Attributes<'a> {
    /// A deep review of `verb` on one named cluster-scoped object in `cluster`: what kcp's
    /// admission asks of another LC ("may this user bind that export?"), where only that LC's RBAC
    /// decides.
    pub fn deep(
        user: &'a UserInfo,
        cluster: &'a str,
        verb: &'a str,
        api_group: &'a str,
        resource: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user: Some(user),
            cluster,
            verb,
            resource_request: true,
            api_group,
            resource,
            name,
            deep_review: true,
            ..Attributes::default()
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refused, with the reason shown to the caller.
    Deny(String),
    /// This authorizer has nothing to say; the chain asks the next one.
    NoOpinion,
}

pub trait Authorizer: Send + Sync + 'static {
    fn authorize(&self, attrs: &Attributes<'_>) -> Decision;
}
