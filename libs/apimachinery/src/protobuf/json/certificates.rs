//! certificates.k8s.io/v1 CertificateSigningRequest.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::{Obj, Result, head, object_meta};
use crate::protobuf::types::CertificateSigningRequest;

pub(crate) fn certificate_signing_request(
    c: &CertificateSigningRequest,
    api_version: &str,
) -> Result<Value> {
    let spec = c.spec.clone().unwrap_or_default();
    let mut s = Obj::default();
    // `request` has no `omitempty`: absent is `null`, present-but-empty is `""`.
    s.put(
        "request",
        spec.request.as_ref().map_or(Value::Null, |r| {
            Value::from(base64::engine::general_purpose::STANDARD.encode(r))
        }),
    )
    .str_always("signerName", &spec.signer_name)
    .opt("expirationSeconds", spec.expiration_seconds)
    .strings("usages", &spec.usages)
    .str("username", &spec.username)
    .str("uid", &spec.uid)
    .strings("groups", &spec.groups);
    if !spec.extra.is_empty() {
        let extra: Map<String, Value> = spec
            .extra
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.items.clone())))
            .collect();
        s.put("extra", extra);
    }
    let status = c.status.clone().unwrap_or_default();
    let conditions = status
        .conditions
        .iter()
        .map(|cond| {
            let mut o = Obj::default();
            o.str_always("type", &cond.r#type)
                .str_always("status", &cond.status)
                .str("reason", &cond.reason)
                .str("message", &cond.message)
                .time("lastUpdateTime", &cond.last_update_time)?
                .time("lastTransitionTime", &cond.last_transition_time)?;
            Ok(o.done())
        })
        .collect::<Result<Vec<_>>>()?;
    let mut st = Obj::default();
    st.list("conditions", conditions)
        .bytes("certificate", &status.certificate);
    Ok(head(api_version, "CertificateSigningRequest")
        .put("metadata", object_meta(c.metadata.as_ref())?)
        .put("spec", s.done())
        .put("status", st.done())
        .done())
}
