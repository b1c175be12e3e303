//! A shard restarted with 1,000 workspaces keeps them all Ready, reachable by path, on both stores;
//! one killed (`kill -9`) while workspaces are being created finishes every one it acknowledged,
//! each with all of its content, and leaves no logical cluster without its workspace; one killed
//! while it deletes a tree of workspaces finishes the deletion after the restart; etcd killed under
//! a shard creating workspaces leaves none of them unfinished either, nor does a kill while a
//! user's home workspace is being created. Workspaces and logical clusters stored by an older
//! shard, without the labels and annotations that follow their status, get them after a restart.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use kcp_e2e::tenancy::{clusters_with_namespaces, everywhere, universal_workspace, workspaces};
use kcp_e2e::{Caller, Shard, StoreKind, json_str, on_both_stores};
use kcp_store::keys::ResourceKeyspace;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::{Value, json};

on_both_stores!(async thousand_workspaces_survive_a_restart);
on_both_stores!(async kill9_during_workspace_creation_finishes_every_acknowledged_one);
on_both_stores!(kill9_during_tree_deletion_finishes_it);
on_both_stores!(kill9_while_a_home_is_created);
on_both_stores!(async older_objects_get_the_metadata_that_follows_status);
// and `etcd_killed_during_workspace_creation`, on etcd alone.

const WORKSPACES: usize = 1_000;
/// Creating 1,000 workspaces on a debug build shares 2 cores with the test; generous.
const READY_DEADLINE: Duration = Duration::from_secs(300);

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
                let ws = universal_workspace(&format!("ws-{i:04}"));
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

/// Creators still sending when the shard is killed.
const CREATORS: usize = 16;
/// Workspace creations acknowledged before the kill (the creators keep going while it happens).
const ACKED_BEFORE_KILL: usize = 120;
/// What every new `root:universal` workspace's logical cluster holds, as `namespace/name` per
/// resource path: the POST writes `kube-system`, scheduling the rest; each namespace brings its
/// ServiceAccount and ConfigMap (controllers add them where a crash left them out).
const CONTENT: [(&str, &[&str]); 4] = [
    ("/api/v1/namespaces", &["/default", "/kube-system"]),
    (
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        &["/workspace-admin"],
    ),
    (
        "/api/v1/serviceaccounts",
        &["default/default", "kube-system/default"],
    ),
    (
        "/api/v1/configmaps",
        &["default/kube-root-ca.crt", "kube-system/kube-root-ca.crt"],
    ),
];

/// `namespace/name` of each object.
fn names(objects: &[Value]) -> BTreeSet<String> {
    objects
        .iter()
        .map(|o| {
            let namespace = json_str(o, "/metadata/namespace");
            format!("{namespace}/{}", json_str(o, "/metadata/name"))
        })
        .collect()
}

/// Tasks creating workspaces `<prefix>-<creator>-<i>` in root until told to stop.
struct Creators {
    acked: Arc<Mutex<Vec<String>>>,
    /// Set while requests may fail (the shard or its etcd is being killed).
    expect_failures: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<Option<String>>>,
}

impl Creators {
    fn start(api: &Api<DynamicObject>, prefix: &'static str) -> Creators {
        let acked = Arc::new(Mutex::new(Vec::new()));
        let expect_failures = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..CREATORS)
            .map(|creator| {
                let api = api.clone();
                let (acked, expect_failures) = (acked.clone(), expect_failures.clone());
                let stop = stop.clone();
                tokio::spawn(async move {
                    for i in 0.. {
                        if stop.load(Ordering::SeqCst) {
                            break;
                        }
                        let name = format!("{prefix}-{creator:02}-{i:04}");
                        let ws = universal_workspace(&name);
                        match api.create(&PostParams::default(), &ws).await {
                            Ok(_) => acked.lock().expect("lock").push(name),
                            Err(_) if expect_failures.load(Ordering::SeqCst) => {
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                            Err(err) => return Some(format!("{name}: {err}")),
                        }
                    }
                    None
                })
            })
            .collect();
        Creators {
            acked,
            expect_failures,
            stop,
            tasks,
        }
    }

