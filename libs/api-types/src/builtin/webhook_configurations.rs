//! Validation of Mutating- and ValidatingWebhookConfigurations (admissionregistration.k8s.io/v1),
//! the subset of kube-apiserver's rules the shard relies on when it calls webhooks.

use kcp_apimachinery::names::is_dns1123_subdomain;
use kcp_apimachinery::status::Cause;
use serde_json::{Value, json};

use crate::resource::Strategy;

/// The rules of one of the two configuration kinds.
pub struct WebhookConfigurationStrategy {
    pub mutating: bool,
}

const V1_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun"];
/// Values only objects created through v1beta1 carry; kept on update.
const LEGACY_SIDE_EFFECTS: &[&str] = &["None", "NoneOnDryRun", "Some", "Unknown"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];

fn enum_field(hook: &Value, path: &str, field: &str, allowed: &[&str], causes: &mut Vec<Cause>) {
    if let Some(v) = hook.get(field).filter(|v| !v.is_null())
        && !v.as_str().is_some_and(|s| allowed.contains(&s))
    {
        causes.push(Cause::not_supported(&format!("{path}.{field}"), v, allowed));
    }
}

fn uses_legacy_side_effects(obj: &Value) -> bool {
    obj.get("webhooks")
        .and_then(Value::as_array)
        .is_some_and(|hooks| {
            hooks.iter().any(|h| {
                matches!(
                    h.get("sideEffects").and_then(Value::as_str),
                    Some("Some" | "Unknown")
                )
            })
        })
}

impl WebhookConfigurationStrategy {
    fn check(&self, obj: &Value, side_effects: &[&str]) -> Vec<Cause> {
        let mut causes = Vec::new();
        let hooks = obj
            .get("webhooks")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut names = Vec::new();
        for (i, hook) in hooks.iter().enumerate() {
            let path = format!("webhooks[{i}]");
            let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                causes.push(Cause::required(&format!("{path}.name"), ""));
            } else if let Some(err) = is_dns1123_subdomain(name).first() {
                causes.push(Cause::invalid(&format!("{path}.name"), &json!(name), err));
            } else if name.split('.').count() < 3 {
                causes.push(Cause::invalid(
                    &format!("{path}.name"),
                    &json!(name),
                    "should be a domain with at least three segments separated by dots",
                ));
            } else if names.contains(&name) {
                causes.push(Cause::duplicate(&format!("{path}.name"), &json!(name)));
            }
            names.push(name);
            let versions = hook
                .get("admissionReviewVersions")
                .and_then(Value::as_array);
            if versions.is_none_or(|v| v.is_empty()) {
                causes.push(Cause::required(
                    &format!("{path}.admissionReviewVersions"),
                    "must specify one of v1, v1beta1",
                ));
            }
            match hook.get("sideEffects").filter(|v| !v.is_null()) {
                None => causes.push(Cause::required(
                    &format!("{path}.sideEffects"),
                    &format!("must specify one of {}", side_effects.join(", ")),
                )),
                Some(v) if !v.as_str().is_some_and(|s| side_effects.contains(&s)) => causes.push(
                    Cause::not_supported(&format!("{path}.sideEffects"), v, side_effects),
                ),
                Some(_) => {}
            }
            let client = hook.get("clientConfig").unwrap_or(&Value::Null);
            let url = client.get("url").filter(|v| !v.is_null());
            let service = client.get("service").filter(|v| !v.is_null());
            match (url, service) {
                (Some(_), Some(_)) | (None, None) => causes.push(Cause::required(
                    &format!("{path}.clientConfig"),
                    "exactly one of url or service is required",
                )),
                (Some(url), None) => {
                    let text = url.as_str().unwrap_or("");
                    if !text.starts_with("https://") {
                        causes.push(Cause::invalid(
                            &format!("{path}.clientConfig.url"),
                            url,
                            "'https' is the only allowed URL scheme",
                        ));
                    }
                }
                (None, Some(_)) => {}
            }
            if let Some(t) = hook.get("timeoutSeconds").filter(|v| !v.is_null())
                && !t.as_i64().is_some_and(|t| (1..=30).contains(&t))
            {
                causes.push(Cause::invalid(
                    &format!("{path}.timeoutSeconds"),
                    t,
                    "the timeout value must be between 1 and 30 seconds",
                ));
            }
            enum_field(
                hook,
                &path,
                "failurePolicy",
                &["Fail", "Ignore"],
                &mut causes,
            );
            enum_field(
                hook,
                &path,
                "matchPolicy",
                &["Equivalent", "Exact"],
                &mut causes,
            );
            if self.mutating {
                enum_field(
                    hook,
                    &path,
                    "reinvocationPolicy",
                    &["IfNeeded", "Never"],
                    &mut causes,
                );
            }
            let rules = hook.get("rules").and_then(Value::as_array);
            for (j, rule) in rules.into_iter().flatten().enumerate() {
                let ops = rule.get("operations").and_then(Value::as_array);
                for (k, op) in ops.into_iter().flatten().enumerate() {
                    if !op.as_str().is_some_and(|o| OPERATIONS.contains(&o)) {
                        causes.push(Cause::not_supported(
                            &format!("{path}.rules[{j}].operations[{k}]"),
                            op,
                            OPERATIONS,
                        ));
                    }
                }
            }
            let conditions = hook.get("matchConditions").and_then(Value::as_array);
            for (j, condition) in conditions.into_iter().flatten().enumerate() {
                let expression = condition
                    .get("expression")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if let Err(e) = kcp_schema::cel::Expression::compile(
                    expression,
                    &["object", "oldObject", "request"],
                ) {
                    causes.push(Cause::invalid(
                        &format!("{path}.matchConditions[{j}].expression"),
                        &json!(expression),
                        &format!("compilation failed: {e}"),
                    ));
                }
            }
        }
        causes
    }
}

