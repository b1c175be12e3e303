//! A controller's view of one resource across every logical cluster of the shard: the live events of
//! the watch cache, and a resync signal whenever the subscription was cut off (the cache reloaded from
//! the store, or the controller fell behind), after which the controller re-reads what it needs.

use std::sync::Arc;
use std::time::Duration;

use kcp_apiserver::watch_cache::{CacheEvent, Scope, Subscription, WatchCache, WatchItem};

/// How long to wait before subscribing again after the cache refused (it only refuses resumes).
const RESUBSCRIBE_DELAY: Duration = Duration::from_secs(1);

pub enum Change {
    Event(Arc<CacheEvent>),
    /// Events may have been missed: look at everything again.
    Resync,
}

pub struct Feed {
    cache: Arc<WatchCache>,
    prefix: String,
    sub: Option<Subscription>,
}

impl Feed {
    /// Subscribes at once, so anything listed after this call is followed without a gap.
    pub fn new(cache: Arc<WatchCache>, prefix: &str) -> Feed {
        let mut feed = Feed {
            cache,
            prefix: prefix.to_string(),
            sub: None,
        };
        feed.subscribe();
        feed
    }

    fn subscribe(&mut self) {
        let scope = Scope {
            cluster: None,
            namespace: None,
        };
        self.sub = match self.cache.subscribe(&self.prefix, scope, None) {
            Ok(sub) => Some(sub),
            Err(err) => {
                tracing::warn!(prefix = %self.prefix, error = %err, "cannot watch; retrying");
                None
            }
        };
    }

    /// The next change; cancel-safe.
    pub async fn next(&mut self) -> Change {
        loop {
            let Some(sub) = self.sub.as_mut() else {
                tokio::time::sleep(RESUBSCRIBE_DELAY).await;
                self.subscribe();
                if self.sub.is_some() {
                    return Change::Resync;
                }
                continue;
            };
            match sub.rx.recv().await {
                Some(WatchItem::Event(event)) => return Change::Event(event),
                Some(WatchItem::Progress(_)) => {}
                None => {
                    self.subscribe();
                    return Change::Resync;
                }
            }
        }
    }

    /// A change already queued, without waiting.
    pub fn try_next(&mut self) -> Option<Change> {
        let sub = self.sub.as_mut()?;
        loop {
            match sub.rx.try_recv() {
                Ok(WatchItem::Event(event)) => return Some(Change::Event(event)),
                Ok(WatchItem::Progress(_)) => {}
                Err(tokio::sync::mpsc::error::TryRecvError::Empty) => return None,
                Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => {
                    self.subscribe();
                    return Some(Change::Resync);
                }
            }
        }
    }
}
