//! Running the compiled rules over a custom resource.

use std::collections::HashMap;

use kube_cel::cel::objects::OptionalValue;
use kube_cel::cel::{ExecutionError, Value};
use serde_json::Value as Json;

use super::cost::{self, LIMIT_EXCEEDED, PER_CALL_LIMIT, RUNTIME_BUDGET};
use super::program::{self, OLD_SELF, Program, SELF};
use super::rule::CompiledRule;
use super::tree::{ListType, Node};
use super::value::{aligned, to_cel, to_cel_fields};
use crate::validate::{CauseReason, FieldCause};

/// kube-apiserver's longest accepted `messageExpression` result.
const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

pub(super) fn validate(root: &Node, new: &Json, old: Option<&Json>) -> Vec<FieldCause> {
    let mut walk = Walk {
        budget: RUNTIME_BUDGET,
        stopped: false,
        causes: Vec::new(),
    };
    let unchanged = old.is_some_and(|old| old == new);
    walk.node(root, root, "", new, old, unchanged);
    walk.causes
}

struct Walk {
    /// What is left of [`RUNTIME_BUDGET`].
    budget: u64,
    /// Set once a limit is hit: kube-apiserver runs no further rule then.
    stopped: bool,
    causes: Vec<FieldCause>,
}

impl Walk {
    /// Validates `new` at `path`. `rules` holds the rules to run, `shape` the schema typing the
    /// values (they differ for `allOf` branches). `old` is the correlated old value, if any;
    /// `unchanged` whether the nearest correlated value equals its old value (ratcheting).
    fn node(
        &mut self,
        rules: &Node,
        shape: &Node,
        path: &str,
        new: &Json,
        old: Option<&Json>,
        unchanged: bool,
    ) {
        // Rules see only non-null values; rules on the parent handle nulls and absence.
        if self.stopped || !rules.has_rules || new.is_null() {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        if !rules.rules.is_empty() {
            self.rules(rules, shape, path, new, old, unchanged);
        }
        for branch in &rules.all_of {
            self.node(branch, shape, path, new, old, unchanged);
        }
        match new {
            Json::Object(fields) => {
                for (name, value) in fields {
                    let (child_rules, child_shape, additional) = if let (Some(r), Some(s)) =
                        (rules.properties.get(name), shape.properties.get(name))
                    {
                        (r, s, false)
                    } else if let (Some(r), Some(s)) = (&rules.additional, &shape.additional) {
                        (&**r, &**s, true)
                    } else {
                        continue;
                    };
                    // Most fields have no rule below them: skip them before building their path.
                    if !child_rules.has_rules {
                        continue;
                    }
                    let child_path = if additional {
                        format!("{path}[{name}]")
                    } else {
                        join(path, name)
                    };
                    let old_value = old.and_then(|o| o.get(name));
                    let child_unchanged = old_value.map_or(unchanged, |o| o == value);
                    self.node(
                        child_rules,
                        child_shape,
                        &child_path,
                        value,
                        old_value,
                        child_unchanged,
                    );
                }
            }
            Json::Array(items) => {
                let (Some(item_rules), Some(item_shape)) = (&rules.items, &shape.items) else {
                    return;
                };
                if !item_rules.has_rules {
                    return;
                }
                let old_items = old.and_then(Json::as_array);
                let correlate = Correlation::new(shape.list_type.as_ref(), old_items);
                for (i, item) in items.iter().enumerate() {
                    let (old_item, item_unchanged) = correlate.find(item, unchanged);
                    self.node(
                        item_rules,
                        item_shape,
                        &format!("{path}[{i}]"),
                        item,
                        old_item,
                        item_unchanged,
                    );
                }
            }
            _ => {}
        }
    }

    /// Runs the rules of one node.
    fn rules(
        &mut self,
        rules: &Node,
        shape: &Node,
        path: &str,
        new: &Json,
        old: Option<&Json>,
        unchanged: bool,
    ) {
        // Only the fields the rules read, when they all read `self` field by field.
        let self_value = match &rules.self_fields {
            Some(fields) => to_cel_fields(new, shape, fields),
            None => to_cel(new, shape),
        };
        let old_value = old.map(|o| to_cel(&aligned(o, new, shape), shape));
        let mut scope = program::base().new_inner_scope();
        scope.add_variable_from_value(SELF, self_value);
        if let Some(old_value) = &old_value {
            scope.add_variable_from_value(OLD_SELF, old_value.clone());
        }
        // Only rules with `optionalOldSelf` see `oldSelf` as an optional.
        let optional_scope = rules.rules.iter().any(|r| r.optional_old_self).then(|| {
            let mut optional_scope = scope.new_inner_scope();
            optional_scope.add_variable_from_value(
                OLD_SELF,
                Value::Opaque(std::sync::Arc::new(match &old_value {
                    Some(v) => OptionalValue::of(v.clone()),
                    None => OptionalValue::none(),
                })),
            );
            optional_scope
        });
        let type_name = shape.type_name.as_str();

        for rule in &rules.rules {
            if rule.program.uses_old_self && old.is_none() && !rule.optional_old_self {
                continue;
            }
            if self.budget == 0 {
                self.stop(invalid(path, type_name, OUT_OF_BUDGET));
                return;
            }
            let ctx = match &optional_scope {
                Some(optional_scope) if rule.optional_old_self => optional_scope,
                _ => &scope,
            };
            let Some(result) = self.run(&rule.program, ctx) else {
                let detail = if self.budget == 0 {
                    OUT_OF_BUDGET.to_owned()
                } else {
                    format!(
                        "'{LIMIT_EXCEEDED}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        rule.error_string()
                    )
                };
                self.stop(invalid(path, type_name, &detail));
                return;
            };
            match result {
                Ok(Value::Bool(true)) => continue,
                Ok(Value::Bool(false)) => {}
                Ok(other) => {
                    let detail = format!(
                        "rule did not evaluate to a bool but to {} evaluating rule: {}",
                        other.type_of(),
                        rule.error_string()
                    );
                    self.causes.push(invalid(path, type_name, &detail));
                    continue;
                }
                Err(ExecutionError::NoSuchOverload) => {
                    let detail = format!(
                        "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}",
                        rule.error_string()
                    );
                    self.causes.push(invalid(path, type_name, &detail));
                    continue;
                }
                Err(e) => {
                    let detail = format!(
                        "{} evaluating rule: {}",
                        error_text(&e),
                        rule.error_string()
                    );
                    self.causes.push(invalid(path, type_name, &detail));
                    continue;
                }
            }

            let field = match &rule.field_path {
                Some(relative) => join(path, relative),
                None => path.to_owned(),
            };
            // As in kube-apiserver, the message sees `oldSelf` only as a plain value.
            let detail = match self.message(rule, &scope) {
                Ok(detail) => detail,
                Err(()) => {
                    let detail = if self.budget == 0 {
                        "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".to_owned()
                    } else {
                        format!(
                            "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                            super::rule::go_quote(&rule.message_expression_source)
                        )
                    };
                    self.stop(invalid(&field, type_name, &detail));
                    return;
                }
            };
            // Ratcheting: a value left as it was may keep failing a rule that does not look at
            // its old value (kube-apiserver turns the error into a warning).
            if unchanged && !rule.program.uses_old_self {
                continue;
            }
            self.causes.push(failure(&field, type_name, &detail, rule));
        }
    }

    /// Runs one program within the limits; `None` when it was stopped by them.
    fn run(
        &mut self,
        program: &Program,
        ctx: &kube_cel::cel::Context<'_>,
    ) -> Option<Result<Value, ExecutionError>> {
        let limit = PER_CALL_LIMIT.min(self.budget);
        let stopped_by_budget = limit < PER_CALL_LIMIT;
        let (result, spent) = cost::metered(limit, program.base_cost, || program.execute(ctx));
        self.budget = self.budget.saturating_sub(spent.cost);
        if spent.exceeded {
            if stopped_by_budget {
                self.budget = 0;
            }
            return None;
        }
        Some(result)
    }

    /// The detail of a failed rule: its `messageExpression` when that yields a usable string,
    /// else its message. `Err` when the message expression ran out of budget.
    fn message(
        &mut self,
        rule: &CompiledRule,
        ctx: &kube_cel::cel::Context<'_>,
    ) -> Result<String, ()> {
        if let Some(expression) = &rule.message_expression {
            match self.run(expression, ctx) {
                None => return Err(()),
                Some(Ok(Value::String(s))) => {
                    let s = s.trim();
                    if !s.is_empty() && s.len() <= MAX_MESSAGE_EXPRESSION_BYTES && !s.contains('\n')
                    {
                        return Ok(s.to_owned());
                    }
                }
                // kube-apiserver logs these and falls back to the static message.
                Some(_) => {}
            }
        }
        Ok(rule.message_or_default())
    }

    fn stop(&mut self, cause: FieldCause) {
        self.causes.push(cause);
        self.stopped = true;
    }
}

/// Old items for new items of one list: by key for map lists, by value for sets (for
/// ratcheting only: set items have no `oldSelf`), none for atomic lists.
enum Correlation<'a> {
    None,
    Map(Vec<&'a str>, HashMap<String, &'a Json>),
    Set(&'a [Json]),
}

impl<'a> Correlation<'a> {
    fn new(list_type: Option<&'a ListType>, old: Option<&'a Vec<Json>>) -> Self {
        let Some(old) = old else {
            return Correlation::None;
        };
        match list_type {
            Some(ListType::Map(keys)) => {
                let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
                let index = old
                    .iter()
                    .map(|item| (map_key(&keys, item), item))
                    .collect();
                Correlation::Map(keys, index)
            }
            Some(ListType::Set) => Correlation::Set(old),
            _ => Correlation::None,
        }
    }

