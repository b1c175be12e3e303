//! A watcher that stops reading is cut off once its queue is full: the cache never buffers without bound.

mod common;

use kcp_apiserver::testing::lc;
use std::time::Duration;

use kcp_apiserver::registry::WriteOptions;
use kcp_apiserver::watch_cache::{Scope, WATCHER_QUEUE};
use kcp_store::StoreConfig;
use serde_json::json;

#[tokio::test]
async fn a_watcher_that_falls_behind_is_cut_off() {
    let store = kcp_store::open(&StoreConfig::Memory).await.expect("store");
    let server = common::server(store).await;
    let reg = server.registry();
    let cms = common::builtin("", "configmaps");
    let prefix = kcp_apiserver::registry::keyspace(&cms)
        .all_clusters()
        .to_string();
    let scope = Scope {
        cluster: Some(lc("root").clone()),
        namespace: None,
    };
    let mut slow = reg
        .cache()
        .subscribe(&prefix, scope.clone(), None)
        .expect("subscribe");
    let mut fast = reg
        .cache()
        .subscribe(&prefix, scope, None)
        .expect("subscribe");
    let total = WATCHER_QUEUE + 100;
    let reader = tokio::spawn(async move {
        let mut seen = 0usize;
        while seen < total {
            match tokio::time::timeout(Duration::from_secs(30), fast.rx.recv()).await {
                Ok(Some(_)) => seen += 1,
                _ => break,
            }
        }
        seen
    });
    for i in 0..total {
        let cm =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}});
        reg.create(
            &cms,
            lc("root"),
            Some("default"),
            cm,
            WriteOptions::default(),
        )
        .await
        .expect("create");
    }
    assert_eq!(
        reader.await.expect("reader"),
        total,
        "a watcher that keeps up sees every event"
    );
    // The slow one got at most a full queue, then its stream ended.
    let mut got = 0usize;
    while let Ok(Some(_)) = tokio::time::timeout(Duration::from_secs(5), slow.rx.recv()).await {
        got += 1;
    }
    assert_eq!(
        got, WATCHER_QUEUE,
        "exactly one full queue was buffered before the cut"
    );
    assert!(
        slow.rx.recv().await.is_none(),
        "the slow watcher's stream is closed"
    );
}

/// A resource's watch history is bounded in bytes too: after many large objects, resuming from the
/// oldest revisions is 410 Expired while resuming from recent ones still replays every event.
#[tokio::test]
async fn history_of_large_objects_is_bounded_in_bytes() {
    let store = kcp_store::open(&StoreConfig::Memory).await.expect("store");
    let server = common::server(store).await;
    let reg = server.registry();
    let cms = common::builtin("", "configmaps");
    let prefix = kcp_apiserver::registry::keyspace(&cms)
        .all_clusters()
        .to_string();
    let payload = "x".repeat(1 << 20);
    let mut revisions = Vec::new();
    for i in 0..40 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("big-{i}")}, "data": {"p": payload}});
        let written = reg
            .create(
                &cms,
                lc("root"),
                Some("default"),
                cm,
                WriteOptions::default(),
            )
            .await
            .expect("create");
        let rv: i64 = written.object["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("resourceVersion");
        revisions.push(rv);
    }
    reg.cache().wait_fresh().await.expect("fresh");
    let scope = Scope {
        cluster: Some(lc("root").clone()),
        namespace: None,
    };
    let old = reg
        .cache()
        .subscribe(&prefix, scope.clone(), Some(revisions[0]));
    assert!(old.is_err(), "40 MiB of history kept");
    let recent = reg
        .cache()
        .subscribe(&prefix, scope, Some(revisions[35]))
        .expect("recent history kept");
    assert_eq!(recent.backlog.len(), 4);
}
