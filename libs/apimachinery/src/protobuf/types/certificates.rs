//! certificates.k8s.io/v1 CertificateSigningRequest.

use std::collections::BTreeMap;

use super::{ExtraValue, ObjectMeta, Time};

/// certificates/v1 CertificateSigningRequest
#[derive(Clone, PartialEq, prost::Message)]
pub struct CertificateSigningRequest {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<CertificateSigningRequestSpec>,
    #[prost(message, optional, tag = "3")]
    pub status: Option<CertificateSigningRequestStatus>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CertificateSigningRequestSpec {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub request: Option<Vec<u8>>,
    #[prost(string, optional, tag = "2")]
    pub username: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub uid: Option<String>,
    #[prost(string, repeated, tag = "4")]
    pub groups: Vec<String>,
    #[prost(string, repeated, tag = "5")]
    pub usages: Vec<String>,
    #[prost(btree_map = "string, message", tag = "6")]
    pub extra: BTreeMap<String, ExtraValue>,
    #[prost(string, optional, tag = "7")]
    pub signer_name: Option<String>,
    #[prost(int32, optional, tag = "8")]
    pub expiration_seconds: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CertificateSigningRequestStatus {
    #[prost(message, repeated, tag = "1")]
    pub conditions: Vec<CertificateSigningRequestCondition>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub certificate: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CertificateSigningRequestCondition {
    #[prost(string, optional, tag = "1")]
    pub r#type: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub reason: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub message: Option<String>,
    #[prost(message, optional, tag = "4")]
    pub last_update_time: Option<Time>,
    #[prost(message, optional, tag = "5")]
    pub last_transition_time: Option<Time>,
    #[prost(string, optional, tag = "6")]
    pub status: Option<String>,
}
