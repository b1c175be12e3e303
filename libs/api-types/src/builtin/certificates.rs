//! CertificateSigningRequests, as Kubernetes' strategy keeps them: the requester's identity is the
//! request's user, never what the body claims (approvers trust it); the spec is fixed once created
//! (only status and approval change); and the request must be a PEM `CERTIFICATE REQUEST` that
//! parses.

use base64::Engine;
use kcp_apimachinery::status::Cause;
use serde_json::{Map, Value, json};
use x509_parser::prelude::FromDer;

use crate::resource::{Strategy, StrategyContext};

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

    /// The spec is the stored one (see `prepare_for_update`): nothing of it to judge again.
    fn validate_update(&self, _new: &Value, _old: &Value) -> Vec<Cause> {
        Vec::new()
    }
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
}
