//! Field validation as kube-apiserver does it while decoding a request body.
//!
//! * `fieldValidation=Strict|Warn|Ignore` ([`FieldValidation`]) decides what happens to
//!   [`unknown_fields`] and [`duplicate_fields`]: Strict fails the request with one
//!   `strict decoding error: ...` ([`StrictDecodingError`]), Warn returns each message as a
//!   `Warning` header, Ignore skips the checks. The messages are the decoder's:
//!   `unknown field "spec.foo"`, `duplicate field "metadata.name"` (Go-quoted paths, keys joined
//!   by `.`, list items as `[i]`).
//! * [`type_errors`] finds values of the wrong JSON type; see that module for how kube-apiserver
//!   reports them (400 from the decoder for built-ins, 422 causes for custom resources).

mod defaults;
mod duplicates;
mod formats;
pub(crate) mod gofmt;
pub(crate) mod path;
mod prune;
mod required;
mod types;
mod unknown;
mod values;

use std::fmt;

use serde_json::Value;

pub use defaults::apply_defaults;
pub use duplicates::duplicate_fields;
pub use prune::prune;
pub(crate) use prune::prune_node;
pub use required::missing_required;
pub use types::{
    CauseReason, FieldCause, TypeMismatch, decode_error, type_errors, type_mismatches,
};
pub use unknown::unknown_fields;
pub(crate) use values::validate_node;
pub use values::{validate_value, validate_value_update};

use crate::structural::{AdditionalProperties, Schema, SchemaNode, SchemaType};
use crate::{SchemaError, builtin};

/// Like the Go decoder, stop collecting after this many strict errors.
const MAX_STRICT_ERRORS: usize = 100;

/// The `fieldValidation` query parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Drop unknown fields silently; duplicates keep the last value.
    Ignore,
    /// kube-apiserver's default since 1.27: succeed, with a warning per problem.
    #[default]
    Warn,
    /// Fail with 400 BadRequest listing every problem.
    Strict,
}

impl FieldValidation {
    /// Parses the query value; absent or empty means the server default, Warn. Values are
    /// case-sensitive, as in kube-apiserver.
    pub fn parse(value: Option<&str>) -> Result<Self, SchemaError> {
        match value.unwrap_or("") {
            "" | "Warn" => Ok(Self::Warn),
            "Strict" => Ok(Self::Strict),
            "Ignore" => Ok(Self::Ignore),
            other => Err(SchemaError::UnsupportedFieldValidation(other.to_owned())),
        }
    }
}

/// A Strict request's failure: kube-apiserver answers 400 BadRequest with this text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct StrictDecodingError(pub Vec<String>);

impl fmt::Display for StrictDecodingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "strict decoding error: {}", self.0.join(", "))
    }
}

/// Runs the checks `mode` asks for on a request body (`raw`, and `value` parsed from it).
/// Returns the warnings to send (Warn), nothing (Ignore), or the error to fail with (Strict).
/// Duplicates are listed before unknown fields.
pub fn check_fields(
    mode: FieldValidation,
    schema: &Schema,
    raw: &[u8],
    value: &Value,
) -> Result<Vec<String>, StrictDecodingError> {
    if mode == FieldValidation::Ignore {
        return Ok(Vec::new());
    }
    let mut problems = duplicate_fields(raw);
    problems.extend(unknown_fields(schema, value));
    problems.truncate(MAX_STRICT_ERRORS);
    match mode {
        FieldValidation::Strict if !problems.is_empty() => Err(StrictDecodingError(problems)),
        FieldValidation::Strict | FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(problems),
    }
}

/// Whether a JSON value has the given OpenAPI type. Integral floats count as integers, as in
/// the OpenAPI validator kube-apiserver uses for custom resources.
pub(crate) fn fits(ty: SchemaType, value: &Value) -> bool {
    match ty {
        SchemaType::String => value.is_string(),
        SchemaType::Integer => {
            value.is_i64()
                || value.is_u64()
                || value
                    .as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        SchemaType::Number => value.is_number(),
        SchemaType::Boolean => value.is_boolean(),
        SchemaType::Array => value.is_array(),
        SchemaType::Object => value.is_object(),
    }
}

/// The OpenAPI type name of a JSON value (as OpenAPI validators report it).
pub(crate) fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The type a node stands for: its own, or what its structure implies.
pub(crate) fn effective_type(node: SchemaNode<'_>) -> Option<SchemaType> {
    node.schema_type().or_else(|| {
        if node.has_properties()
            || !matches!(
                node.additional_properties(),
                AdditionalProperties::Unspecified
            )
        {
            Some(SchemaType::Object)
        } else if node.items().is_some() {
            Some(SchemaType::Array)
        } else {
            None
        }
    })
}

/// Which schema applies to a value at a node.
pub(crate) enum Choice<'a> {
    /// Check the value against this node.
    Node(SchemaNode<'a>),
    /// Anything goes here (opaque Go types, untyped schemas).
    Opaque,
    /// A `oneOf` none of whose branches has the value's type.
    NoBranch(Vec<SchemaType>),
}

/// Looks through untyped `oneOf`/`anyOf` nodes (JSONSchemaPropsOrBool and friends) for the
/// branch whose type fits the value.
pub(crate) fn choose<'a>(node: SchemaNode<'a>, value: &Value) -> Choice<'a> {
    let mut node = node;
    // Branches of branches are legal but never deep; the bound guards silly cycles.
    for _ in 0..8 {
        if node.is_opaque() {
            return Choice::Opaque;
        }
        // An untyped x-kubernetes-preserve-unknown-fields node keeps whatever it gets; its
        // anyOf/oneOf (CRD value validations) must not be mistaken for structure.
        if node.int_or_string() || effective_type(node).is_some() || node.preserve_unknown_fields()
        {
            return Choice::Node(node);
        }
        let branches: Vec<SchemaNode<'a>> = node.alternatives().collect();
        if branches.is_empty() {
            return Choice::Opaque;
        }
        match branches
            .iter()
            .find(|branch| effective_type(**branch).is_none_or(|ty| fits(ty, value)))
        {
            Some(branch) => node = *branch,
            None => {
                return Choice::NoBranch(
                    branches.iter().filter_map(|b| effective_type(*b)).collect(),
                );
            }
        }
    }
    Choice::Opaque
}

