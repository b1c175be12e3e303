//! `<path>:<export>`, the APIExport `kubectl kcp bind apiexport` binds: the workspace path up to the
//! last colon, the export's name after it.

use std::fmt;

use kcp_apimachinery::logical_cluster::WorkspacePath;

/// An APIExport by workspace path and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportRef {
    pub path: WorkspacePath,
    pub name: String,
}

/// Why a reference names no export. The first two texts are kcp's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExportRefError {
    #[error("`root:ws:apiexport_object` reference to bind is required as an argument")]
    Missing,
    /// No colon, or the part before the last one is not a valid workspace path.
    #[error(
        "fully qualified reference to workspace where APIExport exists is required. The format is `<logical-cluster-name>:<apiexport>` or `<full>:<path>:<to>:<apiexport>`"
    )]
    NotQualified,
    /// kcp would send the empty name to the server; saying so here is clearer.
    #[error("the APIExport name is missing in {0:?}: the format is `<workspace path>:<apiexport>`")]
    NoName(String),
}

impl ExportRef {
    pub fn parse(text: &str) -> Result<Self, ExportRefError> {
        if text.is_empty() {
            return Err(ExportRefError::Missing);
        }
        let (path, name) = text.rsplit_once(':').ok_or(ExportRefError::NotQualified)?;
        let path = WorkspacePath::parse(path).map_err(|_| ExportRefError::NotQualified)?;
        if name.is_empty() {
            return Err(ExportRefError::NoName(text.to_owned()));
        }
        Ok(Self {
            path,
            name: name.to_owned(),
        })
    }
}

impl fmt::Display for ExportRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.path, self.name)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    #[test]
    fn splits_at_the_last_colon() {
        let r = ExportRef::parse("root:wildwest:cowboys-service:wildwest.dev").unwrap();
        assert_eq!(r.path.to_string(), "root:wildwest:cowboys-service");
        assert_eq!(r.name, "wildwest.dev");
        assert_eq!(r.to_string(), "root:wildwest:cowboys-service:wildwest.dev");
        let r = ExportRef::parse("root:cowboys").unwrap();
        assert_eq!(r.path.to_string(), "root");
        assert_eq!(r.name, "cowboys");
    }

    #[test]
    fn malformed_references() {
        assert_eq!(ExportRef::parse(""), Err(ExportRefError::Missing));
        for bad in [
            "cowboys",
            ":cowboys",
            "root::cowboys",
            "Root:cowboys",
            "root:a_b:cowboys",
        ] {
            assert_eq!(
                ExportRef::parse(bad),
                Err(ExportRefError::NotQualified),
                "{bad}"
            );
        }
        assert_eq!(
            ExportRef::parse("root:org:"),
            Err(ExportRefError::NoName("root:org:".into()))
        );
        assert!(ExportRefError::NotQualified.to_string().starts_with(
            "fully qualified reference to workspace where APIExport exists is required"
        ));
    }
}
