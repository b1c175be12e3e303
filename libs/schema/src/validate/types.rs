//! Values of the wrong JSON type.
//!
//! How kube-apiserver reports them depends on the kind:
//!
//! * Built-in kinds are decoded into Go structs; the first mismatch fails the decode and the
//!   request gets **400 BadRequest** (reason `BadRequest`, no causes) with the message
//!   `ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number
//!   into Go struct field ConfigMap.data of type string` (handlers' `transformDecodeError`
//!   around the decoder's `UnmarshalTypeError`). [`decode_error`] builds that text.
//! * Custom resources are checked against their OpenAPI schema; every mismatch is a cause of a
//!   **422 Invalid**: field `spec.replicas`, type `FieldValueTypeInvalid`, message
//!   `Invalid value: "string": spec.replicas in body must be of type integer: "string"`.
//!   [`type_errors`] builds those causes.
//!
//! `null` is accepted everywhere (Go decodes it to the zero value; CRD pruning drops it).

use std::fmt;

use serde_json::Value;

use super::path::{push_index, push_key};
use super::{Child, Choice, child, choose, fits, json_type_name};
use crate::structural::{AdditionalProperties, Schema, SchemaNode, SchemaType};

/// The `type` of a `StatusCause`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CauseReason {
    /// `FieldValueInvalid`: right type, impossible value (an integer out of its format's range).
    FieldValueInvalid,
    /// `FieldValueTypeInvalid`: the value has the wrong JSON type.
    FieldValueTypeInvalid,
    /// `FieldValueRequired`: a required field is missing.
    FieldValueRequired,
    /// `FieldValueNotSupported`: a value outside an enum.
    FieldValueNotSupported,
    /// `FieldValueDuplicate`: a repeated item of a set or key of a map list.
    FieldValueDuplicate,
    /// `FieldValueTooLong`: a string or list longer than allowed.
    FieldValueTooLong,
    /// `FieldValueTooMany`: more items or properties than allowed.
    FieldValueTooMany,
    /// `FieldValueForbidden`: a field that may not be set (here).
    FieldValueForbidden,
}

impl CauseReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FieldValueInvalid => "FieldValueInvalid",
            Self::FieldValueTypeInvalid => "FieldValueTypeInvalid",
            Self::FieldValueRequired => "FieldValueRequired",
            Self::FieldValueNotSupported => "FieldValueNotSupported",
            Self::FieldValueDuplicate => "FieldValueDuplicate",
            Self::FieldValueTooLong => "FieldValueTooLong",
            Self::FieldValueTooMany => "FieldValueTooMany",
            Self::FieldValueForbidden => "FieldValueForbidden",
        }
    }
}

impl fmt::Display for CauseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One cause of a 422 Invalid status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldCause {
    /// Path of the field, e.g. `data.a` or `spec.ports[0].port`.
    pub field: String,
    pub reason: CauseReason,
    /// The cause's message (kube's `ErrorBody`, without the field).
    pub message: String,
}

/// One value of the wrong type, with what both reporting styles need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeMismatch {
    /// Path with list indices and map keys: `metadata.labels.a`.
    pub path: String,
    /// What the schema wants: `string`, `integer or string`, `int32`, ...
    pub expected: String,
    /// The OpenAPI type of the value found: `integer`, `object`, ...
    pub found: &'static str,
    pub reason: CauseReason,
    /// Go decoder context: innermost struct (`ConfigMap`), struct-field path (`data`; Go leaves
    /// out list indices and map keys), the value as Go names it (`number`, `number 1.5`) and
    /// the Go type it was decoded into (`string`, `[]v1.Subject`).
    go_struct: Option<String>,
    go_field: String,
    go_value: String,
    go_type: String,
}

impl TypeMismatch {
    /// The custom-resource style 422 cause.
    pub fn to_cause(&self) -> FieldCause {
        let message = match self.reason {
            CauseReason::FieldValueTypeInvalid => format!(
                "Invalid value: \"{found}\": {path} in body must be of type {expected}: \"{found}\"",
                found = self.found,
                path = self.path,
                expected = self.expected,
            ),
            _ => format!(
                "Invalid value: {value}: {path} in body must be of type {expected}: \"{value}\"",
                value = self.go_value.trim_start_matches("number "),
                path = self.path,
                expected = self.expected,
            ),
        };
        FieldCause {
            field: self.path.clone(),
            reason: self.reason,
            message,
        }
    }

    /// The Go decoder's `UnmarshalTypeError` text.
    pub fn go_message(&self) -> String {
        match &self.go_struct {
            Some(name) if !self.go_field.is_empty() => format!(
                "json: cannot unmarshal {} into Go struct field {}.{} of type {}",
                self.go_value, name, self.go_field, self.go_type
            ),
            _ => format!(
                "json: cannot unmarshal {} into Go value of type {}",
                self.go_value, self.go_type
            ),
        }
    }
}

