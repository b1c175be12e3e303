//! apigen, kcp's `sdk/cmd/apigen`: turns the CustomResourceDefinitions of a directory
//! (`<group>_<resource>.yaml`) into APIResourceSchemas (`apiresourceschema-<resource>.<group>.yaml`,
//! `apis.kcp.io/v1alpha1`) and one APIExport per group (`apiexport-<group>.yaml`,
//! `apis.kcp.io/v1alpha2`), for a provider to apply in its workspace.
//!
//! Schemas are named `v<YYMMDD>-<git short HEAD>.<resource>.<group>` ([`prefix`]); a schema whose
//! spec did not change keeps its previous file and name, since an APIResourceSchema is immutable
//! and bindings point at it by name. Files of earlier runs that are no longer generated are
//! deleted.

pub mod error;
pub mod exports;
pub mod files;
pub mod generate;
pub mod group_resource;
pub mod options;
pub mod prefix;

use std::io::Write;

pub use error::ApigenError;

/// The whole program: flags checked, the prefix from git and today's date, the files written.
pub fn main(options: &options::Options, log: &mut dyn Write) -> Result<(), ApigenError> {
    use chrono::Datelike as _;
    let now = chrono::Local::now();
    let settings = options.validate(now.year())?;
    let head = prefix::git_head(&settings.input_dir)?;
    let prefix = prefix::prefix(&now.format("%y%m%d").to_string(), &head);
    generate::run(&settings, &prefix, log)
}
