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
    Entry, KV, META, META_COMPACTED, META_REVISION, REVISIONS, Record, backend, encode_kv,
    encode_kv_tombstone,
};
use crate::{Event, KeyValue, Revision, StoreError, Write};

pub(super) enum Op {
    /// A create or update (a deletion answering its previous value is `Delete`).
    Write(Write),
    Delete {
        key: String,
        expected: Option<Revision>,
    },
    /// Writes to distinct keys: all made or none.
    WriteAll(Vec<Write>),
    Compact {
        revision: Revision,
    },
}

pub(super) enum Outcome {
    Written(Revision),
    /// The revision of each write of a `WriteAll`, in order.
    WrittenAll(Vec<Revision>),
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
                *shared.failure.lock() = None;
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
                *shared.failure.lock() = Some(err.to_string());
                for req in batch {
                    let _ = req.reply.send(Err(err.clone()));
                }
            }
        }
    }
}

struct Tables<'txn> {
    kv: Table<'txn, &'static str, &'static [u8]>,
    revisions: Table<'txn, Revision, &'static [u8]>,
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
            revisions: txn.open_table(REVISIONS).map_err(backend)?,
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

/// What `kv` holds for a key: its live value, or the revision of its newest record (a tombstone's,
/// 0 if the key never existed or compaction removed its tombstone).
enum Current {
    Live(KeyValue),
    Absent { last: Revision },
}

fn current(kv: &Table<'_, &'static str, &'static [u8]>, key: &str) -> Result<Current, StoreError> {
    let Some(found) = kv.get(key).map_err(backend)? else {
        return Ok(Current::Absent { last: 0 });
    };
    let entry = Entry::decode(found.value())?;
    Ok(match entry.live(key) {
        Some(kv) => Current::Live(kv),
        None => Current::Absent {
            last: entry.mod_revision,
        },
    })
}

fn apply(
    t: &mut Tables<'_>,
    revs: &mut Revisions,
    events: &mut Vec<Event>,
    op: &Op,
) -> Result<Result<Outcome, StoreError>, StoreError> {
    match op {
        Op::Write(write) => Ok(match check(&t.kv, write)? {
            Ok(checked) => Ok(Outcome::Written(perform(t, revs, events, checked)?)),
            Err(refused) => Err(refused),
        }),
        Op::Delete { key, expected } => {
            let prev = match live_at(&t.kv, key, *expected)? {
                Ok(prev) => prev,
                Err(refused) => return Ok(Err(refused)),
            };
            let rev = remove(t, revs, events, prev.clone())?;
            Ok(Ok(Outcome::Deleted(rev, prev)))
        }
        Op::WriteAll(writes) => {
            // Every precondition before any write: the transaction holds other callers' writes
            // too, so a refusal cannot roll back what this op already did.
            let mut checked = Vec::with_capacity(writes.len());
            for write in writes {
                match check(&t.kv, write)? {
                    Ok(c) => checked.push(c),
                    Err(refused) => return Ok(Err(refused)),
                }
            }
            let mut written = Vec::with_capacity(writes.len());
            for c in checked {
                written.push(perform(t, revs, events, c)?);
            }
            Ok(Ok(Outcome::WrittenAll(written)))
        }
        Op::Compact { revision } => {
            if *revision > revs.current {
                return Ok(Err(StoreError::FutureRevision {
                    requested: *revision,
                    current: revs.current,
                }));
            }
            if *revision > revs.compacted {
                compact(t, revs.compacted, *revision)?;
                revs.compacted = *revision;
            }
            Ok(Ok(Outcome::Compacted))
        }
    }
}

/// A write whose precondition held: what making it takes.
enum Checked<'w> {
    /// A create, linked to the key's last record (its tombstone's revision; 0 if none).
    Create {
        key: &'w str,
        value: &'w Bytes,
        last: Revision,
    },
    Update {
        key: &'w str,
        value: &'w Bytes,
        prev: KeyValue,
    },
    Remove(KeyValue),
    /// A key that had to exist: nothing to write.
    Present(KeyValue),
}

/// Checks `write`'s precondition; the inner error is its refusal.
fn check<'w>(
    kv: &Table<'_, &'static str, &'static [u8]>,
    write: &'w Write,
) -> Result<Result<Checked<'w>, StoreError>, StoreError> {
    Ok(match write {
        Write::Create { key, value } => match current(kv, key)? {
            Current::Live(_) => Err(StoreError::AlreadyExists { key: key.clone() }),
            Current::Absent { last } => Ok(Checked::Create { key, value, last }),
        },
        Write::Update {
            key,
            value,
            expected,
        } => live_at(kv, key, Some(*expected))?.map(|prev| Checked::Update { key, value, prev }),
        Write::Delete { key, expected } => live_at(kv, key, Some(*expected))?.map(Checked::Remove),
        Write::Exists { key } => live_at(kv, key, None)?.map(Checked::Present),
    })
}

