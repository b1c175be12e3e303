//! Reads from a redb snapshot: point reads, ranges (newest or at an older revision) and watch replay.

use std::ops::Bound;

use redb::{ReadTransaction, ReadableTable};

use super::codec::{
    HISTORY, KV, LOG, META, META_COMPACTED, META_REVISION, Version, backend, decode_kv,
};
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
    let found = kv.get(key).map_err(backend)?;
    found.map(|g| decode_kv(key, g.value())).transpose()
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
        if req.limit > 0 && kvs.len() == req.limit {
            return Ok((kvs, true));
        }
        kvs.push(decode_kv(key, value.value())?);
    }
    Ok((kvs, false))
}

/// Visits each distinct key of the history once (seeking past its versions) and takes its newest
/// version at or below `at`.
fn range_at(
    txn: &ReadTransaction,
    req: &RangeRequest,
    at: Revision,
) -> Result<(Vec<KeyValue>, bool), StoreError> {
    let history = txn.open_table(HISTORY).map_err(backend)?;
    let mut kvs = Vec::new();
    let mut lower: Bound<(String, Revision)> = match start_bound(req) {
        Bound::Excluded(after) => Bound::Excluded((after.to_owned(), Revision::MAX)),
        _ => Bound::Included((req.prefix.clone(), Revision::MIN)),
    };
    loop {
        let bound = match &lower {
            Bound::Excluded((k, r)) => Bound::Excluded((k.as_str(), *r)),
            Bound::Included((k, r)) => Bound::Included((k.as_str(), *r)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let next_key = match history
            .range::<(&str, Revision)>((bound, Bound::Unbounded))
            .map_err(backend)?
            .next()
        {
            None => break,
            Some(item) => {
                let (key, _) = item.map_err(backend)?;
                let (key, _) = key.value();
                if !key.starts_with(req.prefix.as_str()) {
                    break;
                }
                key.to_owned()
            }
        };
        if let Some(kv) = version_at(&history, &next_key, at)? {
            if req.limit > 0 && kvs.len() == req.limit {
                return Ok((kvs, true));
            }
            kvs.push(kv);
        }
        lower = Bound::Excluded((next_key, Revision::MAX));
    }
    Ok((kvs, false))
}

/// The key as of revision `at`, `None` if absent (never written, deleted, or compacted away).
fn version_at(
    history: &impl ReadableTable<(&'static str, Revision), &'static [u8]>,
    key: &str,
    at: Revision,
) -> Result<Option<KeyValue>, StoreError> {
    let Some(item) = history
        .range((key, Revision::MIN)..=(key, at))
        .map_err(backend)?
        .next_back()
    else {
        return Ok(None);
    };
    let (k, v) = item.map_err(backend)?;
    let (_, rev) = k.value();
    Ok(Version::decode(v.value())?.into_kv(key, rev))
}

/// Up to `max_scan` log entries from `from` to `upto`: the events under `prefix` and the revision to
/// continue from. Fails with `Compacted` if the log below `from` is gone.
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
    let log = txn.open_table(LOG).map_err(backend)?;
    let history = txn.open_table(HISTORY).map_err(backend)?;
    let mut events = Vec::new();
    let mut next = upto + 1;
    for (scanned, item) in log.range(from..=upto).map_err(backend)?.enumerate() {
        let (rev, key) = item.map_err(backend)?;
        let (rev, key) = (rev.value(), key.value());
        if scanned == max_scan {
            next = rev;
            break;
        }
        if key.starts_with(prefix) {
            events.push(event_at(&history, key, rev)?);
        }
    }
    Ok((events, next))
}

fn event_at(
    history: &impl ReadableTable<(&'static str, Revision), &'static [u8]>,
    key: &str,
    rev: Revision,
) -> Result<Event, StoreError> {
    let version = match history.get((key, rev)).map_err(backend)? {
        Some(raw) => Version::decode(raw.value())?,
        None => {
            return Err(StoreError::Backend(format!(
                "redb: log entry {rev} has no history record"
            )));
        }
    };
    let prev = if version.prev_mod_revision > 0 {
        // Absent once compaction removed it; the event then has no previous value, as with etcd.
        match history
            .get((key, version.prev_mod_revision))
            .map_err(backend)?
        {
            Some(raw) => Version::decode(raw.value())?.into_kv(key, version.prev_mod_revision),
            None => None,
        }
    } else {
        None
    };
    Ok(version.into_event(key, rev, prev))
}
