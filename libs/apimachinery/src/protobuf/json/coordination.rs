//! coordination.k8s.io/v1 Lease.

use serde_json::Value;

use super::{Obj, Result, head, object_meta};
use crate::protobuf::types::Lease;

/// Every spec field is a pointer: present when set, even if empty or zero.
pub(crate) fn lease(l: &Lease, api_version: &str) -> Result<Value> {
    let spec = l.spec.clone().unwrap_or_default();
    let mut s = Obj::default();
    s.opt("holderIdentity", spec.holder_identity)
        .opt("leaseDurationSeconds", spec.lease_duration_seconds);
    if spec.acquire_time.is_some() {
        s.micro_time("acquireTime", &spec.acquire_time)?;
    }
    if spec.renew_time.is_some() {
        s.micro_time("renewTime", &spec.renew_time)?;
    }
    s.opt("leaseTransitions", spec.lease_transitions)
        .opt("strategy", spec.strategy)
        .opt("preferredHolder", spec.preferred_holder);
    Ok(head(api_version, "Lease")
        .put("metadata", object_meta(l.metadata.as_ref())?)
        .put("spec", s.done())
        .done())
}
