//! `EtcdStore`: the [`Store`] over etcd 3.4+ (only RPCs etcd 3.4 has; never RangeStream).
//!
//! Every key is stored under a prefix so tests and shards can share one etcd; callers never see it.
//! Writes are single-key transactions guarded by `mod_revision`, the pattern kube-apiserver uses: the
//! else branch reads the current value so a conflict answers with it.

mod errors;
mod watch;

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{
    Client, CompactionOptions, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions,
    KvClient, Txn, TxnOp, TxnOpResponse, TxnResponse, WatchClient, WatchOptions,
};

use self::errors::{Condition, backend, condition};
use crate::{
    KeyValue, MAX_VALUE_BYTES, RangeRequest, RangeResult, Revision, Store, StoreError, WatchStream,
    Write,
};

/// Large ranges exceed tonic's default 4 MiB response limit.
const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// Where an [`EtcdStore`] connects and which part of the keyspace it owns.
#[derive(Clone, Debug)]
pub struct EtcdOptions {
    /// `host:port` or `http://host:port`.
    pub endpoints: Vec<String>,
    /// Prepended to every key; keys handed back have it removed.
    pub prefix: String,
    /// How long a watch may be silent before the store asks etcd for a progress notification.
    pub progress_interval: Duration,
    pub connect_timeout: Duration,
}

impl EtcdOptions {
    pub fn new(endpoints: Vec<String>, prefix: impl Into<String>) -> Self {
        EtcdOptions {
            endpoints,
            prefix: prefix.into(),
            progress_interval: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
        }
    }
}

/// The [`Store`] on etcd.
pub struct EtcdStore {
    kv: KvClient,
    watch: WatchClient,
    prefix: String,
    progress_interval: Duration,
    /// The highest compacted revision seen, a lower bound for the search in `compacted_revision`.
    compacted_floor: AtomicI64,
}

impl EtcdStore {
    /// Connects and checks that etcd answers.
    pub async fn connect(options: EtcdOptions) -> Result<Self, StoreError> {
        let connect = ConnectOptions::new()
            .with_connect_timeout(options.connect_timeout)
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(10));
        let client = Client::connect(&options.endpoints, Some(connect.clone()))
            .await
            .map_err(backend)?;
        // The watch on a connection of its own: its stream of events does not queue ahead of the
        // answers to writes.
        let watching = Client::connect(&options.endpoints, Some(connect))
            .await
            .map_err(backend)?;
        let store = EtcdStore {
            kv: client
                .kv_client()
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            watch: watching
                .watch_client()
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
            prefix: options.prefix,
            progress_interval: options.progress_interval,
            compacted_floor: AtomicI64::new(0),
        };
        match tokio::time::timeout(options.connect_timeout * 2, store.current_revision()).await {
            Ok(result) => result?,
            Err(_) => {
                return Err(StoreError::Backend(format!(
                    "etcd at {:?} did not answer",
                    options.endpoints
                )));
            }
        };
        Ok(store)
    }

    fn full(&self, key: &str) -> Vec<u8> {
        let mut full = Vec::with_capacity(self.prefix.len() + key.len());
        full.extend_from_slice(self.prefix.as_bytes());
        full.extend_from_slice(key.as_bytes());
        full
    }

    /// A key for reads that only want the response header.
    fn probe_key(&self) -> Vec<u8> {
        if self.prefix.is_empty() {
            b"/".to_vec()
        } else {
            self.prefix.as_bytes().to_vec()
        }
    }

    fn to_kv(&self, kv: &etcd_client::KeyValue) -> Result<KeyValue, StoreError> {
        watch::convert(&self.prefix, kv)
    }

    /// Whether etcd still serves reads at `revision`.
    async fn readable(&self, revision: Revision) -> Result<bool, StoreError> {
        let opts = GetOptions::new().with_count_only().with_revision(revision);
        match self.kv.clone().get(self.probe_key(), Some(opts)).await {
            Ok(_) => Ok(true),
            Err(err) if condition(&err) == Condition::Compacted => Ok(false),
            Err(err) => Err(backend(err)),
        }
    }

    /// Maps an error of a read or write at `requested`, looking up the revision the error is about.
    async fn revision_error(&self, err: etcd_client::Error, requested: Revision) -> StoreError {
        match condition(&err) {
            Condition::Compacted => {
                let compacted = self.compacted_revision().await.unwrap_or(0);
                StoreError::Compacted {
                    requested,
                    compacted,
                }
            }
            Condition::FutureRevision => {
                let current = self.current_revision().await.unwrap_or(0);
                StoreError::FutureRevision { requested, current }
            }
            _ => backend(err),
        }
    }

    async fn txn(&self, txn: Txn, value_len: usize) -> Result<TxnResponse, StoreError> {
        self.kv
            .clone()
            .txn(txn)
            .await
            .map_err(|err| match condition(&err) {
                Condition::TooLarge => StoreError::TooLarge {
                    size: value_len,
                    limit: MAX_VALUE_BYTES,
                },
                _ => backend(err),
            })
    }

    /// The else branch of a guarded write: the key's current value, if any.
    fn current_from_else(&self, resp: &TxnResponse) -> Result<Option<KeyValue>, StoreError> {
        match resp.op_responses().into_iter().next() {
            Some(TxnOpResponse::Get(get)) => get.kvs().first().map(|kv| self.to_kv(kv)).transpose(),
            _ => Err(StoreError::Backend(
                "etcd: transaction answered without the read".into(),
            )),
        }
    }
}

