//! kcp-store: the MVCC key/value contract every storage engine of kcp-rs fulfils, and the key layout.
//!
//! The model is etcd's: one global, strictly increasing revision; each key remembers the revision that
//! created it and the revision of its last change; writes are compare-and-swap on that revision; a watch
//! replays history from a revision and then follows live changes; compaction forgets history below a
//! revision, after which reads and watches at older revisions fail with [`StoreError::Compacted`].
//!
//! Only this crate knows how keys are laid out (see [`keys`]). Callers build keys through it.
//!
//! # Revision semantics (the same in every engine)
//!
//! - Every successful create, update or delete gets its own revision, one more than the previous write
//!   (etcd may skip numbers when other tenants share it; callers only rely on "strictly increasing").
//!   A failed precondition writes nothing and takes no revision.
//! - `create_revision` is the revision of the create; it is new again when a deleted key is re-created.
//!   `mod_revision` is the revision of the last write and is what `update`/`delete` compare against.
//! - A delete event carries `kv.mod_revision` = the deletion's revision, an empty value and
//!   `create_revision` 0 (as etcd reports it); `prev` holds the deleted value.
//! - `compact(r)` keeps the state as of `r`: `range` at `r` or later works, at `r - 1` or earlier it
//!   fails with [`StoreError::Compacted`]; `watch(prefix, after)` needs the changes from `after + 1`, so it
//!   fails when `after + 1 < r`. Compacting at or below the compacted revision is a no-op; above the
//!   current revision it is [`StoreError::FutureRevision`]. With etcd the compacted revision is etcd's own,
//!   shared by every prefix.
//! - Reading (`range`) or watching (`watch`) at a revision above the current one is
//!   [`StoreError::FutureRevision`].
//! - A watch response's `revision` says the watcher has seen every change up to it; empty responses are
//!   progress notifications.

pub mod keys;

mod config;
mod engine;
mod fanout;
pub mod remote;
#[cfg(feature = "test-util")]
pub mod testing;

pub use config::{StoreConfig, open};
pub use engine::*;
pub use fanout::WatchConfig;

/// The largest value any engine accepts, the default request limit of etcd (1.5 MiB), so an object that
/// fits one engine fits them all.
pub const MAX_VALUE_BYTES: usize = 1536 * 1024;

use std::pin::Pin;

use bytes::Bytes;
use futures::Stream;

/// A store revision. Revisions start at 1 for the first write; 0 means "no revision".
pub type Revision = i64;

/// One key with its value and revisions, as etcd reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    /// Revision of the write that created this key (reset when a deleted key is created again).
    pub create_revision: Revision,
    /// Revision of the last write to this key.
    pub mod_revision: Revision,
}

/// The answer to a range read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeResult {
    /// Keys in ascending byte order.
    pub kvs: Vec<KeyValue>,
    /// True when more keys in the range exist beyond `kvs` (the limit cut the answer).
    pub more: bool,
    /// The revision the read was served at.
    pub revision: Revision,
}

/// What a range read asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeRequest {
    /// Every key starting with this prefix is in range.
    pub prefix: String,
    /// Start strictly after this key (for pagination); `None` starts at the prefix.
    pub start_after: Option<String>,
    /// At most this many keys; 0 means no limit.
    pub limit: usize,
    /// Read the state as of this revision; `None` (or 0) reads the newest state.
    pub revision: Option<Revision>,
}

/// A change seen by a watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The key was created or updated; `kv` holds the new value.
    Put,
    /// The key was deleted; `kv.mod_revision` is the revision of the deletion and `kv.value` is empty.
    Delete,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    pub kv: KeyValue,
    /// The value before this change, when there was one (always set for updates and deletes as long as
    /// that value has not been compacted away).
    pub prev: Option<KeyValue>,
}

