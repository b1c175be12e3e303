//! kcp-schema: OpenAPI v3 structural schemas.
//!
//! * [`structural`]: the compiled schema graph ([`Schema`]) shared by built-in kinds and CRDs;
//! * [`builtin`]: schemas of the built-in kinds, generated from k8s-openapi;
//! * [`validate`]: `fieldValidation` checks (unknown and duplicate fields), type errors, and
//!   custom-resource handling: [`prune`], [`apply_defaults`], [`validate_value`];
//! * [`constraints`]: value constraints kept in compiled nodes (pattern, bounds, list types, ...);
//! * [`crd`]: CustomResourceDefinition schemas and validation;
//! * [`openapi`]: the `/openapi/v3` documents kube-apiserver serves.

pub mod builtin;
pub mod cel;
pub mod constraints;
pub mod crd;
mod error;
pub mod kcp;
pub mod openapi;
pub mod structural;
pub mod validate;

pub use builtin::{BuiltinKind, builtin_kinds, builtin_schema};
pub use cel::CelRules;
pub use constraints::{Bound, ListType, MapType, Pattern};
pub use error::SchemaError;
pub use openapi::{OpenApiResource, hash, v3_group_version, v3_root};
pub use structural::{
    AdditionalProperties, CompileOptions, Schema, SchemaNode, SchemaSet, SchemaType,
};
pub use validate::{
    FieldCause, FieldValidation, apply_defaults, duplicate_fields, missing_required, prune,
    type_errors, unknown_fields, validate_value, validate_value_update,
};
