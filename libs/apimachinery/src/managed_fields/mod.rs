//! Server-side apply and `metadata.managedFields`, as a pure library over JSON values.
//!
//! A port of the parts of structured-merge-diff and Kubernetes' field manager that the API
//! server needs, for a single API version per resource:
//!
//! - [`path`] / [`set`]: field paths and sets, and their `fieldsV1` encoding (byte-compatible)
//! - [`schema`]: the [`TypeView`] callers implement over their schemas, and [`Deduced`]
//! - [`field_set`](mod@field_set), [`compare`](mod@compare), [`merge`](mod@merge),
//!   [`remove`]: the value operations
//! - [`entry`]: `metadata.managedFields` entries
//! - [`manager`]: [`update`] (tracking ordinary writes) and [`apply`] (server-side apply)
//! - [`conflict`]: apply conflicts and their 409 status
//! - [`last_applied`]: taking over from kubectl's client-side apply
//! - [`names`]: default manager names
//!
//! Callers decode `metadata.managedFields` themselves ([`managed_fields_for_update`] for
//! updates; the live object's entries for applies, reset when they cannot be read) and pass
//! the entries in; results come back as entries (and, for applies, in the merged object).
//!
//! Where this differs from Kubernetes:
//! - One schema for all versions: entries recorded at other API versions are compared as if
//!   their paths were the request's version (no conversion between versions).
//! - No reconciliation of entries after a schema change (a list turning atomic, ...).
//! - A map or list that removal empties is dropped rather than left `null`, which is what a
//!   typed object stores in the end.
//! - `null` replacing a typed granular value is merged as empty only in [`merge()`]; the
//!   comparison treats it as a changed leaf.

pub mod compare;
pub mod conflict;
pub mod entry;
pub mod field_set;
mod json;
pub mod last_applied;
pub mod manager;
pub mod merge;
pub mod names;
pub mod path;
pub mod remove;
pub mod schema;
pub mod set;
#[cfg(test)]
mod test_schema;
#[cfg(test)]
mod tests;

pub use compare::{Comparison, compare};
pub use conflict::{Conflict, Conflicts};
pub use entry::{
    ManagedFieldsEntry, ManagedFieldsError, Operation, decode_managed_fields,
    encode_managed_fields, is_reset_request, managed_fields_for_update, managed_fields_of,
    set_managed_fields, strip_managed_fields,
};
pub use field_set::{field_set, validate};
pub use last_applied::{KUBECTL_MANAGER, LAST_APPLIED_ANNOTATION};
pub use manager::{
    ANCIENT_CHANGES_MANAGER, Applied, ApplyError, BEFORE_FIRST_APPLY_MANAGER, MAX_UPDATE_MANAGERS,
    Request, apply, update,
};
pub use merge::merge;
pub use names::{manager_from_user_agent, validate_field_manager};
pub use path::{Path, PathElement, PathElementError, display_path};
pub use remove::remove_items;
pub use schema::{Deduced, ListType, Shape, TypeView};
pub use set::{FieldSet, FieldsV1Error, field_path};
