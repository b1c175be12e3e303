//! The redb tables and how their values are encoded.
//!
//! - `kv`: key → create_rev (i64 BE) · mod_rev (i64 BE) · value — the newest state of every key. A
//!   deleted key keeps a *tombstone* here (create_rev 0, mod_rev = the delete's revision, no value)
//!   until compaction passes it, so a range at an older revision still finds keys deleted since.
//! - `revisions`: rev → kind (0 put, 1 tombstone) · create_rev · prev_rev · key length (u32 BE) ·
//!   key · value — what every revision wrote, with `prev_rev` the key's record before it (0 if none).
//!   Keyed by revision, so every write appends to the table's tail instead of touching one more
//!   random page; watch replay is a plain scan, and an older state of a key is found by following
//!   `prev_rev` back from its `kv` entry.
//! - `meta`: "revision", "compacted", "format" → i64.
//!
//! Format 1 (before) kept a `history` table keyed by (key, rev) and a `log` rev → key; a format-1
//! file is converted on open (see `mod.rs`).

use bytes::Bytes;
use redb::TableDefinition;

use crate::{Event, KeyValue, Revision, StoreError};

pub(super) const KV: TableDefinition<&str, &[u8]> = TableDefinition::new("kv");
pub(super) const REVISIONS: TableDefinition<i64, &[u8]> = TableDefinition::new("revisions");
pub(super) const META: TableDefinition<&str, i64> = TableDefinition::new("meta");

/// Format 1's tables, only opened to convert and drop them.
pub(super) const V1_HISTORY: TableDefinition<(&str, i64), &[u8]> = TableDefinition::new("history");
pub(super) const V1_LOG: TableDefinition<i64, &str> = TableDefinition::new("log");

pub(super) const META_REVISION: &str = "revision";
pub(super) const META_COMPACTED: &str = "compacted";
pub(super) const META_FORMAT: &str = "format";
/// Bumped whenever the layout above changes.
pub(super) const FORMAT_VERSION: i64 = 2;

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

/// The `kv` entry of a key deleted at `revision`.
pub(super) fn encode_kv_tombstone(revision: Revision) -> [u8; 16] {
    let mut out = [0; 16];
    out[8..].copy_from_slice(&revision.to_be_bytes());
    out
}

/// A `kv` entry, borrowed: a live value or the tombstone of a delete.
pub(super) struct Entry<'a> {
    pub(super) create_revision: Revision,
    pub(super) mod_revision: Revision,
    pub(super) value: &'a [u8],
}

impl<'a> Entry<'a> {
    pub(super) fn decode(raw: &'a [u8]) -> Result<Entry<'a>, StoreError> {
        let (create_revision, rest) = split_i64(raw).ok_or_else(|| corrupt("kv"))?;
        let (mod_revision, value) = split_i64(rest).ok_or_else(|| corrupt("kv"))?;
        Ok(Entry {
            create_revision,
            mod_revision,
            value,
        })
    }

    pub(super) fn is_tombstone(&self) -> bool {
        self.create_revision == 0
    }

    /// The live value, `None` for a tombstone.
    pub(super) fn live(&self, key: &str) -> Option<KeyValue> {
        (!self.is_tombstone()).then(|| KeyValue {
            key: key.to_owned(),
            value: Bytes::copy_from_slice(self.value),
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
        })
    }
}

/// One entry of the `revisions` table, borrowed.
pub(super) struct Record<'a> {
    pub(super) key: &'a str,
    pub(super) create_revision: Revision,
    /// The key's record before this one; 0 if there was none (or only before a compaction).
    pub(super) prev_revision: Revision,
    /// `None` for the tombstone of a delete.
    pub(super) value: Option<&'a [u8]>,
}

impl<'a> Record<'a> {
    pub(super) fn encode(
        key: &str,
        create_revision: Revision,
        prev_revision: Revision,
        value: Option<&[u8]>,
    ) -> Vec<u8> {
        let bytes = value.unwrap_or_default();
        let mut out = Vec::with_capacity(21 + key.len() + bytes.len());
        out.push(if value.is_some() {
            KIND_PUT
        } else {
            KIND_TOMBSTONE
        });
        out.extend_from_slice(&create_revision.to_be_bytes());
        out.extend_from_slice(&prev_revision.to_be_bytes());
        // Keys are bounded far below 4 GiB by the API's path and name limits.
        out.extend_from_slice(&(key.len() as u32).to_be_bytes());
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(bytes);
        out
    }

