//! Concurrent writers: compare-and-swap loses no update, revisions are never shared.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::{KeyValue, RangeRequest, Revision, Store, StoreError};

const TASKS: usize = 32;
const INCREMENTS: usize = 8;

async fn increment_n_times(store: Arc<dyn Store>, key: &'static str, n: usize) -> Vec<Revision> {
    let mut revisions = Vec::new();
    let mut current: KeyValue = store.get(key).await.expect("get").expect("counter exists");
    while revisions.len() < n {
        let count: u64 = std::str::from_utf8(&current.value)
            .expect("utf-8")
            .parse()
            .expect("a number");
        let next = (count + 1).to_string();
        match store
            .update(key, next.clone().into(), current.mod_revision)
            .await
        {
            Ok(rev) => {
                revisions.push(rev);
                current = KeyValue {
                    value: next.into(),
                    mod_revision: rev,
                    ..current
                };
            }
            Err(StoreError::Conflict {
                current: Some(now), ..
            }) => current = now,
            Err(err) => panic!("increment failed: {err}"),
        }
    }
    revisions
}

pub async fn concurrent_cas(store: Arc<dyn Store>) {
    let key = "/cas/counter";
    store.create(key, "0".into()).await.expect("create");
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| tokio::spawn(increment_n_times(store.clone(), key, INCREMENTS)))
        .collect();
    let mut revisions = BTreeSet::new();
    for task in tasks {
        for rev in task.await.expect("task") {
            assert!(revisions.insert(rev), "revision {rev} given to two writes");
        }
    }
    let total = TASKS * INCREMENTS;
    assert_eq!(revisions.len(), total);
    let counter = store.get(key).await.expect("get").expect("counter exists");
    assert_eq!(counter.value, total.to_string().as_bytes(), "lost updates");
    assert_eq!(Some(&counter.mod_revision), revisions.last());

    // Concurrent creates of distinct keys all succeed, each with its own revision.
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut revs = Vec::new();
                for i in 0..INCREMENTS {
                    revs.push(
                        store
                            .create(&format!("/cas/keys/{t:02}/{i}"), "x".into())
                            .await
                            .expect("create"),
                    );
                }
                revs
            })
        })
        .collect();
    let mut created = BTreeSet::new();
    for task in tasks {
        for rev in task.await.expect("task") {
            assert!(created.insert(rev), "revision {rev} given to two writes");
        }
    }
    let listed = store
        .range(RangeRequest {
            prefix: "/cas/keys/".into(),
            ..Default::default()
        })
        .await
        .expect("range");
    assert_eq!(listed.kvs.len(), total);
    let listed_revs: BTreeSet<Revision> = listed.kvs.iter().map(|kv| kv.mod_revision).collect();
    assert_eq!(listed_revs, created);
}
