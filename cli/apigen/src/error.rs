//! Why apigen wrote nothing (or stopped half-way); the texts follow kcp's where it has them.

use std::path::PathBuf;

use kcp_api_types::apis::snapshot::SnapshotError;

#[derive(Debug, thiserror::Error)]
pub enum ApigenError {
    #[error("--input-dir is required")]
    NoInputDir,
    #[error("--output-dir is required")]
    NoOutputDir,
    #[error("invalid schema {0:?}: must have at least 2 dot-separated segments")]
    IgnoreSchema(String),
    #[error("could not read header file {path:?}: {source}")]
    Header {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("reading directory {path:?}: {source}")]
    Walk {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not parse filename {0} as group_resource.yaml")]
    CrdFileName(String),
    #[error("could not parse filename {0} as apiresourceschema-resource.group.yaml")]
    SchemaFileName(String),
    #[error("failed to read {path:?}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("failed to read {path:?}: {message}")]
    Decode { path: PathBuf, message: String },
    #[error("could not get git revision in {dir:?}: {message}")]
    Git { dir: PathBuf, message: String },
    #[error("could not convert CustomResourceDefinition {resource}: {source}")]
    Convert {
        resource: String,
        source: SnapshotError,
    },
    #[error("could not create directory {path:?} to write output files: {source}")]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("encoding {path:?}: {message}")]
    Encode { path: PathBuf, message: String },
    #[error("could not write {path:?}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not remove {path:?}: {source}")]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing the log: {0}")]
    Log(#[from] std::io::Error),
}
