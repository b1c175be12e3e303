//! apigen's flags (kcp's names and help) and their checks.

use std::path::PathBuf;

use crate::error::ApigenError;
use crate::group_resource::GroupResource;

/// Generates APIResourceSchemas and APIExports from CustomResourceDefinitions.
#[derive(Debug, Clone, Default, clap::Parser)]
#[command(name = "apigen", version)]
pub struct Options {
    /// Directory containing CustomResourceDefinition YAML files.
    #[arg(long = "input-dir", default_value = "")]
    pub input_dir: String,
    /// Directory where APIResourceSchemas and APIExports will be written.
    #[arg(long = "output-dir", default_value = "")]
    pub output_dir: String,
    /// Comma-separated list of 'Resource.Group' to be ignored for APIExports generation.
    #[arg(long = "ignore-export-schemas", value_delimiter = ',')]
    pub ignore_export_schemas: Vec<String>,
    /// Preserve existing resources in APIExport manifests instead of overriding them.
    #[arg(long = "preserve-resources", num_args = 0..=1, require_equals = true,
          default_missing_value = "true")]
    pub preserve_resources: Option<bool>,
    /// Path to a file containing boilerplate header text; the contents will be prepended to all
    /// generated files.
    #[arg(long = "header-file", default_value = "")]
    pub header_file: String,
}

/// The flags, checked and read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub input_dir: PathBuf,
    pub output_dir: PathBuf,
    /// Schemas written but not exported.
    pub ignored: Vec<GroupResource>,
    pub preserve_resources: bool,
    /// The header file's text with `YEAR` replaced; empty for none.
    pub header: String,
}

impl Options {
    /// kcp's checks; `year` replaces `YEAR` in the header.
    pub fn validate(&self, year: i32) -> Result<Settings, ApigenError> {
        if self.input_dir.is_empty() {
            return Err(ApigenError::NoInputDir);
        }
        if self.output_dir.is_empty() {
            return Err(ApigenError::NoOutputDir);
        }
        let ignored = self
            .ignore_export_schemas
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| ignored_schema(s))
            .collect::<Result<Vec<_>, _>>()?;
        let header = if self.header_file.is_empty() {
            String::new()
        } else {
            let path = PathBuf::from(&self.header_file);
            std::fs::read_to_string(&path)
                .map_err(|source| ApigenError::Header { path, source })?
                .replace("YEAR", &year.to_string())
        };
        Ok(Settings {
            input_dir: PathBuf::from(&self.input_dir),
            output_dir: PathBuf::from(&self.output_dir),
            ignored,
            preserve_resources: self.preserve_resources.unwrap_or(false),
            header,
        })
    }
}

/// `resource.group.org`: the resource up to the first dot, `core` for the core group.
fn ignored_schema(text: &str) -> Result<GroupResource, ApigenError> {
    let Some((resource, group)) = text.split_once('.') else {
        return Err(ApigenError::IgnoreSchema(text.to_owned()));
    };
    let group = if group == "core" { "" } else { group };
    let group = group.strip_suffix('/').unwrap_or(group);
    Ok(GroupResource::new(group, resource))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use clap::Parser;

    use super::*;

    fn options(line: &[&str]) -> Options {
        Options::try_parse_from(std::iter::once("apigen").chain(line.iter().copied())).unwrap()
    }

    #[test]
    fn flags() {
        let dir = tempfile::tempdir().unwrap();
        let header = dir.path().join("boilerplate.txt");
        std::fs::write(&header, "# Copyright YEAR The Authors.\n").unwrap();
        let settings = options(&[
            "--input-dir",
            "crds",
            "--output-dir=out",
            "--ignore-export-schemas",
            "logicalclusters.core.kcp.io,secrets.core",
            "--preserve-resources",
            "--header-file",
            header.to_str().unwrap(),
        ])
        .validate(2026)
        .unwrap();
        assert_eq!(
            settings,
            Settings {
                input_dir: "crds".into(),
                output_dir: "out".into(),
                ignored: vec![
                    GroupResource::new("core.kcp.io", "logicalclusters"),
                    GroupResource::new("", "secrets"),
                ],
                preserve_resources: true,
                header: "# Copyright 2026 The Authors.\n".into(),
            }
        );
    }

    #[test]
    fn refusals() {
        let err = |line: &[&str]| options(line).validate(2026).unwrap_err().to_string();
        assert_eq!(err(&[]), "--input-dir is required");
        assert_eq!(err(&["--input-dir", "a"]), "--output-dir is required");
        assert_eq!(
            err(&[
                "--input-dir",
                "a",
                "--output-dir",
                "b",
                "--ignore-export-schemas",
                "secrets"
            ]),
            "invalid schema \"secrets\": must have at least 2 dot-separated segments"
        );
        assert!(
            err(&[
                "--input-dir",
                "a",
                "--output-dir",
                "b",
                "--header-file",
                "/nonexistent/h"
            ])
            .starts_with("could not read header file")
        );
    }
}
