//! Leases, as Kubernetes' lease strategy keeps them: a holder says which version it renews (no
//! unconditional update), a PUT may create one (leader election's first write), and the spec is
//! checked by `ValidateLeaseSpec`. Coordinated leader election (`strategy`, `preferredHolder`) is
//! behind a feature gate that is off by default, so those fields are dropped unless already stored.

use kcp_apimachinery::names::is_qualified_name;
use kcp_apimachinery::status::Cause;
use serde_json::{Value, json};

use crate::resource::{Strategy, StrategyContext};

/// The strategies Kubernetes defines (`CoordinatedLeaseStrategy`).
const STRATEGIES: [&str; 1] = ["OldestEmulationVersion"];

/// The gated fields of `spec`.
const GATED: [&str; 2] = ["strategy", "preferredHolder"];

pub struct LeaseStrategy;

fn spec_has(obj: &Value, field: &str) -> bool {
    obj.get("spec")
        .and_then(|s| s.get(field))
        .is_some_and(|v| !v.is_null())
}

fn drop_gated(obj: &mut Value, keep: impl Fn(&str) -> bool) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        spec.retain(|k, _| !GATED.contains(&k.as_str()) || keep(k));
    }
}

/// Kubernetes' `ValidateCoordinatedLeaseStrategy`, at the path it uses (`strategy` below the
/// field's own path).
fn strategy_causes(strategy: &str, causes: &mut Vec<Cause>) {
    let path = "spec.strategy.strategy";
    if !strategy.contains('/') {
        if !STRATEGIES.contains(&strategy) {
            causes.push(Cause::not_supported(path, &json!(strategy), &STRATEGIES));
        }
        return;
    }
    for msg in is_qualified_name(strategy) {
        causes.push(Cause::invalid(path, &json!(strategy), &msg));
    }
}

impl Strategy for LeaseStrategy {
    fn prepare_for_create(&self, _ctx: &StrategyContext<'_>, obj: &mut Value) {
        drop_gated(obj, |_| false);
    }

    fn prepare_for_update(&self, _ctx: &StrategyContext<'_>, new: &mut Value, old: &Value) {
        drop_gated(new, |field| spec_has(old, field));
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let number = |field: &str| spec.get(field).and_then(Value::as_i64);
        if let Some(duration) = number("leaseDurationSeconds")
            && duration <= 0
        {
            causes.push(Cause::invalid(
                "spec.leaseDurationSeconds",
                &json!(duration),
                "must be greater than 0",
            ));
        }
        if let Some(transitions) = number("leaseTransitions")
            && transitions < 0
        {
            causes.push(Cause::invalid(
                "spec.leaseTransitions",
                &json!(transitions),
                "must be greater than or equal to 0",
            ));
        }
        let strategy = spec.get("strategy").and_then(Value::as_str);
        if let Some(strategy) = strategy {
            strategy_causes(strategy, &mut causes);
        }
        let preferred = spec.get("preferredHolder").and_then(Value::as_str);
        if preferred.is_some_and(|p| !p.is_empty()) && strategy.is_none_or(str::is_empty) {
            causes.push(Cause::forbidden(
                "spec.preferredHolder",
                "may only be specified if `strategy` is defined",
            ));
        }
        causes
    }

    fn allow_unconditional_update(&self) -> bool {
        false
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::TEST_CONTEXT as CTX;

    fn messages(obj: &Value) -> Vec<String> {
        (LeaseStrategy.validate(obj).iter())
            .map(Cause::full_message)
            .collect()
    }

    #[test]
    fn spec_numbers_are_bounded() {
        let lease = json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 0, "leaseTransitions": -1}});
        assert_eq!(
            messages(&lease),
            [
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        let fine = json!({"spec": {"leaseDurationSeconds": 15, "leaseTransitions": 0}});
        assert!(messages(&fine).is_empty());
    }

    #[test]
    fn coordinated_fields_are_gated_off() {
        let mut lease =
            json!({"spec": {"holderIdentity": "a", "strategy": "Nope", "preferredHolder": "b"}});
        LeaseStrategy.prepare_for_create(&CTX, &mut lease);
        assert_eq!(lease["spec"], json!({"holderIdentity": "a"}));
        // Stored before (the gate was on once): kept and checked.
        let old = json!({"spec": {"strategy": "OldestEmulationVersion"}});
        let mut new = json!({"spec": {"strategy": "Nope", "preferredHolder": "b"}});
        LeaseStrategy.prepare_for_update(&CTX, &mut new, &old);
        assert_eq!(new["spec"], json!({"strategy": "Nope"}));
        assert_eq!(
            messages(&new),
            [
                "spec.strategy.strategy: Unsupported value: \"Nope\": supported values: \"OldestEmulationVersion\""
            ]
        );
        let preferred = json!({"spec": {"preferredHolder": "b"}});
        assert_eq!(
            messages(&preferred),
            ["spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"]
        );
    }
}