/// How a key of an object value relates to the object's schema.
pub(crate) enum Child<'a> {
    /// A listed property (a Go struct field).
    Field(SchemaNode<'a>),
    /// A map entry (`additionalProperties` schema).
    MapValue(SchemaNode<'a>),
    /// Not described, but kept (`additionalProperties: true`, preserve-unknown-fields, or the
    /// implicit `apiVersion`/`kind` of a resource).
    Allowed,
    /// Not described and not allowed.
    Unknown,
}

/// Resolves `key` under `node`. `resource` says the object is a whole resource (the body's root
/// or an `x-kubernetes-embedded-resource`), whose `apiVersion`, `kind` and `metadata` are
/// implied, and whose metadata always follows ObjectMeta (kube-apiserver decodes it into
/// ObjectMeta even for custom resources whose schema just says `type: object`).
pub(crate) fn child<'a>(node: SchemaNode<'a>, key: &str, resource: bool) -> Child<'a> {
    let resource = resource || node.embedded_resource();
    if resource && key == "metadata" {
        // A CRD may only restrict metadata.name/generateName (value checks, not structure).
        return Child::Field(builtin::object_meta_node());
    }
    if let Some(property) = node.property(key) {
        return Child::Field(property);
    }
    match node.additional_properties() {
        AdditionalProperties::Schema(inner) => return Child::MapValue(inner),
        AdditionalProperties::Allowed(true) => return Child::Allowed,
        AdditionalProperties::Allowed(false) | AdditionalProperties::Unspecified => {}
    }
    if resource && (key == "apiVersion" || key == "kind") {
        return Child::Allowed;
    }
    if node.preserve_unknown_fields() {
        Child::Allowed
    } else {
        Child::Unknown
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::builtin_schema;

    #[test]
    fn field_validation_parses_like_kube() {
        assert_eq!(FieldValidation::parse(None), Ok(FieldValidation::Warn));
        assert_eq!(FieldValidation::parse(Some("")), Ok(FieldValidation::Warn));
        assert_eq!(
            FieldValidation::parse(Some("Strict")),
            Ok(FieldValidation::Strict)
        );
        assert_eq!(
            FieldValidation::parse(Some("Ignore")),
            Ok(FieldValidation::Ignore)
        );
        assert!(FieldValidation::parse(Some("strict")).is_err());
    }

    #[test]
    fn check_fields_per_mode() {
        let schema = builtin_schema("", "v1", "Namespace").expect("Namespace");
        let raw = br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a","name":"b"},"spec":{"foo":1},"bar":true}"#;
        let value: Value = serde_json::from_slice(raw).expect("json");
        let strict =
            check_fields(FieldValidation::Strict, &schema, raw, &value).expect_err("strict fails");
        assert_eq!(
            strict.to_string(),
            r#"strict decoding error: duplicate field "metadata.name", unknown field "spec.foo", unknown field "bar""#
        );
        let warnings = check_fields(FieldValidation::Warn, &schema, raw, &value).expect("warn");
        assert_eq!(
            warnings,
            vec![
                r#"duplicate field "metadata.name""#.to_owned(),
                r#"unknown field "spec.foo""#.to_owned(),
                r#"unknown field "bar""#.to_owned(),
            ]
        );
        let ignored = check_fields(FieldValidation::Ignore, &schema, raw, &value).expect("ignore");
        assert!(ignored.is_empty());
        let clean = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}});
        let raw = serde_json::to_vec(&clean).expect("serialize");
        assert_eq!(
            check_fields(FieldValidation::Strict, &schema, &raw, &clean),
            Ok(Vec::new())
        );
    }
}
