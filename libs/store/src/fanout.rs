//! In-process fan-out of committed changes to watchers (memory and redb engines).
//!
//! Each watcher owns a bounded queue. The writer never waits for a watcher: when a queue is full the
//! watcher is dropped from the hub and its stream ends with [`StoreError::WatchLagged`], so a slow
//! consumer costs at most `queue_len` responses of memory.
//!
//! A watch is "replay, then live" without gap or duplicate: the watcher subscribes and reads the hub's
//! revision `X` under the same lock the writer holds while publishing, so every change up to `X` is in
//! the engine's history (replayed) and every change after `X` lands in the queue.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use futures::stream;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::{TryRecvError, TrySendError};

use crate::{Event, Revision, StoreError, WatchResponse, WatchStream};

/// Limits of the in-process watchers of the memory and redb engines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchConfig {
    /// Responses a watcher may have waiting before it is cut off with [`StoreError::WatchLagged`].
    pub queue_len: usize,
    /// How long a watch stays silent before it gets a progress notification.
    pub progress_interval: Duration,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            queue_len: 1024,
            progress_interval: Duration::from_secs(2),
        }
    }
}

/// Past events handed to a new watcher before it switches to live ones.
pub(crate) trait Replay: Send + 'static {
    /// The next response of the replay, `None` once the replay is complete.
    fn next_response(
        &mut self,
    ) -> impl Future<Output = Option<Result<WatchResponse, StoreError>>> + Send;
}

/// The registry of live watchers and the newest published revision.
pub(crate) struct WatchHub {
    config: WatchConfig,
    current: AtomicI64,
    closed: AtomicBool,
    watchers: Mutex<Vec<Slot>>,
}

struct Slot {
    prefix: String,
    tx: mpsc::Sender<WatchResponse>,
    lagged: Arc<AtomicBool>,
}

/// A watcher's end of its queue.
pub(crate) struct Subscription {
    rx: mpsc::Receiver<WatchResponse>,
    lagged: Arc<AtomicBool>,
}

impl WatchHub {
    pub(crate) fn new(config: WatchConfig, current: Revision) -> Self {
        WatchHub {
            config,
            current: AtomicI64::new(current),
            closed: AtomicBool::new(false),
            watchers: Mutex::new(Vec::new()),
        }
    }

    /// The newest revision whose changes every watcher has been handed.
    pub(crate) fn current(&self) -> Revision {
        self.current.load(Ordering::Acquire)
    }

    /// Hands the changes of a committed batch (ending at `revision`) to every interested watcher.
    pub(crate) fn publish(&self, revision: Revision, events: &[Event]) {
        let mut watchers = self.watchers.lock();
        if !events.is_empty() {
            watchers.retain(|slot| {
                let matching: Vec<Event> = events
                    .iter()
                    .filter(|e| e.kv.key.starts_with(slot.prefix.as_str()))
                    .cloned()
                    .collect();
                if matching.is_empty() {
                    return !slot.tx.is_closed();
                }
                match slot.tx.try_send(WatchResponse {
                    revision,
                    events: matching,
                }) {
                    Ok(()) => true,
                    Err(TrySendError::Full(_)) => {
                        slot.lagged.store(true, Ordering::Release);
                        false
                    }
                    Err(TrySendError::Closed(_)) => false,
                }
            });
        }
        // Stored while holding the lock and after the sends, so a watcher that reads `current` and then
        // finds its queue empty knows nothing up to `current` is still on the way (progress notifications).
        self.current.store(revision, Ordering::Release);
    }

    /// Registers a watcher of `prefix`. Returns its queue and the revision it starts after: every
    /// change above that revision will be queued.
    pub(crate) fn subscribe(&self, prefix: &str) -> (Subscription, Revision) {
        let mut watchers = self.watchers.lock();
        let (tx, rx) = mpsc::channel(self.config.queue_len.max(1));
        let lagged = Arc::new(AtomicBool::new(false));
        watchers.push(Slot {
            prefix: prefix.to_owned(),
            tx,
            lagged: lagged.clone(),
        });
        (Subscription { rx, lagged }, self.current())
    }

