//! `MemoryStore`: the whole MVCC history in `BTreeMap`s behind one lock. For tests and throwaway
//! shards; it mirrors the table layout of the redb engine (current keys, versions by (key, revision), a
//! revision-ordered log) so both behave the same.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use crate::fanout::{ReadyReplay, WatchHub, replay_responses, watch_stream};
use crate::{
    Event, KeyValue, RangeRequest, RangeResult, Revision, Store, StoreError, WatchConfig,
    WatchStream, Write,
};

/// An in-memory [`Store`]. Cheap to clone; clones share the same data.
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    hub: Arc<WatchHub>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.hub.close();
    }
}

/// One version of a key; `value == None` is the tombstone of a delete.
struct Version {
    create_revision: Revision,
    prev_mod_revision: Revision,
    value: Option<Bytes>,
}

#[derive(Default)]
struct State {
    revision: Revision,
    compacted: Revision,
    current: BTreeMap<String, KeyValue>,
    history: BTreeMap<(String, Revision), Version>,
    log: BTreeMap<Revision, String>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::with_watch_config(WatchConfig::default())
    }

    pub fn with_watch_config(config: WatchConfig) -> Self {
        MemoryStore {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                hub: Arc::new(WatchHub::new(config, 0)),
            }),
        }
    }

    /// Applies one write under the lock and publishes its event before releasing it, so watchers
    /// registering concurrently see either the history or the live event, never neither.
    fn write<T>(
        &self,
        apply: impl FnOnce(&mut State) -> Result<(T, Event), StoreError>,
    ) -> Result<T, StoreError> {
        self.write_events(|state| apply(state).map(|(out, event)| (out, vec![event])))
    }

    /// [`MemoryStore::write`] of several events under one lock, published together.
    fn write_events<T>(
        &self,
        apply: impl FnOnce(&mut State) -> Result<(T, Vec<Event>), StoreError>,
    ) -> Result<T, StoreError> {
        let mut state = self.inner.state.lock();
        let (out, events) = apply(&mut state)?;
        for event in &events {
            state
                .log
                .insert(event.kv.mod_revision, event.kv.key.clone());
        }
        self.inner.hub.publish(state.revision, &events);
        Ok(out)
    }
}

fn start_bound(req: &RangeRequest) -> Bound<&str> {
    match req.start_after.as_deref() {
        Some(after) if after >= req.prefix.as_str() => Bound::Excluded(after),
        _ => Bound::Included(req.prefix.as_str()),
    }
}

/// A write whose precondition held: what making it takes.
enum Checked<'w> {
    /// A create (no `prev`) or an update.
    Put {
        key: &'w str,
        value: &'w Bytes,
        prev: Option<KeyValue>,
    },
    /// A deletion of this live value.
    Remove(KeyValue),
    /// A key that had to exist: nothing to write.
    Present(KeyValue),
}

impl State {
    /// `key`'s live value, if it is at mod revision `expected` (when given).
    fn live_at(&self, key: &str, expected: Option<Revision>) -> Result<KeyValue, StoreError> {
        match self.current.get(key) {
            None => Err(StoreError::NotFound {
                key: key.to_owned(),
            }),
            Some(cur) if expected.is_some_and(|e| e != cur.mod_revision) => {
                Err(StoreError::Conflict {
                    key: key.to_owned(),
                    current: Some(cur.clone()),
                })
            }
            Some(cur) => Ok(cur.clone()),
        }
    }

