//! An APIBinding's conditions as kcp's condition utilities keep them: set by type (True without
//! reason, or False with reason, severity and message), sorted by type, and `Ready` summarising
//! the conditions it is made of.

use serde_json::{Value, json};

pub(crate) struct Conditions(Vec<Value>);

impl Conditions {
    pub fn of(status: &Value) -> Conditions {
        Conditions(
            (status.get("conditions").and_then(Value::as_array))
                .cloned()
                .unwrap_or_default(),
        )
    }

    fn put(&mut self, condition: Value) {
        self.0.retain(|c| c.get("type") != condition.get("type"));
        self.0.push(condition);
    }

    pub fn set_true(&mut self, kind: &str) {
        self.put(json!({"type": kind, "status": "True"}));
    }

    pub fn set_false(&mut self, kind: &str, reason: &str, severity: &str, message: &str) {
        self.put(json!({
            "type": kind, "status": "False", "reason": reason,
            "severity": severity, "message": message,
        }));
    }

    pub fn get(&self, kind: &str) -> Option<&Value> {
        self.0
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
    }

    /// Whether `kind` is False, or not there yet (kcp counts a missing condition as not True).
    pub fn is_false(&self, kind: &str) -> bool {
        self.get(kind)
            .is_none_or(|c| c.get("status").and_then(Value::as_str) != Some("True"))
    }

    /// `Ready` as kcp's summary of `of`: True when it is, else its reason, severity and message.
    pub fn summarize_ready(&mut self, of: &str) {
        let ready = match self.get(of) {
            Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => {
                json!({"type": "Ready", "status": "True"})
            }
            Some(c) => {
                let mut ready = c.clone();
                ready["type"] = json!("Ready");
                if let Some(m) = ready.as_object_mut() {
                    m.remove("lastTransitionTime");
                }
                ready
            }
            None => return,
        };
        self.put(ready);
    }

    pub fn into_value(mut self) -> Value {
        self.0.sort_by(|a, b| {
            let kind = |c: &Value| {
                c.get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            // kcp keeps Ready first, the others by type.
            (kind(a) != "Ready", kind(a)).cmp(&(kind(b) != "Ready", kind(b)))
        });
        Value::Array(self.0)
    }
}
