//! Status conditions as kcp's controllers write them: a condition's `lastTransitionTime` changes
//! only when its status does, and a status that says the same again is not written.

use serde_json::{Value, json};

/// Conditions keep their transition time while their status stays.
pub(crate) fn with_transition_times(mut status: Value, old: &Value, now: &str) -> Value {
    let old_conditions = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        for c in conditions.iter_mut() {
            let kept = old_conditions
                .iter()
                .find(|o| o.get("type") == c.get("type") && o.get("status") == c.get("status"))
                .and_then(|o| o.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(now));
            c["lastTransitionTime"] = kept;
        }
    }
    status
}

/// Whether `status` says what an object's current status (`old`) already says (transition times
/// aside).
pub(crate) fn same_status(old: Option<&Value>, status: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(cs) = v.get_mut("conditions").and_then(Value::as_array_mut) {
            for c in cs {
                if let Some(m) = c.as_object_mut() {
                    m.remove("lastTransitionTime");
                }
            }
        }
        v
    };
    strip(old.unwrap_or(&Value::Null)) == strip(status)
}
