//! CertificateSigningRequests, as Kubernetes' strategy keeps them: the requester's identity is the
//! request's user, never what the body claims (approvers trust it); the spec is fixed once created
//! (only status and approval change); and the request must be a PEM `CERTIFICATE REQUEST` that
//! parses.

use base64::Engine;
use kcp_apimachinery::status::Cause;
use serde_json::{Map, Value, json};
use x509_parser::prelude::FromDer;

use crate::conditions::now_rfc3339;
use crate::resource::{Strategy, StrategyContext};

/// The API group and resource, for the `approval` subresource served for this kind only.
pub const GROUP: &str = "certificates.k8s.io";
pub const RESOURCE: &str = "certificatesigningrequests";

const APPROVED: &str = "Approved";
const DENIED: &str = "Denied";
const FAILED: &str = "Failed";

/// The usages a CSR may ask for (Kubernetes' `KeyUsage` values).
const USAGES: [&str; 23] = [
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

pub struct CsrStrategy;

/// Why `request` (base64 of PEM, as JSON carries Go's `[]byte`) is not a certificate request.
fn request_error(request: &str) -> Option<String> {
    let Ok(pem) = base64::engine::general_purpose::STANDARD.decode(request) else {
        return Some("must be a base64-encoded string".into());
    };
    let block = match x509_parser::pem::parse_x509_pem(&pem) {
        Ok((_, block)) if block.label == "CERTIFICATE REQUEST" => block,
        _ => return Some("PEM block type must be CERTIFICATE REQUEST".into()),
    };
    x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents)
        .err()
        .map(|e| format!("invalid certificate request: {e}"))
}

impl Strategy for CsrStrategy {
    fn prepare_for_create(&self, ctx: &StrategyContext<'_>, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        for field in ["username", "uid", "groups", "extra"] {
            spec.remove(field);
        }
        let Some(user) = ctx.requester else {
            return;
        };
        spec.insert("username".into(), json!(user.name));
        if !user.uid.is_empty() {
            spec.insert("uid".into(), json!(user.uid));
        }
        if !user.groups.is_empty() {
            spec.insert("groups".into(), json!(user.groups));
        }
        if !user.extra.is_empty() {
            let extra: Map<String, Value> = user
                .extra
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            spec.insert("extra".into(), Value::Object(extra));
        }
    }

    fn prepare_for_update(&self, _ctx: &StrategyContext<'_>, new: &mut Value, old: &Value) {
        if let Some(map) = new.as_object_mut() {
            map.insert(
                "spec".into(),
                old.get("spec").cloned().unwrap_or_else(|| json!({})),
            );
        }
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        match spec.get("request").and_then(Value::as_str) {
            None | Some("") => causes.push(Cause::required("spec.request", "")),
            Some(request) => {
                if let Some(detail) = request_error(request) {
                    causes.push(Cause::invalid("spec.request", &json!(request), &detail));
                }
            }
        }
        match spec.get("signerName").and_then(Value::as_str) {
            None | Some("") => causes.push(Cause::required("spec.signerName", "")),
            Some(signer) if !signer.contains('/') => causes.push(Cause::invalid(
                "spec.signerName",
                &json!(signer),
                "must be a fully qualified domain and path of the form 'example.com/signer-name'",
            )),
            Some(_) => {}
        }
        let usages = spec.get("usages").and_then(Value::as_array);
        if usages.is_none_or(|u| u.is_empty()) {
            causes.push(Cause::required("spec.usages", ""));
        }
        for (i, usage) in usages.into_iter().flatten().enumerate() {
            if !usage.as_str().is_some_and(|u| USAGES.contains(&u)) {
                causes.push(Cause::not_supported(
                    &format!("spec.usages[{i}]"),
                    usage,
                    &USAGES,
                ));
            }
        }
        causes
    }

    /// The spec is the stored one (see `prepare_for_update`): nothing of it to judge again; the
    /// conditions as any update's.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        validate_conditions_update(new, old, Through::Main)
    }

    fn prepare_for_subresource_update(&self, subresource: &str, new: &mut Value, old: &Value) {
        match subresource {
            // Kubernetes' status strategy: the spec and the approval stay; a signer writes the
            // rest of the status (the certificate, other conditions).
            "status" => {
                keep_spec(new, old);
                for kind in [APPROVED, DENIED] {
                    keep_condition_instances(new, old, kind);
                }
                stamp_conditions(new, old);
            }
            // The approval strategy: only the conditions change.
            "approval" => {
                stamp_conditions(new, old);
                let conditions = new.pointer("/status/conditions").cloned();
                keep_spec(new, old);
                let mut status = old.get("status").cloned().unwrap_or_else(|| json!({}));
                if let Some(map) = status.as_object_mut() {
                    match conditions {
                        Some(c) => map.insert("conditions".into(), c),
                        None => map.remove("conditions"),
                    };
                }
                if let Some(map) = new.as_object_mut() {
                    map.insert("status".into(), status);
                }
            }
            _ => {}
        }
    }

    fn validate_subresource_update(
        &self,
        subresource: &str,
        new: &Value,
        old: &Value,
    ) -> Vec<Cause> {
        let through = match subresource {
            "status" => Through::Status,
            "approval" => Through::Approval,
            _ => Through::Main,
        };
        validate_conditions_update(new, old, through)
    }
}

