//! Printer columns as kube-apiserver defines them for the built-in kinds.

use std::borrow::Cow;

use serde_json::{Value, json};

use crate::resource::{Column, ColumnValue};

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const CREATED_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

pub fn name_column() -> Column {
    Column {
        name: "Name".into(),
        type_: "string".into(),
        format: "name".into(),
        description: NAME_DESCRIPTION.into(),
        priority: 0,
        value: ColumnValue::Name,
    }
}

pub fn age_column() -> Column {
    Column {
        name: "Age".into(),
        type_: "string".into(),
        format: "".into(),
        description: CREATED_DESCRIPTION.into(),
        priority: 0,
        value: ColumnValue::Age,
    }
}

/// The `Age` column kube-apiserver gives custom resources whose CRD lists no printer columns.
pub fn age_column_for_crd() -> Column {
    Column {
        name: "Age".into(),
        type_: "date".into(),
        format: "".into(),
        description: CREATED_DESCRIPTION.into(),
        priority: 0,
        value: ColumnValue::Path(Cow::Borrowed(".metadata.creationTimestamp")),
    }
}

/// The default table of kinds without a printer of their own: the creation time as a date.
pub fn created_at_column() -> Column {
    Column {
        name: "Created At".into(),
        type_: "date".into(),
        format: "".into(),
        description: CREATED_DESCRIPTION.into(),
        priority: 0,
        value: ColumnValue::Path(Cow::Borrowed(".metadata.creationTimestamp")),
    }
}

pub fn path_column(name: &'static str, description: &'static str, path: &'static str) -> Column {
    Column {
        name: name.into(),
        type_: "string".into(),
        format: "".into(),
        description: description.into(),
        priority: 0,
        value: ColumnValue::Path(path.into()),
    }
}

fn len_of(v: Option<&Value>) -> usize {
    match v {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

pub fn count_column(name: &'static str, pointer: &'static str) -> Column {
    // The pointer is fixed per column, so each distinct column needs its own function.
    let value: fn(&Value) -> Value = match pointer {
        "/webhooks" => |o| json!(len_of(o.get("webhooks"))),
        "/secrets" => |o| json!(len_of(o.get("secrets"))),
        _ => |_| json!(0),
    };
    Column {
        name: name.into(),
        type_: "integer".into(),
        format: "".into(),
        description: "".into(),
        priority: 0,
        value: ColumnValue::Computed(value),
    }
}

pub fn configmap_data_column() -> Column {
    Column {
        name: "Data".into(),
        type_: "string".into(),
        format: "".into(),
        description: "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'.".into(),
        priority: 0,
        value: ColumnValue::Computed(|o| {
            json!(len_of(o.get("data")) + len_of(o.get("binaryData")))
        }),
    }
}

pub fn secret_data_column() -> Column {
    Column {
        name: "Data".into(),
        type_: "string".into(),
        format: "".into(),
        description: "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'.".into(),
        priority: 0,
        value: ColumnValue::Computed(|o| json!(len_of(o.get("data")))),
    }
}

fn str_of<'a>(o: &'a Value, pointer: &str) -> &'a str {
    o.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

pub fn event_columns() -> Vec<Column> {
    vec![
        Column {
            name: "Last Seen".into(),
            type_: "string".into(),
            format: "".into(),
            description: "Time when last this event was observed".into(),
            priority: 0,
            value: ColumnValue::Computed(|o| {
                // Kubernetes' printer: the last time, else the first, else the event time (either
                // API's names); an event without any is `<unknown>`, whenever it was created.
                let ts = first_of(
                    o,
                    &[
                        "/lastTimestamp",
                        "/deprecatedLastTimestamp",
                        "/firstTimestamp",
                        "/deprecatedFirstTimestamp",
                        "/eventTime",
                    ],
                );
                json!(crate::builtin::columns::age_since(ts))
            }),
        },
        Column {
            name: "Type".into(),
            type_: "string".into(),
            format: "".into(),
            description: "Type of this event (Normal, Warning)".into(),
            priority: 0,
            value: ColumnValue::Path(Cow::Borrowed(".type")),
        },
        Column {
            name: "Reason".into(),
            type_: "string".into(),
            format: "".into(),
            description: "Reason why this event was generated".into(),
            priority: 0,
            value: ColumnValue::Path(Cow::Borrowed(".reason")),
        },
        Column {
            name: "Object".into(),
            type_: "string".into(),
            format: "".into(),
            description: "The object that this event is about".into(),
            priority: 0,
            value: ColumnValue::Computed(|o| {
                let target = if o.get("regarding").is_some() {
                    "/regarding"
                } else {
                    "/involvedObject"
                };
                let kind = str_of(o, &format!("{target}/kind")).to_lowercase();
                let name = str_of(o, &format!("{target}/name"));
                json!(format!("{kind}/{name}"))
            }),
        },
        Column {
            name: "Subobject".into(),
            type_: "string".into(),
            format: "".into(),
            description: "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].".into(),
            priority: 1,
            value: ColumnValue::Computed(|o| {
                json!(first_of(o, &["/involvedObject/fieldPath", "/regarding/fieldPath"]))
            }),
        },
        Column {
            name: "Source".into(),
            type_: "string".into(),
            format: "".into(),
            description: "The source of the event".into(),
            priority: 1,
            value: ColumnValue::Computed(|o| {
                let component = first_of(
                    o,
                    &["/source/component", "/deprecatedSource/component", "/reportingController"],
                );
                let instance = first_of(
                    o,
                    &["/source/host", "/deprecatedSource/host", "/reportingInstance"],
                );
                json!(match instance {
                    "" => component.to_string(),
                    host => format!("{component}, {host}"),
                })
            }),
        },
        Column {
            name: "Message".into(),
            type_: "string".into(),
            format: "".into(),
            description: "A human-readable description of the status of this operation.".into(),
            priority: 0,
            value: ColumnValue::Computed(|o| {
                json!(if o.get("note").is_some() {
                    str_of(o, "/note")
                } else {
                    str_of(o, "/message")
                }
                .trim())
            }),
        },
        Column {
            name: "First Seen".into(),
            type_: "string".into(),
            format: "".into(),
            description: "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)".into(),
            priority: 1,
            value: ColumnValue::Computed(|o| {
                let first = first_of(
                    o,
                    &["/firstTimestamp", "/deprecatedFirstTimestamp", "/eventTime"],
                );
                json!(crate::builtin::columns::age_since(first))
            }),
        },
        Column {
            name: "Count".into(),
            type_: "string".into(),
            format: "".into(),
            description: "The number of times this event has occurred.".into(),
            priority: 1,
            value: ColumnValue::Computed(|o| {
                let count = ["/series/count", "/count", "/deprecatedCount"]
                    .iter()
                    .find_map(|p| o.pointer(p).and_then(Value::as_i64))
                    .filter(|c| *c > 0)
                    .unwrap_or(1);
                json!(count)
            }),
        },
        Column {
            priority: 1,
            ..name_column()
        },
    ]
}

/// The first non-empty string among `pointers` (an event's core and events.k8s.io views).
fn first_of<'a>(o: &'a Value, pointers: &[&str]) -> &'a str {
    pointers
        .iter()
        .map(|p| str_of(o, p))
        .find(|s| !s.is_empty())
        .unwrap_or_default()
}

