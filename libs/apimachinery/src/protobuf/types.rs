//! Protobuf messages of the Kubernetes types kcp-rs accepts in protobuf request bodies, with
//! the field numbers of the upstream `generated.proto` files (k8s.io/apimachinery runtime and
//! meta/v1, k8s.io/api core/v1, rbac/v1, coordination/v1, events/v1, certificates/v1,
//! admissionregistration/v1, authorization/v1, authentication/v1).
//!
//! Every scalar is `optional` (proto2): Go's JSON encoding omits empty values and emits
//! present-but-zero timestamps as `null`, so presence has to be visible.

use std::collections::BTreeMap;

mod admissionregistration;
mod certificates;
mod coordination;
mod core_v1;
mod events;
mod rbac;

pub use admissionregistration::*;
pub use certificates::*;
pub use coordination::*;
pub use core_v1::*;
pub use events::*;
pub use rbac::*;

/// runtime.TypeMeta
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeMeta {
    #[prost(string, optional, tag = "1")]
    pub api_version: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub kind: Option<String>,
}

/// runtime.Unknown: the envelope after the `k8s\0` magic.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Unknown {
    #[prost(message, optional, tag = "1")]
    pub type_meta: Option<TypeMeta>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub raw: Option<Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    pub content_encoding: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub content_type: Option<String>,
}

/// meta/v1 Time: seconds since the epoch (nanos are ignored by Kubernetes).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Time {
    #[prost(int64, optional, tag = "1")]
    pub seconds: Option<i64>,
    #[prost(int32, optional, tag = "2")]
    pub nanos: Option<i32>,
}

/// meta/v1 MicroTime: the same message as [`Time`], but nanoseconds count (to the microsecond).
pub type MicroTime = Time;

/// resource.Quantity: its canonical string.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Quantity {
    #[prost(string, optional, tag = "1")]
    pub string: Option<String>,
}

/// meta/v1 OwnerReference
#[derive(Clone, PartialEq, prost::Message)]
pub struct OwnerReference {
    #[prost(string, optional, tag = "1")]
    pub kind: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub uid: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub api_version: Option<String>,
    #[prost(bool, optional, tag = "6")]
    pub controller: Option<bool>,
    #[prost(bool, optional, tag = "7")]
    pub block_owner_deletion: Option<bool>,
}

/// meta/v1 FieldsV1: the field set as JSON text.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FieldsV1 {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub raw: Option<Vec<u8>>,
}

/// meta/v1 ManagedFieldsEntry
#[derive(Clone, PartialEq, prost::Message)]
pub struct ManagedFieldsEntry {
    #[prost(string, optional, tag = "1")]
    pub manager: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub operation: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub api_version: Option<String>,
    #[prost(message, optional, tag = "4")]
    pub time: Option<Time>,
    #[prost(string, optional, tag = "6")]
    pub fields_type: Option<String>,
    #[prost(message, optional, tag = "7")]
    pub fields_v1: Option<FieldsV1>,
    #[prost(string, optional, tag = "8")]
    pub subresource: Option<String>,
}

/// meta/v1 ObjectMeta
#[derive(Clone, PartialEq, prost::Message)]
pub struct ObjectMeta {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub generate_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub namespace: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub self_link: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub uid: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub resource_version: Option<String>,
    #[prost(int64, optional, tag = "7")]
    pub generation: Option<i64>,
    #[prost(message, optional, tag = "8")]
    pub creation_timestamp: Option<Time>,
    #[prost(message, optional, tag = "9")]
    pub deletion_timestamp: Option<Time>,
    #[prost(int64, optional, tag = "10")]
    pub deletion_grace_period_seconds: Option<i64>,
    #[prost(btree_map = "string, string", tag = "11")]
    pub labels: BTreeMap<String, String>,
    #[prost(btree_map = "string, string", tag = "12")]
    pub annotations: BTreeMap<String, String>,
    #[prost(message, repeated, tag = "13")]
    pub owner_references: Vec<OwnerReference>,
    #[prost(string, repeated, tag = "14")]
    pub finalizers: Vec<String>,
    #[prost(message, repeated, tag = "17")]
    pub managed_fields: Vec<ManagedFieldsEntry>,
}

/// meta/v1 LabelSelectorRequirement; also FieldSelectorRequirement (same fields).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SelectorRequirement {
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub operator: Option<String>,
    #[prost(string, repeated, tag = "3")]
    pub values: Vec<String>,
}

/// meta/v1 LabelSelector
#[derive(Clone, PartialEq, prost::Message)]
pub struct LabelSelector {
    #[prost(btree_map = "string, string", tag = "1")]
    pub match_labels: BTreeMap<String, String>,
    #[prost(message, repeated, tag = "2")]
    pub match_expressions: Vec<SelectorRequirement>,
}