/// Which endpoint an update came through: each may change its own part of the status.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Through {
    Main,
    /// May set `status.certificate` (once) and the conditions but Approved/Denied.
    Status,
    /// May add Approved/Denied conditions.
    Approval,
}

fn keep_spec(new: &mut Value, old: &Value) {
    if let Some(map) = new.as_object_mut() {
        map.insert(
            "spec".into(),
            old.get("spec").cloned().unwrap_or_else(|| json!({})),
        );
    }
}

fn conditions(obj: &Value) -> &[Value] {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn condition_type(c: &Value) -> &str {
    c.get("type").and_then(Value::as_str).unwrap_or_default()
}

fn of_type<'a>(obj: &'a Value, kind: &str) -> Vec<&'a Value> {
    conditions(obj)
        .iter()
        .filter(|c| condition_type(c) == kind)
        .collect()
}

/// When `new` has as many conditions of `kind` as `old`, they become `old`'s (a status update
/// cannot change an approval); otherwise validation refuses the update.
fn keep_condition_instances(new: &mut Value, old: &Value, kind: &str) {
    let old_instances: Vec<Value> = of_type(old, kind).into_iter().cloned().collect();
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let slots: Vec<usize> = (0..list.len())
        .filter(|&i| condition_type(&list[i]) == kind)
        .collect();
    if slots.len() != old_instances.len() {
        return;
    }
    for (slot, kept) in slots.into_iter().zip(old_instances) {
        list[slot] = kept;
    }
}

/// Fills a condition's missing `lastUpdateTime` with now, and its missing `lastTransitionTime`
/// with that of an old condition of the same type and status, else now.
fn stamp_conditions(new: &mut Value, old: &Value) {
    let now = now_rfc3339();
    let old_conditions = conditions(old).to_vec();
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for condition in list.iter_mut() {
        let (kind, status) = (
            condition_type(condition).to_string(),
            condition.get("status").cloned(),
        );
        let Some(map) = condition.as_object_mut() else {
            continue;
        };
        let unset = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v.as_str() == Some(""));
        if unset(map.get("lastUpdateTime")) {
            map.insert("lastUpdateTime".into(), json!(now));
        }
        if unset(map.get("lastTransitionTime")) {
            let earlier = old_conditions.iter().find_map(|o| {
                (condition_type(o) == kind && o.get("status") == status.as_ref())
                    .then(|| o.get("lastTransitionTime"))
                    .flatten()
                    .filter(|t| !unset(Some(t)))
                    .cloned()
            });
            map.insert(
                "lastTransitionTime".into(),
                earlier.unwrap_or_else(|| json!(now)),
            );
        }
    }
}

/// Kubernetes' rules for the conditions (each update, whatever it came through) and for the
/// certificate, with its allowances for data stored before a rule existed.
fn validate_conditions_update(new: &Value, old: &Value, through: Through) -> Vec<Cause> {
    let mut causes = validate_conditions(new, old);
    let path = "status.conditions";
    for kind in [APPROVED, DENIED, FAILED] {
        let (before, after) = (of_type(old, kind), of_type(new, kind));
        if after.len() < before.len() {
            causes.push(Cause::forbidden(
                path,
                &format!("updates may not remove a condition of type {kind:?}"),
            ));
        } else if through != Through::Approval && kind != FAILED {
            if after.len() > before.len() {
                causes.push(Cause::forbidden(
                    path,
                    &format!("updates may not add a condition of type {kind:?}"),
                ));
            } else if after != before {
                causes.push(Cause::forbidden(
                    path,
                    &format!("updates may not modify a condition of type {kind:?}"),
                ));
            }
        }
    }
    let certificate = |o: &Value| {
        o.pointer("/status/certificate")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (before, after) = (certificate(old), certificate(new));
    if before != after {
        if through != Through::Status {
            causes.push(Cause::forbidden(
                "status.certificate",
                "updates may not set certificate content",
            ));
        } else if !before.is_empty() {
            causes.push(Cause::forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            ));
        } else if let Some(detail) = certificate_error(&after) {
            causes.push(Cause::invalid(
                "status.certificate",
                &json!("<certificate data>"),
                &detail,
            ));
        }
    }
    causes
}

