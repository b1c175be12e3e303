//! Range reads: prefixes, pagination, older revisions, big answers.

use std::sync::Arc;

use bytes::Bytes;

use super::b;
use crate::{KeyValue, RangeRequest, RangeResult, Revision, Store};

fn req(
    prefix: &str,
    start_after: Option<&str>,
    limit: usize,
    revision: Option<Revision>,
) -> RangeRequest {
    RangeRequest {
        prefix: prefix.into(),
        start_after: start_after.map(String::from),
        limit,
        revision,
    }
}

fn keys(result: &RangeResult) -> Vec<&str> {
    result.kvs.iter().map(|kv| kv.key.as_str()).collect()
}

pub async fn range_pagination(store: Arc<dyn Store>) {
    for key in ["/r/c", "/r/a", "/rx/e", "/r/d", "/q/z", "/r/b"] {
        store.create(key, b(key)).await.expect("create");
    }
    let current = store.current_revision().await.expect("revision");

    let all = store.range(req("/r/", None, 0, None)).await.expect("range");
    assert_eq!(keys(&all), ["/r/a", "/r/b", "/r/c", "/r/d"]);
    assert!(!all.more);
    assert_eq!(all.revision, current);
    for kv in &all.kvs {
        assert_eq!(kv.value, b(&kv.key));
        assert!(kv.create_revision > 0 && kv.mod_revision == kv.create_revision);
    }

    let page = store.range(req("/r/", None, 2, None)).await.expect("range");
    assert_eq!((keys(&page), page.more), (vec!["/r/a", "/r/b"], true));
    let page = store
        .range(req("/r/", Some("/r/b"), 2, None))
        .await
        .expect("range");
    assert_eq!((keys(&page), page.more), (vec!["/r/c", "/r/d"], false));
    let page = store
        .range(req("/r/", Some("/r/d"), 2, None))
        .await
        .expect("range");
    assert_eq!((keys(&page), page.more), (Vec::<&str>::new(), false));
    let page = store.range(req("/r/", None, 4, None)).await.expect("range");
    assert_eq!((keys(&page).len(), page.more), (4, false));
    let page = store
        .range(req("/r/", Some("/a"), 0, None))
        .await
        .expect("range");
    assert_eq!(
        keys(&page).len(),
        4,
        "start_after before the prefix starts at the prefix"
    );

    let wider = store.range(req("/r", None, 0, None)).await.expect("range");
    assert_eq!(keys(&wider), ["/r/a", "/r/b", "/r/c", "/r/d", "/rx/e"]);
    let everything = store.range(req("", None, 0, None)).await.expect("range");
    assert_eq!(
        keys(&everything),
        ["/q/z", "/r/a", "/r/b", "/r/c", "/r/d", "/rx/e"]
    );
    let none = store
        .range(req("/nothing/", None, 0, None))
        .await
        .expect("range");
    assert!(none.kvs.is_empty() && !none.more);
    assert_eq!(none.revision, current);
}

pub async fn range_at_revision(store: Arc<dyn Store>) {
    let ra = store.create("/h/a", b("a1")).await.expect("create");
    let rb = store.create("/h/b", b("b1")).await.expect("create");
    let ra2 = store.update("/h/a", b("a2"), ra).await.expect("update");
    let (rdel, _) = store.delete("/h/b", None).await.expect("delete");
    let rc = store.create("/h/c", b("c1")).await.expect("create");

    let kv = |key: &str, value: &str, create: Revision, modified: Revision| KeyValue {
        key: key.into(),
        value: b(value),
        create_revision: create,
        mod_revision: modified,
    };
    let at_rb = store
        .range(req("/h/", None, 0, Some(rb)))
        .await
        .expect("range at rb");
    assert_eq!(
        at_rb.kvs,
        [kv("/h/a", "a1", ra, ra), kv("/h/b", "b1", rb, rb)]
    );
    assert_eq!((at_rb.revision, at_rb.more), (rb, false));
    let at_ra = store
        .range(req("/h/", None, 0, Some(ra)))
        .await
        .expect("range at ra");
    assert_eq!(at_ra.kvs, [kv("/h/a", "a1", ra, ra)]);

    let page = store
        .range(req("/h/", None, 1, Some(rb)))
        .await
        .expect("range");
    assert_eq!(
        (page.kvs.clone(), page.more),
        (vec![kv("/h/a", "a1", ra, ra)], true)
    );
    let page = store
        .range(req("/h/", Some("/h/a"), 1, Some(rb)))
        .await
        .expect("range");
    assert_eq!(
        (page.kvs.clone(), page.more),
        (vec![kv("/h/b", "b1", rb, rb)], false)
    );

    let at_ra2 = store
        .range(req("/h/", None, 0, Some(ra2)))
        .await
        .expect("range");
    assert_eq!(
        at_ra2.kvs,
        [kv("/h/a", "a2", ra, ra2), kv("/h/b", "b1", rb, rb)]
    );
    let at_del = store
        .range(req("/h/", None, 0, Some(rdel)))
        .await
        .expect("range");
    assert_eq!(at_del.kvs, [kv("/h/a", "a2", ra, ra2)]);
    let at_rc = store
        .range(req("/h/", None, 0, Some(rc)))
        .await
        .expect("range");
    assert_eq!(
        at_rc.kvs,
        [kv("/h/a", "a2", ra, ra2), kv("/h/c", "c1", rc, rc)]
    );

    // Re-created later: invisible at older revisions, with a new create revision at newer ones.
    let rb2 = store.create("/h/b", b("b2")).await.expect("re-create");
    let at_del = store
        .range(req("/h/", None, 0, Some(rdel)))
        .await
        .expect("range");
    assert_eq!(at_del.kvs, [kv("/h/a", "a2", ra, ra2)]);
    let now = store.range(req("/h/", None, 0, None)).await.expect("range");
    assert_eq!(
        now.kvs,
        [
            kv("/h/a", "a2", ra, ra2),
            kv("/h/b", "b2", rb2, rb2),
            kv("/h/c", "c1", rc, rc)
        ]
    );
    let at_now = store
        .range(req("/h/", None, 0, Some(now.revision)))
        .await
        .expect("range");
    assert_eq!(at_now.kvs, now.kvs);
    assert_eq!(
        at_rb.kvs,
        store
            .range(req("/h/", None, 0, Some(rb)))
            .await
            .expect("range")
            .kvs,
        "history is stable"
    );
}

pub async fn large_values(store: Arc<dyn Store>) {
    // Six 1 MiB values: one answer is larger than gRPC's default 4 MiB message limit.
    let value = Bytes::from(vec![b'x'; 1 << 20]);
    for i in 0..6 {
        store
            .create(&format!("/big/{i}"), value.clone())
            .await
            .expect("create 1 MiB");
    }
    let all = store
        .range(req("/big/", None, 0, None))
        .await
        .expect("range over 6 MiB");
    assert_eq!(all.kvs.len(), 6);
    assert!(all.kvs.iter().all(|kv| kv.value == value));
    let at = store
        .range(req("/big/", None, 0, Some(all.kvs[3].mod_revision)))
        .await
        .expect("range at revision");
    assert_eq!(at.kvs.len(), 4);
}
