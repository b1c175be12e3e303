//! One `x-kubernetes-validations` entry: its fields, their checks and its compiled programs.

pub(super) use kcp_apimachinery::field_error::go_quote;
use std::fmt::Write;

use serde::Deserialize;
use serde_json::Value as Json;

use kube_cel::cel::common::ast::IdedExpr;

use super::fields;
use super::program::Program;
use crate::validate::{CauseReason, FieldCause};

/// An entry as written in the CRD.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RuleSpec {
    #[serde(default)]
    rule: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    message_expression: String,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    field_path: String,
    #[serde(default)]
    optional_old_self: Option<bool>,
}

/// The reasons a rule may declare, in kube-apiserver's order.
const REASONS: [(&str, CauseReason); 4] = [
    ("FieldValueInvalid", CauseReason::FieldValueInvalid),
    ("FieldValueForbidden", CauseReason::FieldValueForbidden),
    ("FieldValueRequired", CauseReason::FieldValueRequired),
    ("FieldValueDuplicate", CauseReason::FieldValueDuplicate),
];

/// A rule ready to run.
#[derive(Debug)]
pub(super) struct CompiledRule {
    pub program: Program,
    pub message_expression: Option<Program>,
    /// The `messageExpression` source, for errors about it.
    pub message_expression_source: String,
    /// The rule's source, trimmed.
    rule: String,
    /// The static message, trimmed; empty when unset.
    message: String,
    pub reason: CauseReason,
    /// `fieldPath`, normalized to a relative field path (`spec.x`, `labels[a]`).
    pub field_path: Option<String>,
    pub optional_old_self: bool,
}

impl CompiledRule {
    /// How errors name the rule: its message if set, else its source.
    pub fn error_string(&self) -> &str {
        if self.message.is_empty() {
            &self.rule
        } else {
            &self.message
        }
    }

    /// The detail of a failure without a usable `messageExpression`.
    pub fn message_or_default(&self) -> String {
        if self.message.is_empty() {
            format!("failed rule: {}", self.rule)
        } else {
            self.message.clone()
        }
    }
}

/// Compiles the `x-kubernetes-validations` of the schema node `schema` at `path`.
pub(super) fn compile_all(
    rules: &Json,
    schema: &Json,
    path: &str,
    resource_root: bool,
    uncorrelated: Option<&str>,
    causes: &mut Vec<FieldCause>,
) -> Vec<CompiledRule> {
    let list_path = format!("{path}.x-kubernetes-validations");
    let Some(rules) = rules.as_array() else {
        causes.push(invalid(
            &list_path,
            "\"\"",
            "must be a list of validation rules",
        ));
        return Vec::new();
    };
    let mut compiled = Vec::new();
    for (i, raw) in rules.iter().enumerate() {
        let entry_path = format!("{list_path}[{i}]");
        match serde_json::from_value::<RuleSpec>(raw.clone()) {
            Ok(spec) => {
                if let Some(rule) = compile_one(
                    &spec,
                    schema,
                    &entry_path,
                    resource_root,
                    uncorrelated,
                    causes,
                ) {
                    compiled.push(rule);
                }
            }
            Err(e) => causes.push(invalid(&entry_path, "\"\"", &e.to_string())),
        }
    }
    compiled
}