/// Each condition's type and status, Approved and Denied together, and types appearing twice,
/// judged as Kubernetes judges them (not where the stored object already broke a rule).
fn validate_conditions(new: &Value, old: &Value) -> Vec<Cause> {
    let old_conditions = conditions(old);
    let allow_empty_type = old_conditions.iter().any(|c| condition_type(c).is_empty());
    let allow_both = !of_type(old, APPROVED).is_empty() && !of_type(old, DENIED).is_empty();
    let allow_duplicates = {
        let mut seen = std::collections::HashSet::new();
        !old_conditions
            .iter()
            .all(|c| seen.insert(condition_type(c)))
    };
    let mut causes = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let (mut approved, mut denied) = (false, false);
    for (i, c) in conditions(new).iter().enumerate() {
        let kind = condition_type(c);
        let at = |field: &str| format!("status.conditions[{i}].{field}");
        if kind.is_empty() && !allow_empty_type {
            causes.push(Cause::required(&at("type"), ""));
        }
        let allowed: &[&str] = if matches!(kind, APPROVED | DENIED | FAILED) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        match c.get("status").and_then(Value::as_str) {
            None | Some("") => causes.push(Cause::required(&at("status"), "")),
            Some(status) if !allowed.contains(&status) => {
                causes.push(Cause::not_supported(&at("status"), &json!(status), allowed));
            }
            Some(_) => {}
        }
        if !allow_both {
            let clash = match kind {
                APPROVED => {
                    approved = true;
                    denied
                }
                DENIED => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if clash {
                causes.push(Cause::invalid(
                    &at("type"),
                    &json!(kind),
                    "Approved and Denied conditions are mutually exclusive",
                ));
            }
        }
        if !allow_duplicates && !seen.insert(kind) {
            causes.push(Cause::duplicate(&at("type"), &json!(kind)));
        }
    }
    causes
}

/// Why `certificate` (base64 of PEM) is not one or more PEM `CERTIFICATE` blocks of X.509
/// certificates, in Kubernetes' words.
fn certificate_error(certificate: &str) -> Option<String> {
    let Ok(pem) = base64::engine::general_purpose::STANDARD.decode(certificate) else {
        return Some("must be a base64-encoded string".into());
    };
    let mut blocks = 0;
    for block in x509_parser::pem::Pem::iter_from_buffer(&pem) {
        let Ok(block) = block else { break };
        if block.label != "CERTIFICATE" {
            return Some(format!(
                "only CERTIFICATE PEM blocks are allowed, found {:?}",
                block.label
            ));
        }
        if let Err(err) = block.parse_x509() {
            return Some(err.to_string());
        }
        blocks += 1;
    }
    (blocks == 0).then(|| "must contain at least one CERTIFICATE PEM block".to_string())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::resource::{Requester, TEST_CONTEXT};

    /// A real CSR (CN=test), made with `openssl req -new -newkey ec -pkeyopt
    /// ec_paramgen_curve:P-256 -nodes -subj /CN=test`.
    const CSR_PEM: &str = "-----BEGIN CERTIFICATE REQUEST-----
MIHJMHECAQAwDzENMAsGA1UEAwwEdGVzdDBZMBMGByqGSM49AgEGCCqGSM49AwEH
A0IABPWOy9eN/7F+wZbJGzMM7U3BSiJ+cXN126/TpVXeB7sJKxFn29E7gmGjTMNs
Hx8IfLP2lSM9O8L//XAt1ddzUKGgADAKBggqhkjOPQQDAgNIADBFAiEAvCHa92GZ
uAgfDJs/CXW+GaHq05oaqM9pdBMjAlUNsi0CIGFHpV1Jo4JmeN+U9Be8uTSS2+uj
SxNY1CTSr0k1MH7x
-----END CERTIFICATE REQUEST-----
";

    #[test]
    fn the_requester_is_the_user_not_the_body() {
        let groups = vec!["team".to_string()];
        let extra = BTreeMap::new();
        let ctx = StrategyContext {
            requester: Some(Requester {
                name: "bob",
                uid: "bob-uid",
                groups: &groups,
                extra: &extra,
            }),
            ..TEST_CONTEXT
        };
        let mut csr = json!({"spec": {"username": "system:admin", "groups": ["system:masters"]}});
        CsrStrategy.prepare_for_create(&ctx, &mut csr);
        assert_eq!(
            csr["spec"],
            json!({"username": "bob", "uid": "bob-uid", "groups": ["team"]})
        );
        let mut changed = json!({"spec": {"signerName": "example.com/other"}});
        CsrStrategy.prepare_for_update(&ctx, &mut changed, &csr);
        assert_eq!(changed["spec"], csr["spec"]);
    }

    #[test]
    fn the_request_must_be_a_pem_certificate_request() {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        assert_eq!(
            request_error(&b64("hello")).as_deref(),
            Some("PEM block type must be CERTIFICATE REQUEST")
        );
        assert!(request_error("!!notb64").is_some());
        let garbage =
            "-----BEGIN CERTIFICATE REQUEST-----\naGVsbG8=\n-----END CERTIFICATE REQUEST-----\n";
        assert!(
            request_error(&b64(garbage))
                .is_some_and(|e| e.starts_with("invalid certificate request")),
        );
        assert_eq!(request_error(&b64(CSR_PEM)), None);
    }

    fn details(causes: &[Cause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn approval_changes_only_the_conditions() {
        let old = json!({
            "spec": {"signerName": "example.com/s"},
            "status": {"certificate": "Y2VydA==", "conditions": []},
        });
        let mut new = json!({
            "metadata": {"labels": {"a": "b"}},
            "spec": {"signerName": "example.com/other"},
            "status": {"certificate": "", "conditions": [{"type": "Approved", "status": "True"}]},
        });
        CsrStrategy.prepare_for_subresource_update("approval", &mut new, &old);
        assert_eq!(new["spec"], old["spec"]);
        assert_eq!(new["status"]["certificate"], "Y2VydA==");
        assert_eq!(new["metadata"]["labels"]["a"], "b");
        let condition = &new["status"]["conditions"][0];
        assert!(
            condition["lastUpdateTime"].is_string() && condition["lastTransitionTime"].is_string()
        );
        assert!(
            CsrStrategy
                .validate_subresource_update("approval", &new, &old)
                .is_empty()
        );
        // The same through /status or the object itself is refused.
        for through in ["status", "main"] {
            let causes = CsrStrategy.validate_subresource_update(through, &new, &old);
            assert_eq!(
                details(&causes),
                [
                    "status.conditions: Forbidden: updates may not add a condition of type \"Approved\""
                ],
                "{through}"
            );
        }
    }

    #[test]
    fn status_keeps_the_approval_and_sets_the_certificate_once() {
        let approved = json!({"type": "Approved", "status": "True", "reason": "R",
            "lastUpdateTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"});
        let old = json!({"spec": {}, "status": {"conditions": [approved.clone()]}});
        // A status write that rewrites the approval's reason keeps the stored one.
        let mut new = json!({"status": {"conditions": [{"type": "Approved", "status": "True", "reason": "X"}]}});
        CsrStrategy.prepare_for_subresource_update("status", &mut new, &old);
        assert_eq!(new["status"]["conditions"][0], approved);
        assert!(
            CsrStrategy
                .validate_subresource_update("status", &new, &old)
                .is_empty()
        );
        // Approved and Denied together, bad statuses, duplicates.
        let bad = json!({"status": {"conditions": [
            approved.clone(),
            {"type": "Denied", "status": "True"},
            {"type": "Failed", "status": "False"},
            {"type": "Custom", "status": ""},
            {"type": "Custom", "status": "Unknown"},
        ]}});
        assert_eq!(
            details(&validate_conditions(&bad, &old)),
            [
                "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive",
                "status.conditions[2].status: Unsupported value: \"False\": supported values: \"True\"",
                "status.conditions[3].status: Required value",
                "status.conditions[4].type: Duplicate value: \"Custom\"",
            ]
        );
        let with_certificate = |c: &str| json!({"spec": {}, "status": {"certificate": c, "conditions": [approved.clone()]}});
        let garbage = with_certificate("aGVsbG8=");
        assert_eq!(
            details(&CsrStrategy.validate_subresource_update("status", &garbage, &old)),
            [
                "status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"
            ]
        );
        let changed = with_certificate("b3RoZXI=");
        assert_eq!(
            details(&CsrStrategy.validate_subresource_update("status", &changed, &garbage)),
            ["status.certificate: Forbidden: updates may not modify existing certificate content"]
        );
    }
}