/// Every engine refuses values over [`MAX_VALUE_BYTES`] the same way.
pub(crate) fn check_value_size(value: &Bytes) -> Result<(), StoreError> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(StoreError::TooLarge {
            size: value.len(),
            limit: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}

/// Every engine refuses a [`Store::write_all`] it cannot take as one step the same way: a caller's
/// mistake, so not retryable (values too large together are [`StoreError::TooLarge`], as one
/// value too large is).
pub(crate) fn check_write_all(writes: &[Write]) -> Result<(), StoreError> {
    if writes.len() > MAX_WRITE_ALL {
        return Err(StoreError::Backend(format!(
            "write_all of {} keys: at most {MAX_WRITE_ALL}",
            writes.len()
        )));
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(w) = writes.iter().find(|w| !seen.insert(w.key())) {
        return Err(StoreError::Backend(format!(
            "write_all: key {} given twice",
            w.key()
        )));
    }
    let size: usize = writes.iter().filter_map(Write::value).map(Bytes::len).sum();
    if size > MAX_VALUE_BYTES {
        return Err(StoreError::TooLarge {
            size,
            limit: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}

/// One write of a [`Store::write_all`], guarded as the single-key write of the same name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write {
    /// Creates `key`, which must be absent (else `AlreadyExists`).
    Create { key: String, value: Bytes },
    /// Replaces `key`, which must be at mod revision `expected` (else `NotFound` / `Conflict`).
    Update {
        key: String,
        value: Bytes,
        expected: Revision,
    },
    /// Deletes `key`, which must be at mod revision `expected` (else `NotFound` / `Conflict`).
    Delete { key: String, expected: Revision },
    /// Writes nothing: `key` must exist (else `NotFound`). Its answer is the key's mod revision.
    /// For writes that may only happen once something written beside them has landed.
    Exists { key: String },
}

impl Write {
    pub fn key(&self) -> &str {
        match self {
            Write::Create { key, .. }
            | Write::Update { key, .. }
            | Write::Delete { key, .. }
            | Write::Exists { key } => key,
        }
    }

    /// The value written; `None` for a deletion.
    pub fn value(&self) -> Option<&Bytes> {
        match self {
            Write::Create { value, .. } | Write::Update { value, .. } => Some(value),
            Write::Delete { .. } | Write::Exists { .. } => None,
        }
    }
}

impl Event {
    /// The event of a write at `revision`: a put of `value` (`Some`) or a deletion (`None`; delete
    /// events carry an empty value and create revision 0, as etcd's do).
    pub fn of_write(
        key: &str,
        value: Option<Bytes>,
        create_revision: Revision,
        revision: Revision,
        prev: Option<KeyValue>,
    ) -> Event {
        let (kind, value, create_revision) = match value {
            Some(v) => (EventKind::Put, v, create_revision),
            None => (EventKind::Delete, Bytes::new(), 0),
        };
        Event {
            kind,
            kv: KeyValue {
                key: key.to_owned(),
                value,
                create_revision,
                mod_revision: revision,
            },
            prev,
        }
    }
}

/// A batch delivered by a watch: the events of one or more revisions, in revision order, or an empty
/// progress notification telling that the store has reached `revision` with nothing to report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchResponse {
    /// The store revision this response brings the watcher up to (at least the newest event's revision).
    pub revision: Revision,
    pub events: Vec<Event>,
}

pub type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchResponse, StoreError>> + Send>>;

/// Errors from any engine. Callers map them to API errors in one place.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// `create` found the key already present.
    #[error("key {key} already exists")]
    AlreadyExists { key: String },
    /// The key does not exist (update or delete of an absent key).
    #[error("key {key} not found")]
    NotFound { key: String },
    /// The key's mod revision is not the expected one. `current` is the present value, if any, so the
    /// caller can retry without a second read (the pattern kube-apiserver uses with etcd).
    #[error("revision conflict on {key}")]
    Conflict {
        key: String,
        current: Option<KeyValue>,
    },
    /// The requested revision is older than the compacted revision.
    #[error("revision {requested} has been compacted (compacted revision {compacted})")]
    Compacted {
        requested: Revision,
        compacted: Revision,
    },
    /// The requested revision is newer than the store's current revision.
    #[error("revision {requested} is in the future (current revision {current})")]
    FutureRevision {
        requested: Revision,
        current: Revision,
    },
    /// A watcher fell too far behind and was cut off; it must re-list.
    #[error("watcher fell behind and was cut off")]
    WatchLagged,
    /// The value is larger than the engine accepts.
    #[error("value of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge { size: usize, limit: usize },
    /// Anything else: I/O, a broken connection, corrupt data. Not retryable by the caller.
    #[error("storage backend error: {0}")]
    Backend(String),
}

/// The most keys one [`Store::write_all`] takes: etcd refuses transactions with more than 128
/// compares (`--max-txn-ops`), and a key brings one or two.
pub const MAX_WRITE_ALL: usize = 64;

/// The storage contract. Every method is safe to call concurrently.
///
/// Writes are durable when the returned future resolves (for engines that persist at all).
#[async_trait::async_trait]
pub trait Store: Send + Sync + 'static {
    /// The newest revision of the store.
    async fn current_revision(&self) -> Result<Revision, StoreError>;

    /// The value of `key` at the newest revision, or `None`.
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StoreError>;

    /// Keys under a prefix, in ascending order, optionally as of an older revision.
    async fn range(&self, req: RangeRequest) -> Result<RangeResult, StoreError>;

    /// Creates `key` only if it is absent. Returns the new revision.
    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StoreError>;

    /// Replaces `key` only if its mod revision is `expected`. Returns the new revision.
    /// Fails with `NotFound` if the key is absent and `Conflict` (with the current value) on a mismatch.
    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StoreError>;

    /// Deletes `key`, only if its mod revision is `expected` when given. Returns the revision of the
    /// deletion and the value that was deleted.
    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(Revision, KeyValue), StoreError>;

    /// Deletes `key` only if its mod revision is `expected`, answering the revision of the deletion
    /// alone: the caller knows the value it deletes, so etcd need not read it back. Errors as
    /// [`Store::delete`].
    async fn delete_version(&self, key: &str, expected: Revision) -> Result<Revision, StoreError> {
        self.delete(key, Some(expected))
            .await
            .map(|(revision, _)| revision)
    }

    /// Makes every write as one step: all of them, or none when one is refused, answering the
    /// refusal of the first such write (`AlreadyExists`, `NotFound`, `Conflict`). Keys must be
    /// distinct, at most [`MAX_WRITE_ALL`], their values at most [`MAX_VALUE_BYTES`] together.
    /// Answers the revision of each write, in order.
    ///
    /// etcd gives the writes one revision, the other engines one each (an `Exists` answers its
    /// key's own). Watchers resume after a revision, so a caller puts at most one key a client
    /// watches as one resource in each call.
    async fn write_all(&self, writes: &[Write]) -> Result<Vec<Revision>, StoreError>;

    /// Watches every key under `prefix`, delivering all changes with a revision greater than `after`
    /// (so `after = list revision` continues a list without gaps), then live changes. Fails (in the call
    /// or as the first stream item) with `Compacted` when history after `after` is gone. Engines send a
    /// progress notification (a response with no events) at least every few seconds while idle.
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StoreError>;

    /// [`Store::watch`] for a watcher that keeps the previous values itself (the watch cache):
    /// events may come without `prev`. etcd reads the previous value of every change with a range
    /// of its own; skipping it saves etcd that read on every write the shard makes.
    async fn watch_changes(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<WatchStream, StoreError> {
        self.watch(prefix, after).await
    }

    /// Forgets history below `revision`: reads and watches at older revisions fail with `Compacted`.
    async fn compact(&self, revision: Revision) -> Result<(), StoreError>;

    /// The oldest revision still readable (the compacted revision), 0 if never compacted.
    async fn compacted_revision(&self) -> Result<Revision, StoreError>;

    /// Names this store's history for a copy kept elsewhere (the watch cache's snapshot on local
    /// disk): a copy made of a store with the same identity at revision R can be brought up to date
    /// by watching after R. None: the store is local and reading it whole is as cheap as reading a
    /// copy, so no copy is kept.
    async fn identity(&self) -> Result<Option<String>, StoreError> {
        Ok(None)
    }

    /// Whether the store serves now (the health checks ask): by default, whether it tells its
    /// revision.
    async fn health(&self) -> Result<(), StoreError> {
        self.current_revision().await.map(|_| ())
    }
}
