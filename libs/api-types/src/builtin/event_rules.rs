//! Events, validated by the version a request came through, as Kubernetes does: core/v1 keeps
//! the lenient legacy rules (an event's namespace agrees with its object's; a new-style event,
//! one with `eventTime`, names its reporter, action and reason), while events.k8s.io/v1 is strict:
//! it creates new-style events only, without the deprecated fields, and may not change what
//! happened afterwards. Causes name the fields as Kubernetes' internal type does
//! (`involvedObject`, `reportingController`), whichever version was used.

use kcp_apimachinery::names::{is_dns1123_subdomain, is_qualified_name};
use kcp_apimachinery::status::Cause;
use serde_json::{Value, json};

use super::events::EventsConversion;
use super::go_values::{invalid_shown, quoted, string_struct, time, time_is_zero};
use crate::resource::{Conversion, Strategy};

/// Kubernetes' bounds on a new-style event's texts.
const REPORTING_INSTANCE_MAX: usize = 128;
const ACTION_MAX: usize = 128;
const REASON_MAX: usize = 128;
const NOTE_MAX: usize = 1024;

/// `strict` for events.k8s.io/v1, whose objects the strategy sees in that version's form.
pub struct EventStrategy {
    pub strict: bool,
}

fn text<'a>(event: &'a Value, field: &str) -> &'a str {
    event.get(field).and_then(Value::as_str).unwrap_or_default()
}

fn field_text<'a>(event: &'a Value, object: &str, field: &str) -> &'a str {
    event
        .get(object)
        .and_then(|o| o.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `<field>: Invalid value: "": <detail>`: Kubernetes reports these without the value.
fn invalid_empty(field: &str, detail: &str) -> Cause {
    Cause::invalid(field, &json!(""), detail)
}

fn at_most(field: &str, value: &str, max: usize, causes: &mut Vec<Cause>) {
    if value.len() > max {
        causes.push(invalid_empty(
            field,
            &format!("can have at most {max} characters"),
        ));
    }
}

fn required_text(field: &str, value: &str, causes: &mut Vec<Cause>) {
    if value.is_empty() {
        causes.push(Cause::required(field, ""));
    }
}

/// Kubernetes' `legacyValidateEvent`, on the core/v1 form.
fn legacy_causes(event: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let namespace = event
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let object_namespace = field_text(event, "involvedObject", "namespace");
    let mismatch = || {
        Cause::invalid(
            "involvedObject.namespace",
            &json!(object_namespace),
            "does not match event.namespace",
        )
    };
    if time_is_zero(event.get("eventTime")) {
        // Old clients wrote cluster-scoped objects' events to "default".
        let agree = if object_namespace.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == object_namespace
        };
        if !agree {
            causes.push(mismatch());
        }
    } else {
        if object_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
            causes.push(mismatch());
        }
        let controller = text(event, "reportingComponent");
        required_text("reportingController", controller, &mut causes);
        for msg in is_qualified_name(controller) {
            causes.push(Cause::invalid(
                "reportingController",
                &json!(controller),
                &msg,
            ));
        }
        let instance = text(event, "reportingInstance");
        required_text("reportingInstance", instance, &mut causes);
        at_most(
            "reportingInstance",
            instance,
            REPORTING_INSTANCE_MAX,
            &mut causes,
        );
        let action = text(event, "action");
        required_text("action", action, &mut causes);
        at_most("action", action, ACTION_MAX, &mut causes);
        let reason = text(event, "reason");
        required_text("reason", reason, &mut causes);
        at_most("reason", reason, REASON_MAX, &mut causes);
        at_most("message", text(event, "message"), NOTE_MAX, &mut causes);
    }
    for msg in is_dns1123_subdomain(namespace) {
        causes.push(Cause::invalid("namespace", &json!(namespace), &msg));
    }
    causes
}

fn series_causes(event: &Value, causes: &mut Vec<Cause>) {
    let Some(series) = event.get("series").filter(|s| !s.is_null()) else {
        return;
    };
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        causes.push(invalid_empty("series.count", "should be at least 2"));
    }
    if time_is_zero(series.get("lastObservedTime")) {
        causes.push(Cause::required("series.lastObservedTime", ""));
    }
}