    fn acked(&self) -> usize {
        self.acked.lock().expect("lock").len()
    }

    /// Waits until `n` creations in all are acknowledged.
    async fn until_acked(&self, n: usize, shard: &Shard) {
        let start = Instant::now();
        while self.acked() < n {
            assert!(
                start.elapsed() < READY_DEADLINE,
                "only {} of {n} workspaces created\n{}",
                self.acked(),
                shard.logs()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Stops the creators; the names acknowledged. Fails on a failure not expected.
    async fn finish(self) -> BTreeSet<String> {
        self.stop.store(true, Ordering::SeqCst);
        for task in self.tasks {
            let failure = task.await.expect("creator task");
            assert!(failure.is_none(), "a create failed: {failure:?}");
        }
        std::mem::take(&mut *self.acked.lock().expect("lock"))
            .into_iter()
            .collect()
    }
}

/// Waits until every workspace in root named `<prefix>-…` is Ready; checks that the store kept
/// all of `acked`. Their logical clusters by name.
async fn all_ready(
    shard: &Shard,
    prefix: &str,
    acked: &BTreeSet<String>,
) -> BTreeMap<String, String> {
    let api = workspaces(shard.kube_client().await);
    let start = Instant::now();
    let spaces = loop {
        let list = api
            .list(&ListParams::default())
            .await
            .expect("listing workspaces");
        let spaces: Vec<DynamicObject> = (list.items.into_iter())
            .filter(|w| {
                (w.metadata.name.as_deref()).is_some_and(|n| n.starts_with(&format!("{prefix}-")))
            })
            .collect();
        let unready: Vec<_> = (spaces.iter())
            .filter(|w| w.data["status"]["phase"] != "Ready")
            .filter_map(|w| w.metadata.name.clone())
            .collect();
        if unready.is_empty() {
            break spaces;
        }
        assert!(
            start.elapsed() < READY_DEADLINE,
            "{} workspaces not Ready, e.g. {:?}\n{}",
            unready.len(),
            &unready[..unready.len().min(5)],
            shard.logs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let cluster_of: BTreeMap<String, String> = (spaces.iter())
        .map(|w| {
            let name = w.metadata.name.clone().unwrap_or_default();
            (name, json_str(&w.data, "/spec/cluster").to_string())
        })
        .collect();
    let lost: Vec<_> = (acked.iter())
        .filter(|n| !cluster_of.contains_key(*n))
        .collect();
    assert!(lost.is_empty(), "acknowledged workspaces lost: {lost:?}");
    cluster_of
}

/// Waits until each logical cluster of `cluster_of` (workspace → cluster) is Ready, owned by its
/// workspace, and holds all of [`CONTENT`] (the controllers' part once they catch up). Fails at
/// once when a logical cluster other than these and `before` holds namespaces.
async fn all_complete(
    shard: &Shard,
    cluster_of: &BTreeMap<String, String>,
    before: &BTreeSet<String>,
) {
    let start = Instant::now();
    loop {
        let missing = tokio::task::block_in_place(|| {
            let lcs = everywhere(shard, "/apis/core.kcp.io/v1alpha1/logicalclusters");
            let mut missing = Vec::new();
            for (ws, cluster) in cluster_of {
                let lc = lcs.get(cluster).and_then(|l| l.first());
                let owner = lc.map(|lc| json_str(lc, "/spec/owner/name"));
                let phase = lc.map(|lc| json_str(lc, "/status/phase"));
                if owner != Some(ws.as_str()) || phase != Some("Ready") {
                    missing.push(format!("{ws}: LogicalCluster {cluster} {lc:?}"));
                }
            }
            for (path, wanted) in CONTENT {
                let found = everywhere(shard, path);
                for (ws, cluster) in cluster_of {
                    let have = found.get(cluster).map(|o| names(o)).unwrap_or_default();
                    for name in wanted.iter().filter(|n| !have.contains(**n)) {
                        missing.push(format!("{ws}: {path} {name} in {cluster}"));
                    }
                }
            }
            let ours: BTreeSet<&String> = cluster_of.values().collect();
            let stray: Vec<String> = everywhere(shard, "/api/v1/namespaces")
                .into_keys()
                .filter(|c| !before.contains(c) && !ours.contains(c))
                .collect();
            assert!(stray.is_empty(), "content of no workspace: {stray:?}");
            missing
        });
        if missing.is_empty() {
            return;
        }
        assert!(
            start.elapsed() < READY_DEADLINE,
            "{} objects missing, e.g. {:?}\n{}",
            missing.len(),
            &missing[..missing.len().min(5)],
            shard.logs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn kill9_during_workspace_creation_finishes_every_acknowledged_one(store: StoreKind) {
    let mut shard = Shard::start(store);
    let before = clusters_with_namespaces(&shard);
    let creators = Creators::start(&workspaces(shard.kube_client().await), "crash");
    creators.until_acked(ACKED_BEFORE_KILL, &shard).await;
    // Once the kill is under way requests fail, and the creators stop.
    creators.expect_failures.store(true, Ordering::SeqCst);
    creators.stop.store(true, Ordering::SeqCst);
    tokio::task::block_in_place(|| shard.kill9());
    let acked = creators.finish().await;

    tokio::task::block_in_place(|| shard.start_again());
    // Every workspace the store holds gets Ready, those whose POST was cut off included.
    let cluster_of = all_ready(&shard, "crash", &acked).await;
    all_complete(&shard, &cluster_of, &before).await;
}

/// etcd killed (`kill -9`) and started again under a shard that is creating workspaces.
#[test]
fn etcd_killed_during_workspace_creation() {
    kcp_e2e::block_on(async {
        let mut shard = Shard::start(StoreKind::Etcd);
        let before = clusters_with_namespaces(&shard);
        let creators = Creators::start(&workspaces(shard.kube_client().await), "etcd");
        creators.until_acked(ACKED_BEFORE_KILL, &shard).await;
        creators.expect_failures.store(true, Ordering::SeqCst);
        tokio::task::block_in_place(|| shard.kill9_etcd());
        // The shard takes creations again once etcd is back.
        let after = creators.acked() + ACKED_BEFORE_KILL / 2;
        creators.until_acked(after, &shard).await;
        let acked = creators.finish().await;
        let cluster_of = all_ready(&shard, "etcd", &acked).await;
        all_complete(&shard, &cluster_of, &before).await;
    });
}

/// Children of the deleted tree's top, and children of each of those.
const TREE_WIDTH: usize = 6;

/// POSTs workspace `name` of type `root:universal` into the workspace at `parent` (a path).
fn post_workspace(shard: &Shard, parent: &str, name: &str) {
    let body = json!({
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": name},
        "spec": {"type": {"name": "universal", "path": "root"}},
    })
    .to_string();
    let url = format!("/clusters/{parent}/apis/tenancy.kcp.io/v1alpha1/workspaces");
    let (code, out) = shard.curl("POST", &url, Some(("application/json", &body)));
    assert_eq!(code, 201, "POST {url} {name}: {out}");
}

/// Every workspace of every logical cluster by name (names are unique in this test): its
/// logical cluster, once Ready (else "").
fn ready_workspaces(shard: &Shard) -> BTreeMap<String, String> {
    (everywhere(shard, "/apis/tenancy.kcp.io/v1alpha1/workspaces").into_values())
        .flatten()
        .map(|w| {
            let cluster = match json_str(&w, "/status/phase") {
                "Ready" => json_str(&w, "/spec/cluster"),
                _ => "",
            };
            (
                json_str(&w, "/metadata/name").to_string(),
                cluster.to_string(),
            )
        })
        .collect()
}

/// Waits until the workspaces `names` are all Ready.
fn wait_ready(shard: &Shard, names: &[String]) -> BTreeMap<String, String> {
    shard.eventually(&format!("{} workspaces Ready", names.len()), || {
        let ready = ready_workspaces(shard);
        let all = names
            .iter()
            .all(|n| ready.get(n).is_some_and(|c| !c.is_empty()));
        all.then_some(ready)
    })
}

fn kill9_during_tree_deletion_finishes_it(store: StoreKind) {
    let mut shard = Shard::start(store);
    for top in ["doomed", "kept"] {
        post_workspace(&shard, "root", top);
    }
    wait_ready(&shard, &["doomed".into(), "kept".into()]);
    shard.kubectl_cmd().cluster("root:kept").ok(&[
        "create",
        "configmap",
        "stays",
        "--from-literal=a=b",
    ]);
    let children: Vec<String> = (0..TREE_WIDTH).map(|i| format!("d-{i}")).collect();
    for child in &children {
        post_workspace(&shard, "root:doomed", child);
    }
    wait_ready(&shard, &children);
    let mut tree = children.clone();
    for child in &children {
        for j in 0..TREE_WIDTH {
            let name = format!("{child}-{j}");
            post_workspace(&shard, &format!("root:doomed:{child}"), &name);
            tree.push(name);
        }
    }
    tree.push("doomed".into());
    let ready = wait_ready(&shard, &tree);
    let doomed: BTreeSet<&String> = tree.iter().map(|n| &ready[n]).collect();

    let (code, out) = shard.curl(
        "DELETE",
        "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/doomed",
        None,
    );
    assert_eq!(code, 200, "DELETE doomed: {out}");
    shard.kill9();
    shard.start_again();

    shard.eventually("the tree and everything in it gone", || {
        let (code, _) = shard.curl(
            "GET",
            "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/doomed",
            None,
        );
        let left: Vec<String> = (CONTENT.iter().map(|(path, _)| *path))
            .chain([
                "/apis/core.kcp.io/v1alpha1/logicalclusters",
                "/apis/tenancy.kcp.io/v1alpha1/workspaces",
            ])
            .flat_map(|path| {
                everywhere(&shard, path)
                    .into_keys()
                    .filter(|c| doomed.contains(c))
                    .map(move |c| format!("{path} in {c}"))
            })
            .collect();
        (code == 404 && left.is_empty()).then_some(())
    });
    // The rest is untouched.
    let kept = shard.kubectl_cmd().cluster("root:kept");
    assert_eq!(
        kept.ok(&["get", "configmap", "stays", "-o", "jsonpath={.data.a}"]),
        "b"
    );
    let ready = ready_workspaces(&shard);
    assert!(!ready["kept"].is_empty(), "kept is Ready: {ready:?}");
}

const HOME: &str = "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/~";

/// A shard killed right after a user's first request for a home finishes that home after the
/// restart, once.
fn kill9_while_a_home_is_created(store: StoreKind) {
    const TOKEN: &str = "home-crash-token";
    let mut shard = Shard::start_with_tokens(store, &format!("{TOKEN},bob,bob-uid,\"team-b\"\n"));
    let bob = Caller::Token(TOKEN.to_string());
    let (code, body) = shard.curl_with(&bob, "GET", HOME, &[], None);
    assert_eq!(code, 429, "the first request creates the home: {body}");
    shard.kill9();
    shard.start_again();

    let home: Value = shard.eventually("bob's home Ready after the restart", || {
        let (code, body) = shard.curl_with(&bob, "GET", HOME, &[], None);
        (code == 200).then(|| serde_json::from_str(&body).expect("a Workspace"))
    });
    assert_eq!(home["status"]["phase"], "Ready", "{home}");
    let (code, body) = shard.curl_with(
        &bob,
        "POST",
        "/clusters/user:bob/api/v1/namespaces/default/configmaps",
        &[],
        Some(("application/json", r#"{"metadata":{"name":"mine"}}"#)),
    );
    assert_eq!(
        code, 201,
        "bob is admin at home, namespace default is there: {body}"
    );
    let homes: Vec<String> = (everywhere(&shard, "/apis/core.kcp.io/v1alpha1/logicalclusters")
        .into_values())
    .flatten()
    .filter(|lc| json_str(lc, "/metadata/annotations/kcp.io~1path") == "user:bob")
    .map(|lc| json_str(&lc, "/metadata/annotations/kcp.io~1cluster").to_string())
    .collect();
    assert_eq!(homes, [json_str(&home, "/spec/cluster")], "one home");
}

/// What follows a Workspace's or LogicalCluster's status in its metadata (besides the owner
/// annotation, which a masters-created workspace lacks).
const PHASE_LABEL: &str = "tenancy.kcp.io/phase";
const SHARD_HASH: &str = "internal.tenancy.kcp.io/shard";

/// Removes `PHASE_LABEL` and `SHARD_HASH` from the object stored at `key`, as a shard that did not
/// keep them yet would have stored it.
async fn strip_followed_metadata(store: &dyn kcp_store::Store, key: &str) {
    let kv = store
        .get(key)
        .await
        .expect("reading the store")
        .unwrap_or_else(|| panic!("{key} is stored"));
    let mut object: Value = serde_json::from_slice(&kv.value).expect("stored JSON");
    let meta = object["metadata"].as_object_mut().expect("metadata");
    let labels = meta.get_mut("labels").and_then(Value::as_object_mut);
    let removed = labels.and_then(|l| l.remove(PHASE_LABEL));
    assert!(removed.is_some(), "{key} was labelled");
    // Only workspaces carry the shard's hash.
    if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        annotations.remove(SHARD_HASH);
    }
    let bytes = serde_json::to_vec(&object).expect("JSON");
    store
        .update(key, bytes.into(), kv.mod_revision)
        .await
        .expect("writing the store");
}

async fn older_objects_get_the_metadata_that_follows_status(store: StoreKind) {
    let mut shard = Shard::start(store);
    post_workspace(&shard, "root", "older");
    let lc = wait_ready(&shard, &["older".into()])["older"].clone();
    shard.stop();
    {
        let store = kcp_store::open(&shard.store_config())
            .await
            .expect("opening the shard's store");
        let key = |group: &str, plural: &str, cluster: &str, name: &str| {
            ResourceKeyspace::new(group, plural, None, false).object(cluster, None, name)
        };
        let ws_key = key("tenancy.kcp.io", "workspaces", "root", "older");
        strip_followed_metadata(store.as_ref(), &ws_key).await;
        let lc_key = key("core.kcp.io", "logicalclusters", &lc, "cluster");
        strip_followed_metadata(store.as_ref(), &lc_key).await;
    }
    shard.start_again();
    let ws = shard.eventually("the workspace labelled again", || {
        let ws = shard.kubectl_json(&["get", "workspace", "older", "-o", "json"]);
        (ws["metadata"]["labels"][PHASE_LABEL] == "Ready").then_some(ws)
    });
    assert_eq!(
        ws["metadata"]["annotations"][SHARD_HASH], "1pfxsevk",
        "the hash of shard root: {ws}"
    );
    shard.eventually("the LogicalCluster labelled again", || {
        let (code, body) = shard.curl_as(
            Some("shard-admin"),
            "GET",
            &format!("/clusters/{lc}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"),
            None,
        );
        let lc: Value = serde_json::from_str(&body).unwrap_or_default();
        (code == 200 && lc["metadata"]["labels"][PHASE_LABEL] == "Ready").then_some(())
    });
}
