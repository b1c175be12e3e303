//! coordination.k8s.io/v1 Lease.

use super::{MicroTime, ObjectMeta};

/// coordination/v1 Lease
#[derive(Clone, PartialEq, prost::Message)]
pub struct Lease {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub spec: Option<LeaseSpec>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LeaseSpec {
    #[prost(string, optional, tag = "1")]
    pub holder_identity: Option<String>,
    #[prost(int32, optional, tag = "2")]
    pub lease_duration_seconds: Option<i32>,
    #[prost(message, optional, tag = "3")]
    pub acquire_time: Option<MicroTime>,
    #[prost(message, optional, tag = "4")]
    pub renew_time: Option<MicroTime>,
    #[prost(int32, optional, tag = "5")]
    pub lease_transitions: Option<i32>,
    #[prost(string, optional, tag = "6")]
    pub strategy: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub preferred_holder: Option<String>,
}
