//! The single writer of a redb store, with group commit: it takes every queued write, applies them in
//! order in one write transaction (each with its own revision, each precondition checked against the
//! writes before it), commits once with `Durability::Immediate`, publishes the events and only then
//! answers the callers. Concurrent writers thereby share one fsync.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use redb::{Database, Durability, ReadableTable, Table};
use tokio::sync::{mpsc, oneshot};

use super::Shared;
use super::codec::{
    HISTORY, KV, LOG, META, META_COMPACTED, META_REVISION, Version, backend, decode_kv, encode_kv,
};
use crate::{Event, EventKind, KeyValue, Revision, StoreError};

pub(super) enum Op {
    Create {
        key: String,
        value: Bytes,
    },
    Update {
        key: String,
        value: Bytes,
        expected: Revision,
    },
    Delete {
        key: String,
        expected: Option<Revision>,
    },
    Compact {
        revision: Revision,
    },
}

pub(super) enum Outcome {
    Written(Revision),
    Deleted(Revision, KeyValue),
    Compacted,
}

pub(super) struct Request {
    pub(super) op: Op,
    pub(super) reply: oneshot::Sender<Result<Outcome, StoreError>>,
}

/// The revisions the writer owns; only changed once a batch committed.
#[derive(Clone, Copy)]
pub(super) struct Revisions {
    pub(super) current: Revision,
    pub(super) compacted: Revision,
}

pub(super) fn run(
    shared: Arc<Shared>,
    mut rx: mpsc::Receiver<Request>,
    mut revs: Revisions,
    max_batch: usize,
) {
    while let Some(first) = rx.blocking_recv() {
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(req) => batch.push(req),
                Err(_) => break,
            }
        }
        let mut next = revs;
        let mut events = Vec::new();
        match commit(
            &shared.db,
            &mut next,
            &mut events,
            batch.iter().map(|r| &r.op),
        ) {
            Ok(outcomes) => {
                revs = next;
                shared.compacted.store(revs.compacted, Ordering::Release);
                shared.commits.fetch_add(1, Ordering::Relaxed);
                shared
                    .writes
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
                // Published before answering: a caller that saw its revision finds it in every watch.
                shared.hub.publish(revs.current, &events);
                for (req, outcome) in batch.into_iter().zip(outcomes) {
                    let _ = req.reply.send(outcome);
                }
            }
            Err(err) => {
                tracing::error!(error = %err, writes = batch.len(), "redb batch failed to commit");
                for req in batch {
                    let _ = req.reply.send(Err(err.clone()));
                }
            }
        }
    }
}

struct Tables<'txn> {
    kv: Table<'txn, &'static str, &'static [u8]>,
    history: Table<'txn, (&'static str, Revision), &'static [u8]>,
    log: Table<'txn, Revision, &'static str>,
}

/// Applies the batch in one durable transaction. The outer error aborts the whole batch; the inner
/// results are each write's own answer (a failed precondition writes nothing).
fn commit<'a>(
    db: &Database,
    revs: &mut Revisions,
    events: &mut Vec<Event>,
    ops: impl Iterator<Item = &'a Op>,
) -> Result<Vec<Result<Outcome, StoreError>>, StoreError> {
    let mut txn = db.begin_write().map_err(backend)?;
    txn.set_durability(Durability::Immediate).map_err(backend)?;
    let mut outcomes = Vec::new();
    {
        let mut tables = Tables {
            kv: txn.open_table(KV).map_err(backend)?,
            history: txn.open_table(HISTORY).map_err(backend)?,
            log: txn.open_table(LOG).map_err(backend)?,
        };
        for op in ops {
            outcomes.push(apply(&mut tables, revs, events, op)?);
        }
        let mut meta = txn.open_table(META).map_err(backend)?;
        meta.insert(META_REVISION, revs.current).map_err(backend)?;
        meta.insert(META_COMPACTED, revs.compacted)
            .map_err(backend)?;
    }
    txn.commit().map_err(backend)?;
    Ok(outcomes)
}

fn current(
    kv: &Table<'_, &'static str, &'static [u8]>,
    key: &str,
) -> Result<Option<KeyValue>, StoreError> {
    let found = kv.get(key).map_err(backend)?;
    found.map(|g| decode_kv(key, g.value())).transpose()
}

