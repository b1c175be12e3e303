//! ValidatingAdmissionPolicy: CEL `validations` of the policies bound (by a
//! ValidatingAdmissionPolicyBinding) in the write's logical cluster.
//!
//! Policies and bindings are read from the watch cache and compiled once per revision. A policy
//! with `paramKind` is evaluated once per param its binding's `paramRef` names
//! ([`super::policy_params`]); `variables` are evaluated in order, each seeing the ones before it,
//! and read as `variables.<name>`. Known differences from kube-apiserver: `auditAnnotations` and
//! `messageExpression` are not supported; `Audit` is ignored; expression values are untyped JSON;
//! `matchPolicy: Equivalent` matches every version of a resource.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use kcp_apimachinery::selector::Selector;
use kcp_apimachinery::selector::label::from_label_selector;
use kcp_apimachinery::status::{ApiError, Cause, Reason};
use kcp_store::Revision;
use kcp_store::keys::ResourceKeyspace;
use parking_lot::Mutex;
use serde_json::Value;

use super::matching::{self, Conditions, compile_conditions};
use super::policy_params::{self, ParamKind, ParamRef};
use super::rules::{Rule, strings};
use super::{Admission, Attributes};
use crate::watch_cache::WatchCache;

/// Variables of validations and match conditions.
const VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
];

/// `matchConstraints` of a policy or `matchResources` of a binding.
struct MatchResources {
    /// Rules with their `resourceNames` (empty = any name).
    rules: Vec<(Rule, Vec<String>)>,
    exclude: Vec<(Rule, Vec<String>)>,
    namespace_selector: Result<Selector, String>,
    object_selector: Result<Selector, String>,
    equivalent: bool,
    /// A binding's `matchResources` without rules narrows by selectors only.
    any_resource_when_no_rules: bool,
}

fn rules_with_names(v: Option<&Value>) -> Vec<(Rule, Vec<String>)> {
    v.and_then(Value::as_array)
        .map(|rules| {
            rules
                .iter()
                .map(|r| {
                    let names = strings(r.get("resourceNames"));
                    (Rule::parse(r), names)
                })
                .collect()
        })
        .unwrap_or_default()
}

fn selector(v: Option<&Value>) -> Result<Selector, String> {
    match v {
        None | Some(Value::Null) => Ok(Selector::everything()),
        Some(v) => from_label_selector(v).map_err(|e| e.to_string()),
    }
}

impl MatchResources {
    fn parse(v: &Value, any_resource_when_no_rules: bool) -> MatchResources {
        MatchResources {
            rules: rules_with_names(v.get("resourceRules")),
            exclude: rules_with_names(v.get("excludeResourceRules")),
            namespace_selector: selector(v.get("namespaceSelector")),
            object_selector: selector(v.get("objectSelector")),
            equivalent: v
                .get("matchPolicy")
                .and_then(Value::as_str)
                .unwrap_or("Equivalent")
                == "Equivalent",
            any_resource_when_no_rules,
        }
    }

    fn matches(
        &self,
        cache: &WatchCache,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<bool, ApiError> {
        let input = matching::rule_input(attrs);
        let hit = |rules: &[(Rule, Vec<String>)]| {
            rules.iter().any(|(rule, names)| {
                (rule.matches(&input, false) || (self.equivalent && rule.matches(&input, true)))
                    && (names.is_empty() || names.iter().any(|n| n == attrs.name))
            })
        };
        let included =
            (self.rules.is_empty() && self.any_resource_when_no_rules) || hit(&self.rules);
        if !included || hit(&self.exclude) {
            return Ok(false);
        }
        let invalid = |which: &str, e: &String| ApiError::internal(format!("invalid {which}: {e}"));
        let ns = self
            .namespace_selector
            .as_ref()
            .map_err(|e| invalid("namespaceSelector", e))?;
        let obj = self
            .object_selector
            .as_ref()
            .map_err(|e| invalid("objectSelector", e))?;
        matching::selectors_match(cache, ns, obj, attrs, object)
    }
}

struct Validation {
    source: String,
    compiled: Result<Arc<kcp_schema::cel::Expression>, String>,
    message: String,
    reason: Option<String>,
}

struct Policy {
    fail_open: bool,
    constraints: MatchResources,
    conditions: Conditions,
    /// `variables`, in order: each expression sees the ones before it.
    variables: Vec<(String, Result<Arc<kcp_schema::cel::Expression>, String>)>,
    validations: Vec<Validation>,
    param_kind: Option<ParamKind>,
}

struct Binding {
    name: String,
    policy: String,
    actions: Vec<String>,
    resources: Option<MatchResources>,
    param_ref: Option<ParamRef>,
}

fn compile(source: &str) -> Result<Arc<kcp_schema::cel::Expression>, String> {
    kcp_schema::cel::Expression::compile(source, VARIABLES)
        .map(Arc::new)
        .map_err(|e| format!("compilation failed: {e}"))
}

/// The values of a policy's `variables` (as the JSON object `variables`), and the error of each
/// that failed: an expression reading one of those fails with its error.
fn evaluate_variables(
    policy: &Policy,
    values: &mut Vec<(&'static str, Value)>,
) -> Vec<(String, String)> {
    let mut computed = serde_json::Map::new();
    let mut failed = Vec::new();
    for (name, expression) in &policy.variables {
        values.retain(|(n, _)| *n != "variables");
        values.push(("variables", Value::Object(computed.clone())));
        let refs: Vec<(&str, &Value)> = values.iter().map(|(n, v)| (*n, v)).collect();
        let result = expression
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|e| e.evaluate(&refs));
        match result {
            Ok(value) => {
                computed.insert(name.clone(), value);
            }
            Err(e) => failed.push((name.clone(), e)),
        }
    }
    values.retain(|(n, _)| *n != "variables");
    values.push(("variables", Value::Object(computed)));
    failed
}

/// The error of a failed variable that `source` reads, if any.
fn failed_variable<'a>(source: &str, failed: &'a [(String, String)]) -> Option<&'a str> {
    failed
        .iter()
        .find(|(name, _)| source.contains(&format!("variables.{name}")))
        .map(|(_, e)| e.as_str())
}