pub fn binding_columns() -> Vec<Column> {
    fn subjects(o: &Value, kind: &str) -> Value {
        let names: Vec<String> = o
            .get("subjects")
            .and_then(Value::as_array)
            .map(|subs| {
                subs.iter()
                    .filter(|s| s.get("kind").and_then(Value::as_str) == Some(kind))
                    .map(|s| {
                        let name = str_of(s, "/name");
                        let ns = str_of(s, "/namespace");
                        if kind == "ServiceAccount" {
                            format!("{ns}/{name}")
                        } else {
                            name.to_string()
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        json!(names.join(", "))
    }
    vec![
        name_column(),
        Column {
            name: "Role".into(),
            type_: "string".into(),
            format: "".into(),
            description: "RoleRef contains information about the role that the binding refers to."
                .into(),
            priority: 0,
            value: ColumnValue::Computed(|o| {
                json!(format!(
                    "{}/{}",
                    str_of(o, "/roleRef/kind"),
                    str_of(o, "/roleRef/name")
                ))
            }),
        },
        age_column(),
        Column {
            name: "Users".into(),
            type_: "string".into(),
            format: "".into(),
            description: "Users in the binding".into(),
            priority: 1,
            value: ColumnValue::Computed(|o| subjects(o, "User")),
        },
        Column {
            name: "Groups".into(),
            type_: "string".into(),
            format: "".into(),
            description: "Groups in the binding".into(),
            priority: 1,
            value: ColumnValue::Computed(|o| subjects(o, "Group")),
        },
        Column {
            name: "ServiceAccounts".into(),
            type_: "string".into(),
            format: "".into(),
            description: "ServiceAccounts in the binding".into(),
            priority: 1,
            value: ColumnValue::Computed(|o| subjects(o, "ServiceAccount")),
        },
    ]
}

pub fn csr_columns() -> Vec<Column> {
    vec![
        name_column(),
        age_column(),
        Column {
            name: "SignerName".into(),
            type_: "string".into(),
            format: "".into(),
            description: "The name of the signer".into(),
            priority: 0,
            value: ColumnValue::Path(Cow::Borrowed(".spec.signerName")),
        },
        Column {
            name: "Requestor".into(),
            type_: "string".into(),
            format: "".into(),
            description: "Name of the requesting user".into(),
            priority: 0,
            value: ColumnValue::Path(Cow::Borrowed(".spec.username")),
        },
        Column {
            name: "RequestedDuration".into(),
            type_: "string".into(),
            format: "".into(),
            description: "Requested duration of the issued certificate".into(),
            priority: 0,
            value: ColumnValue::Computed(|o| {
                match o.pointer("/spec/expirationSeconds").and_then(Value::as_i64) {
                    Some(secs) => json!(human_duration(secs)),
                    None => json!("<none>"),
                }
            }),
        },
        Column {
            name: "Condition".into(),
            type_: "string".into(),
            format: "".into(),
            description: "The current condition of the request".into(),
            priority: 0,
            value: ColumnValue::Computed(|o| {
                let conds: Vec<&str> = o
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .map(|cs| {
                        cs.iter()
                            .filter_map(|c| c.get("type").and_then(Value::as_str))
                            .collect()
                    })
                    .unwrap_or_default();
                let mut text = if conds.is_empty() {
                    "Pending".to_string()
                } else {
                    conds.join(",")
                };
                if o.pointer("/status/certificate")
                    .is_some_and(|c| !c.is_null())
                {
                    text.push_str(",Issued");
                }
                json!(text)
            }),
        },
    ]
}

pub fn quota_column(name: &'static str, limits: bool) -> Column {
    let value: fn(&Value) -> Value = if limits {
        |o| quota_usage(o, true)
    } else {
        |o| quota_usage(o, false)
    };
    Column {
        name: name.into(),
        type_: "string".into(),
        format: "".into(),
        description: "".into(),
        priority: 0,
        value: ColumnValue::Computed(value),
    }
}

fn quota_usage(o: &Value, limits: bool) -> Value {
    let Some(hard) = o.pointer("/status/hard").and_then(Value::as_object) else {
        return json!("");
    };
    let used = o.pointer("/status/used").and_then(Value::as_object);
    let mut parts = Vec::new();
    for (k, v) in hard {
        if k.starts_with("limits.") != limits {
            continue;
        }
        let u = used
            .and_then(|u| u.get(k))
            .and_then(Value::as_str)
            .unwrap_or("0");
        parts.push(format!("{k}: {u}/{}", v.as_str().unwrap_or_default()));
    }
    json!(parts.join(", "))
}

/// Kubernetes' short human duration (apimachinery's duration.HumanDuration): `45s`, `5m`, `3h`,
/// `2d`, `2y70d`, `9y`; more than a second in the future is `<invalid>`.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".to_string();
    }
    let secs = secs.max(0);
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if days < 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        };
    }
    if days < 365 * 2 {
        return format!("{days}d");
    }
    let (years, rest) = (days / 365, days % 365);
    if days < 365 * 8 && rest != 0 {
        return format!("{years}y{rest}d");
    }
    format!("{years}y")
}

/// The age of an RFC 3339 timestamp relative to now, or `<unknown>`.
pub fn age_since(timestamp: &str) -> String {
    match chrono_like_parse(timestamp) {
        Some(then) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0);
            human_duration(now - then)
        }
        None => "<unknown>".to_string(),
    }
}

