//! An etcd watch turned into a [`WatchStream`]: prefix stripped, compaction mapped to
//! [`StoreError::Compacted`], and a progress request when the stream has been silent for a while
//! (etcd's own progress notifications default to every 10 minutes).
//!
//! A response with events carries the revision of its newest event, not the header revision: while a
//! watcher catches up, etcd 3.4 stamps chunks with the store's current revision although more chunks
//! follow. Progress responses carry the header revision. etcd 3.4 answers a progress request even for
//! a watcher still catching up; we only ask after a silent interval, when the watcher is caught up.

use std::time::Duration;

use bytes::Bytes;
use etcd_client::{EventType, WatchRequestSender, WatchResponseStream};
use futures::stream;

use super::errors::{Condition, backend, condition, message_condition};
use crate::{Event, EventKind, KeyValue, Revision, StoreError, WatchResponse, WatchStream};

pub(super) fn into_stream(
    sender: WatchRequestSender,
    responses: WatchResponseStream,
    prefix: String,
    after: Revision,
    progress_interval: Duration,
) -> WatchStream {
    let state = State {
        sender,
        responses,
        prefix,
        after,
        last: after,
        progress_interval,
        done: false,
    };
    Box::pin(stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item, state))
    }))
}

struct State {
    /// Kept for progress requests; dropping it would also end the watch.
    sender: WatchRequestSender,
    responses: WatchResponseStream,
    prefix: String,
    after: Revision,
    last: Revision,
    progress_interval: Duration,
    done: bool,
}

impl State {
    fn end(&mut self, err: StoreError) -> Option<Result<WatchResponse, StoreError>> {
        self.done = true;
        Some(Err(err))
    }

    async fn next(&mut self) -> Option<Result<WatchResponse, StoreError>> {
        loop {
            if self.done {
                return None;
            }
            let resp = match tokio::time::timeout(self.progress_interval, self.responses.message())
                .await
            {
                Err(_idle) => {
                    if let Err(err) = self.sender.request_progress().await {
                        return self.end(backend(err));
                    }
                    continue;
                }
                Ok(Err(err)) => {
                    let mapped = match condition(&err) {
                        Condition::Compacted => StoreError::Compacted {
                            requested: self.after + 1,
                            compacted: 0,
                        },
                        _ => backend(err),
                    };
                    return self.end(mapped);
                }
                Ok(Ok(None)) => {
                    return self.end(StoreError::Backend("etcd: the watch stream ended".into()));
                }
                Ok(Ok(Some(resp))) => resp,
            };
            if resp.canceled() {
                let err = if resp.compact_revision() > 0 {
                    StoreError::Compacted {
                        requested: self.after + 1,
                        compacted: resp.compact_revision(),
                    }
                } else if message_condition(resp.cancel_reason()) == Condition::FutureRevision {
                    let current = resp.header().map_or(0, |h| h.revision());
                    StoreError::FutureRevision {
                        requested: self.after + 1,
                        current,
                    }
                } else {
                    StoreError::Backend(format!(
                        "etcd cancelled the watch: {}",
                        resp.cancel_reason()
                    ))
                };
                return self.end(err);
            }
            if resp.created() && resp.events().is_empty() {
                continue;
            }
            let mut events = Vec::with_capacity(resp.events().len());
            for ev in resp.events() {
                match self.event(ev) {
                    Ok(event) => events.push(event),
                    Err(err) => return self.end(err),
                }
            }
            let revision = match events.last() {
                Some(event) => event.kv.mod_revision,
                None => resp.header().map_or(self.last, |h| h.revision()),
            };
            self.last = self.last.max(revision);
            return Some(Ok(WatchResponse {
                revision: self.last,
                events,
            }));
        }
    }

    fn event(&self, ev: &etcd_client::Event) -> Result<Event, StoreError> {
        let kv = ev
            .kv()
            .ok_or_else(|| StoreError::Backend("etcd: watch event without a key".into()))?;
        let kind = match ev.event_type() {
            EventType::Put => EventKind::Put,
            EventType::Delete => EventKind::Delete,
        };
        let prev = ev.prev_kv().map(|p| convert(&self.prefix, p)).transpose()?;
        Ok(Event {
            kind,
            kv: convert(&self.prefix, kv)?,
            prev,
        })
    }
}

/// A key/value from etcd with the store's prefix removed.
pub(super) fn convert(prefix: &str, kv: &etcd_client::KeyValue) -> Result<KeyValue, StoreError> {
    let key = kv
        .key()
        .strip_prefix(prefix.as_bytes())
        .ok_or_else(|| StoreError::Backend("etcd: key outside the store prefix".into()))?;
    let key = String::from_utf8(key.to_vec())
        .map_err(|_| StoreError::Backend("etcd: key is not UTF-8".into()))?;
    Ok(KeyValue {
        key,
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
    })
}