fn compile_one(
    spec: &RuleSpec,
    schema: &Json,
    path: &str,
    resource_root: bool,
    uncorrelated: Option<&str>,
    causes: &mut Vec<FieldCause>,
) -> Option<CompiledRule> {
    let before = causes.len();
    let rule_path = format!("{path}.rule");
    if spec.rule.trim().is_empty() {
        causes.push(FieldCause {
            field: rule_path,
            reason: CauseReason::FieldValueRequired,
            message: "Required value: rule is not specified".to_owned(),
        });
        return None;
    }
    let check = |e: &IdedExpr| fields::undefined_field(e, schema, resource_root);
    let program = match Program::compile(&spec.rule, &check) {
        Ok(program) => Some(program),
        Err(detail) => {
            causes.push(invalid(
                &rule_path,
                &spec.go_value(),
                &format!("compilation failed: {detail}"),
            ));
            None
        }
    };
    if let Some(program) = &program {
        if program.uses_old_self {
            if let Some(within) = uncorrelated {
                causes.push(invalid(
                    &rule_path,
                    &go_quote(&spec.rule),
                    &format!(
                        "oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"
                    ),
                ));
            }
        } else if spec.optional_old_self == Some(true) {
            causes.push(invalid(
                &format!("{path}.optionalOldSelf"),
                "true",
                "may not be set if oldSelf is not used in rule",
            ));
        }
    }
    if spec.message.contains(['\n', '\r']) {
        causes.push(invalid(
            &format!("{path}.message"),
            &go_quote(&spec.message),
            "message must not contain line breaks",
        ));
    } else if !spec.message.is_empty() && spec.message.trim().is_empty() {
        causes.push(invalid(
            &format!("{path}.message"),
            &go_quote(&spec.message),
            "message must be non-empty if specified",
        ));
    }
    let message_expression = if spec.message_expression.trim().is_empty() {
        None
    } else {
        match Program::compile(&spec.message_expression, &check) {
            Ok(program) => Some(program),
            Err(detail) => {
                causes.push(invalid(
                    &format!("{path}.messageExpression"),
                    &spec.go_value(),
                    &format!("messageExpression compilation failed: {detail}"),
                ));
                None
            }
        }
    };
    let reason = match spec.reason.as_deref() {
        None => CauseReason::FieldValueInvalid,
        Some(reason) => match REASONS.iter().find(|(name, _)| *name == reason) {
            Some((_, reason)) => *reason,
            None => {
                let supported: Vec<String> = REASONS.iter().map(|(n, _)| go_quote(n)).collect();
                causes.push(FieldCause {
                    field: format!("{path}.reason"),
                    reason: CauseReason::FieldValueNotSupported,
                    message: format!(
                        "Unsupported value: {}: supported values: {}",
                        go_quote(reason),
                        supported.join(", ")
                    ),
                });
                CauseReason::FieldValueInvalid
            }
        },
    };
    let field_path = if spec.field_path.is_empty() {
        None
    } else {
        match normalize_field_path(&spec.field_path, schema) {
            Ok(normalized) => Some(normalized),
            Err(e) => {
                causes.push(invalid(
                    &format!("{path}.fieldPath"),
                    &go_quote(&spec.field_path),
                    &format!("fieldPath must be a valid path: {e}"),
                ));
                None
            }
        }
    };
    if causes.len() > before {
        return None;
    }
    Some(CompiledRule {
        program: program?,
        message_expression,
        message_expression_source: spec.message_expression.clone(),
        rule: spec.rule.trim().to_owned(),
        message: spec.message.trim().to_owned(),
        reason,
        field_path,
        optional_old_self: spec.optional_old_self == Some(true),
    })
}

impl RuleSpec {
    /// The entry as Go's `%#v` prints it in kube-apiserver's errors. Go prints set pointers
    /// as addresses; a fixed one stands in for them.
    fn go_value(&self) -> String {
        let pointer = |set: bool, ty: &str| {
            if set {
                format!("(*{ty})(0xc000000000)")
            } else {
                format!("(*{ty})(nil)")
            }
        };
        format!(
            "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
            go_quote(&self.rule),
            go_quote(&self.message),
            go_quote(&self.message_expression),
            pointer(self.reason.is_some(), "apiextensions.FieldValueErrorReason"),
            go_quote(&self.field_path),
            pointer(self.optional_old_self.is_some(), "bool"),
        )
    }
}

/// An Invalid cause; `value` is already formatted as Go prints it.
fn invalid(field: &str, value: &str, detail: &str) -> FieldCause {
    FieldCause {
        field: field.to_owned(),
        reason: CauseReason::FieldValueInvalid,
        message: format!("Invalid value: {value}: {detail}"),
    }
}

/// Checks a rule's `fieldPath` (`.spec.x`, `['a.b']`, `.labels['k']`) against the schema of
/// the rule's node, and returns it as a field path relative to that node.
fn normalize_field_path(field_path: &str, schema: &Json) -> Result<String, String> {
    let mut out = String::new();
    let mut schema = schema;
    let mut rest = field_path;
    while !rest.is_empty() {
        let name;
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            name = after[..end].to_owned();
            rest = &after[end..];
            if name.is_empty() {
                return Err("unexpected end of JSON path".to_owned());
            }
        } else if let Some(after) = rest.strip_prefix("['") {
            let (quoted, after) = split_quoted(after)?;
            name = quoted;
            rest = after
                .strip_prefix(']')
                .ok_or_else(|| "expected ] after the quoted name".to_owned())?;
        } else {
            return Err(format!("expected [ or . but got: {rest}"));
        }
        if let Some(properties) = schema.get("properties").and_then(Json::as_object) {
            schema = properties
                .get(&name)
                .ok_or_else(|| "does not refer to a valid field".to_owned())?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
        } else if let Some(additional) =
            schema.get("additionalProperties").filter(|a| a.is_object())
        {
            schema = additional;
            let _ = write!(out, "[{name}]");
        } else {
            return Err("does not refer to a valid field".to_owned());
        }
    }
    Ok(out)
}

/// Reads a single-quoted name up to its closing quote (`\'` and `\\` escaped).
fn split_quoted(text: &str) -> Result<(String, &str), String> {
    let mut out = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\'' => return Ok((out, &text[i + 1..])),
            '\\' => match chars.next() {
                Some((_, escaped)) => out.push(escaped),
                None => break,
            },
            c => out.push(c),
        }
    }
    Err("unexpected end of JSON path".to_owned())
}
