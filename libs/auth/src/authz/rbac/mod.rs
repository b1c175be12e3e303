//! Kubernetes RBAC for many logical clusters, without I/O.
//!
//! - [`rule`]: whether one `PolicyRule` covers a request (verbs, groups, resources and subresources,
//!   resource names, non-resource URLs), as Kubernetes' evaluation helpers
//! - [`subject`]: whether a binding's subject is the user (users, groups, service accounts)
//! - [`index`]: Roles, ClusterRoles and their bindings of every LC, updated object by object from
//!   their JSON; the walk from a user to their rules, with kcp's bootstrap LC
//! - [`aggregation`]: ClusterRole aggregation, computed when roles change
//! - [`authorizer`]: [`RbacAuthorizer`] and the rules of a user (SelfSubjectRulesReview)
//! - [`bootstrap`]: Kubernetes' default ClusterRoles and bindings for the bootstrap LC
//! - [`escalation`]: whether a user holds the rights they grant (Kubernetes' escalation check)
//!
//! kcp keeps the default roles in one LC, [`BOOTSTRAP_CLUSTER`]. A request to LC X is allowed when a
//! binding of X grants it (a ClusterRole X does not have is taken from the bootstrap LC, so X can bind
//! `admin` or `view`), or when a binding of the bootstrap LC itself does (those apply in every LC).
//!
//! Decisions worth knowing, each documented where it is made:
//! - matching is Kubernetes' to the letter, including that `res/*` is not a pattern and that a rule
//!   with `resourceNames` never covers create, list, watch or deletecollection ([`rule`]);
//! - the bootstrap LC's RoleBindings in namespace N apply to namespace N of every LC, as its
//!   ClusterRoleBindings apply everywhere: kcp evaluates the bootstrap LC's whole RBAC ([`index`]);
//! - a service account carrying kcp's cluster-name extra only matches bindings of its own LC
//!   ([`subject`]);
//! - a bootstrap aggregated role bound from X also takes in X's matching ClusterRoles
//!   ([`aggregation`]);
//! - a malformed object is refused and its previous version dropped, so updates we cannot read never
//!   leave a stale grant behind ([`RbacIndex::apply`]);
//! - a request without a user is `system:anonymous` in `system:unauthenticated` ([`RbacAuthorizer`]).

pub mod aggregation;
pub mod authorizer;
pub mod bootstrap;
pub mod escalation;
pub mod index;
pub mod object;
pub mod rule;
pub mod subject;

#[cfg(test)]
mod tests;

pub use authorizer::{NonResourceRule, RbacAuthorizer, RbacDecision, ResourceRule, SubjectRules};
pub use escalation::EscalationError;
pub use index::{RbacIndex, RuleSource};
pub use object::{RbacKind, RbacObjectError, RoleRef};
pub use rule::PolicyRule;
pub use subject::{Subject, SubjectKind};

/// The LC holding the shard's bootstrap policy (Kubernetes' default roles and kcp's own).
pub const BOOTSTRAP_CLUSTER: &str = "system:admin";