/// The compares of a write to an existing key, at revision `expected` if given. etcd reads the key
/// from its backend once per compare, so a revision (never 0 for a key that exists) is checked
/// alone: a missing key's mod revision is 0 and fails it just as well.
fn exists_at(full: &[u8], expected: Option<Revision>) -> Vec<Compare> {
    match expected {
        Some(rev) if rev > 0 => vec![Compare::mod_revision(full, CompareOp::Equal, rev)],
        Some(rev) => vec![
            Compare::version(full, CompareOp::Greater, 0),
            Compare::mod_revision(full, CompareOp::Equal, rev),
        ],
        None => vec![Compare::version(full, CompareOp::Greater, 0)],
    }
}

/// Why a guarded write to `key` was refused, from the key's value read in the same transaction.
fn refusal(key: &str, current: Option<KeyValue>) -> StoreError {
    match current {
        None => StoreError::NotFound {
            key: key.to_owned(),
        },
        Some(current) => StoreError::Conflict {
            key: key.to_owned(),
            current: Some(current),
        },
    }
}

fn header_revision(header: Option<&etcd_client::ResponseHeader>) -> Result<Revision, StoreError> {
    header
        .map(|h| h.revision())
        .ok_or_else(|| StoreError::Backend("etcd: response without a header".into()))
}

/// The first key after every key starting with `prefix` ("\0" means the end of the keyspace).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

#[async_trait::async_trait]
impl Store for EtcdStore {
    async fn identity(&self) -> Result<Option<String>, StoreError> {
        // The cluster ID tells etcd clusters apart. A backup restored into the same cluster keeps
        // it; the watch cache catches that by looking for its newest object at its revision.
        let cluster = self.probe().await?.header().map_or(0, |h| h.cluster_id());
        Ok(Some(format!(
            "etcd cluster {cluster:x}, prefix {}",
            self.prefix
        )))
    }