/// Makes a checked write at the next revision, which it answers.
fn perform(
    t: &mut Tables<'_>,
    revs: &mut Revisions,
    events: &mut Vec<Event>,
    checked: Checked<'_>,
) -> Result<Revision, StoreError> {
    let rev = revs.current + 1;
    match checked {
        Checked::Remove(prev) => return remove(t, revs, events, prev),
        Checked::Present(kv) => return Ok(kv.mod_revision),
        // A key created again links to its tombstone, so older revisions stay readable.
        Checked::Create { key, value, last } => {
            put(t, key, value, rev, rev, last)?;
            events.push(Event::of_write(key, Some(value.clone()), rev, rev, None));
        }
        Checked::Update { key, value, prev } => {
            put(t, key, value, prev.create_revision, rev, prev.mod_revision)?;
            let create_revision = prev.create_revision;
            events.push(Event::of_write(
                key,
                Some(value.clone()),
                create_revision,
                rev,
                Some(prev),
            ));
        }
    }
    revs.current = rev;
    Ok(rev)
}

/// `key`'s live value if it is at mod revision `expected` (when given); the inner error is the
/// write's refusal (`NotFound` / `Conflict`).
fn live_at(
    kv: &Table<'_, &'static str, &'static [u8]>,
    key: &str,
    expected: Option<Revision>,
) -> Result<Result<KeyValue, StoreError>, StoreError> {
    Ok(match current(kv, key)? {
        Current::Absent { .. } => Err(StoreError::NotFound {
            key: key.to_owned(),
        }),
        Current::Live(cur) if expected.is_some_and(|e| e != cur.mod_revision) => {
            Err(StoreError::Conflict {
                key: key.to_owned(),
                current: Some(cur),
            })
        }
        Current::Live(cur) => Ok(cur),
    })
}

/// Deletes the live `prev` at the next revision, which it answers.
fn remove(
    t: &mut Tables<'_>,
    revs: &mut Revisions,
    events: &mut Vec<Event>,
    prev: KeyValue,
) -> Result<Revision, StoreError> {
    let rev = revs.current + 1;
    let key = prev.key.as_str();
    t.kv.insert(key, encode_kv_tombstone(rev).as_slice())
        .map_err(backend)?;
    t.revisions
        .insert(
            rev,
            Record::encode(key, prev.create_revision, prev.mod_revision, None).as_slice(),
        )
        .map_err(backend)?;
    revs.current = rev;
    let mut event = Event::of_write(key, None, 0, rev, None);
    event.prev = Some(prev);
    events.push(event);
    Ok(rev)
}

fn put(
    t: &mut Tables<'_>,
    key: &str,
    value: &[u8],
    create_revision: Revision,
    rev: Revision,
    prev_revision: Revision,
) -> Result<(), StoreError> {
    t.kv.insert(key, encode_kv(create_revision, rev, value).as_slice())
        .map_err(backend)?;
    t.revisions
        .insert(
            rev,
            Record::encode(key, create_revision, prev_revision, Some(value)).as_slice(),
        )
        .map_err(backend)?;
    Ok(())
}

/// Removes what no read at `to` or later needs. Each record written in `from..to` (the ones an
/// earlier compaction has not seen) makes the key's record before it unreadable, and a tombstone
/// also itself, with the key's `kv` tombstone unless the key was created again since. What stays
/// below `to` is the newest record of each live key, found again by a later compaction through the
/// record that supersedes it. Works in chunks to bound memory.
fn compact(t: &mut Tables<'_>, from: Revision, to: Revision) -> Result<(), StoreError> {
    const CHUNK: usize = 4096;
    let mut next = from;
    loop {
        // (revision, key of a tombstone, previous record)
        let mut chunk: Vec<(Revision, Option<String>, Option<Revision>)> = Vec::new();
        for item in t.revisions.range(next..to).map_err(backend)?.take(CHUNK) {
            let (rev, raw) = item.map_err(backend)?;
            let rev = rev.value();
            let record = Record::decode(raw.value())?;
            let tombstone = record.is_tombstone().then(|| record.key.to_owned());
            chunk.push((rev, tombstone, record.previous(rev)?));
        }
        let Some(&(last, _, _)) = chunk.last() else {
            return Ok(());
        };
        for (rev, tombstone, prev) in chunk {
            if let Some(prev) = prev {
                t.revisions.remove(prev).map_err(backend)?;
            }
            if let Some(key) = tombstone {
                t.revisions.remove(rev).map_err(backend)?;
                let still_deleted = match t.kv.get(key.as_str()).map_err(backend)? {
                    Some(raw) => {
                        let entry = Entry::decode(raw.value())?;
                        entry.is_tombstone() && entry.mod_revision == rev
                    }
                    None => false,
                };
                if still_deleted {
                    t.kv.remove(key.as_str()).map_err(backend)?;
                }
            }
        }
        next = last + 1;
    }
}
