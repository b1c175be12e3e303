//! Matching shared by webhooks and policies: namespace and object selectors, and CEL match
//! conditions.

use std::sync::Arc;

use kcp_apimachinery::selector::Selector;
use kcp_apimachinery::status::ApiError;
use kcp_schema::cel::Expression;
use serde_json::{Map, Value};

use super::Attributes;
use super::review;
use super::rules::RuleInput;
use crate::watch_cache::WatchCache;

/// Named CEL conditions; `Err` keeps a compile error.
pub type Conditions = Vec<(String, Result<Arc<Expression>, String>)>;

/// The request as rules see it.
pub fn rule_input<'a>(attrs: &Attributes<'a>) -> RuleInput<'a> {
    let def = attrs.def;
    RuleInput {
        operation: attrs.operation,
        group: &def.group,
        version: &def.version,
        resource: &def.plural,
        subresource: attrs.subresource.unwrap_or(""),
        cluster_scoped: !def.namespaced,
    }
}

fn labels_of(obj: Option<&Value>) -> Option<&Map<String, Value>> {
    obj?.pointer("/metadata/labels")?.as_object()
}

fn selected(selector: &Selector, labels: Option<&Map<String, Value>>) -> bool {
    match labels {
        Some(l) => selector.matches(l),
        None => selector.matches(&Map::new()),
    }
}

/// `namespaceSelector` (labels of the object's namespace; a Namespace by its own labels;
/// cluster-scoped objects always match) and `objectSelector` (labels of the object or the old one).
pub fn selectors_match(
    cache: &WatchCache,
    namespace_selector: &Selector,
    object_selector: &Selector,
    attrs: &Attributes<'_>,
    object: Option<&Value>,
) -> Result<bool, ApiError> {
    let def = attrs.def;
    let is_namespace = def.is("", "namespaces");
    if !namespace_selector.is_empty() && (attrs.namespace.is_some() || is_namespace) {
        let matched = if is_namespace {
            selected(namespace_selector, labels_of(object.or(attrs.old_object)))
        } else {
            let ns = attrs.namespace.unwrap_or_default();
            let key = crate::registry::keyspaces::namespace_key(attrs.cluster, ns);
            let Some(cached) = cache.get(&key) else {
                return Err(ApiError::not_found("", "namespaces", ns));
            };
            namespace_selector.matches(&cached.labels_map())
        };
        if !matched {
            return Ok(false);
        }
    }
    Ok(object_selector.is_empty()
        || [object, attrs.old_object]
            .into_iter()
            .flatten()
            .any(|o| selected(object_selector, labels_of(Some(o)))))
}

/// The CEL variables of admission expressions: `object`, `oldObject`, `request` (the
/// AdmissionReview request), plus `extra` ones.
pub fn variables(attrs: &Attributes<'_>, object: Option<&Value>) -> Vec<(&'static str, Value)> {
    let mut review = review::request("", attrs, object);
    vec![
        ("object", object.cloned().unwrap_or(Value::Null)),
        (
            "oldObject",
            attrs.old_object.cloned().unwrap_or(Value::Null),
        ),
        ("request", review["request"].take()),
    ]
}

/// Evaluates `matchConditions`: `Ok(false)` as soon as one is false; otherwise `Err` with the
/// errors met, or `Ok(true)`.
pub fn conditions_hold(conditions: &Conditions, values: &[(&str, &Value)]) -> Result<bool, String> {
    let mut errors = Vec::new();
    for (name, condition) in conditions {
        let outcome = match condition {
            Ok(expression) => expression.evaluate_bool(values),
            Err(e) => Err(e.clone()),
        };
        match outcome {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => errors.push(format!("matchCondition {name:?}: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(true)
    } else {
        Err(errors.join(", "))
    }
}

/// Compiles `matchConditions` (or validations) naming `variables`.
pub fn compile_conditions(v: Option<&Value>, variables: &[&str]) -> Conditions {
    v.and_then(Value::as_array)
        .map(|conditions| {
            conditions
                .iter()
                .map(|c| {
                    let text = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
                    let compiled = Expression::compile(text("expression"), variables)
                        .map(Arc::new)
                        .map_err(|e| format!("compilation failed: {e}"));
                    (text("name").to_string(), compiled)
                })
                .collect()
        })
        .unwrap_or_default()
}