    /// Checks `write`'s precondition: answers what making it takes.
    fn check<'w>(&self, write: &'w Write) -> Result<Checked<'w>, StoreError> {
        Ok(match write {
            Write::Create { key, .. } if self.current.contains_key(key) => {
                return Err(StoreError::AlreadyExists { key: key.clone() });
            }
            Write::Create { key, value } => Checked::Put {
                key,
                value,
                prev: None,
            },
            Write::Update {
                key,
                value,
                expected,
            } => Checked::Put {
                key,
                value,
                prev: Some(self.live_at(key, Some(*expected))?),
            },
            Write::Delete { key, expected } => Checked::Remove(self.live_at(key, Some(*expected))?),
            Write::Exists { key } => Checked::Present(self.live_at(key, None)?),
        })
    }

    /// Makes a checked write at the next revision; answers its event (none for a key that only
    /// had to exist).
    fn perform(&mut self, checked: Checked<'_>) -> Option<Event> {
        let (key, value, prev) = match checked {
            Checked::Remove(prev) => return Some(self.remove(prev)),
            Checked::Present(_) => return None,
            Checked::Put { key, value, prev } => (key, value, prev),
        };
        self.revision += 1;
        let rev = self.revision;
        let create_revision = prev.as_ref().map_or(rev, |p| p.create_revision);
        let kv = KeyValue {
            key: key.to_owned(),
            value: value.clone(),
            create_revision,
            mod_revision: rev,
        };
        self.current.insert(key.to_owned(), kv);
        self.history.insert(
            (key.to_owned(), rev),
            Version {
                create_revision,
                prev_mod_revision: prev.as_ref().map_or(0, |p| p.mod_revision),
                value: Some(value.clone()),
            },
        );
        Some(Event::of_write(
            key,
            Some(value.clone()),
            create_revision,
            rev,
            prev,
        ))
    }

    /// [`State::check`] and [`State::perform`] of one create or update; answers its revision and
    /// event.
    fn apply(&mut self, write: &Write) -> Result<(Revision, Event), StoreError> {
        let checked = self.check(write)?;
        let event = self.perform(checked).ok_or_else(|| {
            StoreError::Backend("memory store: a write that wrote nothing".into())
        })?;
        Ok((event.kv.mod_revision, event))
    }

    /// Deletes the live `prev` at the next revision; answers the deletion's event.
    fn remove(&mut self, prev: KeyValue) -> Event {
        self.revision += 1;
        let rev = self.revision;
        self.current.remove(&prev.key);
        self.history.insert(
            (prev.key.clone(), rev),
            Version {
                create_revision: 0,
                prev_mod_revision: prev.mod_revision,
                value: None,
            },
        );
        let mut event = Event::of_write(&prev.key, None, 0, rev, None);
        event.prev = Some(prev);
        event
    }

    fn check_revision(&self, requested: Revision) -> Result<(), StoreError> {
        if requested > self.revision {
            return Err(StoreError::FutureRevision {
                requested,
                current: self.revision,
            });
        }
        if requested < self.compacted {
            return Err(StoreError::Compacted {
                requested,
                compacted: self.compacted,
            });
        }
        Ok(())
    }

    /// The key as of revision `at`, from the history.
    fn version_at(&self, key: &str, at: Revision) -> Option<KeyValue> {
        let (&(_, rev), version) = self
            .history
            .range((key.to_owned(), Revision::MIN)..=(key.to_owned(), at))
            .next_back()?;
        let value = version.value.clone()?;
        Some(KeyValue {
            key: key.to_owned(),
            value,
            create_revision: version.create_revision,
            mod_revision: rev,
        })
    }

    fn range_current(&self, req: &RangeRequest) -> (Vec<KeyValue>, bool) {
        let mut kvs = Vec::new();
        let mut iter = self
            .current
            .range::<str, _>((start_bound(req), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(req.prefix.as_str()));
        for (_, kv) in iter.by_ref() {
            if req.limit > 0 && kvs.len() == req.limit {
                return (kvs, true);
            }
            kvs.push(kv.clone());
        }
        (kvs, false)
    }

    /// Range at an older revision: visit each distinct key of the history once and take its newest
    /// version at or below `at`.
    fn range_at(&self, req: &RangeRequest, at: Revision) -> (Vec<KeyValue>, bool) {
        let mut kvs = Vec::new();
        let mut lower = match start_bound(req) {
            Bound::Excluded(after) => Bound::Excluded((after.to_owned(), Revision::MAX)),
            _ => Bound::Included((req.prefix.clone(), Revision::MIN)),
        };
        while let Some(((key, _), _)) = self.history.range((lower, Bound::Unbounded)).next() {
            if !key.starts_with(req.prefix.as_str()) {
                break;
            }
            if let Some(kv) = self.version_at(key, at) {
                if req.limit > 0 && kvs.len() == req.limit {
                    return (kvs, true);
                }
                kvs.push(kv);
            }
            lower = Bound::Excluded((key.clone(), Revision::MAX));
        }
        (kvs, false)
    }

    /// The event written at `rev` (which must still be in the log).
    fn event_at(&self, rev: Revision, key: &str) -> Option<Event> {
        let version = self.history.get(&(key.to_owned(), rev))?;
        let prev = (version.prev_mod_revision > 0)
            .then(|| self.version_at(key, version.prev_mod_revision))
            .flatten()
            .filter(|kv| kv.mod_revision == version.prev_mod_revision);
        Some(Event::of_write(
            key,
            version.value.clone(),
            version.create_revision,
            rev,
            prev,
        ))
    }

    /// Drops every version below `to` that no read at `to` or later can see, and the log below `to`.
    fn compact(&mut self, to: Revision) {
        let below: Vec<(Revision, String)> =
            self.log.range(..to).map(|(r, k)| (*r, k.clone())).collect();
        for (rev, key) in below {
            // Versions older than this one are superseded by it, and it is older than `to`.
            let older: Vec<(String, Revision)> = self
                .history
                .range((key.clone(), Revision::MIN)..(key.clone(), rev))
                .map(|(k, _)| k.clone())
                .collect();
            for k in older {
                self.history.remove(&k);
            }
            if self
                .history
                .get(&(key.clone(), rev))
                .is_some_and(|v| v.value.is_none())
            {
                self.history.remove(&(key.clone(), rev));
            }
            self.log.remove(&rev);
        }
        self.compacted = to;
    }
}