/// Seconds since the epoch of an RFC 3339 UTC timestamp such as `2026-11-21T14:30:00Z`.
fn chrono_like_parse(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| ts.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, s) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    // Days from civil date (Howard Hinnant's algorithm).
    let y2 = if mo <= 2 { y - 1 } else { y };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    Some(days * 86400 + h * 3600 + mi * 60 + s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_kubectl() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(30 * 3600), "30h");
        assert_eq!(human_duration(3 * 86400), "3d");
        assert_eq!(human_duration(800 * 86400), "2y70d");
        assert_eq!(human_duration(730 * 86400), "2y");
        assert_eq!(human_duration(3000 * 86400), "8y");
        assert_eq!(human_duration(-1), "0s");
        assert_eq!(human_duration(-2), "<invalid>");
    }

    #[test]
    fn an_event_without_times_was_last_seen_unknown() {
        let last_seen = |o: &Value| match &event_columns()[0].value {
            ColumnValue::Computed(f) => f(o),
            _ => unreachable!("a computed column"),
        };
        let created = json!({"metadata": {"creationTimestamp": "2020-01-01T00:00:00Z"}});
        assert_eq!(last_seen(&created), json!("<unknown>"));
        let first = json!({"firstTimestamp": "2020-01-01T00:00:00Z"});
        assert_ne!(last_seen(&first), json!("<unknown>"));
    }

    #[test]
    fn parses_rfc3339() {
        assert_eq!(chrono_like_parse("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(chrono_like_parse("2000-03-01T00:00:01Z"), Some(951868801));
        assert_eq!(chrono_like_parse("garbage"), None);
    }
}
