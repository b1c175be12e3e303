//! Errors of this crate.

/// Why a schema could not be compiled or a request option not understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// A `$ref` names a schema that is not among the definitions given.
    #[error("unresolved schema reference {0:?}")]
    UnresolvedRef(String),
    /// A `$ref` that is not a local `#/.../<name>` pointer.
    #[error("unsupported schema reference {0:?}")]
    UnsupportedRef(String),
    /// A schema (or a keyword inside it) has the wrong JSON shape.
    #[error("invalid schema at {path}: {message}")]
    Invalid { path: String, message: String },
    /// The schema nests deeper than we are willing to follow.
    #[error("schema nesting exceeds {0} levels")]
    TooDeep(usize),
    /// A `fieldValidation` query value other than Strict, Warn or Ignore.
    /// The text follows kube-apiserver's `field.NotSupported` on the options' field.
    #[error(
        "fieldValidation: Unsupported value: {0:?}: supported values: \"Ignore\", \"Strict\", \"Warn\""
    )]
    UnsupportedFieldValidation(String),
}