impl WebhookConfigurationStrategy {
    /// Kubernetes' defaults of each webhook (admissionregistration/v1 `SetDefaults_*Webhook`), so
    /// the stored shape is theirs (JSON patches and diffs address these fields).
    fn default_webhooks(&self, obj: &mut Value) {
        let hooks = obj.get_mut("webhooks").and_then(Value::as_array_mut);
        for hook in hooks.into_iter().flatten().filter_map(Value::as_object_mut) {
            let mut defaults = vec![
                ("failurePolicy", json!("Fail")),
                ("matchPolicy", json!("Equivalent")),
                ("namespaceSelector", json!({})),
                ("objectSelector", json!({})),
                ("timeoutSeconds", json!(10)),
            ];
            if self.mutating {
                defaults.push(("reinvocationPolicy", json!("Never")));
            }
            for (field, default) in defaults {
                if hook.get(field).is_none_or(Value::is_null) {
                    hook.insert(field.into(), default);
                }
            }
        }
    }
}

impl Strategy for WebhookConfigurationStrategy {
    fn prepare_for_create(&self, _ctx: &crate::resource::StrategyContext<'_>, obj: &mut Value) {
        self.default_webhooks(obj);
    }

    fn prepare_for_update(
        &self,
        _ctx: &crate::resource::StrategyContext<'_>,
        new: &mut Value,
        _old: &Value,
    ) {
        self.default_webhooks(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        self.check(obj, V1_SIDE_EFFECTS)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let allowed = if uses_legacy_side_effects(old) {
            LEGACY_SIDE_EFFECTS
        } else {
            V1_SIDE_EFFECTS
        };
        self.check(new, allowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(hook: Value) -> Value {
        json!({"webhooks": [hook]})
    }

    fn fields(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(|c| c.full_message()).collect()
    }

    #[test]
    fn webhooks_get_kubernetes_defaults() {
        let mut obj = config(json!({"name": "a.example.com", "timeoutSeconds": 5}));
        WebhookConfigurationStrategy { mutating: true }.default_webhooks(&mut obj);
        assert_eq!(
            obj["webhooks"][0],
            json!({"name": "a.example.com", "timeoutSeconds": 5, "failurePolicy": "Fail",
                   "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
                   "reinvocationPolicy": "Never"})
        );
        let mut obj = config(json!({"name": "v.example.com"}));
        WebhookConfigurationStrategy { mutating: false }.default_webhooks(&mut obj);
        assert_eq!(obj["webhooks"][0]["timeoutSeconds"], 10);
        assert!(obj["webhooks"][0].get("reinvocationPolicy").is_none());
    }

    #[test]
    fn a_valid_webhook_passes() {
        let ok = config(json!({
            "name": "a.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://127.0.0.1:8443/x"}, "timeoutSeconds": 5,
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "matchConditions": [{"name": "c", "expression": "request.operation == 'CREATE'"}],
        }));
        let strategy = WebhookConfigurationStrategy { mutating: true };
        assert_eq!(fields(&strategy.validate(&ok)), Vec::<String>::new());
    }

    #[test]
    fn v1_rules() {
        let bad = config(json!({
            "name": "short", "sideEffects": "Some",
            "clientConfig": {"url": "http://127.0.0.1/x"}, "timeoutSeconds": 31,
            "rules": [{"operations": ["GET"]}],
            "matchConditions": [{"name": "c", "expression": "nope("}],
        }));
        let strategy = WebhookConfigurationStrategy { mutating: false };
        let messages = fields(&strategy.validate(&bad));
        let expected = [
            r#"webhooks[0].name: Invalid value: "short": should be a domain with at least three segments separated by dots"#,
            "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
            r#"webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun""#,
            r#"webhooks[0].clientConfig.url: Invalid value: "http://127.0.0.1/x": 'https' is the only allowed URL scheme"#,
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            r#"webhooks[0].rules[0].operations[0]: Unsupported value: "GET": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE""#,
        ];
        for e in expected {
            assert!(
                messages.iter().any(|m| m == e),
                "missing {e:?} in {messages:#?}"
            );
        }
        assert!(
            messages
                .iter()
                .any(|m| m.starts_with("webhooks[0].matchConditions[0].expression")),
            "{messages:#?}"
        );
        // Objects that already carry v1beta1's side-effect classes keep them on update.
        let legacy = config(json!({"name": "a.example.com", "sideEffects": "Unknown"}));
        let update = fields(&strategy.validate_update(&legacy, &legacy));
        assert!(
            !update.iter().any(|m| m.contains("sideEffects")),
            "{update:#?}"
        );
    }
}