/// Every value of the wrong type, in document order.
pub fn type_mismatches(schema: &Schema, value: &Value) -> Vec<TypeMismatch> {
    mismatches(schema, value, true)
}

/// [`type_mismatches`] as Go's decoder (`go_decoder`: a built-in kind) or the schema (a custom
/// resource, which takes an integral number written with a fraction as an integer) sees them.
fn mismatches(schema: &Schema, value: &Value, go_decoder: bool) -> Vec<TypeMismatch> {
    let mut walk = Walk {
        found: Vec::new(),
        go_decoder,
    };
    let mut path = String::new();
    let mut go = GoContext {
        struct_name: None,
        field: String::new(),
    };
    walk.value(schema.root(), value, &mut path, &mut go, true);
    walk.found
}

/// Every value of the wrong type as 422 causes (custom-resource style).
pub fn type_errors(schema: &Schema, value: &Value) -> Vec<FieldCause> {
    mismatches(schema, value, false)
        .iter()
        .map(TypeMismatch::to_cause)
        .collect()
}

/// The 400 BadRequest message kube-apiserver gives when decoding a built-in kind fails on a
/// type mismatch (the first one, as the Go decoder stops there). `target_kind` is the kind the
/// endpoint decodes into; `raw` is the body, summarized when it names no kind.
pub fn decode_error(
    schema: &Schema,
    value: &Value,
    target_kind: &str,
    raw: &[u8],
) -> Option<String> {
    let first = type_mismatches(schema, value).into_iter().next()?;
    let body_kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    if body_kind.is_empty() {
        return Some(format!(
            "the object provided is unrecognized (must be of type {target_kind}): {} ({})",
            first.go_message(),
            summarize(raw, 30)
        ));
    }
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    Some(format!(
        "{body_kind} in version \"{version}\" cannot be handled as a {target_kind}: {}",
        first.go_message()
    ))
}

/// kube-apiserver's `summarizeData`: the first bytes of a JSON object, else hex.
fn summarize(raw: &[u8], max: usize) -> String {
    let cut = &raw[..raw.len().min(max)];
    let ellipsis = if raw.len() > max { " ..." } else { "" };
    match raw.first() {
        None => "<empty>".to_owned(),
        Some(b'{') => format!("{}{ellipsis}", String::from_utf8_lossy(cut)),
        Some(_) => {
            let hex: String = cut.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{ellipsis}")
        }
    }
}

struct GoContext<'a> {
    struct_name: Option<&'a str>,
    field: String,
}

struct Walk {
    found: Vec<TypeMismatch>,
    go_decoder: bool,
}

