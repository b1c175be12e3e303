//! Subscribers to every resource (the garbage collector's feed): they see events of every resource,
//! including ones that appear after they subscribed, and are cut off when they fall behind.

mod common;

use kcp_apiserver::testing::lc;
use std::time::Duration;

use kcp_apiserver::registry::WriteOptions;
use kcp_apiserver::watch_cache::CacheEventType;
use kcp_store::StoreConfig;
use serde_json::json;

#[tokio::test]
async fn sees_every_resource_and_is_cut_off_when_behind() {
    let store = kcp_store::open(&StoreConfig::Memory).await.expect("store");
    let server = common::server(store).await;
    let reg = server.registry();
    let cache = reg.cache();
    cache
        .wait_fresh()
        .await
        .expect("the cache reflects the bootstrap");
    let mut all = cache.subscribe_all(64);
    let mut slow = cache.subscribe_all(2);
    let listed = cache.all_objects();
    assert!(
        listed.iter().any(|o| o.name == "default"),
        "the listing holds what existed before"
    );

    let cms = common::builtin("", "configmaps");
    let leases = common::builtin("coordination.k8s.io", "leases");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    reg.create(
        &cms,
        lc("root"),
        Some("default"),
        cm,
        WriteOptions::default(),
    )
    .await
    .expect("create config map");
    // No lease existed before: its resource's cache is created by this event.
    let lease =
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}});
    reg.create(
        &leases,
        lc("root"),
        Some("default"),
        lease,
        WriteOptions::default(),
    )
    .await
    .expect("create lease");
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(30), all.rx.recv())
            .await
            .expect("events arrive")
            .expect("still subscribed");
        assert_eq!(event.kind, CacheEventType::Added);
        seen.push(event.object.key.clone());
    }
    assert!(seen[0].starts_with("/core/configmaps/"), "{seen:?}");
    assert!(
        seen[1].starts_with("/coordination.k8s.io/leases/"),
        "{seen:?}"
    );

    // The slow subscriber never read: with a queue of 2, the third event cuts it off.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}});
    reg.create(
        &cms,
        lc("root"),
        Some("default"),
        cm,
        WriteOptions::default(),
    )
    .await
    .expect("create config map");
    let _ = tokio::time::timeout(Duration::from_secs(30), all.rx.recv()).await;
    let mut got = 0;
    loop {
        match tokio::time::timeout(Duration::from_secs(30), slow.rx.recv()).await {
            Ok(Some(_)) => got += 1,
            Ok(None) => break,
            Err(_) => panic!("the slow subscriber was not cut off"),
        }
    }
    assert_eq!(got, 2, "a full queue, then the end of the subscription");
}
