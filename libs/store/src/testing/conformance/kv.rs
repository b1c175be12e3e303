//! Single-key reads and writes: preconditions, errors and revisions.

use std::sync::Arc;

use bytes::Bytes;

use super::{Watcher, b, watch_error};
use crate::{
    EventKind, KeyValue, MAX_VALUE_BYTES, MAX_WRITE_ALL, RangeRequest, Store, StoreError, Write,
};

fn not_found<T>(key: &str) -> Result<T, StoreError> {
    Err(StoreError::NotFound { key: key.into() })
}

pub async fn crud_and_cas(store: Arc<dyn Store>) {
    let key = "/crud/a";

    let r1 = store.create(key, b("v1")).await.expect("create");
    assert!(r1 > 0);
    assert_eq!(
        store.create(key, b("again")).await,
        Err(StoreError::AlreadyExists { key: key.into() })
    );
    let v1 = KeyValue {
        key: key.into(),
        value: b("v1"),
        create_revision: r1,
        mod_revision: r1,
    };
    assert_eq!(store.get(key).await.expect("get"), Some(v1));
    assert_eq!(store.get("/crud/missing").await.expect("get"), None);

    let r2 = store.update(key, b("v2"), r1).await.expect("update");
    assert!(r2 > r1);
    let v2 = KeyValue {
        key: key.into(),
        value: b("v2"),
        create_revision: r1,
        mod_revision: r2,
    };
    assert_eq!(store.get(key).await.expect("get"), Some(v2.clone()));

    // A failed precondition reports the current value and writes nothing.
    let before = store.current_revision().await.expect("revision");
    assert_eq!(
        store.update(key, b("v3"), r1).await,
        Err(StoreError::Conflict {
            key: key.into(),
            current: Some(v2.clone())
        })
    );
    assert_eq!(
        store.update("/crud/missing", b("x"), r2).await,
        not_found("/crud/missing")
    );
    assert_eq!(
        store.update("/crud/missing", b("x"), 0).await,
        not_found("/crud/missing")
    );
    assert_eq!(
        store.delete(key, Some(r1)).await,
        Err(StoreError::Conflict {
            key: key.into(),
            current: Some(v2.clone())
        })
    );
    assert_eq!(
        store.current_revision().await.expect("revision"),
        before,
        "failed writes took a revision"
    );
    assert_eq!(store.get(key).await.expect("get"), Some(v2.clone()));

    let (r3, deleted) = store.delete(key, Some(r2)).await.expect("delete");
    assert!(r3 > r2);
    assert_eq!(deleted, v2);
    assert_eq!(store.get(key).await.expect("get"), None);
    assert!(matches!(
        store.delete(key, None).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.delete(key, Some(r2)).await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(store.update(key, b("v4"), r2).await, not_found(key));

    // Re-creating a deleted key starts a new life: a new create revision.
    let r4 = store.create(key, b("v5")).await.expect("re-create");
    assert!(r4 > r3);
    let v5 = KeyValue {
        key: key.into(),
        value: b("v5"),
        create_revision: r4,
        mod_revision: r4,
    };
    assert_eq!(store.get(key).await.expect("get"), Some(v5.clone()));
    let (r5, deleted) = store.delete(key, None).await.expect("unconditional delete");
    assert!(r5 > r4);
    assert_eq!(deleted, v5);
    assert!(store.current_revision().await.expect("revision") >= r5);

    // A delete of a known version answers its revision only, and refuses as `delete` does.
    let r7 = store.create(key, b("v7")).await.expect("create again");
    let v7 = KeyValue {
        key: key.into(),
        value: b("v7"),
        create_revision: r7,
        mod_revision: r7,
    };
    assert_eq!(
        store.delete_version(key, r5).await,
        Err(StoreError::Conflict {
            key: key.into(),
            current: Some(v7)
        })
    );
    let r8 = store.delete_version(key, r7).await.expect("delete_version");
    assert!(r8 > r7);
    assert_eq!(store.get(key).await.expect("get"), None);
    assert!(matches!(
        store.delete_version(key, r7).await,
        Err(StoreError::NotFound { .. })
    ));
    // Revision 0 is a missing key's: a write "at" it neither creates nor finds anything.
    let never = "/crud/never";
    assert_eq!(store.update(never, b("x"), 0).await, not_found(never));
    assert!(matches!(
        store.delete_version(never, 0).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.delete(never, Some(0)).await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(store.get(never).await.expect("get"), None);

    // Empty values are values.
    let r6 = store
        .create("/crud/empty", Bytes::new())
        .await
        .expect("create empty");
    let empty = store
        .get("/crud/empty")
        .await
        .expect("get")
        .expect("present");
    assert_eq!((empty.value.len(), empty.mod_revision), (0, r6));

    let big = Bytes::from(vec![b'x'; MAX_VALUE_BYTES + 1]);
    assert!(matches!(
        store.create("/crud/big", big.clone()).await,
        Err(StoreError::TooLarge { .. })
    ));
    assert!(matches!(
        store.update("/crud/empty", big, r6).await,
        Err(StoreError::TooLarge { .. })
    ));
    assert_eq!(store.get("/crud/big").await.expect("get"), None);
}

pub async fn revisions_and_future(store: Arc<dyn Store>) {
    let mut last = store.current_revision().await.expect("revision");
    for i in 0..10 {
        let rev = store
            .create(&format!("/rev/{i}"), b("x"))
            .await
            .expect("create");
        assert!(rev > last, "revision {rev} not after {last}");
        last = rev;
    }
    let rev = store.update(
        "/rev/0",
        b("y"),
        store
            .get("/rev/0")
            .await
            .expect("get")
            .expect("present")
            .mod_revision,
    );
    let rev = rev.await.expect("update");
    assert!(rev > last);
    let (rev2, _) = store.delete("/rev/1", None).await.expect("delete");
    assert!(rev2 > rev);
    let current = store.current_revision().await.expect("revision");
    assert!(current >= rev2);
    let listed = store
        .range(RangeRequest {
            prefix: "/rev/".into(),
            ..Default::default()
        })
        .await
        .expect("range");
    assert!(listed.revision >= rev2);

    let future = current + 1000;
    match store
        .range(RangeRequest {
            prefix: "/rev/".into(),
            revision: Some(future),
            ..Default::default()
        })
        .await
    {
        Err(StoreError::FutureRevision {
            requested,
            current: at,
        }) => {
            assert_eq!(requested, future);
            assert!(at >= current && at < future);
        }
        other => panic!("expected FutureRevision, got {other:?}"),
    }
    assert!(matches!(
        watch_error(&*store, "/rev/", future).await,
        StoreError::FutureRevision { .. }
    ));
    assert!(matches!(
        store.compact(future).await,
        Err(StoreError::FutureRevision { .. })
    ));
}

/// Several writes as one step: refused whole when any is refused, repeats a key, holds too many
/// keys or too many bytes; otherwise every write is made, and watchers see each, in order.
pub async fn write_all(store: Arc<dyn Store>) {
    let (a, b_, c, d) = ("/wa/a", "/wa/b", "/wa/c", "/wa/d");
    let ra = store.create(a, b("a")).await.expect("create a");
    let rb = store.create(b_, b("b")).await.expect("create b");
    let rc = store.create(c, b("c")).await.expect("create c");
    let before = store.current_revision().await.expect("revision");
    let mut watcher = Watcher::new(&*store, "/wa/", before).await;
    let value = |key: &str, value: &str, rev| KeyValue {
        key: key.into(),
        value: b(value),
        create_revision: rev,
        mod_revision: rev,
    };
    let create = |key: &str, v: &str| Write::Create {
        key: key.into(),
        value: b(v),
    };
    let update = |key: &str, v: &str, expected| Write::Update {
        key: key.into(),
        value: b(v),
        expected,
    };
    let delete = |key: &str, expected| Write::Delete {
        key: key.into(),
        expected,
    };
    let exists = |key: &str| Write::Exists { key: key.into() };

    let refused = [
        (
            vec![delete(a, ra), delete(b_, ra)],
            Err(StoreError::Conflict {
                key: b_.into(),
                current: Some(value(b_, "b", rb)),
            }),
        ),
        (
            vec![delete(a, ra), delete("/wa/missing", rb)],
            not_found("/wa/missing"),
        ),
        (
            vec![create(d, "d"), create(a, "again")],
            Err(StoreError::AlreadyExists { key: a.into() }),
        ),
        (
            vec![update(c, "c2", rc), update(a, "x", rb)],
            Err(StoreError::Conflict {
                key: a.into(),
                current: Some(value(a, "a", ra)),
            }),
        ),
        (
            vec![create(d, "d"), update("/wa/missing", "x", ra)],
            not_found("/wa/missing"),
        ),
        (
            vec![create(d, "d"), exists("/wa/missing")],
            not_found("/wa/missing"),
        ),
    ];
    for (writes, answer) in refused {
        assert_eq!(store.write_all(&writes).await, answer, "{writes:?}");
    }
    let twice = [delete(a, ra), update(a, "x", ra)];
    assert!(store.write_all(&twice).await.is_err(), "a key given twice");
    let many: Vec<_> = (0..=MAX_WRITE_ALL)
        .map(|i| create(&format!("/wa/n{i}"), "n"))
        .collect();
    assert!(store.write_all(&many).await.is_err(), "too many keys");
    let half = Bytes::from(vec![b'x'; MAX_VALUE_BYTES / 2 + 1]);
    let large = [
        Write::Create {
            key: d.into(),
            value: half.clone(),
        },
        Write::Create {
            key: "/wa/e".into(),
            value: half,
        },
    ];
    assert!(
        matches!(
            store.write_all(&large).await,
            Err(StoreError::TooLarge { .. })
        ),
        "values too large together"
    );
    assert_eq!(
        store.current_revision().await.expect("revision"),
        before,
        "refused writes took a revision"
    );
    assert_eq!(store.get(a).await.expect("get"), Some(value(a, "a", ra)));
    assert_eq!(store.get(c).await.expect("get"), Some(value(c, "c", rc)));
    assert_eq!(store.get(d).await.expect("get"), None);

    let writes = [
        create(d, "d"),
        update(c, "c2", rc),
        delete(a, ra),
        delete(b_, rb),
    ];
    let revs = store.write_all(&writes).await.expect("write_all");
    assert_eq!(revs.len(), writes.len());
    assert!(revs[0] > before && revs.windows(2).all(|w| w[0] <= w[1]));
    let rev = revs[3];
    let created = store.get(d).await.expect("get").expect("d created");
    assert_eq!(created.value, b("d"));
    assert_eq!(created.create_revision, created.mod_revision);
    assert_eq!(created.mod_revision, revs[0]);
    let updated = store.get(c).await.expect("get").expect("c kept");
    assert_eq!((updated.value, updated.create_revision), (b("c2"), rc));
    assert_eq!(updated.mod_revision, revs[1]);
    assert_eq!(store.get(a).await.expect("get"), None);
    assert_eq!(store.get(b_).await.expect("get"), None);
    assert_eq!(
        store.write_all(&writes).await,
        Err(StoreError::AlreadyExists { key: d.into() })
    );
    // A deleted key created again is new: its create revision is the new write's.
    let again = store
        .write_all(&[create(a, "a2")])
        .await
        .expect("a created again")[0];
    assert_eq!(
        store.get(a).await.expect("get"),
        Some(value(a, "a2", again))
    );
    // A key that only has to exist answers its own revision and is not written.
    let e_key = "/wa/e";
    let guarded = store
        .write_all(&[exists(c), create(e_key, "e")])
        .await
        .expect("create beside an existing key");
    assert_eq!(guarded[0], revs[1], "the existing key's revision");
    assert!(guarded[1] > again);
    assert_eq!(
        store.get(c).await.expect("get").map(|kv| kv.mod_revision),
        Some(revs[1]),
        "the existing key untouched"
    );

    let events = watcher.events(6).await;
    let seen: Vec<_> = events
        .iter()
        .map(|e| {
            (
                e.kind.clone(),
                e.kv.key.as_str(),
                e.prev.as_ref().map(|p| p.mod_revision),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (EventKind::Put, d, None),
            (EventKind::Put, c, Some(rc)),
            (EventKind::Delete, a, Some(ra)),
            (EventKind::Delete, b_, Some(rb)),
            (EventKind::Put, a, None),
            (EventKind::Put, e_key, None),
        ]
    );
    let seen_at: Vec<_> = events.iter().map(|e| e.kv.mod_revision).collect();
    assert_eq!(seen_at, [revs[0], revs[1], revs[2], rev, again, guarded[1]]);
}
