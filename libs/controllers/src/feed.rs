//! A controller's view of one resource across every logical cluster of the shard: the live events of
//! the watch cache, and a resync signal whenever the subscription was cut off (the cache reloaded from
//! the store, or the controller fell behind), after which the controller re-reads what it needs.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use kcp_apiserver::watch_cache::{CacheEvent, Scope, Subscription, WatchCache, WatchItem};
use tokio_util::sync::CancellationToken;

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

type Handler = Box<dyn FnMut(Change) + Send>;

/// The feeds of one controller, each with what to do with its changes, read by one task: the
/// loop every controller would otherwise write around `tokio::select!`.
#[derive(Default)]
pub struct Feeds {
    feeds: Vec<Feed>,
    handlers: Vec<Handler>,
    /// Where the next poll starts, so a busy feed cannot starve the ones after it.
    first: usize,
}

impl Feeds {
    pub fn new() -> Feeds {
        Feeds::default()
    }

    /// Adds `feed`, whose changes go to `handler`.
    pub fn on(mut self, feed: Feed, handler: impl FnMut(Change) + Send + 'static) -> Feeds {
        self.feeds.push(feed);
        self.handlers.push(Box::new(handler));
        self
    }

    /// Runs `start` (the first full listing), then hands every change to its handler until
    /// `stop` is cancelled.
    pub fn spawn(mut self, stop: CancellationToken, start: impl FnOnce() + Send + 'static) {
        tokio::spawn(async move {
            start();
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    (i, change) = self.next() => (self.handlers[i])(change),
                }
            }
        });
    }

    /// The next change of any feed, with the feed's index; cancel-safe like [`Feed::next`].
    async fn next(&mut self) -> (usize, Change) {
        let n = self.feeds.len();
        if n == 0 {
            return std::future::pending().await;
        }
        let first = self.first % n;
        self.first = self.first.wrapping_add(1);
        let mut pending: Vec<_> = self.feeds.iter_mut().map(|f| Box::pin(f.next())).collect();
        std::future::poll_fn(|cx| {
            for k in 0..n {
                let i = (first + k) % n;
                if let Poll::Ready(change) = pending[i].as_mut().poll(cx) {
                    return Poll::Ready((i, change));
                }
            }
            Poll::Pending
        })
        .await
    }
}
