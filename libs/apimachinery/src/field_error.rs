//! Field-level validation errors rendered the way Kubernetes' `field` package renders them
//! (`metadata.name: Invalid value: "x": detail`), so messages in 400/422 responses read the same.

use std::fmt;

use serde_json::Value;

/// The kind of a field error (Kubernetes' `field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorType {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    Internal,
    TypeInvalid,
}

impl FieldErrorType {
    /// The machine-readable cause type used in `metav1.StatusCause.reason`.
    pub fn cause_type(self) -> &'static str {
        match self {
            Self::NotFound => "FieldValueNotFound",
            Self::Required => "FieldValueRequired",
            Self::Duplicate => "FieldValueDuplicate",
            Self::Invalid => "FieldValueInvalid",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::Internal => "InternalError",
            Self::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human-readable phrase that starts the message body.
    pub fn description(self) -> &'static str {
        match self {
            Self::NotFound => "Not found",
            Self::Required => "Required value",
            Self::Duplicate => "Duplicate value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::Internal => "Internal error",
        }
    }
}

/// The offending value of a field error.
#[derive(Debug, Clone, PartialEq)]
pub enum BadValue {
    /// Not shown in the message.
    Omitted,
    /// Shown Go-quoted (`"value"`).
    String(String),
    /// Shown as JSON (numbers and booleans bare, as Go prints them).
    Json(Value),
}

impl From<&str> for BadValue {
    fn from(s: &str) -> Self {
        Self::String(s.to_owned())
    }
}

impl From<String> for BadValue {
    fn from(s: String) -> Self {
        Self::String(s)
    }
}

impl From<Value> for BadValue {
    fn from(v: Value) -> Self {
        Self::Json(v)
    }
}

/// One field-level error: `<field>: <body>`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub error_type: FieldErrorType,
    /// JSON path of the field, e.g. `metadata.labels`; may be empty.
    pub field: String,
    pub bad_value: BadValue,
    pub detail: String,
}

impl FieldError {
    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<BadValue>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(FieldErrorType::Invalid, field, value.into(), detail)
    }

    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Required, field, BadValue::Omitted, detail)
    }

    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Forbidden, field, BadValue::Omitted, detail)
    }

    pub fn duplicate(field: impl Into<String>, value: impl Into<BadValue>) -> Self {
        Self::new(FieldErrorType::Duplicate, field, value.into(), "")
    }

    pub fn not_found(field: impl Into<String>, value: impl Into<BadValue>) -> Self {
        Self::new(FieldErrorType::NotFound, field, value.into(), "")
    }

    /// `Too long: may not be more than N bytes` (the value itself is never echoed).
    pub fn too_long(field: impl Into<String>, max_bytes: usize) -> Self {
        let unit = if max_bytes == 1 { "byte" } else { "bytes" };
        Self::new(
            FieldErrorType::TooLong,
            field,
            BadValue::Omitted,
            format!("may not be more than {max_bytes} {unit}"),
        )
    }

    /// `Unsupported value: "x": supported values: "a", "b"`.
    pub fn not_supported(
        field: impl Into<String>,
        value: impl Into<BadValue>,
        valid: &[&str],
    ) -> Self {
        let detail = if valid.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(FieldErrorType::NotSupported, field, value.into(), detail)
    }

    pub fn internal(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Internal, field, BadValue::Omitted, detail)
    }

    fn new(
        error_type: FieldErrorType,
        field: impl Into<String>,
        bad_value: BadValue,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            error_type,
            field: field.into(),
            bad_value,
            detail: detail.into(),
        }
    }

    /// The message without the field path (Kubernetes' `ErrorBody`), as used in `StatusCause.message`.
    pub fn body(&self) -> String {
        let mut s = self.error_type.description().to_owned();
        let shows_value = !matches!(
            self.error_type,
            FieldErrorType::Required
                | FieldErrorType::Forbidden
                | FieldErrorType::TooLong
                | FieldErrorType::Internal
        );
        if shows_value {
            match &self.bad_value {
                BadValue::Omitted => {}
                BadValue::String(v) => {
                    s.push_str(": ");
                    s.push_str(&go_quote(v));
                }
                BadValue::Json(v) => {
                    s.push_str(": ");
                    s.push_str(&v.to_string());
                }
            }
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

/// Joins errors the way Kubernetes' aggregate error does: one message alone, several as
/// `[a, b]`, duplicates dropped.
pub fn aggregate_message<T: fmt::Display>(errors: &[T]) -> String {
    let mut seen: Vec<String> = Vec::with_capacity(errors.len());
    for e in errors {
        let msg = e.to_string();
        if !seen.contains(&msg) {
            seen.push(msg);
        }
    }
    match seen.len() {
        0 => String::new(),
        1 => seen.remove(0),
        _ => format!("[{}]", seen.join(", ")),
    }
}

/// Prints an untyped JSON value as Go's `%v` prints what `json.Unmarshal` makes of it
/// (`map[a:1 b:[x y]]`, keys sorted): how Kubernetes shows a strategic merge patch in its errors.
pub fn go_print_untyped(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            // float64s without a fraction print as integers below 1e21.
            Some(f) if f.fract() == 0.0 && f.abs() < 1e21 && n.is_f64() => format!("{f:.0}"),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(go_print_untyped).collect();
            format!("[{}]", inner.join(" "))
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let inner: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{k}:{}", go_print_untyped(v)))
                .collect();
            format!("map[{}]", inner.join(" "))
        }
    }
}