#[async_trait::async_trait]
impl Store for MemoryStore {
    async fn current_revision(&self) -> Result<Revision, StoreError> {
        Ok(self.inner.state.lock().revision)
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StoreError> {
        Ok(self.inner.state.lock().current.get(key).cloned())
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResult, StoreError> {
        let state = self.inner.state.lock();
        let (kvs, more, revision) = match req.revision.filter(|r| *r > 0) {
            Some(at) if at != state.revision => {
                state.check_revision(at)?;
                let (kvs, more) = state.range_at(&req, at);
                (kvs, more, at)
            }
            _ => {
                let (kvs, more) = state.range_current(&req);
                (kvs, more, state.revision)
            }
        };
        Ok(RangeResult {
            kvs,
            more,
            revision,
        })
    }

    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StoreError> {
        crate::check_value_size(&value)?;
        let key = key.to_owned();
        self.write(|state| state.apply(&Write::Create { key, value }))
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StoreError> {
        crate::check_value_size(&value)?;
        let key = key.to_owned();
        self.write(|state| {
            state.apply(&Write::Update {
                key,
                value,
                expected,
            })
        })
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(Revision, KeyValue), StoreError> {
        self.write(|state| {
            let prev = state.live_at(key, expected)?;
            let event = state.remove(prev.clone());
            Ok(((event.kv.mod_revision, prev), event))
        })
    }

    async fn write_all(&self, writes: &[Write]) -> Result<Vec<Revision>, StoreError> {
        crate::check_write_all(writes)?;
        self.write_events(|state| {
            let checked = writes
                .iter()
                .map(|w| state.check(w))
                .collect::<Result<Vec<_>, _>>()?;
            let mut revisions = Vec::with_capacity(checked.len());
            let mut events = Vec::with_capacity(checked.len());
            for c in checked {
                if let Checked::Present(kv) = &c {
                    revisions.push(kv.mod_revision);
                } else if let Some(event) = state.perform(c) {
                    revisions.push(event.kv.mod_revision);
                    events.push(event);
                }
            }
            Ok((revisions, events))
        })
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StoreError> {
        let after = after.max(0);
        let state = self.inner.state.lock();
        if after > state.revision {
            return Err(StoreError::FutureRevision {
                requested: after,
                current: state.revision,
            });
        }
        if after + 1 < state.compacted {
            return Err(StoreError::Compacted {
                requested: after + 1,
                compacted: state.compacted,
            });
        }
        let events: Vec<Event> = state
            .log
            .range(after + 1..)
            .filter(|(_, key)| key.starts_with(prefix))
            .filter_map(|(rev, key)| state.event_at(*rev, key))
            .collect();
        // Subscribing under the state lock: writes publish under it too, so nothing falls in between.
        let (sub, upto) = self.inner.hub.subscribe(prefix);
        drop(state);
        Ok(watch_stream(
            ReadyReplay(replay_responses(events, upto)),
            self.inner.hub.clone(),
            sub,
            upto,
        ))
    }

    async fn compact(&self, revision: Revision) -> Result<(), StoreError> {
        let mut state = self.inner.state.lock();
        if revision > state.revision {
            return Err(StoreError::FutureRevision {
                requested: revision,
                current: state.revision,
            });
        }
        if revision > state.compacted {
            state.compact(revision);
        }
        Ok(())
    }

    async fn compacted_revision(&self) -> Result<Revision, StoreError> {
        Ok(self.inner.state.lock().compacted)
    }
}
