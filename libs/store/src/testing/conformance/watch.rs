//! Watches: replay with previous values, live changes, prefixes, progress, slow watchers.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;

use super::{WAIT, Watcher, b};
use crate::{Event, EventKind, KeyValue, Revision, Store, StoreError};

fn kv(key: &str, value: &str, create: Revision, modified: Revision) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: b(value),
        create_revision: create,
        mod_revision: modified,
    }
}

fn tombstone(key: &str, deleted_at: Revision) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Bytes::new(),
        create_revision: 0,
        mod_revision: deleted_at,
    }
}

pub async fn watch_replay_then_live(store: Arc<dyn Store>) {
    let r0 = store.current_revision().await.expect("revision");
    let r1 = store.create("/w/a", b("v1")).await.expect("create");
    let r2 = store.update("/w/a", b("v2"), r1).await.expect("update");
    let r3 = store.create("/w/b", b("b1")).await.expect("create");
    let (r4, _) = store.delete("/w/a", None).await.expect("delete");
    store.create("/x/c", b("elsewhere")).await.expect("create");

    let mut watcher = Watcher::new(&*store, "/w/", r0).await;
    let events = watcher.events(4).await;
    assert_eq!(
        events,
        [
            Event {
                kind: EventKind::Put,
                kv: kv("/w/a", "v1", r1, r1),
                prev: None
            },
            Event {
                kind: EventKind::Put,
                kv: kv("/w/a", "v2", r1, r2),
                prev: Some(kv("/w/a", "v1", r1, r1))
            },
            Event {
                kind: EventKind::Put,
                kv: kv("/w/b", "b1", r3, r3),
                prev: None
            },
            Event {
                kind: EventKind::Delete,
                kv: tombstone("/w/a", r4),
                prev: Some(kv("/w/a", "v2", r1, r2))
            },
        ]
    );

    // Without previous values: the same changes, `prev` left out where the engine saves a read.
    let mut changes = store.watch_changes("/w/", r0).await.expect("watch_changes");
    let mut seen = Vec::new();
    let deadline = super::deadline();
    while seen.len() < 4 {
        let resp = super::next_by(&mut changes, deadline, "watch_changes")
            .await
            .expect("watch_changes ended")
            .expect("watch_changes failed");
        seen.extend(resp.events);
    }
    assert_eq!(
        seen.iter()
            .map(|e| (e.kind.clone(), e.kv.clone()))
            .collect::<Vec<_>>(),
        events
            .iter()
            .map(|e| (e.kind.clone(), e.kv.clone()))
            .collect::<Vec<_>>()
    );

    // Then live, with no gap and no repeat.
    let r5 = store.update("/w/b", b("b2"), r3).await.expect("update");
    let events = watcher.events(1).await;
    assert_eq!(
        events,
        [Event {
            kind: EventKind::Put,
            kv: kv("/w/b", "b2", r3, r5),
            prev: Some(kv("/w/b", "b1", r3, r3))
        }]
    );

    // `after` is exclusive.
    let mut from_r2 = Watcher::new(&*store, "/w/", r2).await;
    let revisions: Vec<Revision> = from_r2
        .events(3)
        .await
        .iter()
        .map(|e| e.kv.mod_revision)
        .collect();
    assert_eq!(revisions, [r3, r4, r5]);
}

pub async fn watch_from_current(store: Arc<dyn Store>) {
    store.create("/wc/old", b("old")).await.expect("create");
    let current = store.current_revision().await.expect("revision");
    let mut watcher = Watcher::new(&*store, "/wc/", current).await;
    let rev = store.create("/wc/new", b("new")).await.expect("create");
    let events = watcher.events(1).await;
    assert_eq!(
        events,
        [Event {
            kind: EventKind::Put,
            kv: kv("/wc/new", "new", rev, rev),
            prev: None
        }]
    );
}

pub async fn watch_prefix_isolation(store: Arc<dyn Store>) {
    let current = store.current_revision().await.expect("revision");
    let mut p1 = Watcher::new(&*store, "/p1/", current).await;
    let mut p2 = Watcher::new(&*store, "/p2/", current).await;
    for key in [
        "/p10/z",
        "/p2/y",
        "/p1/x",
        "/p1",
        "/p2/sentinel",
        "/p1/sentinel",
    ] {
        store.create(key, b(key)).await.expect("create");
    }
    let keys = |events: Vec<Event>| events.into_iter().map(|e| e.kv.key).collect::<Vec<_>>();
    assert_eq!(keys(p1.events(2).await), ["/p1/x", "/p1/sentinel"]);
    assert_eq!(keys(p2.events(2).await), ["/p2/y", "/p2/sentinel"]);
}

pub async fn watch_progress(store: Arc<dyn Store>) {
    let rev = store.create("/prog/a", b("a")).await.expect("create");
    let mut watcher = Watcher::new(&*store, "/prog/", rev).await;
    let elsewhere = store.create("/elsewhere/b", b("b")).await.expect("create");
    // Progress notifications come while idle, and eventually cover changes outside the prefix.
    let mut progress = watcher.progress().await;
    assert!(progress >= rev);
    let deadline = super::deadline();
    while progress < elsewhere {
        assert!(
            tokio::time::Instant::now() < deadline,
            "progress stayed at {progress}, below {elsewhere}"
        );
        progress = watcher.progress().await;
    }
    let later = store.update("/prog/a", b("a2"), rev).await.expect("update");
    assert_eq!(watcher.events(1).await[0].kv.mod_revision, later);
}

/// A watcher that does not read while more changes arrive than its queue holds is cut off with
/// `WatchLagged` and its stream ends. Needs a store whose watch queue holds at most 16 responses.
pub async fn watch_lag(store: Arc<dyn Store>) {
    let current = store.current_revision().await.expect("revision");
    let mut stream = store.watch("/lag/", current).await.expect("watch");
    for i in 0..64 {
        store
            .create(&format!("/lag/{i}"), b("x"))
            .await
            .expect("create");
    }
    let mut delivered = 0;
    let deadline = super::deadline();
    loop {
        match super::next_by(&mut stream, deadline, "the lagging watch").await {
            Some(Ok(resp)) => delivered += resp.events.len(),
            Some(Err(StoreError::WatchLagged)) => break,
            other => panic!("expected WatchLagged, got {other:?}"),
        }
    }
    assert!(delivered < 64, "a lagging watcher got every event");
    let end = tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("timed out waiting for the end");
    assert!(
        end.is_none(),
        "the stream goes on after WatchLagged: {end:?}"
    );
    // The store itself is fine and new watches work.
    let mut watcher = Watcher::new(
        &*store,
        "/lag/",
        store.current_revision().await.expect("revision"),
    )
    .await;
    store.create("/lag/after", b("x")).await.expect("create");
    assert_eq!(watcher.events(1).await[0].kv.key, "/lag/after");
}
