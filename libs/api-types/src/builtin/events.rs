//! events.k8s.io/v1 Events are a second view of core/v1 Events: the same stored objects under other
//! field names. This is the conversion between the two.

use serde_json::{Map, Value, json};

use crate::resource::Conversion;

/// `(events.k8s.io/v1 field, core/v1 field)` pairs that only differ in name.
const RENAMED: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

fn rename(obj: Value, api_version: &str, to_core: bool) -> Value {
    let Value::Object(fields) = obj else {
        return obj;
    };
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!(api_version));
    out.insert("kind".into(), json!("Event"));
    for (key, value) in fields {
        if key == "apiVersion" || key == "kind" {
            continue;
        }
        let renamed = RENAMED.iter().find_map(|(events, core)| match to_core {
            true if key == *events => Some(*core),
            false if key == *core => Some(*events),
            _ => None,
        });
        out.insert(renamed.map(str::to_string).unwrap_or(key), value);
    }
    Value::Object(out)
}

pub struct EventsConversion;

impl Conversion for EventsConversion {
    fn to_storage(&self, api: Value) -> Value {
        rename(api, "v1", true)
    }

    fn to_api(&self, stored: Value) -> Value {
        rename(stored, "events.k8s.io/v1", false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_between_the_two_views() {
        let events = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "regarding": {"kind": "ConfigMap", "name": "c"},
            "note": "hello", "reason": "Testing", "type": "Normal",
            "reportingController": "me", "reportingInstance": "me-1",
            "eventTime": "2026-11-21T00:00:00.000000Z", "action": "Poke",
        });
        let core = EventsConversion.to_storage(events.clone());
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "c");
        assert_eq!(core["message"], "hello");
        assert_eq!(core["reportingComponent"], "me");
        assert!(core.get("note").is_none());
        assert_eq!(EventsConversion.to_api(core), events);
    }
}