fn count(event: &Value) -> i64 {
    event.get("count").and_then(Value::as_i64).unwrap_or(0)
}

/// What events.k8s.io/v1 adds on create (`ValidateEventCreate` beyond the legacy rules).
fn strict_create_causes(event: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    series_causes(event, &mut causes);
    if time_is_zero(event.get("eventTime")) {
        causes.push(Cause::required("eventTime", ""));
    }
    let kind = text(event, "type");
    if kind != "Normal" && kind != "Warning" {
        causes.push(invalid_empty("type", &format!("has invalid value: {kind}")));
    }
    for field in ["firstTimestamp", "lastTimestamp"] {
        if !time_is_zero(event.get(field)) {
            causes.push(invalid_empty(field, "needs to be unset"));
        }
    }
    if count(event) != 0 {
        causes.push(invalid_empty("count", "needs to be unset"));
    }
    let source = |f: &str| field_text(event, "source", f);
    if !source("component").is_empty() || !source("host").is_empty() {
        causes.push(invalid_empty("source", "needs to be unset"));
    }
    causes
}

fn object_reference(value: Option<&Value>) -> String {
    string_struct(
        "core.ObjectReference",
        &[
            ("Kind", "kind"),
            ("Namespace", "namespace"),
            ("Name", "name"),
            ("UID", "uid"),
            ("APIVersion", "apiVersion"),
            ("ResourceVersion", "resourceVersion"),
            ("FieldPath", "fieldPath"),
        ],
        value,
    )
}

/// The fields events.k8s.io/v1 fixes once an event is created, in Kubernetes' order, each as Go
/// prints it: equal prints are equal values. (Kubernetes checks `reason` twice.)
fn fixed_fields(event: &Value) -> Vec<(&'static str, String)> {
    let quoted_text = |field: &str| quoted(text(event, field));
    let related = match event.get("related").filter(|r| !r.is_null()) {
        Some(r) => object_reference(Some(r)),
        None => "null".to_string(),
    };
    vec![
        (
            "involvedObject",
            object_reference(event.get("involvedObject")),
        ),
        ("reason", quoted_text("reason")),
        ("message", quoted_text("message")),
        (
            "source",
            string_struct(
                "core.EventSource",
                &[("Component", "component"), ("Host", "host")],
                event.get("source"),
            ),
        ),
        ("firstTimestamp", time(event.get("firstTimestamp"))),
        ("lastTimestamp", time(event.get("lastTimestamp"))),
        ("count", count(event).to_string()),
        ("reason", quoted_text("reason")),
        ("type", quoted_text("type")),
        ("eventTime", time(event.get("eventTime"))),
        ("action", quoted_text("action")),
        ("related", related),
        ("reportingController", quoted_text("reportingComponent")),
        ("reportingInstance", quoted_text("reportingInstance")),
    ]
}

/// What events.k8s.io/v1 adds on update (`ValidateEventUpdate` beyond the legacy rules).
fn strict_update_causes(new: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let series = |e: &Value| e.get("series").filter(|s| !s.is_null()).cloned();
    if series(new) != series(old) {
        series_causes(new, &mut causes);
    }
    for ((field, now), (_, before)) in fixed_fields(new).into_iter().zip(fixed_fields(old)) {
        if now != before {
            causes.push(invalid_shown(field, &now, "field is immutable"));
        }
    }
    causes
}

impl EventStrategy {
    /// The event in the core/v1 form the rules read.
    fn core_form(&self, obj: &Value) -> Value {
        if self.strict {
            EventsConversion.to_storage(obj.clone())
        } else {
            obj.clone()
        }
    }
}

