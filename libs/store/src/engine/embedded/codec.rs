//! The redb tables and how their values are encoded.
//!
//! - `kv`: key → create_rev (i64 BE) · mod_rev (i64 BE) · value — the newest state.
//! - `history`: (key, rev) → kind (0 put, 1 tombstone) · create_rev · prev_mod_rev · value — every
//!   version still readable, so a range at revision R takes, per key, the newest entry at or below R.
//! - `log`: rev → key — the revision-ordered index for watch replay and compaction.
//! - `meta`: "revision", "compacted", "format" → i64.

use bytes::Bytes;
use redb::TableDefinition;

use crate::{Event, KeyValue, Revision, StoreError};

pub(super) const KV: TableDefinition<&str, &[u8]> = TableDefinition::new("kv");
pub(super) const HISTORY: TableDefinition<(&str, i64), &[u8]> = TableDefinition::new("history");
pub(super) const LOG: TableDefinition<i64, &str> = TableDefinition::new("log");
pub(super) const META: TableDefinition<&str, i64> = TableDefinition::new("meta");

pub(super) const META_REVISION: &str = "revision";
pub(super) const META_COMPACTED: &str = "compacted";
pub(super) const META_FORMAT: &str = "format";
/// Bumped whenever the layout above changes; a file with another number is refused.
pub(super) const FORMAT_VERSION: i64 = 1;

const KIND_PUT: u8 = 0;
const KIND_TOMBSTONE: u8 = 1;

/// Any redb error becomes a backend error; the caller cannot do anything more specific with it.
pub(super) fn backend(err: impl Into<redb::Error>) -> StoreError {
    StoreError::Backend(format!("redb: {}", err.into()))
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Backend(format!("redb: corrupt {what} record"))
}

fn split_i64(raw: &[u8]) -> Option<(i64, &[u8])> {
    let (head, rest) = raw.split_first_chunk::<8>()?;
    Some((i64::from_be_bytes(*head), rest))
}

pub(super) fn encode_kv(
    create_revision: Revision,
    mod_revision: Revision,
    value: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + value.len());
    out.extend_from_slice(&create_revision.to_be_bytes());
    out.extend_from_slice(&mod_revision.to_be_bytes());
    out.extend_from_slice(value);
    out
}

pub(super) fn decode_kv(key: &str, raw: &[u8]) -> Result<KeyValue, StoreError> {
    let (create_revision, rest) = split_i64(raw).ok_or_else(|| corrupt("kv"))?;
    let (mod_revision, value) = split_i64(rest).ok_or_else(|| corrupt("kv"))?;
    Ok(KeyValue {
        key: key.to_owned(),
        value: Bytes::copy_from_slice(value),
        create_revision,
        mod_revision,
    })
}

/// One entry of the history table.
pub(super) struct Version {
    pub(super) create_revision: Revision,
    pub(super) prev_mod_revision: Revision,
    /// `None` for the tombstone of a delete.
    pub(super) value: Option<Bytes>,
}

impl Version {
    pub(super) fn encode(
        create_revision: Revision,
        prev_mod_revision: Revision,
        value: Option<&[u8]>,
    ) -> Vec<u8> {
        let bytes = value.unwrap_or_default();
        let mut out = Vec::with_capacity(17 + bytes.len());
        out.push(if value.is_some() {
            KIND_PUT
        } else {
            KIND_TOMBSTONE
        });
        out.extend_from_slice(&create_revision.to_be_bytes());
        out.extend_from_slice(&prev_mod_revision.to_be_bytes());
        out.extend_from_slice(bytes);
        out
    }

    pub(super) fn decode(raw: &[u8]) -> Result<Version, StoreError> {
        let (&kind, rest) = raw.split_first().ok_or_else(|| corrupt("history"))?;
        let (create_revision, rest) = split_i64(rest).ok_or_else(|| corrupt("history"))?;
        let (prev_mod_revision, value) = split_i64(rest).ok_or_else(|| corrupt("history"))?;
        let value = match kind {
            KIND_PUT => Some(Bytes::copy_from_slice(value)),
            KIND_TOMBSTONE => None,
            _ => return Err(corrupt("history")),
        };
        Ok(Version {
            create_revision,
            prev_mod_revision,
            value,
        })
    }

    /// Whether the raw entry is a tombstone, without copying the value.
    pub(super) fn is_tombstone(raw: &[u8]) -> bool {
        raw.first() == Some(&KIND_TOMBSTONE)
    }

    pub(super) fn into_kv(self, key: &str, mod_revision: Revision) -> Option<KeyValue> {
        Some(KeyValue {
            key: key.to_owned(),
            value: self.value?,
            create_revision: self.create_revision,
            mod_revision,
        })
    }

    /// The watch event this version was written by; `prev` is looked up by the caller.
    pub(super) fn into_event(self, key: &str, rev: Revision, prev: Option<KeyValue>) -> Event {
        Event::of_write(key, self.value, self.create_revision, rev, prev)
    }
}
