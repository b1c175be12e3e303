//! `RedbStore`: the embedded, durable default engine on redb.
//!
//! One writer thread owns the revision counter and commits writes in groups (see [`writer`]); reads run
//! on redb snapshots in blocking tasks and never wait for the writer. A write's future resolves only
//! after its transaction committed with `Durability::Immediate`, so every acknowledged write survives
//! a crash. Watches replay the revision log, then follow the in-process fan-out.

mod codec;
mod read;
mod writer;

use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;

use bytes::Bytes;
use redb::{Database, ReadTransaction, ReadableDatabase, ReadableTable};
use tokio::sync::{mpsc, oneshot};

use self::codec::{
    FORMAT_VERSION, KV, META, META_COMPACTED, META_FORMAT, META_REVISION, REVISIONS, Record,
    V1_HISTORY, V1_LOG, backend,
};
use self::writer::{Op, Outcome, Request, Revisions};
use crate::fanout::{Replay, WatchHub, watch_stream};
use crate::{
    KeyValue, RangeRequest, RangeResult, Revision, Store, StoreError, WatchConfig, WatchResponse,
    WatchStream, Write,
};

/// Tuning of a [`RedbStore`].
#[derive(Clone, Debug)]
pub struct RedbOptions {
    pub watch: WatchConfig,
    /// The most writes one commit takes from the queue.
    pub max_batch: usize,
    /// Bytes of redb's own page cache. Kept small on purpose: the shard's watch cache already holds
    /// every object and serves every read, so redb's pages are only touched by writes, start-up
    /// and watches catching up from the log; the kernel's page cache (not counted in the shard's
    /// RSS) keeps them warm. redb's default (1 GiB) doubled the shard's memory per object.
    pub cache_bytes: usize,
}

/// See [`RedbOptions::cache_bytes`].
pub const DEFAULT_CACHE_BYTES: usize = 4 << 20;

impl Default for RedbOptions {
    fn default() -> Self {
        RedbOptions {
            watch: WatchConfig::default(),
            max_batch: 1024,
            cache_bytes: DEFAULT_CACHE_BYTES,
        }
    }
}

/// Counters of the group commit, for tests and metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedbStats {
    /// Committed write transactions (each one fsync).
    pub commits: u64,
    /// Writes (including failed preconditions) carried by those commits.
    pub writes: u64,
}

/// The embedded [`Store`] on a redb file.
pub struct RedbStore {
    shared: Arc<Shared>,
    writer: WriterHandle,
}

struct Shared {
    db: Database,
    hub: Arc<WatchHub>,
    compacted: AtomicI64,
    commits: AtomicU64,
    writes: AtomicU64,
    /// Why the last commit failed, until one succeeds. After an I/O error (a full disk) redb
    /// refuses every commit until the database is opened again, which only a restart does here;
    /// the health checks report it so that whoever runs the shard restarts it.
    failure: parking_lot::Mutex<Option<String>>,
}

struct WriterHandle {
    tx: Option<mpsc::Sender<Request>>,
    thread: Option<JoinHandle<()>>,
    hub: Arc<WatchHub>,
}

impl Drop for WriterHandle {
    fn drop(&mut self) {
        // Closing the queue stops the writer after the writes already queued; joining it releases the
        // database file so it can be opened again right away.
        self.tx.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.hub.close();
    }
}

const WRITE_QUEUE: usize = 4096;
/// Log entries one replay step reads in a snapshot.
const REPLAY_SCAN: usize = 2048;

