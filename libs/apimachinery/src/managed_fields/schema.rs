//! The caller's view of a schema: how each value is merged and tracked.
//!
//! The API server implements [`TypeView`] over its compiled OpenAPI schemas (list types from
//! `x-kubernetes-list-type`/`-list-map-keys` or `patchStrategy`, map types from
//! `x-kubernetes-map-type`); [`Deduced`] is the schema-less fallback.

use serde_json::Value;

/// How a value is merged and which of its parts are owned separately.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A leaf: replaced as a whole.
    Scalar,
    /// An object with named fields, merged field by field. Named fields are owned only
    /// through what they contain.
    Struct,
    /// An object with arbitrary keys; each key is owned on its own unless `atomic`.
    Map { atomic: bool },
    /// A list of the given type.
    List(ListType),
    /// No schema here: deduce from the value (objects are granular maps, lists atomic,
    /// anything else scalar), as structured-merge-diff's deduced type does.
    Untyped,
}

/// How the items of a list are identified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// The list is replaced as a whole.
    Atomic,
    /// A set of scalars, each owned on its own.
    Set,
    /// A list of objects identified by these key fields.
    Map { keys: Vec<String> },
}

/// A position in a schema.
pub trait TypeView: Clone {
    /// The shape of `value` at this position. `value` is `Null` when the value is absent.
    fn shape(&self, value: &Value) -> Shape;
    /// The type of field `name` of an object at this position.
    fn field(&self, name: &str) -> Self;
    /// The type of the items of a list at this position.
    fn item(&self) -> Self;
    /// The schema default at this position. Used for map-list key fields an item omits (a
    /// container port without `protocol` is keyed as `"protocol":"TCP"`).
    fn default_value(&self) -> Option<Value> {
        None
    }
}

/// structured-merge-diff's deduced type: every object is a granular map, every list atomic,
/// everything else a scalar.
#[derive(Debug, Clone, Copy, Default)]
pub struct Deduced;

impl TypeView for Deduced {
    fn shape(&self, _value: &Value) -> Shape {
        Shape::Untyped
    }
    fn field(&self, _name: &str) -> Self {
        Deduced
    }
    fn item(&self) -> Self {
        Deduced
    }
}

/// The shape actually used for `value`: `Untyped` is deduced from the value, and a value whose
/// JSON kind does not fit the schema is handled as a leaf.
pub(crate) fn resolve<T: TypeView>(ty: &T, value: &Value) -> Shape {
    let shape = match ty.shape(value) {
        Shape::Untyped => match value {
            Value::Object(_) => Shape::Map { atomic: false },
            Value::Array(_) => Shape::List(ListType::Atomic),
            _ => Shape::Scalar,
        },
        other => other,
    };
    match (&shape, value) {
        (Shape::Struct | Shape::Map { .. }, Value::Object(_)) => shape,
        (Shape::List(_), Value::Array(_)) => shape,
        _ => Shape::Scalar,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deduced_shapes() {
        assert_eq!(resolve(&Deduced, &json!({})), Shape::Map { atomic: false });
        assert_eq!(
            resolve(&Deduced, &json!([1])),
            Shape::List(ListType::Atomic)
        );
        assert_eq!(resolve(&Deduced, &json!("x")), Shape::Scalar);
        assert_eq!(resolve(&Deduced, &Value::Null), Shape::Scalar);
    }
}