    pub(super) fn decode(raw: &'a [u8]) -> Result<Record<'a>, StoreError> {
        let bad = || corrupt("revisions");
        let (&kind, rest) = raw.split_first().ok_or_else(bad)?;
        let (create_revision, rest) = split_i64(rest).ok_or_else(bad)?;
        let (prev_revision, rest) = split_i64(rest).ok_or_else(bad)?;
        let (len, rest) = rest.split_first_chunk::<4>().ok_or_else(bad)?;
        let len = u32::from_be_bytes(*len) as usize;
        if rest.len() < len {
            return Err(bad());
        }
        let (key, value) = rest.split_at(len);
        let key = std::str::from_utf8(key).map_err(|_| bad())?;
        let value = match kind {
            KIND_PUT => Some(value),
            KIND_TOMBSTONE => None,
            _ => return Err(bad()),
        };
        Ok(Record {
            key,
            create_revision,
            prev_revision,
            value,
        })
    }

    pub(super) fn is_tombstone(&self) -> bool {
        self.value.is_none()
    }

    /// The revision of the key's record before this one (written at `revision`), `None` if there
    /// is none. A link that does not go back is corrupt: following it would loop, and compacting
    /// by it would remove a record still readable.
    pub(super) fn previous(&self, revision: Revision) -> Result<Option<Revision>, StoreError> {
        match self.prev_revision {
            p if p <= 0 => Ok(None),
            p if p < revision => Ok(Some(p)),
            p => Err(StoreError::Backend(format!(
                "redb: corrupt revisions record {revision}: previous {p}"
            ))),
        }
    }

    /// The key's state as of this record, written at `revision`; `None` for a tombstone.
    pub(super) fn to_kv(&self, revision: Revision) -> Option<KeyValue> {
        Some(KeyValue {
            key: self.key.to_owned(),
            value: Bytes::copy_from_slice(self.value?),
            create_revision: self.create_revision,
            mod_revision: revision,
        })
    }

    /// The watch event of this record, written at `revision`; `prev` is looked up by the caller.
    pub(super) fn to_event(&self, revision: Revision, prev: Option<KeyValue>) -> Event {
        Event::of_write(
            self.key,
            self.value.map(Bytes::copy_from_slice),
            self.create_revision,
            revision,
            prev,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_previous_record_must_be_older() {
        let at = |prev| Record::encode("k", 1, prev, Some(b"v"));
        let previous = |prev| Record::decode(&at(prev)).expect("decode").previous(5);
        assert_eq!(previous(0).expect("none"), None);
        assert_eq!(previous(4).expect("older"), Some(4));
        assert!(previous(5).is_err());
        assert!(previous(9).is_err());
    }

    #[test]
    fn records_round_trip() {
        let raw = Record::encode("/core/configmaps/local/lc/ns/a", 5, 3, Some(b"{}"));
        let rec = Record::decode(&raw).expect("decode");
        assert_eq!(rec.key, "/core/configmaps/local/lc/ns/a");
        assert_eq!((rec.create_revision, rec.prev_revision), (5, 3));
        assert_eq!(rec.value, Some(&b"{}"[..]));
        let raw = Record::encode("k", 5, 7, None);
        let rec = Record::decode(&raw).expect("decode");
        assert!(rec.is_tombstone());
        assert_eq!(rec.prev_revision, 7);
    }

    #[test]
    fn truncated_records_are_corrupt_not_a_panic() {
        let raw = Record::encode("key", 1, 0, Some(b"value"));
        for len in 0..22 {
            assert!(Record::decode(&raw[..len]).is_err(), "length {len}");
        }
        let mut bad_kind = raw.clone();
        bad_kind[0] = 9;
        assert!(Record::decode(&bad_kind).is_err());
    }

    #[test]
    fn kv_tombstones_are_not_values() {
        let tomb = encode_kv_tombstone(9);
        let entry = Entry::decode(&tomb).expect("decode");
        assert!(entry.is_tombstone());
        assert_eq!(entry.mod_revision, 9);
        assert!(entry.live("k").is_none());
        let live = encode_kv(4, 9, b"v");
        let kv = Entry::decode(&live)
            .expect("decode")
            .live("k")
            .expect("live");
        assert_eq!((kv.create_revision, kv.mod_revision), (4, 9));
        assert_eq!(kv.value, &b"v"[..]);
    }
}
