//! The few metadata fields the garbage collector reads, decoded without building a JSON tree.

use serde::Deserialize;

/// One entry of `metadata.ownerReferences`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct OwnerRef {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub block_owner_deletion: Option<bool>,
}

impl OwnerRef {
    /// `(group, version)` of `apiVersion` (`v1` is the core group).
    pub fn group_version(&self) -> (&str, &str) {
        match self.api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", self.api_version.as_str()),
        }
    }

    /// Whether this reference holds a foreground deletion of its owner.
    pub fn blocks(&self) -> bool {
        self.block_owner_deletion == Some(true)
    }
}

/// What the collector needs of an object's metadata.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    #[serde(default)]
    pub uid: String,
    #[serde(default)]
    pub owner_references: Option<Vec<OwnerRef>>,
    #[serde(default)]
    pub deletion_timestamp: Option<String>,
    #[serde(default)]
    pub finalizers: Option<Vec<String>>,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    metadata: Option<Meta>,
}

impl Meta {
    /// The metadata of a stored object; `None` when the bytes are not an object with metadata.
    pub fn parse(json: &[u8]) -> Option<Meta> {
        serde_json::from_slice::<Envelope>(json).ok()?.metadata
    }

    pub fn owners(&self) -> &[OwnerRef] {
        self.owner_references.as_deref().unwrap_or_default()
    }

    pub fn is_deleting(&self) -> bool {
        self.deletion_timestamp.is_some()
    }

    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers
            .as_deref()
            .unwrap_or_default()
            .iter()
            .any(|f| f == finalizer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_owner_references_and_deletion() {
        let json = br#"{"kind":"Secret","data":{"a":"b"},"metadata":{"name":"s","uid":"u1",
            "deletionTimestamp":"2024-01-01T00:00:00Z","finalizers":["orphan"],
            "ownerReferences":[{"apiVersion":"example.com/v1","kind":"Widget","name":"w","uid":"u0",
            "blockOwnerDeletion":true,"controller":true}]}}"#;
        let meta = Meta::parse(json).expect("metadata");
        assert_eq!(meta.uid, "u1");
        assert!(meta.is_deleting());
        assert!(meta.has_finalizer("orphan"));
        let owner = &meta.owners()[0];
        assert_eq!(owner.group_version(), ("example.com", "v1"));
        assert!(owner.blocks());
    }

    #[test]
    fn nulls_and_absences_are_empty() {
        let meta = Meta::parse(
            br#"{"metadata":{"uid":"u","ownerReferences":null,"deletionTimestamp":null}}"#,
        )
        .expect("metadata");
        assert!(meta.owners().is_empty());
        assert!(!meta.is_deleting());
        let core = OwnerRef {
            api_version: "v1".into(),
            ..Default::default()
        };
        assert_eq!(core.group_version(), ("", "v1"));
        assert!(Meta::parse(b"[1]").is_none());
    }
}