impl Strategy for EventStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let event = self.core_form(obj);
        let mut causes = legacy_causes(&event);
        if self.strict {
            causes.extend(strict_create_causes(&event));
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let event = self.core_form(new);
        let mut causes = legacy_causes(&event);
        if self.strict {
            causes.extend(strict_update_causes(&event, &self.core_form(old)));
        }
        causes
    }

    /// Event recorders update-or-create.
    fn allow_create_on_update(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORE: EventStrategy = EventStrategy { strict: false };
    const EVENTS: EventStrategy = EventStrategy { strict: true };

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(Cause::full_message).collect()
    }

    fn core_event(namespace: &str, object_namespace: &str) -> Value {
        json!({
            "metadata": {"name": "e", "namespace": namespace},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": object_namespace},
            "reason": "Started", "message": "hi", "type": "Normal",
            "firstTimestamp": "2024-05-01T10:00:00Z", "count": 1,
            "source": {"component": "kubelet"},
        })
    }

    fn new_style(extra: Value) -> Value {
        let mut event = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
            "eventTime": "2024-05-01T10:00:00.000000Z", "type": "Normal",
            "reason": "Started", "action": "Start", "note": "hi",
            "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
        });
        if let (Some(event), Value::Object(extra)) = (event.as_object_mut(), extra) {
            event.extend(extra);
        }
        event
    }

    #[test]
    fn core_events_keep_the_legacy_rules() {
        assert!(CORE.validate(&core_event("default", "default")).is_empty());
        assert!(CORE.validate(&core_event("default", "")).is_empty());
        assert_eq!(
            messages(CORE.validate(&core_event("team", "other"))),
            ["involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"]
        );
        assert_eq!(
            messages(CORE.validate_update(&core_event("team", ""), &core_event("team", "team"))),
            ["involvedObject.namespace: Invalid value: \"\": does not match event.namespace"]
        );
        // A new-style event through core/v1 names its reporter, action and reason.
        let mut event = core_event("team", "team");
        event["eventTime"] = json!("2024-05-01T10:00:00.000000Z");
        assert_eq!(
            messages(CORE.validate(&event)),
            [
                "reportingController: Required value",
                "reportingController: Invalid value: \"\": name part must be non-empty",
                "reportingController: Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "reportingInstance: Required value",
                "action: Required value",
            ]
        );
    }

    #[test]
    fn events_k8s_io_is_strict_on_create() {
        assert!(
            EVENTS.validate(&new_style(json!({}))).is_empty(),
            "{:?}",
            messages(EVENTS.validate(&new_style(json!({}))))
        );
        let old_style = new_style(json!({
            "eventTime": null, "type": "Info", "deprecatedCount": 3,
            "deprecatedSource": {"component": "kubelet"}, "deprecatedFirstTimestamp": "2024-05-01T10:00:00Z",
            "series": {"count": 1},
        }));
        assert_eq!(
            messages(EVENTS.validate(&old_style)),
            [
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: Info",
                "firstTimestamp: Invalid value: \"\": needs to be unset",
                "count: Invalid value: \"\": needs to be unset",
                "source: Invalid value: \"\": needs to be unset",
            ]
        );
        let elsewhere = new_style(
            json!({"regarding": {"kind": "Node", "name": "n"}, "metadata": {"name": "e", "namespace": "team"}}),
        );
        assert_eq!(
            messages(EVENTS.validate(&elsewhere)),
            ["involvedObject.namespace: Invalid value: \"\": does not match event.namespace"]
        );
    }

    #[test]
    fn events_k8s_io_fixes_what_happened() {
        let old = new_style(json!({}));
        let new = new_style(
            json!({"note": "changed", "series": {"count": 2, "lastObservedTime": "2024-05-01T10:01:00.000000Z"}}),
        );
        assert_eq!(
            messages(EVENTS.validate_update(&new, &old)),
            ["message: Invalid value: \"changed\": field is immutable"]
        );
        let moved =
            new_style(json!({"regarding": {"kind": "Pod", "name": "q", "namespace": "default"}}));
        assert_eq!(
            messages(EVENTS.validate_update(&moved, &old)),
            [
                "involvedObject: Invalid value: core.ObjectReference{Kind:\"Pod\", Namespace:\"default\", Name:\"q\", UID:\"\", APIVersion:\"\", ResourceVersion:\"\", FieldPath:\"\"}: field is immutable"
            ]
        );
        // core/v1 may change anything.
        let core_old = core_event("default", "default");
        let mut core_new = core_old.clone();
        core_new["message"] = json!("changed");
        core_new["count"] = json!(2);
        assert!(CORE.validate_update(&core_new, &core_old).is_empty());
    }
}