impl Walk {
    fn value<'a>(
        &mut self,
        node: SchemaNode<'a>,
        value: &Value,
        path: &mut String,
        go: &mut GoContext<'a>,
        resource: bool,
    ) {
        if value.is_null() {
            return;
        }
        let node = match choose(node, value) {
            Choice::Node(node) => node,
            Choice::Opaque => return,
            Choice::NoBranch(types) => {
                let expected: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
                self.mismatch(
                    path,
                    expected.join(" or "),
                    value,
                    go,
                    "interface {}".into(),
                );
                return;
            }
        };
        if node.int_or_string() {
            if !(value.is_string() || fits(SchemaType::Integer, value)) {
                let go_type = go_type(node);
                self.mismatch(path, "integer or string".into(), value, go, go_type);
            }
            return;
        }
        let Some(ty) = super::effective_type(node) else {
            return;
        };
        // Go parses an integer field's number as an integer: `15.0` or `1.5e1` fails.
        let go_refuses = self.go_decoder && ty == SchemaType::Integer && value.is_f64();
        if !fits(ty, value) || go_refuses {
            let go_type = go_type(node);
            self.mismatch(path, ty.as_str().into(), value, go, go_type);
            return;
        }
        match value {
            Value::Number(number) if ty == SchemaType::Integer => {
                self.check_range(node, number, path, go);
            }
            Value::Object(map) => {
                for (key, item) in map {
                    let mark = path.len();
                    push_key(path, key);
                    match child(node, key, resource) {
                        Child::Field(sub) => {
                            // Go names the struct that has the field, and only struct fields.
                            let go_mark = go.field.len();
                            let outer = go.struct_name;
                            if let Some(name) = node.name() {
                                go.struct_name = Some(short_name(name));
                            }
                            push_key(&mut go.field, key);
                            self.value(sub, item, path, go, sub.embedded_resource());
                            go.field.truncate(go_mark);
                            go.struct_name = outer;
                        }
                        Child::MapValue(sub) => {
                            self.value(sub, item, path, go, sub.embedded_resource());
                        }
                        Child::Allowed | Child::Unknown => {}
                    }
                    path.truncate(mark);
                }
            }
            Value::Array(items) => {
                if let Some(sub) = node.items() {
                    for (index, item) in items.iter().enumerate() {
                        let mark = path.len();
                        push_index(path, index);
                        self.value(sub, item, path, go, sub.embedded_resource());
                        path.truncate(mark);
                    }
                }
            }
            _ => {}
        }
    }

    fn check_range(
        &mut self,
        node: SchemaNode<'_>,
        number: &serde_json::Number,
        path: &str,
        go: &GoContext<'_>,
    ) {
        let (min, max) = match node.format() {
            Some("int32") => (i64::from(i32::MIN), i64::from(i32::MAX)),
            _ => return,
        };
        let in_range = match number.as_i64() {
            Some(n) => (min..=max).contains(&n),
            // Integral floats (and u64 beyond i64) land here.
            None => number
                .as_f64()
                .is_some_and(|f| f >= min as f64 && f <= max as f64),
        };
        if !in_range {
            self.found.push(TypeMismatch {
                path: path.to_owned(),
                expected: "int32".into(),
                found: "integer",
                reason: CauseReason::FieldValueInvalid,
                go_struct: go.struct_name.map(str::to_owned),
                go_field: go.field.clone(),
                go_value: format!("number {number}"),
                go_type: "int32".into(),
            });
        }
    }

    fn mismatch(
        &mut self,
        path: &str,
        expected: String,
        value: &Value,
        go: &GoContext<'_>,
        go_type: String,
    ) {
        let go_value = match value {
            Value::Bool(_) => "bool".to_owned(),
            // Go quotes the literal only when an integer type fails to parse it.
            Value::Number(number) if go_type.starts_with("int") || go_type.starts_with("uint") => {
                format!("number {number}")
            }
            Value::Number(_) => "number".to_owned(),
            Value::String(_) => "string".to_owned(),
            Value::Array(_) => "array".to_owned(),
            Value::Object(_) | Value::Null => "object".to_owned(),
        };
        self.found.push(TypeMismatch {
            path: path.to_owned(),
            expected,
            found: json_type_name(value),
            reason: CauseReason::FieldValueTypeInvalid,
            go_struct: go.struct_name.map(str::to_owned),
            go_field: go.field.clone(),
            go_value,
            go_type,
        });
    }
}

/// `io.k8s.api.core.v1.ConfigMap` -> `ConfigMap`.
fn short_name(name: &str) -> &str {
    name.rsplit('.').next().unwrap_or(name)
}

/// `io.k8s.api.core.v1.ConfigMap` -> `v1.ConfigMap`, as Go prints a named type.
fn go_named(name: &str) -> String {
    let mut parts = name.rsplit('.');
    match (parts.next(), parts.next()) {
        (Some(kind), Some(package)) => format!("{package}.{kind}"),
        _ => name.to_owned(),
    }
}

/// The Go type a schema node stands for, as `reflect.Type.String()` prints it.
fn go_type(node: SchemaNode<'_>) -> String {
    go_type_bounded(node, 8)
}

