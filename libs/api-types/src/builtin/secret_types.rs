//! What each well-known Secret type requires of its data, as Kubernetes' `ValidateSecret` checks
//! it: a token Secret names its service account, docker configs hold a JSON object, basic auth a
//! username or password, SSH auth a private key, TLS a certificate and a key.

use base64::Engine;
use kcp_apimachinery::status::Cause;
use serde_json::{Value, json};

/// Shown instead of a docker config's contents when they are not a JSON object.
const REDACTED: &str = "<secret contents redacted>";

fn has_key(obj: &Value, key: &str) -> bool {
    obj.get("data")
        .and_then(Value::as_object)
        .is_some_and(|d| d.contains_key(key))
}

/// The decoded bytes of `data[key]`, empty when absent; `None` when not base64 (refused
/// elsewhere).
fn bytes(obj: &Value, key: &str) -> Option<Vec<u8>> {
    let value = obj.get("data").and_then(|d| d.get(key));
    match value.unwrap_or(&Value::Null) {
        Value::Null => Some(Vec::new()),
        Value::String(s) => base64::engine::general_purpose::STANDARD.decode(s).ok(),
        _ => None,
    }
}

fn required_data(key: &str) -> Cause {
    Cause::required(&format!("data[{key}]"), "")
}

/// A docker config type: `key` must be there and decode to a JSON object.
fn docker_config(obj: &Value, key: &str, causes: &mut Vec<Cause>) {
    if !has_key(obj, key) {
        causes.push(required_data(key));
        return;
    }
    // serde_json's words, not Go's: the refusal is the same, only the text of why differs.
    let not_an_object = |b: Vec<u8>| {
        serde_json::from_slice::<serde_json::Map<String, Value>>(&b)
            .err()
            .map(|e| e.to_string())
    };
    if let Some(err) = bytes(obj, key).and_then(not_an_object) {
        causes.push(Cause::invalid(
            &format!("data[{key}]"),
            &json!(REDACTED),
            &err,
        ));
    }
}

/// The causes of the type-specific rules of the Secret `obj` (after `stringData` was folded in).
pub fn type_causes(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "kubernetes.io/service-account-token" => {
            let key = "kubernetes.io/service-account.name";
            let named = obj
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            if !named {
                causes.push(Cause::required(&format!("metadata.annotations[{key}]"), ""));
            }
        }
        "kubernetes.io/dockercfg" => docker_config(obj, ".dockercfg", &mut causes),
        "kubernetes.io/dockerconfigjson" => {
            docker_config(obj, ".dockerconfigjson", &mut causes);
        }
        // Either may be empty, but one must be there.
        "kubernetes.io/basic-auth" if !has_key(obj, "username") && !has_key(obj, "password") => {
            causes.push(required_data("username"));
            causes.push(required_data("password"));
        }
        // A key that is not base64 is refused as such already.
        "kubernetes.io/ssh-auth" if bytes(obj, "ssh-privatekey").is_some_and(|b| b.is_empty()) => {
            causes.push(required_data("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has_key(obj, key) {
                    causes.push(required_data(key));
                }
            }
        }
        _ => {}
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(obj: Value) -> Vec<String> {
        type_causes(&obj).iter().map(Cause::full_message).collect()
    }

    fn b64(text: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    #[test]
    fn each_type_needs_its_keys() {
        assert_eq!(
            messages(json!({"type": "kubernetes.io/tls", "data": {"tls.crt": ""}})),
            ["data[tls.key]: Required value"]
        );
        assert_eq!(
            messages(json!({"type": "kubernetes.io/service-account-token"})),
            ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
        );
        let token = json!({"type": "kubernetes.io/service-account-token",
            "metadata": {"annotations": {"kubernetes.io/service-account.name": "default"}}});
        assert!(messages(token).is_empty());
        assert_eq!(
            messages(json!({"type": "kubernetes.io/basic-auth", "data": {}})),
            [
                "data[username]: Required value",
                "data[password]: Required value"
            ]
        );
        assert!(
            messages(json!({"type": "kubernetes.io/basic-auth", "data": {"password": ""}}))
                .is_empty()
        );
        assert_eq!(
            messages(json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}})),
            ["data[ssh-privatekey]: Required value"]
        );
        assert_eq!(
            messages(json!({"type": "kubernetes.io/ssh-auth"})),
            ["data[ssh-privatekey]: Required value"]
        );
        assert!(messages(json!({"type": "Opaque"})).is_empty());
        assert!(messages(json!({"type": "example.com/own"})).is_empty());
    }

    #[test]
    fn docker_configs_are_json_objects() {
        assert_eq!(
            messages(json!({"type": "kubernetes.io/dockerconfigjson", "data": {}})),
            ["data[.dockerconfigjson]: Required value"]
        );
        let bad = json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64("not-json")}});
        let refused = messages(bad);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].starts_with(
                "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": "
            ),
            "{refused:?}"
        );
        let good = json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": b64("{\"auths\":{}}")}});
        assert!(messages(good).is_empty());
        let list = json!({"type": "kubernetes.io/dockercfg", "data": {".dockercfg": b64("[]")}});
        let refused = messages(list);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].starts_with("data[.dockercfg]: Invalid value: "),
            "{refused:?}"
        );
    }
}
