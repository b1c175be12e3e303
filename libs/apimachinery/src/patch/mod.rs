//! Patch algorithms: strategic merge patch for built-in kinds, RFC 6902 JSON patch and RFC 7396
//! merge patch.

pub mod json;
pub mod meta;
pub mod strategic;

pub use json::{JsonPatchError, apply_json_patch, apply_merge_patch};
pub use meta::{
    FieldPatchMeta, PatchMeta, PatchMetaEntry, PatchStrategy, builtin_patch_meta, is_builtin_kind,
};
pub use strategic::{ErrorClass, StrategicMergePatchError, apply_strategic_merge_patch};
