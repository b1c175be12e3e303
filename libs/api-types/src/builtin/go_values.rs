//! How Kubernetes prints the values of field errors that are not plain strings or numbers: a
//! value with a `String()` method as that string (quantities, times), anything else in Go syntax
//! (`%#v`: slices and structs with their type names). Probers compare these texts.

use kcp_apimachinery::status::Cause;
use serde_json::Value;

/// `<field>: Invalid value: <shown>: <detail>`, `shown` already printed as Go prints it.
pub fn invalid_shown(field: &str, shown: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        field,
        format!("Invalid value: {shown}: {detail}"),
    )
}

/// A Go string literal (what `%q` and `%#v` print for strings).
pub fn quoted(text: &str) -> String {
    kcp_apimachinery::field_error::go_quote(text)
}

fn text(obj: Option<&Value>) -> &str {
    obj.and_then(Value::as_str).unwrap_or_default()
}

/// `[]<element>{"a", "b"}`, or `[]<element>(nil)` when absent or empty (what decoding leaves).
pub fn string_slice(element: &str, list: Option<&Value>) -> String {
    let items: Vec<String> = (list.and_then(Value::as_array).into_iter().flatten())
        .map(|v| quoted(v.as_str().unwrap_or_default()))
        .collect();
    if items.is_empty() {
        format!("[]{element}(nil)")
    } else {
        format!("[]{element}{{{}}}", items.join(", "))
    }
}

/// A struct of string fields, `core.EventSource{Component:"a", Host:""}`: `fields` are
/// `(Go name, JSON name)` in the struct's order.
pub fn string_struct(type_name: &str, fields: &[(&str, &str)], obj: Option<&Value>) -> String {
    let parts: Vec<String> = fields
        .iter()
        .map(|(go, json)| format!("{go}:{}", quoted(text(obj.and_then(|o| o.get(json))))))
        .collect();
    format!("{type_name}{{{}}}", parts.join(", "))
}

/// A `metav1.Time` or `MicroTime` as `time.Time.String()` prints it (`2006-01-02 15:04:05.5
/// +0000 UTC`, fraction without trailing zeros); an absent or unreadable time is Go's zero time.
pub fn time(value: Option<&Value>) -> String {
    let parsed = value
        .and_then(Value::as_str)
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&chrono::Utc));
    let Some(t) = parsed else {
        return "0001-01-01 00:00:00 +0000 UTC".to_string();
    };
    let nanos = t.timestamp_subsec_nanos();
    let fraction = if nanos == 0 {
        String::new()
    } else {
        format!(".{nanos:09}").trim_end_matches('0').to_string()
    };
    format!("{}{fraction} +0000 UTC", t.format("%Y-%m-%d %H:%M:%S"))
}

/// Whether a time is unset: absent, `null`, or Go's zero time written out.
pub fn time_is_zero(value: Option<&Value>) -> bool {
    time(value) == "0001-01-01 00:00:00 +0000 UTC"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prints_as_go_does() {
        assert_eq!(
            string_slice("core.ResourceQuotaScope", Some(&json!(["A", "B"]))),
            "[]core.ResourceQuotaScope{\"A\", \"B\"}"
        );
        assert_eq!(
            string_slice("core.ResourceQuotaScope", None),
            "[]core.ResourceQuotaScope(nil)"
        );
        assert_eq!(
            string_struct(
                "core.EventSource",
                &[("Component", "component"), ("Host", "host")],
                Some(&json!({"component": "kubelet"}))
            ),
            "core.EventSource{Component:\"kubelet\", Host:\"\"}"
        );
        assert_eq!(
            time(Some(&json!("2024-05-01T10:00:00.250000Z"))),
            "2024-05-01 10:00:00.25 +0000 UTC"
        );
        assert_eq!(
            time(Some(&json!("2024-05-01T12:00:00+02:00"))),
            "2024-05-01 10:00:00 +0000 UTC"
        );
        assert!(time_is_zero(None));
        assert!(time_is_zero(Some(&json!("0001-01-01T00:00:00Z"))));
        assert!(!time_is_zero(Some(&json!("2024-05-01T10:00:00Z"))));
        assert_eq!(
            invalid_shown("spec.a", "2", "too big").message,
            "Invalid value: 2: too big"
        );
    }
}
