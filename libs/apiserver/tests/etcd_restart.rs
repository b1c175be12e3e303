//! When etcd restarts under a running API server, the watch cache follows the store again from
//! where it stood and serves consistent reads; its watchers live through it, missing nothing.
//! (The embedded store lives in the shard's process; its crash test is e2e/tests/durability.rs.)

mod common;

use kcp_apiserver::testing::lc;
use std::time::Duration;

use kcp_apiserver::registry::{ObjectRef, WriteOptions};
use kcp_apiserver::watch_cache::Scope;
use kcp_store::StoreConfig;
use kcp_store::testing::EtcdProcess;
use serde_json::json;

#[tokio::test]
async fn the_cache_recovers_after_etcd_restarts() {
    let mut etcd = EtcdProcess::start();
    let store = kcp_store::open(&StoreConfig::Etcd {
        endpoints: etcd.endpoints(),
        prefix: "/restart".into(),
    })
    .await
    .expect("store");
    let server = common::server(store).await;
    let reg = server.registry();
    let cms = common::builtin("", "configmaps");
    let cm =
        |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    let at = |name: &'static str| ObjectRef {
        cluster: lc("root"),
        namespace: Some("default"),
        name,
    };
    reg.create(
        &cms,
        lc("root"),
        Some("default"),
        cm("before"),
        WriteOptions::default(),
    )
    .await
    .expect("create before");
    let prefix = kcp_apiserver::registry::keyspace(&cms)
        .all_clusters()
        .to_string();
    let mut watcher = reg
        .cache()
        .subscribe(
            &prefix,
            Scope {
                cluster: None,
                namespace: None,
            },
            None,
        )
        .expect("subscribe");

    etcd.restart().expect("etcd restarts");

    // Writes succeed again once the client has reconnected.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match reg
            .create(
                &cms,
                lc("root"),
                Some("default"),
                cm("after"),
                WriteOptions::default(),
            )
            .await
        {
            Ok(_) => break,
            Err(e) if e.code == 409 => break,
            Err(e) => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "no write succeeded after the restart: {e}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    // Consistent reads see both objects: the cache follows the store again.
    let after = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(obj) = reg.get(&cms, at("after")).await {
                return obj;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("the new object becomes readable");
    assert_eq!(after.name, "after");
    assert!(reg.get(&cms, at("before")).await.is_ok());
    // The store watch was resumed where the cache stood: the watcher goes on and sees the object
    // written after the restart, with nothing missed and nothing to relist.
    let seen = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match watcher.rx.recv().await {
                Some(kcp_apiserver::watch_cache::WatchItem::Event(ev))
                    if ev.object.name == "after" =>
                {
                    return true;
                }
                Some(_) => {}
                None => return false,
            }
        }
    })
    .await;
    assert_eq!(
        seen,
        Ok(true),
        "a watcher must live through the etcd restart and see the new object"
    );
}

/// An etcd that comes back behind the cache (wiped, or restored from an older backup) holds
/// another history: the cache must reload it, not resume its watch as if it went on.
#[tokio::test]
async fn an_etcd_behind_the_cache_is_reloaded() {
    let mut etcd = EtcdProcess::start();
    let store = kcp_store::open(&StoreConfig::Etcd {
        endpoints: etcd.endpoints(),
        prefix: "/wiped".into(),
    })
    .await
    .expect("store");
    let server = common::server(store).await;
    let reg = server.registry();
    let cms = common::builtin("", "configmaps");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "lost"}});
    reg.create(
        &cms,
        lc("root"),
        Some("default"),
        cm,
        WriteOptions::default(),
    )
    .await
    .expect("create");
    let at = ObjectRef {
        cluster: lc("root"),
        namespace: Some("default"),
        name: "lost",
    };
    assert!(reg.get(&cms, at).await.is_ok());

    etcd.kill().expect("etcd stops");
    etcd.wipe().expect("etcd's data goes");
    etcd.start_again().expect("etcd starts empty");

    // The cache reloads the empty store: the object is gone from it.
    let gone = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if reg.get(&cms, at).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(
        gone.is_ok(),
        "the cache still serves what the wiped etcd lost"
    );
}