    /// Ends every watch (the store is going away).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.watchers.lock().clear();
    }
}

/// A watch stream: the replay, then the live queue (starting after `live_after`), with progress
/// notifications while idle.
pub(crate) fn watch_stream<R: Replay>(
    replay: R,
    hub: Arc<WatchHub>,
    sub: Subscription,
    live_after: Revision,
) -> WatchStream {
    let state = State {
        replay: Some(replay),
        hub,
        sub,
        last: live_after,
        done: false,
    };
    Box::pin(stream::unfold(state, |mut state| async move {
        let item = state.next().await?;
        Some((item, state))
    }))
}

struct State<R> {
    replay: Option<R>,
    hub: Arc<WatchHub>,
    sub: Subscription,
    /// The revision the watcher has been brought up to.
    last: Revision,
    done: bool,
}

impl<R: Replay> State<R> {
    async fn next(&mut self) -> Option<Result<WatchResponse, StoreError>> {
        if self.done {
            return None;
        }
        if let Some(replay) = self.replay.as_mut() {
            match replay.next_response().await {
                Some(Ok(resp)) => return Some(Ok(resp)),
                Some(Err(err)) => {
                    self.done = true;
                    return Some(Err(err));
                }
                None => self.replay = None,
            }
        }
        loop {
            let received =
                match tokio::time::timeout(self.hub.config.progress_interval, self.sub.rx.recv())
                    .await
                {
                    Ok(received) => received,
                    Err(_idle) => {
                        // Read the revision before looking at the queue: see `WatchHub::publish`.
                        let current = self.hub.current();
                        match self.sub.rx.try_recv() {
                            Ok(resp) => Some(resp),
                            Err(TryRecvError::Empty) => {
                                self.last = self.last.max(current);
                                return Some(Ok(WatchResponse {
                                    revision: self.last,
                                    events: Vec::new(),
                                }));
                            }
                            Err(TryRecvError::Disconnected) => None,
                        }
                    }
                };
            let Some(mut resp) = received else {
                self.done = true;
                if self.sub.lagged.load(Ordering::Acquire) {
                    return Some(Err(StoreError::WatchLagged));
                }
                if self.hub.closed.load(Ordering::Acquire) {
                    return Some(Err(StoreError::Backend("store closed".into())));
                }
                return None;
            };
            let last = self.last;
            resp.events.retain(|e| e.kv.mod_revision > last);
            if resp.events.is_empty() {
                continue;
            }
            self.last = self.last.max(resp.revision);
            return Some(Ok(resp));
        }
    }
}

/// A replay that is already in memory.
pub(crate) struct ReadyReplay(pub(crate) std::collections::VecDeque<WatchResponse>);

impl Replay for ReadyReplay {
    async fn next_response(&mut self) -> Option<Result<WatchResponse, StoreError>> {
        self.0.pop_front().map(Ok)
    }
}

/// Splits replayed events (one per revision, in order) into responses of bounded size; the last one
/// carries `upto`, the revision the replay brings the watcher to.
pub(crate) fn replay_responses(
    events: Vec<Event>,
    upto: Revision,
) -> std::collections::VecDeque<WatchResponse> {
    const EVENTS_PER_RESPONSE: usize = 512;
    let mut out = std::collections::VecDeque::new();
    let mut events = events.into_iter().peekable();
    while events.peek().is_some() {
        let chunk: Vec<Event> = events.by_ref().take(EVENTS_PER_RESPONSE).collect();
        let revision = if events.peek().is_none() {
            upto
        } else {
            chunk.last().map_or(upto, |e| e.kv.mod_revision)
        };
        out.push_back(WatchResponse {
            revision,
            events: chunk,
        });
    }
    out
}
