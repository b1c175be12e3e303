//! The files apigen reads and writes: YAML files found below a directory, one object per file.

use std::path::{Path, PathBuf};

use serde_json::Value;

use kcp_apimachinery::numbers::integral_floats_to_integers;

use crate::error::ApigenError;

/// Every `*.yaml` file below `dir`, in subdirectories too (as kcp walks it), in lexical order;
/// symbolic links to directories are not followed.
pub fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, ApigenError> {
    let mut found = Vec::new();
    walk(dir, &mut found)?;
    Ok(found)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), ApigenError> {
    let failed = |source: std::io::Error| ApigenError::Walk {
        path: dir.to_owned(),
        source,
    };
    let mut entries = std::fs::read_dir(dir)
        .map_err(failed)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(failed)?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if entry.file_type().map_err(failed)?.is_dir() {
            walk(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "yaml") {
            found.push(path);
        }
    }
    Ok(())
}

/// The file's name without `.yaml`.
pub fn stem(path: &Path) -> &str {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(|n| n.strip_suffix(".yaml").unwrap_or(n))
        .unwrap_or_default()
}

/// The file's (first) YAML document, numbers as a Go decoder reads them (`1.0` is 1).
pub fn read_object(path: &Path) -> Result<Value, ApigenError> {
    let text = std::fs::read_to_string(path).map_err(|source| ApigenError::Read {
        path: path.to_owned(),
        source,
    })?;
    let decode = |message: String| ApigenError::Decode {
        path: path.to_owned(),
        message,
    };
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| decode(e.to_string()))?;
    let mut object = docs
        .into_iter()
        .find(|d| !d.is_null())
        .ok_or_else(|| decode("no object in the file".to_owned()))?;
    if !object.is_object() {
        return Err(decode("not a mapping".to_owned()));
    }
    integral_floats_to_integers(&mut object);
    Ok(object)
}

/// Writes `object` as YAML after `header` (kcp's: the header's text, then an empty line).
pub fn write_object(path: &Path, header: &str, object: &Value) -> Result<(), ApigenError> {
    let yaml = serde_saphyr::to_string(object).map_err(|e| ApigenError::Encode {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    let mut text = String::new();
    if !header.is_empty() {
        text.push_str(header.strip_suffix('\n').unwrap_or(header));
        text.push_str("\n\n");
    }
    text.push_str(&yaml);
    std::fs::write(path, text).map_err(|source| ApigenError::Write {
        path: path.to_owned(),
        source,
    })
}