impl RedbStore {
    /// Opens (or creates) the store at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, RedbOptions::default())
    }

    pub fn open_with(path: impl AsRef<Path>, options: RedbOptions) -> Result<Self, StoreError> {
        let db = Database::builder()
            .set_cache_size(options.cache_bytes)
            .set_repair_callback(|session| {
                // Only after an unclean exit; it walks the whole file, so it shows in start-up time.
                if session.progress() == 0.0 {
                    tracing::warn!("the embedded store was not closed cleanly; repairing it");
                }
            })
            .create(path)
            .map_err(backend)?;
        let revs = init(&db)?;
        let hub = Arc::new(WatchHub::new(options.watch.clone(), revs.current));
        let shared = Arc::new(Shared {
            db,
            hub: hub.clone(),
            compacted: AtomicI64::new(revs.compacted),
            commits: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            failure: parking_lot::Mutex::new(None),
        });
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        let max_batch = options.max_batch.max(1);
        let writer_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("kcp-store-redb-writer".into())
            .spawn(move || writer::run(writer_shared, rx, revs, max_batch))
            .map_err(|e| StoreError::Backend(format!("spawning the redb writer: {e}")))?;
        Ok(RedbStore {
            shared,
            writer: WriterHandle {
                tx: Some(tx),
                thread: Some(thread),
                hub,
            },
        })
    }

    pub fn stats(&self) -> RedbStats {
        RedbStats {
            commits: self.shared.commits.load(Ordering::Relaxed),
            writes: self.shared.writes.load(Ordering::Relaxed),
        }
    }

    async fn submit(&self, op: Op) -> Result<Outcome, StoreError> {
        let closed = || StoreError::Backend("redb writer stopped".into());
        let (reply, answer) = oneshot::channel();
        let tx = self.writer.tx.as_ref().ok_or_else(closed)?;
        tx.send(Request { op, reply }).await.map_err(|_| closed())?;
        answer.await.map_err(|_| closed())?
    }

    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&ReadTransaction) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || f(&shared.db.begin_read().map_err(backend)?))
            .await
            .map_err(|e| StoreError::Backend(format!("redb read task failed: {e}")))?
    }
}

/// Creates the tables of a new file, checks the format of an existing one (converting format 1), and
/// reads its revisions.
fn init(db: &Database) -> Result<Revisions, StoreError> {
    let txn = db.begin_write().map_err(backend)?;
    let revs = {
        txn.open_table(KV).map_err(backend)?;
        txn.open_table(REVISIONS).map_err(backend)?;
        let mut meta = txn.open_table(META).map_err(backend)?;
        let format = meta.get(META_FORMAT).map_err(backend)?.map(|g| g.value());
        let get = |meta: &redb::Table<&str, i64>, name: &str| -> Result<Revision, StoreError> {
            Ok(meta.get(name).map_err(backend)?.map_or(0, |g| g.value()))
        };
        match format {
            None => {
                meta.insert(META_FORMAT, FORMAT_VERSION).map_err(backend)?;
            }
            Some(FORMAT_VERSION) => {}
            Some(1) => {
                let current = get(&meta, META_REVISION)?;
                convert_v1(&txn)?;
                // Format 1's older versions are dropped: as if compacted at the current revision.
                // As with etcd, a delete made exactly at that revision is then not replayed.
                meta.insert(META_COMPACTED, current).map_err(backend)?;
                meta.insert(META_FORMAT, FORMAT_VERSION).map_err(backend)?;
                tracing::info!(
                    revision = current,
                    "converted the embedded store to format 2"
                );
            }
            Some(other) => {
                return Err(StoreError::Backend(format!(
                    "redb store format {other} is not supported (this build reads format {FORMAT_VERSION})"
                )));
            }
        }
        Revisions {
            current: get(&meta, META_REVISION)?,
            compacted: get(&meta, META_COMPACTED)?,
        }
    };
    txn.commit().map_err(backend)?;
    Ok(revs)
}

/// Format 1 → 2: every key's newest state becomes its record in `revisions` (format 1 had no
/// tombstones in `kv`), and format 1's history and log are dropped.
fn convert_v1(txn: &redb::WriteTransaction) -> Result<(), StoreError> {
    {
        let kv = txn.open_table(KV).map_err(backend)?;
        let mut revisions = txn.open_table(REVISIONS).map_err(backend)?;
        for item in kv.iter().map_err(backend)? {
            let (key, raw) = item.map_err(backend)?;
            let entry = codec::Entry::decode(raw.value())?;
            let record = Record::encode(key.value(), entry.create_revision, 0, Some(entry.value));
            revisions
                .insert(entry.mod_revision, record.as_slice())
                .map_err(backend)?;
        }
    }
    txn.delete_table(V1_HISTORY).map_err(backend)?;
    txn.delete_table(V1_LOG).map_err(backend)?;
    Ok(())
}

