//! `admission.k8s.io/v1` AdmissionReview: the request sent to a webhook and the checks on its answer.

use base64::Engine;
use serde_json::{Value, json};

use super::Attributes;

/// The `request` of an AdmissionReview.
pub fn request(uid: &str, attrs: &Attributes<'_>, object: Option<&Value>) -> Value {
    let def = attrs.def;
    let kind = json!({"group": def.group, "version": def.version, "kind": def.kind});
    let resource = json!({"group": def.group, "version": def.version, "resource": def.plural});
    // A Namespace is its own namespace in admission attributes.
    let namespace = match attrs.namespace {
        Some(ns) => ns,
        None if def.is("", "namespaces") => attrs.name,
        None => "",
    };
    let user = attrs.user;
    let mut req = json!({
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": attrs.name,
        "namespace": namespace,
        "operation": attrs.operation.as_str(),
        "userInfo": {"username": user.name, "uid": user.uid, "groups": user.groups, "extra": user.extra},
        "object": object,
        "oldObject": attrs.old_object,
        "dryRun": attrs.dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": attrs.operation.options_kind()},
    });
    if let Some(sub) = attrs.subresource {
        req["subResource"] = json!(sub);
        req["requestSubResource"] = json!(sub);
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
}

/// A webhook's verdict.
#[derive(Debug, Default)]
pub struct Verdict {
    pub allowed: bool,
    /// `response.status` (code, message, reason) of a refusal.
    pub status: Option<Value>,
    /// The decoded JSONPatch operations of a mutating webhook.
    pub patch: Option<Value>,
    pub warnings: Vec<String>,
}

/// Checks a response as kube-apiserver does; the error text follows
/// "received invalid webhook response: ".
pub fn verify(uid: &str, mutating: bool, body: &[u8]) -> Result<Verdict, String> {
    let review: Value =
        serde_json::from_slice(body).map_err(|e| format!("cannot decode the response: {e}"))?;
    let gvk = (
        review
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or(""),
        review.get("kind").and_then(Value::as_str).unwrap_or(""),
    );
    let Some(resp) = review.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let got_uid = resp.get("uid").and_then(Value::as_str).unwrap_or("");
    if got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    if gvk != ("admission.k8s.io/v1", "AdmissionReview") {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {}, Kind={}",
            gvk.0, gvk.1
        ));
    }
    let patch = resp
        .get("patch")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty());
    let patch_type = resp.get("patchType").filter(|p| !p.is_null());
    let mut verdict = Verdict {
        allowed: resp
            .get("allowed")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        status: resp.get("status").filter(|s| s.is_object()).cloned(),
        patch: None,
        warnings: resp
            .get("warnings")
            .and_then(Value::as_array)
            .map(|w| {
                w.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    };
    if !mutating {
        if patch.is_some() {
            return Err("validating webhook may not return response.patch".into());
        }
        if patch_type.is_some() {
            return Err("validating webhook may not return response.patchType".into());
        }
        return Ok(verdict);
    }
    match (patch, patch_type) {
        (None, None) => {}
        (Some(_), None) => {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        (None, Some(_)) => {
            return Err("webhook returned response.patchType but not response.patch".into());
        }
        (Some(patch), Some(pt)) => {
            let pt = pt.as_str().unwrap_or("");
            if pt != "JSONPatch" {
                return Err(format!("unsupported patch type {pt:?}"));
            }
            let raw = base64::engine::general_purpose::STANDARD
                .decode(patch)
                .map_err(|e| format!("received undecodable patch in webhook response: {e}"))?;
            let ops: Value = serde_json::from_slice(&raw)
                .map_err(|e| format!("received undecodable patch in webhook response: {e}"))?;
            if !ops.is_array() {
                return Err(
                    "received undecodable patch in webhook response: not a JSON array".into(),
                );
            }
            verdict.patch = Some(ops);
        }
    }
    Ok(verdict)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_and_kind_must_match() {
        let ok = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true}}"#;
        assert!(verify("u", false, ok).is_ok_and(|v| v.allowed));
        let err = verify("other", false, ok).err().unwrap_or_default();
        assert_eq!(err, r#"expected response.uid="other", got "u""#);
        let absent = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#;
        assert_eq!(
            verify("u", false, absent).err().unwrap_or_default(),
            "webhook response was absent"
        );
    }

    #[test]
    fn patches_need_a_type_and_only_mutating_webhooks_send_them() {
        let patch = base64::engine::general_purpose::STANDARD
            .encode(br#"[{"op":"add","path":"/a","value":1}]"#);
        let body = |extra: &str| {
            format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{{"uid":"u","allowed":true{extra}}}}}"#
            )
        };
        let with_type = body(&format!(r#","patch":"{patch}","patchType":"JSONPatch""#));
        let verdict = verify("u", true, with_type.as_bytes()).map_err(|e| e.to_string());
        assert_eq!(
            verdict.map(|v| v.patch),
            Ok(Some(json!([{"op":"add","path":"/a","value":1}])))
        );
        assert!(verify("u", false, with_type.as_bytes()).is_err());
        let untyped = body(&format!(r#","patch":"{patch}""#));
        assert!(verify("u", true, untyped.as_bytes()).is_err());
    }
}
