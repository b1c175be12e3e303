//! Compaction: older reads and watches fail with `Compacted`, the state at the compacted revision stays.

use std::sync::Arc;

use super::{Watcher, b, watch_error};
use crate::{EventKind, KeyValue, RangeRequest, Revision, Store, StoreError};

fn at(prefix: &str, revision: Option<Revision>) -> RangeRequest {
    RangeRequest {
        prefix: prefix.into(),
        revision,
        ..Default::default()
    }
}

pub async fn compaction(store: Arc<dyn Store>) {
    let r1 = store.create("/c/a", b("a1")).await.expect("create");
    let r2 = store.update("/c/a", b("a2"), r1).await.expect("update");
    store.create("/c/d", b("d1")).await.expect("create");
    store.delete("/c/d", None).await.expect("delete");
    let r3 = store.create("/c/b", b("b1")).await.expect("create");
    let r4 = store.update("/c/b", b("b2"), r3).await.expect("update");

    store.compact(r3).await.expect("compact");
    assert_eq!(
        store
            .compacted_revision()
            .await
            .expect("compacted revision"),
        r3
    );

    let kv = |key: &str, value: &str, create: Revision, modified: Revision| KeyValue {
        key: key.into(),
        value: b(value),
        create_revision: create,
        mod_revision: modified,
    };
    // The state at the compacted revision and later is intact.
    let at_r3 = store
        .range(at("/c/", Some(r3)))
        .await
        .expect("range at the compacted revision");
    assert_eq!(
        at_r3.kvs,
        [kv("/c/a", "a2", r1, r2), kv("/c/b", "b1", r3, r3)]
    );
    let at_r4 = store.range(at("/c/", Some(r4))).await.expect("range");
    assert_eq!(
        at_r4.kvs,
        [kv("/c/a", "a2", r1, r2), kv("/c/b", "b2", r3, r4)]
    );
    assert_eq!(
        store.range(at("/c/", None)).await.expect("range").kvs,
        at_r4.kvs
    );

    for old in [r3 - 1, r1] {
        assert_eq!(
            store.range(at("/c/", Some(old))).await,
            Err(StoreError::Compacted {
                requested: old,
                compacted: r3
            }),
        );
    }

    // A watch that needs nothing below the compacted revision works.
    let mut watcher = Watcher::new(&*store, "/c/", r3 - 1).await;
    let events = watcher.events(2).await;
    assert_eq!(
        (events[0].kind.clone(), events[0].kv.mod_revision),
        (EventKind::Put, r3)
    );
    assert_eq!(events[1].kv, kv("/c/b", "b2", r3, r4));
    assert_eq!(events[1].prev, Some(kv("/c/b", "b1", r3, r3)));
    match watch_error(&*store, "/c/", r1).await {
        StoreError::Compacted { compacted, .. } => assert_eq!(compacted, r3),
        other => panic!("expected Compacted, got {other:?}"),
    }

    // Compacting again lower is a no-op; at the newest revision it keeps the newest state.
    store
        .compact(r2)
        .await
        .expect("compact below the compacted revision");
    assert_eq!(
        store
            .compacted_revision()
            .await
            .expect("compacted revision"),
        r3
    );
    let current = store.current_revision().await.expect("revision");
    store
        .compact(current)
        .await
        .expect("compact at the current revision");
    assert_eq!(
        store
            .compacted_revision()
            .await
            .expect("compacted revision"),
        current
    );
    assert_eq!(
        store
            .range(at("/c/", Some(current)))
            .await
            .expect("range")
            .kvs,
        at_r4.kvs
    );
    assert_eq!(
        store.get("/c/a").await.expect("get"),
        Some(kv("/c/a", "a2", r1, r2))
    );

    // Writes and watches go on.
    let r5 = store
        .update("/c/a", b("a3"), r2)
        .await
        .expect("update after compaction");
    let events = watcher.events(1).await;
    assert_eq!(events[0].kv, kv("/c/a", "a3", r1, r5));
    assert_eq!(events[0].prev, Some(kv("/c/a", "a2", r1, r2)));
    let (r6, _) = store
        .delete("/c/b", None)
        .await
        .expect("delete after compaction");
    store.compact(r6).await.expect("compact");
    assert_eq!(
        store.range(at("/c/", None)).await.expect("range").kvs,
        [kv("/c/a", "a3", r1, r5)]
    );
    assert!(matches!(
        store.compact(r6 + 1000).await,
        Err(StoreError::FutureRevision { requested, .. }) if requested == r6 + 1000
    ));
}
