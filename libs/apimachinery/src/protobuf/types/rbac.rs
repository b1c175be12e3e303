//! rbac.authorization.k8s.io/v1 kinds.

use super::{LabelSelector, ObjectMeta};

/// rbac/v1 Role
#[derive(Clone, PartialEq, prost::Message)]
pub struct Role {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    pub rules: Vec<PolicyRule>,
}

/// rbac/v1 ClusterRole
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClusterRole {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    pub rules: Vec<PolicyRule>,
    #[prost(message, optional, tag = "3")]
    pub aggregation_rule: Option<AggregationRule>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AggregationRule {
    #[prost(message, repeated, tag = "1")]
    pub cluster_role_selectors: Vec<LabelSelector>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PolicyRule {
    #[prost(string, repeated, tag = "1")]
    pub verbs: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub api_groups: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    pub resources: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    pub resource_names: Vec<String>,
    #[prost(string, repeated, tag = "5")]
    pub non_resource_urls: Vec<String>,
}

/// rbac/v1 RoleBinding and ClusterRoleBinding (same fields).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RoleBinding {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    pub subjects: Vec<Subject>,
    #[prost(message, optional, tag = "3")]
    pub role_ref: Option<RoleRef>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Subject {
    #[prost(string, optional, tag = "1")]
    pub kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub api_group: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub namespace: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RoleRef {
    #[prost(string, optional, tag = "1")]
    pub api_group: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub kind: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
}
