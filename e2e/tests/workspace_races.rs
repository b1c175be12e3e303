//! Workspaces under racing clients, on both stores: a workspace deleted right after its POST
//! (before or while it is scheduled) goes with everything made for it, and of two POSTs of one
//! name one wins and gets the only logical cluster.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kcp_e2e::tenancy::{clusters_with_namespaces, everywhere, universal_workspace, workspaces};
use kcp_e2e::{Shard, StoreKind, json_str, on_both_stores};
use kube::api::{DeleteParams, ListParams, PostParams};

on_both_stores!(async created_then_deleted_at_once);

/// Tasks each creating and at once deleting workspaces.
const RACERS: usize = 12;
const ROUNDS: usize = 8;
/// Names POSTed twice at the same time.
const TWINS: usize = 8;
/// Deleting and cleaning up after ~100 workspaces on a debug build sharing 2 cores; generous.
const DEADLINE: Duration = Duration::from_secs(120);

async fn created_then_deleted_at_once(store: StoreKind) {
    let shard = Shard::start(store);
    let before = clusters_with_namespaces(&shard);
    let api = workspaces(shard.kube_client().await);

    let racers = (0..RACERS).map(|racer| {
        let api = api.clone();
        tokio::spawn(async move {
            for round in 0..ROUNDS {
                let name = format!("race-{racer:02}-{round}");
                let ws = universal_workspace(&name);
                api.create(&PostParams::default(), &ws)
                    .await
                    .unwrap_or_else(|e| panic!("POST {name}: {e}"));
                api.delete(&name, &DeleteParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("DELETE {name}: {e}"));
            }
        })
    });
    let twins = (0..TWINS).flat_map(|twin| (0..2).map(move |_| (twin, format!("twin-{twin}"))));
    let twins: Vec<_> = twins
        .map(|(twin, name)| {
            let api = api.clone();
            tokio::spawn(async move {
                let created = api
                    .create(&PostParams::default(), &universal_workspace(&name))
                    .await;
                (twin, created.map_err(|e| e.to_string()))
            })
        })
        .collect();
    for racer in racers {
        racer.await.expect("racer task");
    }
    let mut won: BTreeMap<usize, usize> = BTreeMap::new();
    for twin in twins {
        let (twin, created) = twin.await.expect("twin task");
        match created {
            Ok(_) => *won.entry(twin).or_default() += 1,
            Err(e) => assert!(e.contains("AlreadyExists"), "the losing POST: {e}"),
        }
    }
    assert_eq!(won.len(), TWINS, "each name created once: {won:?}");
    assert!(
        won.values().all(|n| *n == 1),
        "each name created once: {won:?}"
    );

    // The deleted ones go, the twins get Ready; then only the twins' logical clusters hold
    // anything beyond what was there before.
    let start = Instant::now();
    loop {
        let list = api
            .list(&ListParams::default())
            .await
            .expect("listing workspaces");
        let racing = (list.items.iter())
            .filter(|w| {
                w.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("race-"))
            })
            .count();
        let twins_ready: BTreeMap<String, String> = (list.items.iter())
            .filter(|w| {
                w.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("twin-"))
            })
            .filter(|w| w.data["status"]["phase"] == "Ready")
            .map(|w| {
                let name = w.metadata.name.clone().unwrap_or_default();
                (name, json_str(&w.data, "/spec/cluster").to_string())
            })
            .collect();
        let (left, lcs) = tokio::task::block_in_place(|| {
            let left: Vec<String> = everywhere(&shard, "/api/v1/namespaces")
                .into_keys()
                .filter(|c| !before.contains(c) && !twins_ready.values().any(|t| t == c))
                .collect();
            let lcs: Vec<(String, String)> =
                (everywhere(&shard, "/apis/core.kcp.io/v1alpha1/logicalclusters").into_iter())
                    .filter(|(c, _)| !before.contains(c))
                    .flat_map(|(c, lcs)| {
                        lcs.into_iter().map(move |lc| {
                            (c.clone(), json_str(&lc, "/spec/owner/name").to_string())
                        })
                    })
                    .collect();
            (left, lcs)
        });
        let owned_by_twins =
            lcs.len() == TWINS && (lcs.iter()).all(|(c, owner)| twins_ready.get(owner) == Some(c));
        if racing == 0 && twins_ready.len() == TWINS && left.is_empty() && owned_by_twins {
            return;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{racing} deleted workspaces still listed, {} of {TWINS} twins Ready, content in \
             {left:?}, logical clusters (cluster, owner) {lcs:?}\n{}",
            twins_ready.len(),
            shard.logs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
