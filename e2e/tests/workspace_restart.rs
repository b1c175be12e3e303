//! A shard restarted with 1,000 workspaces keeps them all Ready, reachable by path, on both stores.

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use kcp_e2e::{Shard, StoreKind, on_both_stores};
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use serde_json::json;

on_both_stores!(async thousand_workspaces_survive_a_restart);

const WORKSPACES: usize = 1_000;
/// Creating 1,000 workspaces on a debug build shares 2 cores with the test; generous.
const READY_DEADLINE: Duration = Duration::from_secs(300);

fn workspaces(client: kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "tenancy.kcp.io".into(),
        version: "v1alpha1".into(),
        api_version: "tenancy.kcp.io/v1alpha1".into(),
        kind: "Workspace".into(),
        plural: "workspaces".into(),
    };
    Api::all_with(client, &resource)
}

/// How many workspaces in root are Ready.
async fn ready(api: &Api<DynamicObject>) -> usize {
    match api.list(&ListParams::default()).await {
        Ok(list) => list
            .items
            .iter()
            .filter(|w| w.data["status"]["phase"] == "Ready")
            .count(),
        Err(_) => 0,
    }
}

async fn wait_all_ready(api: &Api<DynamicObject>, what: &str) {
    let start = Instant::now();
    loop {
        let n = ready(api).await;
        if n == WORKSPACES {
            return;
        }
        assert!(
            start.elapsed() < READY_DEADLINE,
            "{what}: only {n} of {WORKSPACES} workspaces Ready after {READY_DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn thousand_workspaces_survive_a_restart(store: StoreKind) {
    let mut shard = Shard::start(store);
    let api = workspaces(shard.kube_client().await);
    let created: Vec<_> = futures::stream::iter(0..WORKSPACES)
        .map(|i| {
            let api = api.clone();
            async move {
                let ws: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "tenancy.kcp.io/v1alpha1",
                    "kind": "Workspace",
                    "metadata": {"name": format!("ws-{i:04}")},
                    "spec": {"type": {"name": "universal", "path": "root"}},
                }))
                .expect("a Workspace");
                api.create(&PostParams::default(), &ws).await
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    let failed: Vec<_> = created.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        failed.is_empty(),
        "{} creates failed, first: {:?}",
        failed.len(),
        failed.first()
    );
    wait_all_ready(&api, "before the restart").await;

    let status = tokio::task::block_in_place(|| shard.stop());
    assert!(status.success(), "kcp-shard did not exit cleanly: {status}");
    // On etcd the shard saves its watch cache for the next start (and reads it back once).
    let snapshot = shard.root_directory().join("watch-cache.snapshot");
    assert_eq!(
        snapshot.exists(),
        store == StoreKind::Etcd,
        "{}",
        snapshot.display()
    );
    tokio::task::block_in_place(|| shard.start_again());
    assert!(!snapshot.exists(), "the snapshot is read at the start");

    let api = workspaces(shard.kube_client().await);
    assert_eq!(
        ready(&api).await,
        WORKSPACES,
        "every workspace is still Ready after the restart"
    );
    // Paths resolve again (the index is rebuilt from the store), and the content is there.
    for i in [0, WORKSPACES / 2, WORKSPACES - 1] {
        let path = format!("root:ws-{i:04}");
        let out = tokio::task::block_in_place(|| {
            shard
                .kubectl_cmd()
                .cluster(&path)
                .ok(&["get", "namespace", "default", "-o", "name"])
        });
        assert_eq!(out.trim(), "namespace/default", "{path}");
    }
}