    /// The old item of `item` (if it has one) and whether `item` is unchanged for ratcheting.
    fn find(&self, item: &Json, parent_unchanged: bool) -> (Option<&'a Json>, bool) {
        match self {
            Correlation::None => (None, parent_unchanged),
            Correlation::Map(keys, index) => match index.get(&map_key(keys, item)) {
                Some(old) => (Some(*old), *old == item),
                None => (None, parent_unchanged),
            },
            Correlation::Set(old) => (None, old.contains(item) || parent_unchanged),
        }
    }
}

/// The identity of a map-list item: its key fields, absent ones as null.
fn map_key(keys: &[&str], item: &Json) -> String {
    let values: Vec<&Json> = keys
        .iter()
        .map(|k| item.get(*k).unwrap_or(&Json::Null))
        .collect();
    serde_json::to_string(&values).unwrap_or_default()
}

fn join(path: &str, child: &str) -> String {
    if path.is_empty() {
        child.to_owned()
    } else if child.starts_with('[') {
        format!("{path}{child}")
    } else {
        format!("{path}.{child}")
    }
}

/// The cause's field: kube-apiserver validates the root with a nil path, printed `<nil>`.
fn field_name(path: &str) -> String {
    if path.is_empty() {
        "<nil>".to_owned()
    } else {
        path.to_owned()
    }
}

/// kube-apiserver's Invalid error on a node of type `type_name`.
fn invalid(field: &str, type_name: &str, detail: &str) -> FieldCause {
    FieldCause {
        field: field_name(field),
        reason: CauseReason::FieldValueInvalid,
        message: format!("Invalid value: \"{type_name}\": {detail}"),
    }
}

/// The error of a rule that evaluated to false, with the reason it declares.
fn failure(field: &str, type_name: &str, detail: &str, rule: &CompiledRule) -> FieldCause {
    let message = match rule.reason {
        CauseReason::FieldValueForbidden => format!("Forbidden: {detail}"),
        CauseReason::FieldValueRequired => format!("Required value: {detail}"),
        CauseReason::FieldValueDuplicate => format!("Duplicate value: \"{type_name}\""),
        _ => return invalid(field, type_name, detail),
    };
    FieldCause {
        field: field_name(field),
        reason: rule.reason,
        message,
    }
}

/// An evaluation error in cel-go's words where the two interpreters share a meaning.
fn error_text(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        ExecutionError::IndexOutOfBounds(index) => {
            format!("index out of bounds: {}", display_value(index))
        }
        ExecutionError::UndeclaredReference(name) => {
            format!("no such attribute or function: '{name}'")
        }
        other => other.to_string(),
    }
}

fn display_value(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        other => format!("{other:?}"),
    }
}