fn parse_policy(v: &Value) -> Policy {
    let spec = v.get("spec").unwrap_or(&Value::Null);
    let validations = spec
        .get("validations")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .map(|val| {
                    let text = |k: &str| val.get(k).and_then(Value::as_str).unwrap_or("").trim();
                    Validation {
                        source: text("expression").to_string(),
                        compiled: compile(text("expression")),
                        message: text("message").to_string(),
                        reason: Some(text("reason"))
                            .filter(|r| !r.is_empty())
                            .map(str::to_string),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    Policy {
        fail_open: spec.get("failurePolicy").and_then(Value::as_str) == Some("Ignore"),
        constraints: MatchResources::parse(
            spec.get("matchConstraints").unwrap_or(&Value::Null),
            false,
        ),
        conditions: compile_conditions(spec.get("matchConditions"), VARIABLES),
        variables: (spec
            .get("variables")
            .and_then(Value::as_array)
            .into_iter()
            .flatten())
        .map(|v| {
            let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").trim();
            (text("name").to_string(), compile(text("expression")))
        })
        .collect(),
        validations,
        param_kind: ParamKind::parse(spec.get("paramKind")),
    }
}

fn parse_binding(v: &Value) -> Binding {
    let spec = v.get("spec").unwrap_or(&Value::Null);
    Binding {
        name: v
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        policy: spec
            .get("policyName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        actions: spec
            .get("validationActions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        resources: spec
            .get("matchResources")
            .filter(|m| !m.is_null())
            .map(|m| MatchResources::parse(m, true)),
        param_ref: ParamRef::parse(spec.get("paramRef")),
    }
}

/// Objects of one resource compiled once per revision, by key.
struct Compiled<T> {
    keyspace: ResourceKeyspace,
    by_key: Mutex<HashMap<String, (Revision, Arc<T>)>>,
    /// Entry count after the last sweep of deleted objects.
    swept_at: Mutex<usize>,
}

impl<T> Compiled<T> {
    fn new(plural: &str) -> Compiled<T> {
        Compiled {
            keyspace: ResourceKeyspace::new("admissionregistration.k8s.io", plural, None, false),
            by_key: Mutex::new(HashMap::new()),
            swept_at: Mutex::new(0),
        }
    }

    fn get(&self, obj: &crate::watch_cache::CachedObject, parse: impl Fn(&Value) -> T) -> Arc<T> {
        let mut map = self.by_key.lock();
        if let Some((rev, compiled)) = map.get(&obj.key)
            && *rev == obj.revision
        {
            return compiled.clone();
        }
        let compiled = Arc::new(parse(&obj.value().unwrap_or(Value::Null)));
        map.insert(obj.key.clone(), (obj.revision, compiled.clone()));
        compiled
    }

    /// Forgets objects no longer in the cache once the map has doubled since the last sweep, so
    /// the cost is amortised over insertions.
    fn sweep(&self, cache: &WatchCache) {
        let mut map = self.by_key.lock();
        let mut swept_at = self.swept_at.lock();
        if map.len() > (*swept_at * 2).max(64) {
            map.retain(|key, _| cache.get(key).is_some());
            *swept_at = map.len();
        }
    }
}

/// The policies of each logical cluster.
pub struct PolicyAdmission {
    cache: Arc<WatchCache>,
    policies: Compiled<Policy>,
    bindings: Compiled<Binding>,
}

/// A failed validation of one binding.
struct Denial {
    policy: String,
    binding: String,
    message: String,
    reason: Reason,
}

fn reason_of(name: Option<&str>) -> Reason {
    match name {
        Some("Unauthorized") => Reason::Unauthorized,
        Some("Forbidden") => Reason::Forbidden,
        Some("RequestEntityTooLarge") => Reason::RequestEntityTooLarge,
        _ => Reason::Invalid,
    }
}

impl PolicyAdmission {
    pub fn new(cache: Arc<WatchCache>) -> PolicyAdmission {
        PolicyAdmission {
            cache,
            policies: Compiled::new("validatingadmissionpolicies"),
            bindings: Compiled::new("validatingadmissionpolicybindings"),
        }
    }

    /// The denials of one policy under one binding.
    fn evaluate(
        &self,
        policy: &Policy,
        policy_name: &str,
        binding: &Binding,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<Vec<Denial>, ApiError> {
        if !policy.constraints.matches(&self.cache, attrs, object)? {
            return Ok(Vec::new());
        }
        if let Some(resources) = &binding.resources
            && !resources.matches(&self.cache, attrs, object)?
        {
            return Ok(Vec::new());
        }
        let denial = |message: String, reason: Reason| Denial {
            policy: policy_name.to_string(),
            binding: binding.name.clone(),
            message,
            reason,
        };
        // An error is a denial under failurePolicy Fail and nothing under Ignore.
        let failed = |message: String| {
            if policy.fail_open {
                Vec::new()
            } else {
                vec![denial(message, Reason::Invalid)]
            }
        };
        // One evaluation per param (one with `params` null for a policy without paramKind).
        let params = match (&policy.param_kind, &binding.param_ref) {
            (None, _) => vec![Value::Null],
            (Some(_), None) => {
                return Ok(failed(
                    "failed to configure binding: paramKind set but binding has no paramRef".into(),
                ));
            }
            (Some(kind), Some(param_ref)) => {
                match policy_params::resolve(
                    &self.cache,
                    attrs.cluster,
                    kind,
                    param_ref,
                    attrs.namespace,
                ) {
                    Err(e) => return Ok(failed(format!("failed to configure binding: {e}"))),
                    Ok(found) if found.is_empty() && param_ref.deny_when_missing => {
                        return Ok(vec![denial(
                            policy_params::NOT_FOUND.into(),
                            Reason::Invalid,
                        )]);
                    }
                    Ok(found) => found,
                }
            }
        };
        let mut denials = Vec::new();
        for param in params {
            denials.extend(self.evaluate_with(policy, attrs, object, param, &denial, &failed));
        }
        Ok(denials)
    }

    /// The denials of one policy for one param.
    fn evaluate_with(
        &self,
        policy: &Policy,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
        param: Value,
        denial: &dyn Fn(String, Reason) -> Denial,
        failed: &dyn Fn(String) -> Vec<Denial>,
    ) -> Vec<Denial> {
        let mut values = matching::variables(attrs, object);
        values.push(("params", param));
        let namespace_object = attrs
            .namespace
            .and_then(|ns| {
                let key = crate::registry::keyspaces::namespace_key(attrs.cluster, ns);
                self.cache.get(&key)
            })
            .and_then(|o| o.value().ok())
            .unwrap_or(Value::Null);
        values.push(("namespaceObject", namespace_object));
        let variable_errors = evaluate_variables(policy, &mut values);
        let refs: Vec<(&str, &Value)> = values.iter().map(|(n, v)| (*n, v)).collect();
        match matching::conditions_hold(&policy.conditions, &refs) {
            Ok(true) => {}
            Ok(false) => return Vec::new(),
            Err(e) => return failed(e),
        }
        let mut denials = Vec::new();
        for v in &policy.validations {
            let outcome = match (&v.compiled, failed_variable(&v.source, &variable_errors)) {
                (_, Some(e)) => Err(e.to_string()),
                (Ok(expression), None) => expression.evaluate_bool(&refs),
                (Err(e), None) => Err(e.clone()),
            };
            match outcome {
                Ok(true) => {}
                Ok(false) => {
                    let message = if v.message.is_empty() {
                        format!("failed expression: {}", v.source)
                    } else {
                        v.message.clone()
                    };
                    denials.push(denial(message, reason_of(v.reason.as_deref())));
                }
                Err(e) => denials.extend(failed(format!(
                    "expression '{}' resulted in error: {e}",
                    v.source
                ))),
            }
        }
        denials
    }
}

#[async_trait]
impl Admission for PolicyAdmission {
    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        let bindings = self
            .cache
            .list(&self.bindings.keyspace.cluster(attrs.cluster), None);
        if bindings.is_empty() {
            return Ok(());
        }
        let mut denied = None;
        for cached in &bindings {
            let binding = self.bindings.get(cached, parse_binding);
            let key = self
                .policies
                .keyspace
                .object(attrs.cluster, None, &binding.policy);
            // A binding to a policy that does not exist (yet) has no effect.
            let Some(cached_policy) = self.cache.get(&key) else {
                continue;
            };
            let policy = self.policies.get(&cached_policy, parse_policy);
            for d in self.evaluate(&policy, &binding.policy, &binding, attrs, object)? {
                if binding.actions.iter().any(|a| a == "Warn") {
                    super::warnings::add(format!(
                        "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                        d.policy, d.binding, d.message
                    ));
                }

                if denied.is_none() && binding.actions.iter().any(|a| a == "Deny") {
                    denied = Some(d);
                }
            }
        }
        self.bindings.sweep(&self.cache);
        self.policies.sweep(&self.cache);
        let Some(d) = denied else {
            return Ok(());
        };
        let def = attrs.def;
        let message = format!(
            "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
            d.policy, d.binding, d.message
        );
        let mut err = ApiError::forbidden(&def.group, &def.plural, attrs.name, &message);
        err.reason = d.reason;
        err.code = d.reason.code();
        err.details.causes.push(Cause::new("", "", message));
        Err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcp_auth::UserInfo;
    use serde_json::json;

    fn configmaps() -> Arc<kcp_api_types::ResourceDef> {
        kcp_api_types::builtin::catalogue()
            .into_iter()
            .find(|d| d.group.is_empty() && d.plural == "configmaps")
            .map(Arc::new)
            .expect("configmaps are built in")
    }

    async fn cache() -> Arc<WatchCache> {
        let store: Arc<dyn kcp_store::Store> = Arc::new(kcp_store::MemoryStore::new());
        WatchCache::start(store).await.expect("cache starts")
    }

    fn attrs<'a>(
        def: &'a kcp_api_types::ResourceDef,
        name: &'a str,
        user: &'a UserInfo,
    ) -> Attributes<'a> {
        Attributes {
            def,
            cluster: "root",
            namespace: None,
            name,
            operation: super::super::Operation::Create,
            subresource: None,
            user,
            dry_run: false,
            old_object: None,
        }
    }

    const RULE: &str = r#"{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}"#;

    #[tokio::test]
    async fn resource_names_and_excludes() {
        let cache = cache().await;
        let def = configmaps();
        let user = UserInfo::default();
        let rule: Value = serde_json::from_str(RULE).unwrap_or_default();
        let mut named = rule.clone();
        named["resourceNames"] = json!(["a"]);
        let m = MatchResources::parse(&json!({"resourceRules": [named]}), false);
        assert_eq!(m.matches(&cache, &attrs(&def, "a", &user), None), Ok(true));
        assert_eq!(m.matches(&cache, &attrs(&def, "b", &user), None), Ok(false));
        let m = MatchResources::parse(
            &json!({"resourceRules": [rule], "excludeResourceRules": [named]}),
            false,
        );
        assert_eq!(m.matches(&cache, &attrs(&def, "a", &user), None), Ok(false));
        assert_eq!(m.matches(&cache, &attrs(&def, "b", &user), None), Ok(true));
    }

    #[tokio::test]
    async fn rules_are_required_of_policies_not_of_bindings() {
        let cache = cache().await;
        let def = configmaps();
        let user = UserInfo::default();
        let selectors_only = json!({"objectSelector": {}});
        let policy = MatchResources::parse(&selectors_only, false);
        assert_eq!(
            policy.matches(&cache, &attrs(&def, "a", &user), None),
            Ok(false)
        );
        let binding = MatchResources::parse(&selectors_only, true);
        assert_eq!(
            binding.matches(&cache, &attrs(&def, "a", &user), None),
            Ok(true)
        );
    }

    #[test]
    fn validation_messages_and_reasons() {
        let policy = parse_policy(&json!({"spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "validations": [
                {"expression": " object.x == 1 ", "reason": "Forbidden"},
                {"expression": "nope(", "message": "m"},
            ],
        }}));
        assert!(
            policy.param_kind.is_some() && !policy.fail_open,
            "failurePolicy defaults to Fail"
        );
        assert_eq!(policy.validations[0].source, "object.x == 1");
        assert_eq!(
            reason_of(policy.validations[0].reason.as_deref()),
            Reason::Forbidden
        );
        assert_eq!(reason_of(None), Reason::Invalid);
        assert!(policy.validations[1].compiled.is_err());
    }
}
