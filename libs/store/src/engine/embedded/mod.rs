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
    FORMAT_VERSION, HISTORY, KV, LOG, META, META_COMPACTED, META_FORMAT, META_REVISION, backend,
};
use self::writer::{Op, Outcome, Request, Revisions};
use crate::fanout::{Replay, WatchHub, watch_stream};
use crate::{
    KeyValue, RangeRequest, RangeResult, Revision, Store, StoreError, WatchConfig, WatchResponse,
    WatchStream,
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

/// Creates the tables of a new file, checks the format of an existing one, and reads its revisions.
fn init(db: &Database) -> Result<Revisions, StoreError> {
    let txn = db.begin_write().map_err(backend)?;
    let revs = {
        txn.open_table(KV).map_err(backend)?;
        txn.open_table(HISTORY).map_err(backend)?;
        txn.open_table(LOG).map_err(backend)?;
        let mut meta = txn.open_table(META).map_err(backend)?;
        let format = meta.get(META_FORMAT).map_err(backend)?.map(|g| g.value());
        match format {
            None => {
                meta.insert(META_FORMAT, FORMAT_VERSION).map_err(backend)?;
            }
            Some(FORMAT_VERSION) => {}
            Some(other) => {
                return Err(StoreError::Backend(format!(
                    "redb store format {other} is not supported (this build reads format {FORMAT_VERSION})"
                )));
            }
        }
        let get = |name: &str| -> Result<Revision, StoreError> {
            Ok(meta.get(name).map_err(backend)?.map_or(0, |g| g.value()))
        };
        Revisions {
            current: get(META_REVISION)?,
            compacted: get(META_COMPACTED)?,
        }
    };
    txn.commit().map_err(backend)?;
    Ok(revs)
}

fn unexpected() -> StoreError {
    StoreError::Backend("redb writer answered with the wrong outcome".into())
}

#[async_trait::async_trait]
impl Store for RedbStore {
    async fn current_revision(&self) -> Result<Revision, StoreError> {
        Ok(self.shared.hub.current())
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
            .submit(Op::Create {
                key: key.to_owned(),
                value,
            })
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
            .submit(Op::Update {
                key: key.to_owned(),
                value,
                expected,
            })
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