/// Quotes a string like Go's `%q` / `strconv.Quote`, which Kubernetes uses in messages.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => {
                if (c as u32) <= 0xffff {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {

    #[test]
    fn untyped_values_print_as_go_prints_them() {
        let v = serde_json::json!({"spec": {"b": [1, "x", true, null], "a": 2.0, "c": 0.5}});
        assert_eq!(
            go_print_untyped(&v),
            "map[spec:map[a:2 b:[1 x true <nil>] c:0.5]]"
        );
    }
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_like_kubernetes() {
        let cases = [
            (
                FieldError::invalid("metadata.name", "a_b", "bad"),
                r#"metadata.name: Invalid value: "a_b": bad"#,
            ),
            (
                FieldError::required("metadata.name", "name or generateName is required"),
                "metadata.name: Required value: name or generateName is required",
            ),
            (
                FieldError::too_long("metadata.annotations", 262144),
                "metadata.annotations: Too long: may not be more than 262144 bytes",
            ),
            (
                FieldError::invalid("values", json!(["a", "b"]), "x"),
                r#"values: Invalid value: ["a","b"]: x"#,
            ),
            (
                FieldError::invalid("generation", json!(-1), "must be >= 0"),
                "generation: Invalid value: -1: must be >= 0",
            ),
            (
                FieldError::not_supported("operator", "Foo", &["In", "NotIn"]),
                r#"operator: Unsupported value: "Foo": supported values: "In", "NotIn""#,
            ),
            (
                FieldError::forbidden("metadata.namespace", "not allowed on this type"),
                "metadata.namespace: Forbidden: not allowed on this type",
            ),
            (
                FieldError::invalid("", "k", "d"),
                r#": Invalid value: "k": d"#,
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn aggregates_like_kubernetes() {
        let a = FieldError::invalid("a", "1", "x");
        let b = FieldError::invalid("b", "2", "y");
        assert_eq!(aggregate_message::<FieldError>(&[]), "");
        assert_eq!(aggregate_message(std::slice::from_ref(&a)), a.to_string());
        assert_eq!(aggregate_message(&[a.clone(), a.clone()]), a.to_string());
        assert_eq!(
            aggregate_message(&[a.clone(), b.clone()]),
            format!("[{a}, {b}]")
        );
    }

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
    }
}
