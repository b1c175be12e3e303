//! Standalone boolean CEL expressions over JSON variables, for callers other than schema rules
//! (admission webhooks' `matchConditions`). Variables are untyped: objects are maps, numbers
//! ints or doubles. Evaluation is metered with the per-call limit of schema rules.

use serde_json::Value as Json;

use kube_cel::cel::Value;

use super::cost::{self, PER_CALL_LIMIT};
use super::program::{self, Program};
use super::value::untyped;

/// A compiled expression that names only `variables`.
#[derive(Debug)]
pub struct Expression {
    program: Program,
    variables: Vec<String>,
}

impl Expression {
    /// Compiles `source`; the error reads as Kubernetes' compile errors after `compilation failed: `.
    pub fn compile(source: &str, variables: &[&str]) -> Result<Expression, String> {
        let program = Program::compile_declaring(source, variables, &|_| None)?;
        Ok(Expression {
            program,
            variables: variables.iter().map(|v| v.to_string()).collect(),
        })
    }

    /// Evaluates with the given values (a declared variable left out is `null`); an error for a
    /// non-boolean result, a runtime error or an exhausted cost limit.
    pub fn evaluate_bool(&self, values: &[(&str, &Json)]) -> Result<bool, String> {
        match self.run(values)? {
            Value::Bool(b) => Ok(b),
            other => Err(format!("expected a bool, got {}", other.type_of())),
        }
    }

    /// Evaluates to a JSON value (a policy's `variables`, which later expressions read).
    pub fn evaluate(&self, values: &[(&str, &Json)]) -> Result<Json, String> {
        super::value::to_json(&self.run(values)?)
    }

    fn run(&self, values: &[(&str, &Json)]) -> Result<Value, String> {
        let mut scope = program::base().new_inner_scope();
        for name in &self.variables {
            let value = values
                .iter()
                .find(|(n, _)| n == name)
                .map_or(Value::Null, |(_, v)| untyped(v));
            scope.add_variable_from_value(name.clone(), value);
        }
        let (result, spent) = cost::metered(PER_CALL_LIMIT, self.program.base_cost, || {
            self.program.execute(&scope)
        });
        if spent.exceeded {
            return Err("operation cancelled: actual cost limit exceeded".into());
        }
        result.map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod expression_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn declared_variables_only() {
        let e = Expression::compile("object.metadata.name.startsWith('a')", &["object"]);
        let e = e.map_err(|e| e.to_string());
        let obj = json!({"metadata": {"name": "abc"}});
        assert_eq!(
            e.as_ref().map(|e| e.evaluate_bool(&[("object", &obj)])),
            Ok(Ok(true))
        );
        let other = json!({"metadata": {"name": "xyz"}});
        assert_eq!(
            e.map(|e| e.evaluate_bool(&[("object", &other)])),
            Ok(Ok(false))
        );
        assert!(Expression::compile("request.operation == 'CREATE'", &["object"]).is_err());
    }

    #[test]
    fn values_come_back_as_json() {
        let e = Expression::compile("{'n': object.metadata.name, 'l': [1, 2.5]}", &["object"]);
        let obj = json!({"metadata": {"name": "abc"}});
        assert_eq!(
            e.map(|e| e.evaluate(&[("object", &obj)])),
            Ok(Ok(json!({"n": "abc", "l": [1, 2.5]})))
        );
    }

    #[test]
    fn non_boolean_results_are_errors() {
        let e = Expression::compile("object.metadata.name", &["object"]);
        let obj = json!({"metadata": {"name": "abc"}});
        assert!(e.is_ok_and(|e| e.evaluate_bool(&[("object", &obj)]).is_err()));
    }
}
