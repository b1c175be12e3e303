//! admissionregistration.k8s.io/v1 MutatingWebhookConfiguration and
//! ValidatingWebhookConfiguration.

use serde_json::Value;

use super::{Obj, Result, head, label_selector, object_meta};
use crate::protobuf::types::{
    LabelSelector, MatchCondition, MutatingWebhook, MutatingWebhookConfiguration,
    RuleWithOperations, ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};

fn client_config(c: Option<&WebhookClientConfig>) -> Value {
    let empty = WebhookClientConfig::default();
    let c = c.unwrap_or(&empty);
    let mut o = Obj::default();
    o.opt("url", c.url.clone());
    if let Some(s) = &c.service {
        o.put(
            "service",
            Obj::default()
                .str_always("namespace", &s.namespace)
                .str_always("name", &s.name)
                .opt("path", s.path.clone())
                .opt("port", s.port)
                .done(),
        );
    }
    o.bytes("caBundle", &c.ca_bundle).done()
}

/// The embedded `Rule` is inlined next to `operations`.
fn rule(r: &RuleWithOperations) -> Value {
    let inner = r.rule.clone().unwrap_or_default();
    Obj::default()
        .strings("operations", &r.operations)
        .strings("apiGroups", &inner.api_groups)
        .strings("apiVersions", &inner.api_versions)
        .strings("resources", &inner.resources)
        .opt("scope", inner.scope)
        .done()
}

fn match_condition(m: &MatchCondition) -> Value {
    Obj::default()
        .str_always("name", &m.name)
        .str_always("expression", &m.expression)
        .done()
}

/// The fields both webhook kinds share, borrowed from either message.
struct Webhook<'a> {
    name: &'a Option<String>,
    client_config: Option<&'a WebhookClientConfig>,
    rules: &'a [RuleWithOperations],
    failure_policy: &'a Option<String>,
    match_policy: &'a Option<String>,
    namespace_selector: Option<&'a LabelSelector>,
    object_selector: Option<&'a LabelSelector>,
    side_effects: &'a Option<String>,
    timeout_seconds: Option<i32>,
    admission_review_versions: &'a [String],
    /// Mutating webhooks only.
    reinvocation_policy: &'a Option<String>,
    match_conditions: &'a [MatchCondition],
}

fn webhook(w: &Webhook<'_>) -> Value {
    let mut o = Obj::default();
    o.str_always("name", w.name)
        .put("clientConfig", client_config(w.client_config))
        .list("rules", w.rules.iter().map(rule).collect())
        .opt("failurePolicy", w.failure_policy.clone())
        .opt("matchPolicy", w.match_policy.clone())
        .opt(
            "namespaceSelector",
            w.namespace_selector.map(label_selector),
        )
        .opt("objectSelector", w.object_selector.map(label_selector))
        // `sideEffects` and `admissionReviewVersions` lack `omitempty`.
        .put(
            "sideEffects",
            w.side_effects.clone().map_or(Value::Null, Value::from),
        )
        .opt("timeoutSeconds", w.timeout_seconds)
        .strings_or_null("admissionReviewVersions", w.admission_review_versions)
        .opt("reinvocationPolicy", w.reinvocation_policy.clone())
        .list(
            "matchConditions",
            w.match_conditions.iter().map(match_condition).collect(),
        );
    o.done()
}

pub(crate) fn mutating_webhook_configuration(
    c: &MutatingWebhookConfiguration,
    api_version: &str,
) -> Result<Value> {
    let webhooks = c
        .webhooks
        .iter()
        .map(|w: &MutatingWebhook| {
            webhook(&Webhook {
                name: &w.name,
                client_config: w.client_config.as_ref(),
                rules: &w.rules,
                failure_policy: &w.failure_policy,
                match_policy: &w.match_policy,
                namespace_selector: w.namespace_selector.as_ref(),
                object_selector: w.object_selector.as_ref(),
                side_effects: &w.side_effects,
                timeout_seconds: w.timeout_seconds,
                admission_review_versions: &w.admission_review_versions,
                reinvocation_policy: &w.reinvocation_policy,
                match_conditions: &w.match_conditions,
            })
        })
        .collect();
    Ok(head(api_version, "MutatingWebhookConfiguration")
        .put("metadata", object_meta(c.metadata.as_ref())?)
        .list("webhooks", webhooks)
        .done())
}

pub(crate) fn validating_webhook_configuration(
    c: &ValidatingWebhookConfiguration,
    api_version: &str,
) -> Result<Value> {
    let webhooks = c
        .webhooks
        .iter()
        .map(|w: &ValidatingWebhook| {
            webhook(&Webhook {
                name: &w.name,
                client_config: w.client_config.as_ref(),
                rules: &w.rules,
                failure_policy: &w.failure_policy,
                match_policy: &w.match_policy,
                namespace_selector: w.namespace_selector.as_ref(),
                object_selector: w.object_selector.as_ref(),
                side_effects: &w.side_effects,
                timeout_seconds: w.timeout_seconds,
                admission_review_versions: &w.admission_review_versions,
                reinvocation_policy: &None,
                match_conditions: &w.match_conditions,
            })
        })
        .collect();
    Ok(head(api_version, "ValidatingWebhookConfiguration")
        .put("metadata", object_meta(c.metadata.as_ref())?)
        .list("webhooks", webhooks)
        .done())
}
