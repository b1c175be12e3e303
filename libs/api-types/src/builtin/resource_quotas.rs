//! ResourceQuotas, validated as Kubernetes' `ValidateResourceQuota*` does: each `hard` (and
//! status) entry names a resource quota can count with a quantity that is not negative (whole for
//! counted objects); scopes, listed or selected, are known ones that fit every standard resource
//! of `hard` and never pair with their opposite; listed scopes are fixed once created.

use kcp_apimachinery::status::Cause;
use serde_json::{Value, json};

use super::go_values::{invalid_shown, quoted, string_slice};
use super::resource_names::{
    canonicalize_list, is_standard_quota, quantity_at, quantity_value_causes,
    quota_resource_name_causes,
};
use crate::resource::Strategy;

pub struct ResourceQuotaStrategy;

/// The scopes Kubernetes knows (`IsStandardResourceQuotaScope`).
const SCOPES: [&str; 6] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// Scopes that select by a pod's state and so take `Exists` only in a selector.
const EXISTS_ONLY: [&str; 5] = [
    "BestEffort",
    "NotBestEffort",
    "Terminating",
    "NotTerminating",
    "CrossNamespacePodAffinity",
];

/// Scopes that cannot hold together.
const CONFLICTS: [(&str, &str); 2] = [
    ("BestEffort", "NotBestEffort"),
    ("Terminating", "NotTerminating"),
];

/// Pod resources: the only ones pod scopes can narrow.
const POD_COMPUTE: [&str; 6] = [
    "cpu",
    "memory",
    "limits.cpu",
    "limits.memory",
    "requests.cpu",
    "requests.memory",
];

/// `IsResourceQuotaScopeValidForResource`: a best-effort pod requests nothing, so that scope
/// counts pods only; the other pod scopes count pods and their compute.
fn scope_fits(scope: &str, resource: &str) -> bool {
    match scope {
        "BestEffort" => resource == "pods",
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => resource == "pods" || POD_COMPUTE.contains(&resource),
        _ => true,
    }
}

/// The standard resources of `spec.hard`, sorted, which every scope must fit.
fn standard_hard(spec: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = (spec.get("hard").and_then(Value::as_object).into_iter())
        .flat_map(|m| m.keys())
        .map(String::as_str)
        .filter(|k| is_standard_quota(k))
        .collect();
    names.sort_unstable();
    names
}

fn strings(list: Option<&Value>) -> Vec<&str> {
    (list.and_then(Value::as_array).into_iter().flatten())
        .map(|v| v.as_str().unwrap_or_default())
        .collect()
}

fn conflicting(scopes: &[&str]) -> usize {
    CONFLICTS
        .iter()
        .filter(|(a, b)| scopes.contains(a) && scopes.contains(b))
        .count()
}

/// Kubernetes' `validateResourceQuotaScopes`; causes show the whole list as Go prints it.
fn scopes_causes(spec: &Value, causes: &mut Vec<Cause>) {
    let scopes = strings(spec.get("scopes"));
    if scopes.is_empty() {
        return;
    }
    let shown = string_slice("core.ResourceQuotaScope", spec.get("scopes"));
    let hard = standard_hard(spec);
    for scope in &scopes {
        if !SCOPES.contains(scope) {
            causes.push(invalid_shown("spec.scopes", &shown, "unsupported scope"));
        }
        for _ in hard.iter().filter(|k| !scope_fits(scope, k)) {
            causes.push(invalid_shown(
                "spec.scopes",
                &shown,
                "unsupported scope applied to resource",
            ));
        }
    }
    for _ in 0..conflicting(&scopes) {
        causes.push(invalid_shown("spec.scopes", &shown, "conflicting scopes"));
    }
}

/// A `*core.ScopeSelector` as Go prints it (`%#v`).
fn selector_shown(expressions: &[Value]) -> String {
    let items: Vec<String> = expressions
        .iter()
        .map(|e| {
            let text = |f: &str| quoted(e.get(f).and_then(Value::as_str).unwrap_or_default());
            format!(
                "core.ScopedResourceSelectorRequirement{{ScopeName:{}, Operator:{}, Values:{}}}",
                text("scopeName"),
                text("operator"),
                string_slice("string", e.get("values")),
            )
        })
        .collect();
    let list = if items.is_empty() {
        "[]core.ScopedResourceSelectorRequirement(nil)".to_string()
    } else {
        format!(
            "[]core.ScopedResourceSelectorRequirement{{{}}}",
            items.join(", ")
        )
    };
    format!("core.ScopeSelector{{MatchExpressions:{list}}}")
}

