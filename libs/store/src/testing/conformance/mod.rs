//! The conformance suite every engine passes. [`run_all`] runs each case against a fresh store from the
//! factory, one case at a time (with etcd, compaction is global, so cases must not overlap).
//!
//! Cases only rely on what the contract promises: revisions strictly increase (etcd may skip numbers),
//! nothing about their absolute values.

mod compaction;
mod concurrency;
mod kv;
mod model;
mod range;
mod watch;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::future::BoxFuture;

use crate::{Event, Revision, Store, StoreError, WatchStream};

pub use self::compaction::compaction;
pub use self::concurrency::concurrent_cas;
pub use self::kv::{crud_and_cas, revisions_and_future, write_all};
pub use self::model::{randomized_against_model, randomized_with_compaction};
pub use self::range::{large_values, range_at_revision, range_pagination};
pub use self::watch::{
    watch_from_current, watch_lag, watch_prefix_isolation, watch_progress, watch_replay_then_live,
};

/// One conformance case.
pub type Case = fn(Arc<dyn Store>) -> BoxFuture<'static, ()>;

/// Every case [`run_all`] runs, by name. (`watch_lag` is separate: it needs a store built with a small
/// watch queue, and etcd's own flow control has no such cut-off.)
pub const CASES: &[(&str, Case)] = &[
    ("crud_and_cas", |s| Box::pin(crud_and_cas(s))),
    ("write_all", |s| Box::pin(write_all(s))),
    ("revisions_and_future", |s| {
        Box::pin(revisions_and_future(s))
    }),
    ("range_pagination", |s| Box::pin(range_pagination(s))),
    ("range_at_revision", |s| Box::pin(range_at_revision(s))),
    ("large_values", |s| Box::pin(large_values(s))),
    ("watch_replay_then_live", |s| {
        Box::pin(watch_replay_then_live(s))
    }),
    ("watch_from_current", |s| Box::pin(watch_from_current(s))),
    ("watch_prefix_isolation", |s| {
        Box::pin(watch_prefix_isolation(s))
    }),
    ("watch_progress", |s| Box::pin(watch_progress(s))),
    ("compaction", |s| Box::pin(compaction(s))),
    ("concurrent_cas", |s| Box::pin(concurrent_cas(s))),
    ("randomized_against_model", |s| {
        Box::pin(randomized_against_model(s))
    }),
    ("randomized_with_compaction", |s| {
        Box::pin(randomized_with_compaction(s))
    }),
];

/// Runs every case of [`CASES`] against a fresh store from `factory`, in order. Panics on the first
/// failure, naming the case.
pub async fn run_all<F, Fut>(mut factory: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Arc<dyn Store>>,
{
    for (name, case) in CASES {
        let store = factory().await;
        let started = std::time::Instant::now();
        eprintln!("conformance: {name} ...");
        case(store).await;
        eprintln!(
            "conformance: {name} ok ({} ms)",
            started.elapsed().as_millis()
        );
    }
}

/// How long a case waits for something that should happen promptly.
pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// When a wait that starts now must be over: a whole wait, so progress notifications (etcd sends
/// them every few seconds) cannot keep a case that waits for events alive forever.
pub(crate) fn deadline() -> tokio::time::Instant {
    tokio::time::Instant::now() + WAIT
}

/// The next item of `stream`, failing the case with `what` once `deadline` has passed.
pub(crate) async fn next_by(
    stream: &mut WatchStream,
    deadline: tokio::time::Instant,
    what: &str,
) -> Option<Result<crate::WatchResponse, StoreError>> {
    tokio::time::timeout_at(deadline, stream.next())
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

pub(crate) fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

/// A watch under test: checks that revisions never go backwards.
pub struct Watcher {
    stream: WatchStream,
    last: Revision,
}

impl Watcher {
    pub async fn new(store: &dyn Store, prefix: &str, after: Revision) -> Watcher {
        let stream = store.watch(prefix, after).await.expect("watch");
        Watcher {
            stream,
            last: after,
        }
    }

    async fn next(&mut self, deadline: tokio::time::Instant) -> crate::WatchResponse {
        let item = next_by(&mut self.stream, deadline, "the watch").await;
        let resp = item.expect("the watch ended").expect("the watch failed");
        // Events of one etcd transaction share its revision, and come in one response.
        let floor = self.last;
        for event in &resp.events {
            assert!(
                event.kv.mod_revision > floor && event.kv.mod_revision >= self.last,
                "event {event:?} not after revision {floor}, or before the one before it"
            );
            assert!(
                resp.revision >= event.kv.mod_revision,
                "response revision below its events: {resp:?}"
            );
            self.last = event.kv.mod_revision;
        }
        assert!(
            resp.revision >= self.last,
            "watch revision went backwards: {resp:?}"
        );
        self.last = resp.revision;
        resp
    }

    /// Exactly the next `n` events, skipping progress notifications.
    pub async fn events(&mut self, n: usize) -> Vec<Event> {
        let deadline = deadline();
        let mut events = Vec::new();
        while events.len() < n {
            events.extend(self.next(deadline).await.events);
        }
        assert_eq!(events.len(), n, "more events than expected: {events:#?}");
        events
    }

    /// Waits for a progress notification and returns its revision.
    pub async fn progress(&mut self) -> Revision {
        let resp = self.next(deadline()).await;
        assert!(
            resp.events.is_empty(),
            "unexpected events while waiting for progress: {resp:?}"
        );
        resp.revision
    }
}

/// The error a watch from `after` fails with, in the call or as the stream's first item.
pub async fn watch_error(store: &dyn Store, prefix: &str, after: Revision) -> StoreError {
    let mut stream = match store.watch(prefix, after).await {
        Err(err) => return err,
        Ok(stream) => stream,
    };
    let deadline = deadline();
    loop {
        match next_by(&mut stream, deadline, "the watch error").await {
            Some(Err(err)) => return err,
            Some(Ok(resp)) if resp.events.is_empty() => continue,
            Some(Ok(resp)) => panic!("expected the watch to fail, got {resp:?}"),
            None => panic!("the watch ended without an error"),
        }
    }
}
