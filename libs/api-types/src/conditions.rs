//! Status conditions as kcp writes them: a condition's `lastTransitionTime` changes only when its
//! status does, and a status that says the same again is not written. Used by the shard's
//! controllers and by the strategies that keep a condition themselves (LogicalCluster).

use serde_json::{Map, Value, json};

/// The current time as Kubernetes writes it in objects, `2026-11-21T14:30:00Z` (second precision);
/// conditions are stamped with it, and so is every write.
pub fn now_rfc3339() -> String {
    // Not `format("%Y-...")`: that parses the pattern on every call, and every write stamps a time.
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Conditions keep their transition time while their status stays.
pub fn with_transition_times(mut status: Value, old: &Value, now: &str) -> Value {
    let old_conditions = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in conditions.iter_mut() {
            stamp(c, old_conditions, now);
        }
    }
    status
}

/// Gives `condition` the `lastTransitionTime` of the one of its type in `old` if that has the same
/// status, else `now`.
pub fn stamp(condition: &mut Value, old: &[Value], now: &str) {
    let kept = old
        .iter()
        .find(|o| {
            o.get("type") == condition.get("type") && o.get("status") == condition.get("status")
        })
        .and_then(|o| o.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    condition["lastTransitionTime"] = kept;
}

/// Puts `wanted` in `conditions` in place of the one of its type (or last), stamped as
/// [`stamp`] does; nothing changes when that one already says the same.
pub fn set(conditions: &mut Vec<Value>, mut wanted: Value) {
    let at = conditions
        .iter()
        .position(|c| c.get("type") == wanted.get("type"));
    if at.is_some_and(|i| same_condition(&conditions[i], &wanted)) {
        return;
    }
    stamp(&mut wanted, conditions, &now_rfc3339());
    match at {
        Some(i) => conditions[i] = wanted,
        None => conditions.push(wanted),
    }
}

/// Whether `status` says what an object's current status (`old`) already says (transition times
/// aside). Compared in place: every reconcile of a workspace asks this, and most find it so.
pub fn same_status(old: Option<&Value>, status: &Value) -> bool {
    let old = old.unwrap_or(&Value::Null);
    match (old.as_object(), status.as_object()) {
        (Some(old), Some(new)) => same_fields(old, new, "", |key, a, b| match key {
            "conditions" => same_conditions(a, b),
            _ => a == b,
        }),
        _ => old == status,
    }
}

/// Lists of conditions equal but for their `lastTransitionTime`s.
fn same_conditions(old: &Value, new: &Value) -> bool {
    match (old.as_array(), new.as_array()) {
        (Some(old), Some(new)) => {
            old.len() == new.len() && old.iter().zip(new).all(|(a, b)| same_condition(a, b))
        }
        _ => old == new,
    }
}

/// Two conditions equal but for their `lastTransitionTime`.
fn same_condition(a: &Value, b: &Value) -> bool {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => same_fields(a, b, "lastTransitionTime", |_, x, y| x == y),
        _ => a == b,
    }
}

/// The same keys (but `skip`), with values that `eq` finds equal.
fn same_fields(
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    skip: &str,
    eq: impl Fn(&str, &Value, &Value) -> bool,
) -> bool {
    let kept = |m: &Map<String, Value>| m.keys().filter(|k| *k != skip).count();
    kept(a) == kept(b)
        && a.iter()
            .filter(|(k, _)| *k != skip)
            .all(|(k, v)| b.get(k).is_some_and(|w| eq(k, v, w)))
}

/// A condition as kcp's controllers set one: `True`, or `False` with a reason, severity `Error`
/// and a message.
pub fn condition(kind: &str, failed: Option<(&str, &str)>) -> Value {
    match failed {
        None => json!({"type": kind, "status": "True"}),
        Some((reason, message)) => json!({
            "type": kind,
            "status": "False",
            "reason": reason,
            "severity": "Error",
            "message": message,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_status_ignores_transition_times_only() {
        let status = json!({"phase": "Ready", "conditions": [
            {"type": "A", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "B", "status": "False", "reason": "R"},
        ]});
        let later = json!({"conditions": [
            {"status": "True", "type": "A", "lastTransitionTime": "2026-02-02T00:00:00Z"},
            {"type": "B", "status": "False", "reason": "R"},
        ], "phase": "Ready"});
        assert!(same_status(Some(&status), &later));
        let changed = json!({"phase": "Ready", "conditions": [
            {"type": "A", "status": "False"},
            {"type": "B", "status": "False", "reason": "R"},
        ]});
        assert!(!same_status(Some(&status), &changed));
        let fewer = json!({"phase": "Ready", "conditions": [{"type": "A", "status": "True"}]});
        assert!(!same_status(Some(&status), &fewer));
        let extra = json!({"phase": "Ready", "conditions": [
            {"type": "A", "status": "True"},
            {"type": "B", "status": "False", "reason": "R", "message": "m"},
        ]});
        assert!(!same_status(Some(&status), &extra));
        let other_phase = json!({"phase": "Initializing", "conditions": status["conditions"]});
        assert!(!same_status(Some(&status), &other_phase));
        assert!(!same_status(None, &status));
        assert!(same_status(None, &Value::Null));
    }
}