fn go_type_bounded(node: SchemaNode<'_>, budget: u8) -> String {
    if let Some(name) = node.resolved().name() {
        return go_named(name);
    }
    if budget == 0 {
        return "interface {}".into();
    }
    match super::effective_type(node) {
        Some(SchemaType::String) if node.format() == Some("byte") => "[]uint8".into(),
        Some(SchemaType::String) => "string".into(),
        Some(SchemaType::Integer) => match node.format() {
            Some("int32") => "int32".into(),
            _ => "int64".into(),
        },
        Some(SchemaType::Number) => "float64".into(),
        Some(SchemaType::Boolean) => "bool".into(),
        Some(SchemaType::Array) => match node.items() {
            Some(items) => format!("[]{}", go_type_bounded(items, budget - 1)),
            None => "[]interface {}".into(),
        },
        Some(SchemaType::Object) => match node.additional_properties() {
            AdditionalProperties::Schema(inner) => {
                format!("map[string]{}", go_type_bounded(inner, budget - 1))
            }
            _ => "map[string]interface {}".into(),
        },
        None => "interface {}".into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::builtin_schema;

    #[test]
    fn config_map_data_number_is_a_type_error() {
        let schema = builtin_schema("", "v1", "ConfigMap").expect("ConfigMap");
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                          "data": {"a": 1}});
        let causes = type_errors(&schema, &body);
        assert_eq!(
            causes,
            vec![FieldCause {
                field: "data.a".into(),
                reason: CauseReason::FieldValueTypeInvalid,
                message:
                    r#"Invalid value: "integer": data.a in body must be of type string: "integer""#
                        .into(),
            }]
        );
        let raw = serde_json::to_vec(&body).expect("serialize");
        assert_eq!(
            decode_error(&schema, &body, "ConfigMap", &raw).as_deref(),
            Some(
                r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string"#
            )
        );
    }

    #[test]
    fn go_messages_name_the_innermost_struct() {
        let schema = builtin_schema("", "v1", "ConfigMap").expect("ConfigMap");
        let body = json!({"kind": "ConfigMap", "apiVersion": "v1",
                          "metadata": {"name": "c", "labels": {"a": 1}}});
        let raw = serde_json::to_vec(&body).expect("serialize");
        assert_eq!(
            decode_error(&schema, &body, "ConfigMap", &raw).as_deref(),
            Some(
                r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"#
            )
        );
        let body = json!({"metadata": "oops"});
        let raw = serde_json::to_vec(&body).expect("serialize");
        assert_eq!(
            decode_error(&schema, &body, "ConfigMap", &raw).as_deref(),
            Some(
                r#"the object provided is unrecognized (must be of type ConfigMap): json: cannot unmarshal string into Go struct field ConfigMap.metadata of type v1.ObjectMeta ({"metadata":"oops"})"#
            )
        );
    }

    #[test]
    fn lists_booleans_integers_and_ranges() {
        let rb = builtin_schema("rbac.authorization.k8s.io", "v1", "RoleBinding").expect("RB");
        let body = json!({"subjects": {"kind": "User"}, "roleRef": {"name": 5}});
        let found = type_mismatches(&rb, &body);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].path, "subjects");
        assert_eq!(
            found[0].go_message(),
            "json: cannot unmarshal object into Go struct field RoleBinding.subjects of type []v1.Subject"
        );
        assert_eq!(found[1].path, "roleRef.name");

        let lease = builtin_schema("coordination.k8s.io", "v1", "Lease").expect("Lease");
        let body = json!({"spec": {"leaseDurationSeconds": 1.5, "holderIdentity": true,
                                   "leaseTransitions": 4_294_967_296_i64}});
        let found = type_mismatches(&lease, &body);
        let paths: Vec<_> = found.iter().map(|m| (m.path.as_str(), m.reason)).collect();
        assert_eq!(
            paths,
            vec![
                (
                    "spec.leaseDurationSeconds",
                    CauseReason::FieldValueTypeInvalid
                ),
                ("spec.holderIdentity", CauseReason::FieldValueTypeInvalid),
                ("spec.leaseTransitions", CauseReason::FieldValueInvalid),
            ]
        );
        assert_eq!(
            found[0].go_message(),
            "json: cannot unmarshal number 1.5 into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32"
        );
    }

    #[test]
    fn valid_values_nulls_and_int_or_string() {
        let quota = builtin_schema("", "v1", "ResourceQuota").expect("quota");
        let body = json!({"metadata": {"name": "q", "labels": null},
                          "spec": {"hard": {"pods": 10, "cpu": "500m"}}});
        assert!(type_errors(&quota, &body).is_empty());
        let body = json!({"spec": {"hard": {"pods": true}}});
        assert_eq!(type_errors(&quota, &body)[0].field, "spec.hard.pods");

        let crd =
            builtin_schema("apiextensions.k8s.io", "v1", "CustomResourceDefinition").expect("CRD");
        // additionalProperties of JSONSchemaProps is JSONSchemaPropsOrBool: bool or object.
        let props = |value: Value| {
            json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {
                "type": "object", "additionalProperties": value}}}]}})
        };
        assert!(type_errors(&crd, &props(json!(true))).is_empty());
        assert!(type_errors(&crd, &props(json!({"type": "string"}))).is_empty());
        let bad = type_errors(&crd, &props(json!("yes")));
        assert_eq!(
            bad[0].field,
            "spec.versions[0].schema.openAPIV3Schema.additionalProperties"
        );
    }

    #[test]
    fn custom_resource_messages() {
        let schema = Schema::compile(&json!({"type": "object", "properties": {"spec": {
            "type": "object", "properties": {"replicas": {"type": "integer"},
                                             "tags": {"type": "array", "items": {"type": "string"}}}}}}))
        .expect("compiles");
        let body = json!({"spec": {"replicas": "3", "tags": ["a", 2]}});
        let causes = type_errors(&schema, &body);
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0].field, "spec.replicas");
        assert_eq!(
            causes[0].message,
            r#"Invalid value: "string": spec.replicas in body must be of type integer: "string""#
        );
        assert_eq!(causes[1].field, "spec.tags[1]");
        assert!(type_errors(&schema, &json!({"spec": {"replicas": 3.0}})).is_empty());
    }

    #[test]
    fn summaries() {
        assert_eq!(summarize(b"", 30), "<empty>");
        assert_eq!(summarize(b"[1]", 30), "5b315d");
        assert_eq!(
            summarize(br#"{"a":"0123456789012345678901234567890"}"#, 10),
            r#"{"a":"0123 ..."#
        );
    }
}