fn unexpected() -> StoreError {
    StoreError::Backend("redb writer answered with the wrong outcome".into())
}

#[async_trait::async_trait]
impl Store for RedbStore {
    async fn current_revision(&self) -> Result<Revision, StoreError> {
        Ok(self.shared.hub.current())
    }

    async fn health(&self) -> Result<(), StoreError> {
        match self.shared.failure.lock().as_ref() {
            Some(failure) => Err(StoreError::Backend(format!(
                "the last commit failed: {failure}"
            ))),
            None => Ok(()),
        }
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StoreError> {
        let key = key.to_owned();
        self.read(move |txn| read::get(txn, &key)).await
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResult, StoreError> {
        self.read(move |txn| read::range(txn, &req)).await
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StoreError> {
        crate::check_value_size(&value)?;
        match self
            .submit(Op::Write(Write::Create {
                key: key.to_owned(),
                value,
            }))
            .await?
        {
            Outcome::Written(rev) => Ok(rev),
            _ => Err(unexpected()),
        }
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StoreError> {
        crate::check_value_size(&value)?;
        match self
            .submit(Op::Write(Write::Update {
                key: key.to_owned(),
                value,
                expected,
            }))
            .await?
        {
            Outcome::Written(rev) => Ok(rev),
            _ => Err(unexpected()),
        }
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(Revision, KeyValue), StoreError> {
        match self
            .submit(Op::Delete {
                key: key.to_owned(),
                expected,
            })
            .await?
        {
            Outcome::Deleted(rev, prev) => Ok((rev, prev)),
            _ => Err(unexpected()),
        }
    }

    async fn write_all(&self, writes: &[Write]) -> Result<Vec<Revision>, StoreError> {
        crate::check_write_all(writes)?;
        match self.submit(Op::WriteAll(writes.to_vec())).await? {
            Outcome::WrittenAll(revs) => Ok(revs),
            _ => Err(unexpected()),
        }
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StoreError> {
        let after = after.max(0);
        let (sub, upto) = self.shared.hub.subscribe(prefix);
        if after > upto {
            return Err(StoreError::FutureRevision {
                requested: after,
                current: upto,
            });
        }
        let compacted = self.shared.compacted.load(Ordering::Acquire);
        if after + 1 < compacted {
            return Err(StoreError::Compacted {
                requested: after + 1,
                compacted,
            });
        }
        let replay = LogReplay {
            shared: Arc::downgrade(&self.shared),
            prefix: prefix.into(),
            next: after + 1,
            upto,
        };
        Ok(watch_stream(replay, self.shared.hub.clone(), sub, upto))
    }

    async fn compact(&self, revision: Revision) -> Result<(), StoreError> {
        match self.submit(Op::Compact { revision }).await? {
            Outcome::Compacted => Ok(()),
            _ => Err(unexpected()),
        }
    }

    async fn compacted_revision(&self) -> Result<Revision, StoreError> {
        Ok(self.shared.compacted.load(Ordering::Acquire))
    }
}

/// Replays the log from `next` to `upto` in snapshot-sized steps. Holds the store weakly so an open
/// watch does not keep the database file open.
struct LogReplay {
    shared: Weak<Shared>,
    prefix: Arc<str>,
    next: Revision,
    upto: Revision,
}

impl Replay for LogReplay {
    async fn next_response(&mut self) -> Option<Result<WatchResponse, StoreError>> {
        while self.next <= self.upto {
            let Some(shared) = self.shared.upgrade() else {
                self.next = self.upto + 1;
                return Some(Err(StoreError::Backend("store closed".into())));
            };
            let (prefix, from, upto) = (self.prefix.clone(), self.next, self.upto);
            let chunk = tokio::task::spawn_blocking(move || {
                let txn = shared.db.begin_read().map_err(backend)?;
                read::replay_chunk(&txn, &prefix, from, upto, REPLAY_SCAN)
            })
            .await
            .map_err(|e| StoreError::Backend(format!("redb replay task failed: {e}")))
            .and_then(|r| r);
            match chunk {
                Err(err) => {
                    self.next = self.upto + 1;
                    return Some(Err(err));
                }
                Ok((events, next)) => {
                    self.next = next;
                    if events.is_empty() {
                        continue;
                    }
                    let revision = if next > self.upto {
                        self.upto
                    } else {
                        events.last().map_or(from, |e| e.kv.mod_revision)
                    };
                    return Some(Ok(WatchResponse { revision, events }));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::codec::encode_kv;
    use super::*;

    /// A file written by format 1 (history keyed by key, a log) opens with its newest state, as if
    /// compacted at its revision, and goes on from there.
    #[tokio::test]
    async fn format_1_files_are_converted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("store.redb");
        {
            let db = Database::create(&path).expect("create");
            let txn = db.begin_write().expect("write");
            {
                let mut kv = txn.open_table(KV).expect("kv");
                kv.insert("/k/a", encode_kv(1, 3, b"a2").as_slice())
                    .expect("insert");
                kv.insert("/k/b", encode_kv(2, 2, b"b1").as_slice())
                    .expect("insert");
                let mut history = txn.open_table(V1_HISTORY).expect("history");
                history.insert(("/k/a", 1), &b"old"[..]).expect("insert");
                let mut log = txn.open_table(V1_LOG).expect("log");
                log.insert(1, "/k/a").expect("insert");
                let mut meta = txn.open_table(META).expect("meta");
                meta.insert(META_FORMAT, 1).expect("insert");
                meta.insert(META_REVISION, 4).expect("insert");
            }
            txn.commit().expect("commit");
        }
        let store = RedbStore::open(&path).expect("open format 1");
        assert_eq!(store.current_revision().await.expect("revision"), 4);
        assert_eq!(store.compacted_revision().await.expect("compacted"), 4);
        let all = store
            .range(RangeRequest {
                prefix: "/k/".into(),
                revision: Some(4),
                ..Default::default()
            })
            .await
            .expect("range");
        let got: Vec<_> = all
            .kvs
            .iter()
            .map(|kv| (kv.key.as_str(), kv.create_revision, kv.mod_revision))
            .collect();
        assert_eq!(got, [("/k/a", 1, 3), ("/k/b", 2, 2)]);
        let (deleted, prev) = store.delete("/k/a", Some(3)).await.expect("delete");
        assert_eq!((deleted, prev.value.as_ref()), (5, &b"a2"[..]));
        // The delete's revision record links back to the converted one.
        let mut watch = store.watch("/k/", 4).await.expect("watch");
        let first = futures::StreamExt::next(&mut watch)
            .await
            .expect("an event")
            .expect("no error");
        assert_eq!(
            first.events[0].prev.as_ref().map(|p| p.mod_revision),
            Some(3)
        );
        drop(store);
        let db = Database::open(&path).expect("reopen");
        let txn = db.begin_read().expect("read");
        assert!(
            txn.open_table(V1_HISTORY).is_err(),
            "format 1's history is dropped"
        );
        let meta = txn.open_table(META).expect("meta");
        assert_eq!(
            meta.get(META_FORMAT).expect("get").map(|g| g.value()),
            Some(FORMAT_VERSION)
        );
    }

    /// A record whose link to the key's previous record does not go back is corrupt: a read at an
    /// older revision fails instead of following it forever.
    #[tokio::test]
    async fn a_link_that_does_not_go_back_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("store.redb");
        {
            let store = RedbStore::open(&path).expect("open");
            let r1 = store.create("/k/a", "1".into()).await.expect("create");
            store.update("/k/a", "2".into(), r1).await.expect("update");
        }
        {
            let db = Database::open(&path).expect("open file");
            let txn = db.begin_write().expect("write");
            {
                let mut revisions = txn.open_table(REVISIONS).expect("revisions");
                let looping = Record::encode("/k/a", 1, 2, Some(b"2"));
                revisions.insert(2, looping.as_slice()).expect("insert");
            }
            txn.commit().expect("commit");
        }
        let store = RedbStore::open(&path).expect("reopen");
        let at_1 = RangeRequest {
            prefix: "/k/".into(),
            revision: Some(1),
            ..Default::default()
        };
        assert!(matches!(
            store.range(at_1).await,
            Err(StoreError::Backend(msg)) if msg.contains("corrupt")
        ));
    }
}