    async fn current_revision(&self) -> Result<Revision, StoreError> {
        header_revision(self.probe().await?.header())
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StoreError> {
        let resp = self
            .kv
            .clone()
            .get(self.full(key), None)
            .await
            .map_err(backend)?;
        resp.kvs().first().map(|kv| self.to_kv(kv)).transpose()
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResult, StoreError> {
        let full_prefix = self.full(&req.prefix);
        let start = match req.start_after.as_deref() {
            // The smallest key after `after`.
            Some(after) if after >= req.prefix.as_str() => {
                let mut start = self.full(after);
                start.push(0);
                start
            }
            _ if full_prefix.is_empty() => vec![0],
            _ => full_prefix.clone(),
        };
        let mut opts = GetOptions::new().with_range(prefix_end(&full_prefix));
        if req.limit > 0 {
            opts = opts.with_limit(i64::try_from(req.limit).unwrap_or(i64::MAX));
        }
        let at = req.revision.filter(|r| *r > 0);
        if let Some(at) = at {
            opts = opts.with_revision(at);
        }
        let resp = match self.kv.clone().get(start, Some(opts)).await {
            Ok(resp) => resp,
            Err(err) => return Err(self.revision_error(err, at.unwrap_or(0)).await),
        };
        let kvs = resp
            .kvs()
            .iter()
            .map(|kv| self.to_kv(kv))
            .collect::<Result<Vec<_>, _>>()?;
        let revision = match at {
            Some(at) => at,
            None => header_revision(resp.header())?,
        };
        Ok(RangeResult {
            kvs,
            more: resp.more(),
            revision,
        })
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StoreError> {
        crate::check_value_size(&value)?;
        let full = self.full(key);
        let len = value.len();
        let txn = Txn::new()
            .when([Compare::mod_revision(full.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(full, Vec::from(value), None)]);
        let resp = self.txn(txn, len).await?;
        if !resp.succeeded() {
            return Err(StoreError::AlreadyExists {
                key: key.to_owned(),
            });
        }
        header_revision(resp.header())
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StoreError> {
        crate::check_value_size(&value)?;
        let len = value.len();
        let put = TxnOp::put(self.full(key), Vec::from(value), None);
        self.at_version(key, expected, put, len).await
    }

    async fn delete_version(&self, key: &str, expected: Revision) -> Result<Revision, StoreError> {
        let delete = TxnOp::delete(self.full(key), None);
        self.at_version(key, expected, delete, 0).await
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(Revision, KeyValue), StoreError> {
        let full = self.full(key);
        let when = exists_at(&full, expected);
        let txn = Txn::new()
            .when(when)
            .and_then([TxnOp::delete(
                full.clone(),
                Some(DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(full, None)]);
        let resp = self.txn(txn, 0).await?;
        if !resp.succeeded() {
            return Err(refusal(key, self.current_from_else(&resp)?));
        }
        let revision = header_revision(resp.header())?;
        let prev = match resp.op_responses().into_iter().next() {
            Some(TxnOpResponse::Delete(del)) => del
                .prev_kvs()
                .first()
                .map(|kv| self.to_kv(kv))
                .transpose()?,
            _ => None,
        };
        let prev = prev.ok_or_else(|| {
            StoreError::Backend("etcd: delete answered without the previous value".into())
        })?;
        Ok((revision, prev))
    }

    async fn write_all(&self, writes: &[Write]) -> Result<Vec<Revision>, StoreError> {
        crate::check_write_all(writes)?;
        let full: Vec<Vec<u8>> = writes.iter().map(|w| self.full(w.key())).collect();
        let mut when = Vec::with_capacity(writes.len());
        let mut then = Vec::with_capacity(writes.len());
        for (f, write) in full.iter().zip(writes) {
            match write {
                Write::Create { value, .. } => {
                    when.push(Compare::mod_revision(f.clone(), CompareOp::Equal, 0));
                    then.push(TxnOp::put(f.clone(), Vec::from(value.clone()), None));
                }
                Write::Update {
                    value, expected, ..
                } => {
                    when.extend(exists_at(f, Some(*expected)));
                    then.push(TxnOp::put(f.clone(), Vec::from(value.clone()), None));
                }
                Write::Delete { expected, .. } => {
                    when.extend(exists_at(f, Some(*expected)));
                    then.push(TxnOp::delete(f.clone(), None));
                }
                Write::Exists { .. } => {
                    when.extend(exists_at(f, None));
                    // Read back for its mod revision only.
                    let keys_only = GetOptions::new().with_keys_only();
                    then.push(TxnOp::get(f.clone(), Some(keys_only)));
                }
            }
        }
        let size = writes.iter().filter_map(Write::value).map(Bytes::len).sum();
        let txn = Txn::new().when(when).and_then(then).or_else(
            full.into_iter()
                .map(|f| TxnOp::get(f, None))
                .collect::<Vec<_>>(),
        );
        let resp = self.txn(txn, size).await?;
        if resp.succeeded() {
            // One revision for the whole transaction; a key that only had to exist has its own.
            let revision = header_revision(resp.header())?;
            if !writes.iter().any(|w| matches!(w, Write::Exists { .. })) {
                return Ok(vec![revision; writes.len()]);
            }
            return Ok(resp
                .op_responses()
                .iter()
                .map(|op| match op {
                    TxnOpResponse::Get(get) => get.kvs().first().map_or(0, |kv| kv.mod_revision()),
                    _ => revision,
                })
                .collect());
        }
        // The first write whose compare failed, from the keys read in the same transaction.
        for (write, read) in writes.iter().zip(resp.op_responses()) {
            let current = match read {
                TxnOpResponse::Get(get) => {
                    get.kvs().first().map(|kv| self.to_kv(kv)).transpose()?
                }
                _ => continue,
            };
            let refused = match write {
                Write::Create { key, .. } => {
                    current.map(|_| StoreError::AlreadyExists { key: key.clone() })
                }
                Write::Update { key, expected, .. } | Write::Delete { key, expected } => {
                    match &current {
                        Some(cur) if cur.mod_revision == *expected => None,
                        _ => Some(refusal(key, current)),
                    }
                }
                Write::Exists { key } => match current {
                    Some(_) => None,
                    None => Some(StoreError::NotFound { key: key.clone() }),
                },
            };
            if let Some(refused) = refused {
                return Err(refused);
            }
        }
        Err(StoreError::Backend(
            "etcd: write_all refused without a changed key".into(),
        ))
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StoreError> {
        self.watch_with(prefix, after, true).await
    }

    async fn watch_changes(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<WatchStream, StoreError> {
        self.watch_with(prefix, after, false).await
    }

    async fn compact(&self, revision: Revision) -> Result<(), StoreError> {
        match self
            .kv
            .clone()
            .compact(revision, Some(CompactionOptions::new().with_physical()))
            .await
        {
            Ok(_) => {
                self.compacted_floor.fetch_max(revision, Ordering::AcqRel);
                Ok(())
            }
            // Already compacted at or past `revision`: nothing to do, as in the other engines.
            Err(err) if condition(&err) == Condition::Compacted => Ok(()),
            Err(err) => Err(self.revision_error(err, revision).await),
        }
    }

    /// etcd 3.4 does not report its compacted revision, so this finds the oldest readable revision by
    /// bisection with count-only reads (a few dozen cheap requests at most; it is rarely called).
    async fn compacted_revision(&self) -> Result<Revision, StoreError> {
        let floor = self.compacted_floor.load(Ordering::Acquire);
        let mut low = floor.max(1);
        if self.readable(low).await? {
            return Ok(floor);
        }
        // `low` is compacted away and the current revision is always readable.
        let mut high = self.current_revision().await?;
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            if self.readable(mid).await? {
                high = mid;
            } else {
                low = mid;
            }
        }
        self.compacted_floor.fetch_max(high, Ordering::AcqRel);
        Ok(high)
    }
}

impl EtcdStore {
    /// A read that only wants the response header.
    async fn probe(&self) -> Result<etcd_client::GetResponse, StoreError> {
        self.kv
            .clone()
            .get(self.probe_key(), Some(GetOptions::new().with_count_only()))
            .await
            .map_err(backend)
    }

    /// Runs `op` if `key` exists at mod revision `expected`; answers the write's revision, or
    /// NotFound / Conflict with the current value. (An absent key has version 0, which also keeps
    /// `expected == 0` from matching it.)
    async fn at_version(
        &self,
        key: &str,
        expected: Revision,
        op: TxnOp,
        len: usize,
    ) -> Result<Revision, StoreError> {
        let full = self.full(key);
        let txn = Txn::new()
            .when(exists_at(&full, Some(expected)))
            .and_then([op])
            .or_else([TxnOp::get(full, None)]);
        let resp = self.txn(txn, len).await?;
        if resp.succeeded() {
            return header_revision(resp.header());
        }
        Err(refusal(key, self.current_from_else(&resp)?))
    }

    async fn watch_with(
        &self,
        prefix: &str,
        after: Revision,
        prev: bool,
    ) -> Result<WatchStream, StoreError> {
        let after = after.max(0);
        // etcd 3.4 silently waits on a watch from the future; the other engines refuse it.
        let current = self.current_revision().await?;
        if after > current {
            return Err(StoreError::FutureRevision {
                requested: after,
                current,
            });
        }
        let full = self.full(prefix);
        let mut opts = WatchOptions::new()
            .with_range(prefix_end(&full))
            .with_start_revision(after + 1)
            .with_progress_notify();
        if prev {
            opts = opts.with_prev_key();
        }
        let key = if full.is_empty() { vec![0] } else { full };
        let (sender, responses) = self
            .watch
            .clone()
            .watch(key, Some(opts))
            .await
            .map_err(backend)?
            .split();
        Ok(watch::into_stream(
            sender,
            responses,
            self.prefix.clone(),
            after,
            self.progress_interval,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_increments_the_last_byte() {
        assert_eq!(prefix_end(b"/a/"), b"/a0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b""), vec![0]);
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
    }
}