/// Kubernetes' `validateScopedResourceSelectorRequirement`, at its paths (no index).
fn selector_causes(spec: &Value, causes: &mut Vec<Cause>) {
    let Some(selector) = spec.get("scopeSelector").filter(|s| !s.is_null()) else {
        return;
    };
    let path = "spec.scopeSelector.matchExpressions";
    let expressions =
        (selector.get("matchExpressions").and_then(Value::as_array)).map_or(&[][..], Vec::as_slice);
    let hard = standard_hard(spec);
    let mut scopes = Vec::new();
    for expression in expressions {
        let text = |f: &str| {
            expression
                .get(f)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let (scope, operator) = (text("scopeName"), text("operator"));
        if !SCOPES.contains(&scope) {
            causes.push(Cause::invalid(
                &format!("{path}.scopeName"),
                &json!(scope),
                "unsupported scope",
            ));
        }
        for _ in hard.iter().filter(|k| !scope_fits(scope, k)) {
            causes.push(invalid_shown(
                path,
                &selector_shown(expressions),
                "unsupported scope applied to resource",
            ));
        }
        if EXISTS_ONLY.contains(&scope) && operator != "Exists" {
            causes.push(Cause::invalid(
                &format!("{path}.operator"),
                &json!(operator),
                "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, \
                 ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, \
                 ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        let values = strings(expression.get("values"));
        match operator {
            "In" | "NotIn" if values.is_empty() => causes.push(Cause::required(
                &format!("{path}.values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => causes.push(invalid_shown(
                &format!("{path}.values"),
                &string_slice("string", expression.get("values")),
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            _ => causes.push(Cause::invalid(
                &format!("{path}.operator"),
                &json!(operator),
                "not a valid selector operator",
            )),
        }
        scopes.push(scope);
    }
    // Kubernetes shows the listed scopes here, not the selected ones.
    let listed = string_slice("core.ResourceQuotaScope", spec.get("scopes"));
    for _ in 0..conflicting(&scopes) {
        causes.push(invalid_shown(path, &listed, "conflicting scopes"));
    }
}

/// The listed scopes as a set (their order is no change).
fn scope_set(obj: &Value) -> Vec<&str> {
    let mut list = strings(obj.pointer("/spec/scopes"));
    list.sort_unstable();
    list.dedup();
    list
}

/// The names and quantities of the resource list at `pointer` (`/spec/hard`), causes at `path`.
fn list_causes(obj: &Value, pointer: &str, path: &str, causes: &mut Vec<Cause>) {
    let list = obj.pointer(pointer).and_then(Value::as_object);
    for (name, value) in list.into_iter().flatten() {
        let at = format!("{path}[{name}]");
        causes.extend(quota_resource_name_causes(name, &at));
        if let Some(q) = quantity_at(value, &at, causes) {
            causes.extend(quantity_value_causes(name, &q, &at));
        }
    }
}

/// Kubernetes' `ValidateResourceQuotaSpec`.
fn spec_causes(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    list_causes(obj, "/spec/hard", "spec.hard", &mut causes);
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    scopes_causes(spec, &mut causes);
    selector_causes(spec, &mut causes);
    causes
}

/// Kubernetes' `ValidateResourceQuotaStatus`.
fn status_causes(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    list_causes(obj, "/status/hard", "status.hard", &mut causes);
    list_causes(obj, "/status/used", "status.used", &mut causes);
    causes
}

/// What decoding does to quantities: each is kept in its canonical form.
fn canonicalize(obj: &mut Value) {
    for pointer in ["/spec/hard", "/status/hard", "/status/used"] {
        canonicalize_list(obj.pointer_mut(pointer));
    }
}

impl Strategy for ResourceQuotaStrategy {
    fn decode(&self, obj: &mut Value) {
        canonicalize(obj);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = spec_causes(obj);
        causes.extend(status_causes(obj));
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = spec_causes(new);
        if scope_set(new) != scope_set(old) {
            causes.push(invalid_shown(
                "spec.scopes",
                &string_slice("core.ResourceQuotaScope", new.pointer("/spec/scopes")),
                "field is immutable",
            ));
        }
        causes
    }

    fn validate_subresource_update(
        &self,
        _subresource: &str,
        new: &Value,
        _old: &Value,
    ) -> Vec<Cause> {
        status_causes(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(causes: &[Cause]) -> Vec<String> {
        causes.iter().map(Cause::full_message).collect()
    }

    fn quota(spec: Value) -> Value {
        json!({"metadata": {"name": "q"}, "spec": spec})
    }

    #[test]
    fn hard_names_and_quantities() {
        let q = quota(
            json!({"hard": {"pods": "1500m", "cpu": "-1", "nope": "1", "count/deployments.apps": "2"}}),
        );
        assert_eq!(
            messages(&ResourceQuotaStrategy.validate(&q)),
            [
                "spec.hard[pods]: Invalid value: 1500m: must be an integer",
                "spec.hard[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
                "spec.hard[nope]: Invalid value: \"nope\": must be a standard resource type or fully qualified",
                "spec.hard[nope]: Invalid value: \"nope\": must be a standard resource for quota",
            ]
        );
        let mut q = quota(json!({"hard": {"cpu": "1000m", "pods": 10}}));
        ResourceQuotaStrategy.decode(&mut q);
        assert_eq!(q["spec"]["hard"], json!({"cpu": "1", "pods": "10"}));
    }

    #[test]
    fn scopes_fit_the_resources_and_each_other() {
        let q = quota(
            json!({"hard": {"pods": "1", "configmaps": "1"}, "scopes": ["BestEffort", "NotBestEffort"]}),
        );
        let shown = "[]core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}";
        assert_eq!(
            messages(&ResourceQuotaStrategy.validate(&q)),
            [
                format!(
                    "spec.scopes: Invalid value: {shown}: unsupported scope applied to resource"
                ),
                format!(
                    "spec.scopes: Invalid value: {shown}: unsupported scope applied to resource"
                ),
                format!("spec.scopes: Invalid value: {shown}: conflicting scopes"),
            ]
        );
        let q = quota(
            json!({"hard": {"cpu": "1"}, "scopes": ["Terminating", "NotTerminating", "Later"]}),
        );
        let causes = messages(&ResourceQuotaStrategy.validate(&q));
        assert_eq!(causes.len(), 2, "{causes:?}");
        assert!(causes[0].ends_with(": unsupported scope"));
        assert!(causes[1].ends_with(": conflicting scopes"));
        let fine =
            quota(json!({"hard": {"pods": "1", "requests.cpu": "1"}, "scopes": ["NotBestEffort"]}));
        assert!(ResourceQuotaStrategy.validate(&fine).is_empty());
        // Listed scopes are fixed once created; the order they are listed in is not.
        let old = quota(json!({"scopes": ["Terminating", "BestEffort"]}));
        let same = quota(json!({"scopes": ["BestEffort", "Terminating"]}));
        assert!(
            ResourceQuotaStrategy
                .validate_update(&same, &old)
                .is_empty()
        );
        let changed = quota(json!({"scopes": ["BestEffort"]}));
        assert_eq!(
            messages(&ResourceQuotaStrategy.validate_update(&changed, &old)),
            [
                "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: field is immutable"
            ]
        );
    }

    #[test]
    fn scope_selectors_are_checked() {
        let q = quota(
            json!({"hard": {"configmaps": "1"}, "scopeSelector": {"matchExpressions": [
                {"scopeName": "BestEffort", "operator": "In", "values": ["x"]},
                {"scopeName": "PriorityClass", "operator": "Exists", "values": ["high"]},
                {"scopeName": "Nope", "operator": "Has"},
            ]}}),
        );
        let causes = messages(&ResourceQuotaStrategy.validate(&q));
        let path = "spec.scopeSelector.matchExpressions";
        assert!(causes[0].starts_with(&format!("{path}: Invalid value: core.ScopeSelector{{MatchExpressions:[]core.ScopedResourceSelectorRequirement{{core.ScopedResourceSelectorRequirement{{ScopeName:\"BestEffort\", Operator:\"In\", Values:[]string{{\"x\"}}}}")), "{causes:?}");
        assert!(causes[0].ends_with("unsupported scope applied to resource"));
        assert_eq!(
            &causes[1..],
            [
                format!(
                    "{path}.operator: Invalid value: \"In\": must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"
                ),
                causes[2].clone(),
                format!(
                    "{path}.values: Invalid value: []string{{\"high\"}}: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"
                ),
                format!("{path}.scopeName: Invalid value: \"Nope\": unsupported scope"),
                format!("{path}.operator: Invalid value: \"Has\": not a valid selector operator"),
            ]
        );
        assert!(causes[2].ends_with("unsupported scope applied to resource"));
        let conflict = quota(json!({"scopeSelector": {"matchExpressions": [
            {"scopeName": "Terminating", "operator": "Exists"},
            {"scopeName": "NotTerminating", "operator": "Exists"},
        ]}}));
        assert_eq!(
            messages(&ResourceQuotaStrategy.validate(&conflict)),
            [format!(
                "{path}: Invalid value: []core.ResourceQuotaScope(nil): conflicting scopes"
            )]
        );
    }
}
