//! The watch cache saved at shutdown and read back at the next start: on etcd the restarted cache
//! starts from the snapshot and catches up on what changed meanwhile, and falls back to reading the
//! store when the snapshot cannot continue it; the embedded store keeps no snapshot.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kcp_apiserver::watch_cache::WatchCache;
use kcp_store::keys::ResourceKeyspace;
use kcp_store::testing::EtcdProcess;
use kcp_store::{Store, StoreConfig};
use serde_json::{Value, json};

fn keyspace() -> ResourceKeyspace {
    ResourceKeyspace::new("", "configmaps", None, true)
}

fn key(name: &str) -> String {
    keyspace().object("c1", Some("default"), name)
}

fn value(name: &str, data: &str) -> Bytes {
    Bytes::from(
        serde_json::to_vec(&json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": {"v": data}},
            "data": {"k": data},
        }))
        .unwrap_or_default(),
    )
}

/// What the store holds, as the cache must serve it: name → (resourceVersion, data, label).
async fn in_store(store: &dyn Store) -> BTreeMap<String, (String, String, String)> {
    let listed = store
        .range(kcp_store::RangeRequest {
            prefix: keyspace().all_clusters().to_string(),
            start_after: None,
            limit: 0,
            revision: None,
        })
        .await
        .expect("range");
    listed
        .kvs
        .iter()
        .map(|kv| {
            let v: Value = serde_json::from_slice(&kv.value).expect("stored JSON");
            (
                v["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                (
                    kv.mod_revision.to_string(),
                    v["data"]["k"].as_str().unwrap_or_default().to_string(),
                    v["metadata"]["labels"]["v"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                ),
            )
        })
        .collect()
}

fn in_cache(cache: &WatchCache) -> BTreeMap<String, (String, String, String)> {
    cache
        .list(keyspace().all_clusters(), None)
        .iter()
        .map(|o| {
            let v = o.value().expect("cached JSON");
            let label = o.labels.get("v").unwrap_or_default().to_string();
            assert_eq!(
                v["metadata"]["resourceVersion"],
                json!(o.revision.to_string())
            );
            (
                o.name.clone(),
                (
                    o.revision.to_string(),
                    v["data"]["k"].as_str().unwrap_or_default().to_string(),
                    label,
                ),
            )
        })
        .collect()
}

async fn etcd_store(etcd: &EtcdProcess, prefix: &str) -> Arc<dyn Store> {
    kcp_store::open(&StoreConfig::Etcd {
        endpoints: etcd.endpoints(),
        prefix: prefix.into(),
    })
    .await
    .expect("store")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_restart_continues_from_the_snapshot() {
    let etcd = EtcdProcess::start();
    let store = etcd_store(&etcd, "/snap").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cache.snapshot");
    for name in ["a", "b", "c"] {
        store
            .create(&key(name), value(name, "1"))
            .await
            .expect("create");
    }

    // Stop: save. Then the store changes while no cache follows it.
    let first = WatchCache::start(store.clone()).await.expect("cache");
    assert!(!first.started_from_snapshot());
    assert!(
        first
            .save_snapshot(store.as_ref(), &path)
            .await
            .expect("save")
    );
    first.close_all();
    assert!(path.exists());
    let a = store.get(&key("a")).await.expect("get").expect("a");
    store
        .update(&key("a"), value("a", "2"), a.mod_revision)
        .await
        .expect("update");
    store.delete(&key("b"), None).await.expect("delete");
    store
        .create(&key("d"), value("d", "1"))
        .await
        .expect("create");

    let second = WatchCache::start_with_snapshot(store.clone(), Some(&path))
        .await
        .expect("cache from snapshot");
    assert!(second.started_from_snapshot());
    assert!(!path.exists(), "a snapshot is read once");
    assert!(second.revision() >= store.current_revision().await.expect("revision"));
    let want = in_store(store.as_ref()).await;
    assert_eq!(
        want.keys().map(String::as_str).collect::<Vec<_>>(),
        ["a", "c", "d"]
    );
    assert_eq!(in_cache(&second), want);

    // A snapshot whose history is compacted away: the cache reads the store instead.
    assert!(
        second
            .save_snapshot(store.as_ref(), &path)
            .await
            .expect("save")
    );
    second.close_all();
    let c = store.get(&key("c")).await.expect("get").expect("c");
    let rev = store
        .update(&key("c"), value("c", "3"), c.mod_revision)
        .await
        .expect("update");
    store.compact(rev).await.expect("compact");
    let third = WatchCache::start_with_snapshot(store.clone(), Some(&path))
        .await
        .expect("cache after a stale snapshot");
    assert!(!third.started_from_snapshot());
    assert!(!path.exists());
    assert_eq!(in_cache(&third), in_store(store.as_ref()).await);
    third.close_all();

    // A snapshot of another store (prefix) is not used for this one.
    let other = etcd_store(&etcd, "/other").await;
    other
        .create(&key("x"), value("x", "1"))
        .await
        .expect("create");
    let foreign = WatchCache::start(other.clone()).await.expect("cache");
    assert!(
        foreign
            .save_snapshot(other.as_ref(), &path)
            .await
            .expect("save")
    );
    foreign.close_all();
    let fourth = WatchCache::start_with_snapshot(store.clone(), Some(&path))
        .await
        .expect("cache beside a foreign snapshot");
    assert!(!fourth.started_from_snapshot());
    assert!(!path.exists());
    assert_eq!(in_cache(&fourth), in_store(store.as_ref()).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_store_keeps_no_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = kcp_store::open(&StoreConfig::Embedded {
        path: dir.path().join("store.redb"),
    })
    .await
    .expect("store");
    store
        .create(&key("a"), value("a", "1"))
        .await
        .expect("create");
    let path = dir.path().join("cache.snapshot");
    let cache = WatchCache::start_with_snapshot(store.clone(), Some(&path))
        .await
        .expect("cache");
    assert!(!cache.started_from_snapshot());
    assert!(
        !cache
            .save_snapshot(store.as_ref(), &path)
            .await
            .expect("save")
    );
    assert!(!path.exists());
    assert_eq!(in_cache(&cache), in_store(store.as_ref()).await);
}
