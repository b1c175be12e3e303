//! Durability: no acknowledged write is lost to a `kill -9` of the shard, and data survives a clean
//! restart. Both stores (on etcd the shard holds no state of its own, which is what the test confirms).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ConfigMap;
use kcp_e2e::{EVENTUALLY, Shard, StoreKind, json_str, on_both_stores};
use kube::api::{Api, ListParams, PostParams};

on_both_stores!(async kill9_during_write_load_loses_no_acknowledged_write);
on_both_stores!(data_survives_a_clean_restart);

/// Writers running concurrently against the shard.
const WRITERS: usize = 8;
/// Acknowledged creates to wait for before the kill (the load keeps going while the kill happens).
const ACKED_BEFORE_KILL: usize = 300;

/// Names and resourceVersions of the creates the server acknowledged.
#[derive(Default)]
struct Acked(Mutex<Vec<(String, u64)>>);

impl Acked {
    fn push(&self, name: String, rv: u64) {
        self.0.lock().expect("lock").push((name, rv));
    }
    fn len(&self) -> usize {
        self.0.lock().expect("lock").len()
    }
    fn take(&self) -> Vec<(String, u64)> {
        std::mem::take(&mut *self.0.lock().expect("lock"))
    }
}

fn config_map(name: &str, writer: usize, i: usize) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_string());
    cm.data = Some(BTreeMap::from([
        ("writer".to_string(), writer.to_string()),
        ("i".to_string(), i.to_string()),
    ]));
    cm
}

async fn kill9_during_write_load_loses_no_acknowledged_write(store: StoreKind) {
    let mut shard = Shard::start(store);
    let api: Api<ConfigMap> = Api::namespaced(shard.kube_client().await, "default");
    let acked = Arc::new(Acked::default());
    let killing = Arc::new(AtomicBool::new(false));

    let mut writers = Vec::new();
    for writer in 0..WRITERS {
        let api = api.clone();
        let acked = acked.clone();
        let killing = killing.clone();
        writers.push(tokio::spawn(async move {
            let mut failures_before_kill = Vec::new();
            for i in 0.. {
                let name = format!("load-{writer}-{i}");
                match api
                    .create(&PostParams::default(), &config_map(&name, writer, i))
                    .await
                {
                    Ok(created) => {
                        let rv = created.metadata.resource_version.unwrap_or_default();
                        acked.push(name, rv.parse().expect("numeric resourceVersion"));
                    }
                    // Once the kill is under way requests fail; that is expected and the writer
                    // stops. It keeps writing until then, so the kill lands mid-load.
                    Err(_) if killing.load(Ordering::SeqCst) => break,
                    Err(err) => {
                        failures_before_kill.push(format!("{name}: {err}"));
                        if failures_before_kill.len() >= 10 {
                            break;
                        }
                    }
                }
            }
            failures_before_kill
        }));
    }

    let deadline = tokio::time::Instant::now() + EVENTUALLY * 4;
    while acked.len() < ACKED_BEFORE_KILL {
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {} creates acknowledged before the deadline\n{}",
            acked.len(),
            shard.logs()
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // SIGKILL while the writers are still sending; each stops at its first failed request.
    killing.store(true, Ordering::SeqCst);
    tokio::task::block_in_place(|| shard.kill9());
    for writer in writers {
        let failures = writer.await.expect("writer task");
        assert!(
            failures.is_empty(),
            "creates failed before the kill: {failures:?}"
        );
    }
    let acked = acked.take();
    assert!(acked.len() >= ACKED_BEFORE_KILL);

    tokio::task::block_in_place(|| shard.start_again());
    let api: Api<ConfigMap> = Api::namespaced(shard.kube_client().await, "default");
    let list = api
        .list(&ListParams::default())
        .await
        .expect("listing after restart");
    let present: BTreeMap<String, u64> = list
        .items
        .iter()
        .map(|cm| {
            let rv = cm.metadata.resource_version.clone().unwrap_or_default();
            (
                cm.metadata.name.clone().unwrap_or_default(),
                rv.parse().unwrap_or(0),
            )
        })
        .collect();
    let lost: Vec<&str> = acked
        .iter()
        .filter(|(name, _)| !present.contains_key(name))
        .map(|(name, _)| name.as_str())
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged creates lost after kill -9: {:?}",
        lost.len(),
        acked.len(),
        &lost[..lost.len().min(20)]
    );
    for (name, rv) in &acked {
        assert_eq!(
            present[name], *rv,
            "{name} came back with another resourceVersion"
        );
    }

    // Revisions never go backwards: a write after the restart gets a higher resourceVersion.
    let max_acked = acked.iter().map(|(_, rv)| *rv).max().unwrap_or(0);
    let created = api
        .create(&PostParams::default(), &config_map("after-restart", 0, 0))
        .await
        .expect("create after restart");
    let rv: u64 = created
        .metadata
        .resource_version
        .unwrap_or_default()
        .parse()
        .expect("numeric");
    assert!(
        rv > max_acked,
        "resourceVersion went backwards: {rv} <= {max_acked}"
    );
}

fn data_survives_a_clean_restart(store: StoreKind) {
    let mut shard = Shard::start(store);
    shard.kubectl_ok(&["create", "namespace", "keep"]);
    shard.kubectl_ok(&[
        "create",
        "configmap",
        "kept",
        "-n",
        "keep",
        "--from-literal=a=b",
    ]);
    shard.kubectl_ok(&["create", "secret", "generic", "sec", "--from-literal=p=q"]);
    let lc = shard.write_file(
        "lc.json",
        r#"{"apiVersion":"core.kcp.io/v1alpha1","kind":"LogicalCluster","metadata":{"name":"cluster"}}"#,
    );
    shard
        .kubectl_cmd()
        .context("system:admin")
        .cluster("other")
        .ok(&["create", "-f", lc.to_str().expect("utf-8")]);
    shard.eventually("namespace default in LC other", || {
        shard
            .kubectl_cmd()
            .cluster("other")
            .run(&["get", "ns", "default"])
            .status
            .success()
            .then_some(())
    });
    shard.kubectl_cmd().cluster("other").ok(&[
        "create",
        "configmap",
        "there",
        "--from-literal=x=y",
    ]);
    let before = shard.kubectl_json(&["get", "cm", "kept", "-n", "keep", "-o", "json"]);

    let status = shard.stop();
    assert!(
        status.success(),
        "kcp-shard did not exit cleanly on SIGTERM: {status}\n{}",
        shard.logs()
    );
    shard.start_again();

    let after = shard.kubectl_json(&["get", "cm", "kept", "-n", "keep", "-o", "json"]);
    for field in [
        "/metadata/uid",
        "/metadata/resourceVersion",
        "/metadata/creationTimestamp",
        "/data/a",
    ] {
        assert_eq!(
            json_str(&after, field),
            json_str(&before, field),
            "{field} changed: {before} vs {after}"
        );
    }
    let secret = shard.kubectl_json(&["get", "secret", "sec", "-o", "json"]);
    assert_eq!(json_str(&secret, "/data/p"), "cQ==", "{secret}");
    let namespaces = shard.kubectl_ok(&["get", "ns", "-o", "name"]);
    assert!(
        namespaces.contains("namespace/keep") && namespaces.contains("namespace/default"),
        "{namespaces}"
    );
    let there = shard
        .kubectl_cmd()
        .cluster("other")
        .json(&["get", "cm", "there", "-o", "json"]);
    assert_eq!(json_str(&there, "/data/x"), "y", "{there}");
    // And the restarted shard takes writes.
    shard.kubectl_ok(&["create", "configmap", "new-after-restart", "-n", "keep"]);
}
