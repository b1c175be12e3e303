//! CEL validation rules (`x-kubernetes-validations`) of CustomResourceDefinitions.
//!
//! [`CelRules::compile`] compiles every rule of one version's `openAPIV3Schema` once; the
//! result is shared by every logical cluster serving that schema. [`CelRules::validate`] then
//! runs the rules against a custom resource the way kube-apiserver's
//! `apiextensions-apiserver/pkg/apiserver/schema/cel` validator does:
//!
//! * a rule sees its node's value as `self` (typed per the schema: escaped property names,
//!   int-or-string, `date-time`/`duration` formats, embedded resources) and runs once per
//!   value present at that node (through properties, items and additionalProperties);
//! * transition rules (those naming `oldSelf`) run only on update, where an old value exists
//!   at the same place (map keys, properties, and `x-kubernetes-list-type: map` items by key);
//!   `optionalOldSelf: true` makes `oldSelf` an optional that is also bound on create;
//! * failures become 422 causes with Kubernetes' reasons and texts, `fieldPath` included;
//! * unchanged values are ratcheted: a non-transition rule failing on a value equal to its old
//!   value does not fail the update;
//! * evaluation is metered: [`PER_CALL_LIMIT`] per rule and [`RUNTIME_BUDGET`] per call.
//!
//! The CEL engine is `cel` 0.13 with the Kubernetes function libraries of `kube-cel`. Neither
//! has a type checker nor cost tracking, so the `program` module checks what it can at compile
//! time and adds its own metering (see the `cost` module). Known differences from
//! kube-apiserver:
//!
//! * no type checker: only undeclared names, undeclared fields of `self`/`oldSelf` chains and
//!   unsupported macros (`cel.bind`, `sortBy`, two-variable comprehensions, `type()`) fail at
//!   compile time; other type errors show up when a rule runs;
//! * no static cost estimate: a CRD whose rules upstream would find too expensive is accepted,
//!   and the runtime limits stop its rules instead; the runtime cost is this interpreter's own
//!   (it copies values that cel-go shares), so big values in loops run out sooner;
//! * compile errors carry no line and column; Go's `%#v` pointers print a fixed address.

mod cost;
mod eval;
mod expression;
mod fields;
mod guard;
mod program;
mod rule;
mod tree;
mod value;

#[cfg(test)]
mod tests;

use serde_json::Value as Json;

use crate::FieldCause;

pub use cost::{PER_CALL_LIMIT, RUNTIME_BUDGET};
pub use expression::Expression;

/// Compiled `x-kubernetes-validations` of one CRD version schema.
///
/// `Send + Sync`: built once and shared (in an `Arc`) by every logical cluster using the schema.
#[derive(Debug)]
pub struct CelRules {
    root: Option<tree::Node>,
}

impl CelRules {
    /// Compiles every rule found anywhere in `schema`, a version's `openAPIV3Schema`.
    ///
    /// `schema_path` is where that schema sits in the CustomResourceDefinition, as
    /// kube-apiserver names it in errors: `spec.validation.openAPIV3Schema` when every version
    /// shares one schema, `spec.versions[1].schema.openAPIV3Schema` otherwise. Compile errors
    /// come back as causes under it, e.g. field
    /// `spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule`.
    pub fn compile(schema: &Json, schema_path: &str) -> Result<CelRules, Vec<FieldCause>> {
        let mut causes = Vec::new();
        let root = tree::Node::build(schema, schema_path, true, &mut causes);
        if !causes.is_empty() {
            return Err(causes);
        }
        Ok(CelRules {
            root: root.has_rules.then_some(root),
        })
    }

    /// True when the schema has no rule at all: [`validate`](Self::validate) has nothing to do.
    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// Evaluates the rules on a custom resource (`new`) and, on update, the stored object
    /// (`old`). Returns the causes of a 422 Invalid; empty when every rule holds.
    pub fn validate(&self, new: &Json, old: Option<&Json>) -> Vec<FieldCause> {
        match &self.root {
            Some(root) => eval::validate(root, new, old),
            None => Vec::new(),
        }
    }
}
