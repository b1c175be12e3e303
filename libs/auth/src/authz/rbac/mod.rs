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
//!
//! kcp keeps the default roles in one LC, [`BOOTSTRAP_CLUSTER`]. A request to LC X is allowed when a
//! binding of X grants it (a ClusterRole X does not have is taken from the bootstrap LC, so X can bind
//! `admin` or `view`), or when a binding of the bootstrap LC itself does (those apply in every LC).

pub mod aggregation;
pub mod authorizer;
pub mod bootstrap;
pub mod index;
pub mod object;
pub mod rule;
pub mod subject;

#[cfg(test)]
mod tests;

pub use authorizer::{NonResourceRule, RbacAuthorizer, RbacDecision, ResourceRule, SubjectRules};
pub use index::{RbacIndex, RuleSource};
pub use object::{RbacKind, RbacObjectError, RoleRef};
pub use rule::PolicyRule;
pub use subject::{Subject, SubjectKind};

/// The LC holding the shard's bootstrap policy (Kubernetes' default roles and kcp's own).
pub const BOOTSTRAP_CLUSTER: &str = "system:admin";