/// core/v1 Namespace
#[derive(Clone, PartialEq, prost::Message)]
pub struct Namespace {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<NamespaceSpec>,
    #[prost(message, optional, tag = "3")]
    pub status: Option<NamespaceStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamespaceSpec {
    #[prost(string, repeated, tag = "1")]
    pub finalizers: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamespaceStatus {
    #[prost(string, optional, tag = "1")]
    pub phase: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub conditions: Vec<NamespaceCondition>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamespaceCondition {
    #[prost(string, optional, tag = "1")]
    pub r#type: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub status: Option<String>,
    #[prost(message, optional, tag = "4")]
    pub last_transition_time: Option<Time>,
    #[prost(string, optional, tag = "5")]
    pub reason: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub message: Option<String>,
}

/// core/v1 ConfigMap
#[derive(Clone, PartialEq, prost::Message)]
pub struct ConfigMap {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, string", tag = "2")]
    pub data: BTreeMap<String, String>,
    #[prost(btree_map = "string, bytes", tag = "3")]
    pub binary_data: BTreeMap<String, Vec<u8>>,
    #[prost(bool, optional, tag = "4")]
    pub immutable: Option<bool>,
}

/// core/v1 Secret
#[derive(Clone, PartialEq, prost::Message)]
pub struct Secret {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(btree_map = "string, bytes", tag = "2")]
    pub data: BTreeMap<String, Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    pub r#type: Option<String>,
    #[prost(btree_map = "string, string", tag = "4")]
    pub string_data: BTreeMap<String, String>,
    #[prost(bool, optional, tag = "5")]
    pub immutable: Option<bool>,
}

/// authorization/v1 SelfSubjectAccessReview
#[derive(Clone, PartialEq, prost::Message)]
pub struct SelfSubjectAccessReview {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<SelfSubjectAccessReviewSpec>,
    #[prost(message, optional, tag = "3")]
    pub status: Option<SubjectAccessReviewStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SelfSubjectAccessReviewSpec {
    #[prost(message, optional, tag = "1")]
    pub resource_attributes: Option<ResourceAttributes>,
    #[prost(message, optional, tag = "2")]
    pub non_resource_attributes: Option<NonResourceAttributes>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceAttributes {
    #[prost(string, optional, tag = "1")]
    pub namespace: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub verb: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub group: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub version: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub resource: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub subresource: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "8")]
    pub field_selector: Option<SelectorAttributes>,
    #[prost(message, optional, tag = "9")]
    pub label_selector: Option<SelectorAttributes>,
}

/// authorization/v1 FieldSelectorAttributes and LabelSelectorAttributes (same fields).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SelectorAttributes {
    #[prost(string, optional, tag = "1")]
    pub raw_selector: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub requirements: Vec<SelectorRequirement>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NonResourceAttributes {
    #[prost(string, optional, tag = "1")]
    pub path: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub verb: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SubjectAccessReviewStatus {
    #[prost(bool, optional, tag = "1")]
    pub allowed: Option<bool>,
    #[prost(string, optional, tag = "2")]
    pub reason: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub evaluation_error: Option<String>,
    #[prost(bool, optional, tag = "4")]
    pub denied: Option<bool>,
}

/// authentication/v1 SelfSubjectReview
#[derive(Clone, PartialEq, prost::Message)]
pub struct SelfSubjectReview {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub status: Option<SelfSubjectReviewStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SelfSubjectReviewStatus {
    #[prost(message, optional, tag = "1")]
    pub user_info: Option<UserInfo>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct UserInfo {
    #[prost(string, optional, tag = "1")]
    pub username: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub uid: Option<String>,
    #[prost(string, repeated, tag = "3")]
    pub groups: Vec<String>,
    #[prost(btree_map = "string, message", tag = "4")]
    pub extra: BTreeMap<String, ExtraValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExtraValue {
    #[prost(string, repeated, tag = "1")]
    pub items: Vec<String>,
}

/// authorization/v1 SelfSubjectRulesReview (`kubectl auth can-i --list`)
#[derive(Clone, PartialEq, prost::Message)]
pub struct SelfSubjectRulesReview {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<SelfSubjectRulesReviewSpec>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SelfSubjectRulesReviewSpec {
    #[prost(string, optional, tag = "1")]
    pub namespace: Option<String>,
}

/// authentication/v1 TokenRequest (`kubectl create token`); its status is the server's to fill.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TokenRequest {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<TokenRequestSpec>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TokenRequestSpec {
    #[prost(string, repeated, tag = "1")]
    pub audiences: Vec<String>,
    #[prost(message, optional, tag = "3")]
    pub bound_object_ref: Option<BoundObjectReference>,
    #[prost(int64, optional, tag = "4")]
    pub expiration_seconds: Option<i64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct BoundObjectReference {
    #[prost(string, optional, tag = "1")]
    pub kind: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub api_version: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub uid: Option<String>,
}

/// authorization/v1 SubjectAccessReview, and LocalSubjectAccessReview (the same message).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SubjectAccessReview {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<SubjectAccessReviewSpec>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SubjectAccessReviewSpec {
    #[prost(message, optional, tag = "1")]
    pub resource_attributes: Option<ResourceAttributes>,
    #[prost(message, optional, tag = "2")]
    pub non_resource_attributes: Option<NonResourceAttributes>,
    #[prost(string, optional, tag = "3")]
    pub user: Option<String>,
    #[prost(string, repeated, tag = "4")]
    pub groups: Vec<String>,
    #[prost(btree_map = "string, message", tag = "5")]
    pub extra: BTreeMap<String, ExtraValue>,
    #[prost(string, optional, tag = "6")]
    pub uid: Option<String>,
}

/// authentication/v1 TokenReview
#[derive(Clone, PartialEq, prost::Message)]
pub struct TokenReview {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<TokenReviewSpec>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TokenReviewSpec {
    #[prost(string, optional, tag = "1")]
    pub token: Option<String>,
    #[prost(string, repeated, tag = "2")]
    pub audiences: Vec<String>,
}
