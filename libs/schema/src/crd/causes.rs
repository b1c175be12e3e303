//! Field errors as apimachinery's `field.Error` renders them (`Required value`, `Invalid value:
//! "x": detail`, `Forbidden: detail`, ...), and field paths as `field.Path` prints them
//! (`spec.versions[0].schema.openAPIV3Schema.properties[spec].type`).

use serde_json::Value;

use crate::FieldCause;
use crate::validate::CauseReason;
use crate::validate::gofmt;
use crate::validate::path::go_quote;

/// `path.Child(name)`.
pub(crate) fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// `path.Index(i)`.
pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// `path.Key(k)`: map keys go in brackets, unquoted.
pub(crate) fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

/// A value as the bad value of a field error (strings quoted, JSON in Go's `%#v` form).
pub(crate) fn shown(value: &Value) -> String {
    gofmt::error_value(value)
}

/// A string bad value.
pub(crate) fn quoted(text: &str) -> String {
    go_quote(text)
}

/// Collected causes.
#[derive(Debug, Default)]
pub(crate) struct Causes(pub Vec<FieldCause>);

impl Causes {
    fn push(&mut self, field: String, reason: CauseReason, message: String) {
        self.0.push(FieldCause {
            field,
            reason,
            message,
        });
    }

    pub(crate) fn required(&mut self, field: String, detail: &str) {
        let message = if detail.is_empty() {
            "Required value".to_owned()
        } else {
            format!("Required value: {detail}")
        };
        self.push(field, CauseReason::FieldValueRequired, message);
    }

    /// `field.Invalid`; `shown` is the already formatted bad value.
    pub(crate) fn invalid(&mut self, field: String, shown: &str, detail: &str) {
        self.push(
            field,
            CauseReason::FieldValueInvalid,
            format!("Invalid value: {shown}: {detail}"),
        );
    }

    pub(crate) fn forbidden(&mut self, field: String, detail: &str) {
        self.push(
            field,
            CauseReason::FieldValueForbidden,
            format!("Forbidden: {detail}"),
        );
    }

    pub(crate) fn not_supported(&mut self, field: String, value: &str, supported: &[&str]) {
        let supported: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        self.push(
            field,
            CauseReason::FieldValueNotSupported,
            format!(
                "Unsupported value: {}: supported values: {}",
                go_quote(value),
                supported.join(", ")
            ),
        );
    }

    pub(crate) fn duplicate(&mut self, field: String, shown: &str) {
        self.push(
            field,
            CauseReason::FieldValueDuplicate,
            format!("Duplicate value: {shown}"),
        );
    }

    pub(crate) fn too_many(&mut self, field: String, actual: usize, max: usize) {
        let unit = if max == 1 { "item" } else { "items" };
        self.push(
            field,
            CauseReason::FieldValueTooMany,
            format!("Too many: {actual}: must have at most {max} {unit}"),
        );
    }

    pub(crate) fn extend(&mut self, other: Causes) {
        self.0.extend(other.0);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sorted by their rendered text (`field: message`), as structural-schema errors are.
    pub(crate) fn sorted(mut self) -> Causes {
        self.0
            .sort_by_cached_key(|c| format!("{}: {}", c.field, c.message));
        self
    }
}
