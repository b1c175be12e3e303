//! Validation of ValidatingAdmissionPolicies and their bindings (admissionregistration.k8s.io/v1),
//! the subset of kube-apiserver's rules the shard relies on when it enforces them.

use kcp_apimachinery::status::Cause;
use serde_json::{Value, json};

use crate::resource::Strategy;

/// The variables a policy's expressions may name.
const VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
];
const ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];

pub struct PolicyStrategy;

/// Kubernetes' defaults of a policy's spec (admissionregistration/v1 `SetDefaults_*`).
fn default_policy(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("failurePolicy").is_none_or(Value::is_null) {
        spec.insert("failurePolicy".into(), json!("Fail"));
    }
    if let Some(constraints) = spec
        .get_mut("matchConstraints")
        .and_then(Value::as_object_mut)
    {
        for (field, default) in [
            ("matchPolicy", json!("Equivalent")),
            ("namespaceSelector", json!({})),
            ("objectSelector", json!({})),
        ] {
            if constraints.get(field).is_none_or(Value::is_null) {
                constraints.insert(field.into(), default);
            }
        }
    }
}

impl Strategy for PolicyStrategy {
    fn prepare_for_create(&self, _ctx: &crate::resource::StrategyContext<'_>, obj: &mut Value) {
        default_policy(obj);
    }

    fn prepare_for_update(
        &self,
        _ctx: &crate::resource::StrategyContext<'_>,
        new: &mut Value,
        _old: &Value,
    ) {
        default_policy(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        if spec.get("matchConstraints").is_none_or(Value::is_null) {
            causes.push(Cause::required("spec.matchConstraints", ""));
        }
        if let Some(p) = spec.get("failurePolicy").filter(|p| !p.is_null())
            && !matches!(p.as_str(), Some("Fail" | "Ignore"))
        {
            causes.push(Cause::not_supported(
                "spec.failurePolicy",
                p,
                &["Fail", "Ignore"],
            ));
        }
        for (i, variable) in (spec
            .get("variables")
            .and_then(Value::as_array)
            .into_iter()
            .flatten())
        .enumerate()
        {
            if variable
                .get("name")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                causes.push(Cause::required(&format!("spec.variables[{i}].name"), ""));
            }
        }
        for list in ["validations", "matchConditions", "variables"] {
            let items = spec.get(list).and_then(Value::as_array);
            for (i, item) in items.into_iter().flatten().enumerate() {
                let expression = item.get("expression").and_then(Value::as_str).unwrap_or("");
                if let Err(e) = kcp_schema::cel::Expression::compile(expression, VARIABLES) {
                    causes.push(Cause::invalid(
                        &format!("spec.{list}[{i}].expression"),
                        &json!(expression),
                        &format!("compilation failed: {e}"),
                    ));
                }
            }
        }
        causes
    }
}

pub struct BindingStrategy;

impl Strategy for BindingStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        if spec
            .get("policyName")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            causes.push(Cause::required("spec.policyName", ""));
        }
        let actions = spec
            .get("validationActions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if actions.is_empty() {
            causes.push(Cause::required(
                "spec.validationActions",
                "at least one validation action is required",
            ));
        }
        let mut seen = Vec::new();
        for (i, action) in actions.iter().enumerate() {
            let field = format!("spec.validationActions[{i}]");
            if !action.as_str().is_some_and(|a| ACTIONS.contains(&a)) {
                causes.push(Cause::not_supported(&field, action, ACTIONS));
            } else if seen.contains(&action) {
                causes.push(Cause::duplicate(&field, action));
            }
            seen.push(action);
        }
        if seen.contains(&&json!("Deny")) && seen.contains(&&json!("Warn")) {
            causes.push(Cause::invalid(
                "spec.validationActions",
                &Value::Array(actions.to_vec()),
                "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ));
        }
        causes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(Cause::full_message).collect()
    }

    #[test]
    fn policies_need_constraints_and_expressions_that_compile() {
        let ok = json!({"spec": {"matchConstraints": {}, "validations": [{"expression": "object.a == 1"}]}});
        assert!(PolicyStrategy.validate(&ok).is_empty());
        let bad =
            json!({"spec": {"validations": [{"expression": "nope("}], "failurePolicy": "Maybe"}});
        let m = messages(PolicyStrategy.validate(&bad));
        assert!(
            m.contains(&"spec.matchConstraints: Required value".to_string()),
            "{m:?}"
        );
        assert!(
            m.iter()
                .any(|m| m.starts_with("spec.validations[0].expression: Invalid value")),
            "{m:?}"
        );
        assert!(
            m.iter()
                .any(|m| m.starts_with("spec.failurePolicy: Unsupported value")),
            "{m:?}"
        );
    }

    #[test]
    fn bindings_name_a_policy_and_sensible_actions() {
        let ok = json!({"spec": {"policyName": "p", "validationActions": ["Deny", "Audit"]}});
        assert!(BindingStrategy.validate(&ok).is_empty());
        let m = messages(BindingStrategy.validate(&json!({"spec": {}})));
        assert_eq!(
            m,
            vec![
                "spec.policyName: Required value".to_string(),
                "spec.validationActions: Required value: at least one validation action is required".to_string(),
            ]
        );
        let both = json!({"spec": {"policyName": "p", "validationActions": ["Deny", "Warn", "Warn", "Log"]}});
        let m = messages(BindingStrategy.validate(&both));
        assert!(
            m.iter()
                .any(|m| m.starts_with("spec.validationActions[2]: Duplicate value")),
            "{m:?}"
        );
        assert!(
            m.iter()
                .any(|m| m.starts_with("spec.validationActions[3]: Unsupported value")),
            "{m:?}"
        );
        assert!(
            m.iter()
                .any(|m| m.contains("must not contain both Deny and Warn")),
            "{m:?}"
        );
    }
}
