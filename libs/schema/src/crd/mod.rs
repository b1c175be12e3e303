//! CustomResourceDefinitions (apiextensions.k8s.io/v1): compiling a version's schema for serving,
//! and validating CRDs on create and update with kube-apiserver's field paths and messages.
//!
//! Kubernetes validates the *internal* form of a CRD: when every version carries the same
//! `schema` (or `subresources`, `additionalPrinterColumns`, `selectableFields`), conversion from v1
//! moves it to the spec's top level, and errors about it are reported there
//! (`spec.validation.openAPIV3Schema...`, `spec.subresources...`). A CRD with versions whose
//! schemas differ gets `spec.versions[i].schema.openAPIV3Schema...`. We report the same paths.
//!
//! kcp differences (from kcp's apiextensions fork): groups of built-in Kubernetes APIs, including
//! the empty core group, skip the group-name checks; a core-group CRD is named
//! `<plural>.core`; CRDs annotated `apis.kcp.io/bound-crd` skip the `<plural>.<group>` name rule.

mod causes;
mod default_rules;
mod json;
pub(crate) mod names;
mod openapi_rules;
mod resource_schema;
mod schema_rules;
mod spec;
mod structural_rules;

use serde_json::{Value, json};

use crate::structural::{CompileOptions, Schema};
use crate::{FieldCause, SchemaError, builtin};

pub(crate) use names::{dns1035_label, dns1123_label_ok, dns1123_subdomain_ok};
pub use resource_schema::validate_api_resource_schema;
pub use spec::apply_crd_defaults;

/// Which schema rules are enforced. All are on for a create; an update relaxes a rule the old
/// object already broke, so stored CRDs stay updatable after rules were tightened.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SchemaOptions {
    pub valid_property_type: bool,
    pub structural: bool,
    pub pruned_defaults: bool,
    pub atomic_set_type: bool,
    pub map_list_keys: bool,
}

impl SchemaOptions {
    pub(crate) const STRICT: SchemaOptions = SchemaOptions {
        valid_property_type: true,
        structural: true,
        pruned_defaults: true,
        atomic_set_type: true,
        map_list_keys: true,
    };
}

/// Compiles a CRD version's `openAPIV3Schema` for serving: CRD semantics (an object without
/// properties prunes everything), the root `metadata` linked to the built-in ObjectMeta (so
/// metadata is neither pruned away nor left unchecked), and `apiVersion`/`kind` as strings
/// unless the schema says more about them.
pub fn compile_version_schema(open_api_v3_schema: &Value) -> Result<Schema, SchemaError> {
    let declared = |name: &str| {
        open_api_v3_schema
            .get("properties")
            .and_then(|p| p.get(name))
            .is_some()
    };
    let string = Schema::compile(&json!({"type": "string"}))?;
    let mut links = vec![("metadata", builtin::object_meta())];
    for name in ["apiVersion", "kind"] {
        if !declared(name) {
            links.push((name, string.clone()));
        }
    }
    Schema::compile_linked(open_api_v3_schema, &CompileOptions::default(), &links)
}

/// Validates a CRD about to be created, as kube-apiserver does (after its create defaulting:
/// singular/listKind/conversion defaults, status reset, `status.storedVersions` set to the
/// storage version).
pub fn validate_crd(crd: &Value) -> Vec<FieldCause> {
    spec::validate(crd, None)
}

/// Validates an update of `old` to `new`: everything [`validate_crd`] checks (rules the old
/// object already broke are relaxed), immutable `spec.group` and `spec.names.plural`, immutable
/// `spec.scope` and `spec.names.kind` once established, and `status.storedVersions` carried over
/// from the old object (a version once stored must stay in `spec.versions`).
pub fn validate_crd_update(new: &Value, old: &Value) -> Vec<FieldCause> {
    spec::validate(new, Some(old))
}

#[cfg(test)]
mod tests;