fn apply(
    t: &mut Tables<'_>,
    revs: &mut Revisions,
    events: &mut Vec<Event>,
    op: &Op,
) -> Result<Result<Outcome, StoreError>, StoreError> {
    match op {
        Op::Create { key, value } => {
            if current(&t.kv, key)?.is_some() {
                return Ok(Err(StoreError::AlreadyExists { key: key.clone() }));
            }
            let rev = revs.current + 1;
            put(t, key, value, rev, rev, 0)?;
            revs.current = rev;
            let kv = KeyValue {
                key: key.clone(),
                value: value.clone(),
                create_revision: rev,
                mod_revision: rev,
            };
            events.push(Event {
                kind: EventKind::Put,
                kv,
                prev: None,
            });
            Ok(Ok(Outcome::Written(rev)))
        }
        Op::Update {
            key,
            value,
            expected,
        } => {
            let prev = match current(&t.kv, key)? {
                None => return Ok(Err(StoreError::NotFound { key: key.clone() })),
                Some(cur) if cur.mod_revision != *expected => {
                    return Ok(Err(StoreError::Conflict {
                        key: key.clone(),
                        current: Some(cur),
                    }));
                }
                Some(cur) => cur,
            };
            let rev = revs.current + 1;
            put(t, key, value, prev.create_revision, rev, prev.mod_revision)?;
            revs.current = rev;
            let kv = KeyValue {
                key: key.clone(),
                value: value.clone(),
                create_revision: prev.create_revision,
                mod_revision: rev,
            };
            events.push(Event {
                kind: EventKind::Put,
                kv,
                prev: Some(prev),
            });
            Ok(Ok(Outcome::Written(rev)))
        }
        Op::Delete { key, expected } => {
            let prev = match current(&t.kv, key)? {
                None => return Ok(Err(StoreError::NotFound { key: key.clone() })),
                Some(cur) if expected.is_some_and(|e| e != cur.mod_revision) => {
                    return Ok(Err(StoreError::Conflict {
                        key: key.clone(),
                        current: Some(cur),
                    }));
                }
                Some(cur) => cur,
            };
            let rev = revs.current + 1;
            t.kv.remove(key.as_str()).map_err(backend)?;
            t.history
                .insert(
                    (key.as_str(), rev),
                    Version::encode(0, prev.mod_revision, None).as_slice(),
                )
                .map_err(backend)?;
            t.log.insert(rev, key.as_str()).map_err(backend)?;
            revs.current = rev;
            let kv = KeyValue {
                key: key.clone(),
                value: Bytes::new(),
                create_revision: 0,
                mod_revision: rev,
            };
            events.push(Event {
                kind: EventKind::Delete,
                kv,
                prev: Some(prev.clone()),
            });
            Ok(Ok(Outcome::Deleted(rev, prev)))
        }
        Op::Compact { revision } => {
            if *revision > revs.current {
                return Ok(Err(StoreError::FutureRevision {
                    requested: *revision,
                    current: revs.current,
                }));
            }
            if *revision > revs.compacted {
                compact(t, *revision)?;
                revs.compacted = *revision;
            }
            Ok(Ok(Outcome::Compacted))
        }
    }
}

fn put(
    t: &mut Tables<'_>,
    key: &str,
    value: &[u8],
    create_revision: Revision,
    rev: Revision,
    prev_mod_revision: Revision,
) -> Result<(), StoreError> {
    t.kv.insert(key, encode_kv(create_revision, rev, value).as_slice())
        .map_err(backend)?;
    t.history
        .insert(
            (key, rev),
            Version::encode(create_revision, prev_mod_revision, Some(value)).as_slice(),
        )
        .map_err(backend)?;
    t.log.insert(rev, key).map_err(backend)?;
    Ok(())
}

/// Removes the history no read at `to` or later needs: for every logged write below `to`, the versions
/// it superseded, and the write itself if it was a delete. The newest version of each key below `to`
/// stays, so a range at `to` still sees it. Works through the log in chunks to bound memory.
fn compact(t: &mut Tables<'_>, to: Revision) -> Result<(), StoreError> {
    const CHUNK: usize = 4096;
    loop {
        let mut chunk: Vec<(Revision, String)> = Vec::new();
        for item in t.log.range(..to).map_err(backend)?.take(CHUNK) {
            let (rev, key) = item.map_err(backend)?;
            chunk.push((rev.value(), key.value().to_owned()));
        }
        if chunk.is_empty() {
            return Ok(());
        }
        for (rev, key) in &chunk {
            let key = key.as_str();
            t.history
                .retain_in((key, Revision::MIN)..(key, *rev), |_, _| false)
                .map_err(backend)?;
            let tombstone = t
                .history
                .get((key, *rev))
                .map_err(backend)?
                .is_some_and(|g| Version::is_tombstone(g.value()));
            if tombstone {
                t.history.remove((key, *rev)).map_err(backend)?;
            }
            t.log.remove(*rev).map_err(backend)?;
        }
    }
}
