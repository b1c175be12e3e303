//! core/v1 kinds besides Namespace, ConfigMap and Secret.

use std::collections::BTreeMap;

use super::{MicroTime, ObjectMeta, Quantity, Time};

/// A `ResourceList`: resource name to quantity.
pub type ResourceList = BTreeMap<String, Quantity>;

/// core/v1 ObjectReference
#[derive(Clone, PartialEq, prost::Message)]
pub struct ObjectReference {
    #[prost(string, optional, tag = "1")]
    pub kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub namespace: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub uid: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub api_version: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub resource_version: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub field_path: Option<String>,
}

/// core/v1 LocalObjectReference
#[derive(Clone, PartialEq, prost::Message)]
pub struct LocalObjectReference {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
}

/// core/v1 ServiceAccount
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServiceAccount {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    pub secrets: Vec<ObjectReference>,
    #[prost(message, repeated, tag = "3")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    #[prost(bool, optional, tag = "4")]
    pub automount_service_account_token: Option<bool>,
}

/// core/v1 ResourceQuota
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceQuota {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<ResourceQuotaSpec>,
    #[prost(message, optional, tag = "3")]
    pub status: Option<ResourceQuotaStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceQuotaSpec {
    #[prost(btree_map = "string, message", tag = "1")]
    pub hard: ResourceList,
    #[prost(string, repeated, tag = "2")]
    pub scopes: Vec<String>,
    #[prost(message, optional, tag = "3")]
    pub scope_selector: Option<ScopeSelector>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceQuotaStatus {
    #[prost(btree_map = "string, message", tag = "1")]
    pub hard: ResourceList,
    #[prost(btree_map = "string, message", tag = "2")]
    pub used: ResourceList,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeSelector {
    #[prost(message, repeated, tag = "1")]
    pub match_expressions: Vec<ScopedResourceSelectorRequirement>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopedResourceSelectorRequirement {
    #[prost(string, optional, tag = "1")]
    pub scope_name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub operator: Option<String>,
    #[prost(string, repeated, tag = "3")]
    pub values: Vec<String>,
}

/// core/v1 LimitRange
#[derive(Clone, PartialEq, prost::Message)]
pub struct LimitRange {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<LimitRangeSpec>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LimitRangeSpec {
    #[prost(message, repeated, tag = "1")]
    pub limits: Vec<LimitRangeItem>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LimitRangeItem {
    #[prost(string, optional, tag = "1")]
    pub r#type: Option<String>,
    #[prost(btree_map = "string, message", tag = "2")]
    pub max: ResourceList,
    #[prost(btree_map = "string, message", tag = "3")]
    pub min: ResourceList,
    #[prost(btree_map = "string, message", tag = "4")]
    pub default: ResourceList,
    #[prost(btree_map = "string, message", tag = "5")]
    pub default_request: ResourceList,
    #[prost(btree_map = "string, message", tag = "6")]
    pub max_limit_request_ratio: ResourceList,
}

/// core/v1 Event
#[derive(Clone, PartialEq, prost::Message)]
pub struct Event {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub involved_object: Option<ObjectReference>,
    #[prost(string, optional, tag = "3")]
    pub reason: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub message: Option<String>,
    #[prost(message, optional, tag = "5")]
    pub source: Option<EventSource>,
    #[prost(message, optional, tag = "6")]
    pub first_timestamp: Option<Time>,
    #[prost(message, optional, tag = "7")]
    pub last_timestamp: Option<Time>,
    #[prost(int32, optional, tag = "8")]
    pub count: Option<i32>,
    #[prost(string, optional, tag = "9")]
    pub r#type: Option<String>,
    #[prost(message, optional, tag = "10")]
    pub event_time: Option<MicroTime>,
    #[prost(message, optional, tag = "11")]
    pub series: Option<EventSeries>,
    #[prost(string, optional, tag = "12")]
    pub action: Option<String>,
    #[prost(message, optional, tag = "13")]
    pub related: Option<ObjectReference>,
    #[prost(string, optional, tag = "14")]
    pub reporting_component: Option<String>,
    #[prost(string, optional, tag = "15")]
    pub reporting_instance: Option<String>,
}

/// core/v1 EventSource
#[derive(Clone, PartialEq, prost::Message)]
pub struct EventSource {
    #[prost(string, optional, tag = "1")]
    pub component: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub host: Option<String>,
}

/// core/v1 and events/v1 EventSeries (same fields).
#[derive(Clone, PartialEq, prost::Message)]
pub struct EventSeries {
    #[prost(int32, optional, tag = "1")]
    pub count: Option<i32>,
    #[prost(message, optional, tag = "2")]
    pub last_observed_time: Option<MicroTime>,
}
