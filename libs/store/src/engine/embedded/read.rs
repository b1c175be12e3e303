//! Reads from a redb snapshot: point reads, ranges (newest or at an older revision) and watch replay.

use std::ops::Bound;

use redb::{ReadTransaction, ReadableTable};

use super::codec::{Entry, KV, META, META_COMPACTED, META_REVISION, REVISIONS, Record, backend};
use crate::{Event, KeyValue, RangeRequest, RangeResult, Revision, StoreError};

/// The current and the compacted revision of the snapshot.
pub(super) fn revisions(txn: &ReadTransaction) -> Result<(Revision, Revision), StoreError> {
    let meta = txn.open_table(META).map_err(backend)?;
    let get = |name: &str| -> Result<Revision, StoreError> {
        Ok(meta.get(name).map_err(backend)?.map_or(0, |g| g.value()))
    };
    Ok((get(META_REVISION)?, get(META_COMPACTED)?))
}

pub(super) fn get(txn: &ReadTransaction, key: &str) -> Result<Option<KeyValue>, StoreError> {
    let kv = txn.open_table(KV).map_err(backend)?;
    let Some(found) = kv.get(key).map_err(backend)? else {
        return Ok(None);
    };
    Ok(Entry::decode(found.value())?.live(key))
}

pub(super) fn range(txn: &ReadTransaction, req: &RangeRequest) -> Result<RangeResult, StoreError> {
    let (current, compacted) = revisions(txn)?;
    match req.revision.filter(|r| *r > 0) {
        Some(at) if at != current => {
            if at > current {
                return Err(StoreError::FutureRevision {
                    requested: at,
                    current,
                });
            }
            if at < compacted {
                return Err(StoreError::Compacted {
                    requested: at,
                    compacted,
                });
            }
            let (kvs, more) = range_at(txn, req, at)?;
            Ok(RangeResult {
                kvs,
                more,
                revision: at,
            })
        }
        _ => {
            let (kvs, more) = range_current(txn, req)?;
            Ok(RangeResult {
                kvs,
                more,
                revision: current,
            })
        }
    }
}

fn start_bound(req: &RangeRequest) -> Bound<&str> {
    match req.start_after.as_deref() {
        Some(after) if after >= req.prefix.as_str() => Bound::Excluded(after),
        _ => Bound::Included(req.prefix.as_str()),
    }
}

fn range_current(
    txn: &ReadTransaction,
    req: &RangeRequest,
) -> Result<(Vec<KeyValue>, bool), StoreError> {
    range_with(txn, req, |key, entry| Ok(entry.live(key)))
}

/// Takes, for each key, its state as of revision `at`: the `kv` entry if it is no newer, else the
/// record found by following `prev_rev` back from it. Keys deleted since `at` are still found,
/// through the tombstone `kv` keeps until compaction.
fn range_at(
    txn: &ReadTransaction,
    req: &RangeRequest,
    at: Revision,
) -> Result<(Vec<KeyValue>, bool), StoreError> {
    let revisions = txn.open_table(REVISIONS).map_err(backend)?;
    range_with(txn, req, |key, entry| {
        if entry.mod_revision <= at {
            return Ok(entry.live(key));
        }
        version_at(&revisions, entry.mod_revision, at)
    })
}

/// The keys under the prefix in order (after `start_after`), each mapped by `state`; `None` leaves a
/// key out and does not count towards the limit.
fn range_with(
    txn: &ReadTransaction,
    req: &RangeRequest,
    mut state: impl FnMut(&str, &Entry<'_>) -> Result<Option<KeyValue>, StoreError>,
) -> Result<(Vec<KeyValue>, bool), StoreError> {
    let kv = txn.open_table(KV).map_err(backend)?;
    let mut kvs = Vec::new();
    for item in kv
        .range::<&str>((start_bound(req), Bound::Unbounded))
        .map_err(backend)?
    {
        let (key, value) = item.map_err(backend)?;
        let key = key.value();
        if !key.starts_with(req.prefix.as_str()) {
            break;
        }
        let Some(found) = state(key, &Entry::decode(value.value())?)? else {
            continue;
        };
        if req.limit > 0 && kvs.len() == req.limit {
            return Ok((kvs, true));
        }
        kvs.push(found);
    }
    Ok((kvs, false))
}

/// The key as of revision `at`, walking back from its record at `newer` (> `at`); `None` if it did
/// not exist then (not yet created, deleted, or compaction removed what it was).
fn version_at(
    revisions: &impl ReadableTable<Revision, &'static [u8]>,
    newer: Revision,
    at: Revision,
) -> Result<Option<KeyValue>, StoreError> {
    let mut rev = newer;
    loop {
        let Some(raw) = revisions.get(rev).map_err(backend)? else {
            return Ok(None);
        };
        let record = Record::decode(raw.value())?;
        if rev <= at {
            return Ok(record.to_kv(rev));
        }
        let Some(prev) = record.previous(rev)? else {
            return Ok(None);
        };
        rev = prev;
    }
}

/// Up to `max_scan` records from `from` to `upto`: the events under `prefix` and the revision to
/// continue from. Fails with `Compacted` if the records below `from` are gone.
pub(super) fn replay_chunk(
    txn: &ReadTransaction,
    prefix: &str,
    from: Revision,
    upto: Revision,
    max_scan: usize,
) -> Result<(Vec<Event>, Revision), StoreError> {
    let (_, compacted) = revisions(txn)?;
    if from < compacted {
        return Err(StoreError::Compacted {
            requested: from,
            compacted,
        });
    }
    let revisions = txn.open_table(REVISIONS).map_err(backend)?;
    let mut events = Vec::new();
    let mut next = upto + 1;
    for (scanned, item) in revisions.range(from..=upto).map_err(backend)?.enumerate() {
        let (rev, raw) = item.map_err(backend)?;
        let rev = rev.value();
        if scanned == max_scan {
            next = rev;
            break;
        }
        let raw = raw.value();
        let record = Record::decode(raw)?;
        if !record.key.starts_with(prefix) {
            continue;
        }
        // Absent once compaction removed it; the event then has no previous value, as with etcd.
        // A tombstone before a create is no previous value either.
        let prev = match record.previous(rev)? {
            Some(p) => match revisions.get(p).map_err(backend)? {
                Some(raw) => {
                    let prev = Record::decode(raw.value())?;
                    if prev.key != record.key {
                        return Err(StoreError::Backend(format!(
                            "redb: corrupt revisions record {rev}: previous {p} is another key"
                        )));
                    }
                    prev.to_kv(p)
                }
                None => None,
            },
            None => None,
        };
        events.push(record.to_event(rev, prev));
    }
    Ok((events, next))
}
