//! Garbage collection from ownerReferences through the registry, on the embedded store and on etcd:
//! background cascades across kinds (built-ins and a custom resource), foreground deletion held by
//! blocking dependents, orphaning, dangling owners (wrong uid), and logical clusters never sharing
//! owners.

mod common;

use kcp_apiserver::testing::lc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::Harness;
use kcp_api_types::ResourceDef;
use kcp_apiserver::registry::{DeleteOptions, DeleteOutcome, ObjectRef, UpdateKind, WriteOptions};
use serde_json::{Value, json};

/// Bounds "eventually" so a broken collector fails instead of hanging.
const EVENTUALLY: Duration = Duration::from_secs(30);

fn configmaps() -> ResourceDef {
    common::builtin("", "configmaps")
}

fn secrets() -> ResourceDef {
    common::builtin("", "secrets")
}

fn at<'a>(cluster: &str, name: &'a str) -> ObjectRef<'a> {
    ObjectRef {
        cluster: lc(cluster),
        namespace: Some("default"),
        name,
    }
}

fn owner_ref(owner: &Value, block: bool) -> Value {
    json!({
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": block,
    })
}

fn configmap(name: &str, owners: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "ownerReferences": owners}, "data": {"k": "v"}})
}

fn secret(name: &str, owners: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": name, "ownerReferences": owners}, "type": "Opaque"})
}

async fn create(h: &Harness, def: &ResourceDef, cluster: &str, obj: Value) -> Value {
    let cluster = lc(cluster);
    h.server
        .registry()
        .create(def, cluster, Some("default"), obj, WriteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("create failed: {e}"))
        .object
}

async fn get(h: &Harness, def: &ResourceDef, cluster: &str, name: &str) -> Option<Value> {
    let cluster = lc(cluster);
    match h.server.registry().get(def, at(cluster, name)).await {
        Ok(obj) => Some(obj.value().expect("stored JSON")),
        Err(e) if e.is_not_found() => None,
        Err(e) => panic!("get {name} failed: {e}"),
    }
}

async fn delete(h: &Harness, def: &ResourceDef, cluster: &str, name: &str, policy: Option<&str>) {
    let cluster = lc(cluster);
    let opts = DeleteOptions {
        propagation_policy: policy.map(str::to_string),
        ..Default::default()
    };
    h.server
        .registry()
        .delete(def, at(cluster, name), &opts)
        .await
        .unwrap_or_else(|e| panic!("delete {name} failed: {e}"));
}

/// Polls `check` until it holds; fails with `what` after [`EVENTUALLY`].
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + EVENTUALLY;
    while !check().await {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn eventually_gone(h: &Harness, def: &ResourceDef, cluster: &str, name: &str) {
    let cluster = lc(cluster);
    eventually(&format!("{cluster}/{name} deleted"), || async {
        get(h, def, cluster, name).await.is_none()
    })
    .await;
}

fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r["uid"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

async fn ensure_cluster(h: &Harness, cluster: &str) {
    let cluster = lc(cluster);
    let lcs = common::builtin("core.kcp.io", "logicalclusters");
    let obj = json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster", "metadata": {"name": "cluster"}});
    let _ = h
        .server
        .registry()
        .create(&lcs, cluster, None, obj, WriteOptions::default())
        .await;
    let ns = common::builtin("", "namespaces");
    let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
    let _ = h
        .server
        .registry()
        .create(&ns, cluster, None, obj, WriteOptions::default())
        .await;
}

/// Serves `example.com/v1 Widget` (namespaced) in `cluster` and returns its definition.
async fn widgets(h: &Harness, cluster: &str) -> Arc<ResourceDef> {
    let cluster = lc(cluster);
    let crds = common::builtin("apiextensions.k8s.io", "customresourcedefinitions");
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]
        }
    });
    h.server
        .registry()
        .create(&crds, cluster, None, crd, WriteOptions::default())
        .await
        .expect("CRD created");
    let deadline = Instant::now() + EVENTUALLY;
    loop {
        if let Some(def) = h
            .server
            .apis_of(cluster)
            .find("example.com", "v1", "widgets")
        {
            return def.clone();
        }
        assert!(Instant::now() < deadline, "widgets never served");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn background_cascades_through_two_levels(h: &Harness) {
    let widgets = widgets(h, "root").await;
    let owner = create(h, &configmaps(), "root", configmap("owner", vec![])).await;
    let keep = create(h, &configmaps(), "root", configmap("keep", vec![])).await;
    let s1 = create(
        h,
        &secrets(),
        "root",
        secret("s1", vec![owner_ref(&owner, false)]),
    )
    .await;
    create(
        h,
        &secrets(),
        "root",
        secret("s2", vec![owner_ref(&owner, false)]),
    )
    .await;
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "ownerReferences": [owner_ref(&s1, false)]}, "spec": {}});
    create(h, &widgets, "root", widget).await;
    let both = secret(
        "both",
        vec![owner_ref(&owner, false), owner_ref(&keep, false)],
    );
    create(h, &secrets(), "root", both).await;

    // kubectl's default: the owner goes at once, the collector follows.
    delete(h, &configmaps(), "root", "owner", Some("Background")).await;
    assert!(get(h, &configmaps(), "root", "owner").await.is_none());
    eventually_gone(h, &secrets(), "root", "s1").await;
    eventually_gone(h, &secrets(), "root", "s2").await;
    eventually_gone(h, &widgets, "root", "w").await;

    // The dependent with a live owner stays; its reference to the deleted owner is dropped.
    let keep_uid = keep["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    eventually("both keeps only its live owner", || async {
        get(h, &secrets(), "root", "both")
            .await
            .is_some_and(|b| owner_uids(&b) == vec![keep_uid.clone()])
    })
    .await;
    assert!(get(h, &configmaps(), "root", "keep").await.is_some());
}

async fn foreground_waits_for_blocking_dependents(h: &Harness) {
    let owner = create(h, &configmaps(), "root", configmap("owner", vec![])).await;
    let mut blocker = secret("blocker", vec![owner_ref(&owner, true)]);
    blocker["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(h, &secrets(), "root", blocker).await;
    create(
        h,
        &secrets(),
        "root",
        secret("loose", vec![owner_ref(&owner, false)]),
    )
    .await;

    let opts = DeleteOptions {
        propagation_policy: Some("Foreground".into()),
        ..Default::default()
    };
    let outcome = h
        .server
        .registry()
        .delete(&configmaps(), at("root", "owner"), &opts)
        .await
        .expect("foreground delete");
    let DeleteOutcome::Pending(marked) = outcome else {
        panic!("a foreground delete must wait for the dependents");
    };
    assert_eq!(finalizers(&marked.object), vec!["foregroundDeletion"]);
    assert!(marked.object["metadata"]["deletionTimestamp"].is_string());

    eventually_gone(h, &secrets(), "root", "loose").await;
    eventually("the blocking dependent is being deleted", || async {
        get(h, &secrets(), "root", "blocker")
            .await
            .is_some_and(|b| b["metadata"]["deletionTimestamp"].is_string())
    })
    .await;
    // The blocking dependent still exists, so the owner must too.
    let held = get(h, &configmaps(), "root", "owner")
        .await
        .expect("the owner waits for its blocking dependent");
    assert_eq!(finalizers(&held), vec!["foregroundDeletion"]);

    h.server
        .registry()
        .update(
            &secrets(),
            at("root", "blocker"),
            UpdateKind::Main,
            WriteOptions::default(),
            |old| {
                let mut new = old.clone();
                new["metadata"]["finalizers"] = json!([]);
                Ok(new)
            },
        )
        .await
        .expect("release the blocker");
    eventually_gone(h, &secrets(), "root", "blocker").await;
    eventually_gone(h, &configmaps(), "root", "owner").await;
}

async fn foreground_chains_wait_for_the_deepest_dependent(h: &Harness) {
    let owner = create(h, &configmaps(), "root", configmap("top", vec![])).await;
    let mid = create(
        h,
        &configmaps(),
        "root",
        configmap("mid", vec![owner_ref(&owner, true)]),
    )
    .await;
    let mut leaf = secret("leaf", vec![owner_ref(&mid, true)]);
    leaf["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(h, &secrets(), "root", leaf).await;

    delete(h, &configmaps(), "root", "top", Some("Foreground")).await;
    // The middle object has dependents of its own, so it is deleted in the foreground too.
    eventually("mid waits for its dependents", || async {
        get(h, &configmaps(), "root", "mid")
            .await
            .is_some_and(|m| finalizers(&m) == vec!["foregroundDeletion"])
    })
    .await;
    eventually("the leaf is being deleted", || async {
        get(h, &secrets(), "root", "leaf")
            .await
            .is_some_and(|l| l["metadata"]["deletionTimestamp"].is_string())
    })
    .await;
    // The held leaf keeps the whole chain.
    assert!(get(h, &configmaps(), "root", "top").await.is_some());
    assert!(get(h, &configmaps(), "root", "mid").await.is_some());

    h.server
        .registry()
        .update(
            &secrets(),
            at("root", "leaf"),
            UpdateKind::Main,
            WriteOptions::default(),
            |old| {
                let mut new = old.clone();
                new["metadata"]["finalizers"] = json!([]);
                Ok(new)
            },
        )
        .await
        .expect("release the leaf");
    eventually_gone(h, &secrets(), "root", "leaf").await;
    eventually_gone(h, &configmaps(), "root", "mid").await;
    eventually_gone(h, &configmaps(), "root", "top").await;
}

async fn foreground_deletion_breaks_ownership_cycles(h: &Harness) {
    let a = create(h, &configmaps(), "root", configmap("a", vec![])).await;
    let b = create(
        h,
        &configmaps(),
        "root",
        configmap("b", vec![owner_ref(&a, true)]),
    )
    .await;
    // Close the cycle: a is owned by b, b by a, both blocking.
    let b_ref = owner_ref(&b, true);
    h.server
        .registry()
        .update(
            &configmaps(),
            at("root", "a"),
            UpdateKind::Main,
            WriteOptions::default(),
            move |old| {
                let mut new = old.clone();
                new["metadata"]["ownerReferences"] = json!([b_ref.clone()]);
                Ok(new)
            },
        )
        .await
        .expect("a owned by b");

    delete(h, &configmaps(), "root", "a", Some("Foreground")).await;
    eventually_gone(h, &configmaps(), "root", "a").await;
    eventually_gone(h, &configmaps(), "root", "b").await;
}

async fn orphan_keeps_dependents_without_the_reference(h: &Harness) {
    let owner = create(h, &configmaps(), "root", configmap("owner", vec![])).await;
    let other = create(h, &configmaps(), "root", configmap("other", vec![])).await;
    let refs = vec![owner_ref(&owner, true), owner_ref(&other, false)];
    create(h, &secrets(), "root", secret("dep", refs)).await;
    create(
        h,
        &configmaps(),
        "root",
        configmap("dep2", vec![owner_ref(&owner, false)]),
    )
    .await;

    let opts = DeleteOptions {
        propagation_policy: Some("Orphan".into()),
        ..Default::default()
    };
    let outcome = h
        .server
        .registry()
        .delete(&configmaps(), at("root", "owner"), &opts)
        .await
        .expect("orphan delete");
    let DeleteOutcome::Pending(marked) = outcome else {
        panic!("an orphaning delete waits for the collector");
    };
    assert_eq!(finalizers(&marked.object), vec!["orphan"]);

    eventually_gone(h, &configmaps(), "root", "owner").await;
    let dep = get(h, &secrets(), "root", "dep")
        .await
        .expect("dep orphaned, not deleted");
    let other_uid = other["metadata"]["uid"].as_str().unwrap_or_default();
    assert_eq!(owner_uids(&dep), vec![other_uid.to_string()]);
    let dep2 = get(h, &configmaps(), "root", "dep2")
        .await
        .expect("dep2 orphaned, not deleted");
    assert!(dep2["metadata"].get("ownerReferences").is_none(), "{dep2}");
}

async fn dangling_owners_are_matched_by_uid(h: &Harness) {
    let owner = create(h, &configmaps(), "root", configmap("owner", vec![])).await;
    let mut wrong = owner_ref(&owner, false);
    wrong["uid"] = json!("00000000-0000-0000-0000-000000000000");
    create(h, &secrets(), "root", secret("impostor", vec![wrong])).await;
    let absent =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "absent", "uid": "u-absent"});
    let mixed = secret("mixed", vec![owner_ref(&owner, false), absent]);
    create(h, &secrets(), "root", mixed).await;

    // Same name, another uid: the owner is gone for this dependent.
    eventually_gone(h, &secrets(), "root", "impostor").await;
    let owner_uid = owner["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    eventually("mixed drops its dangling reference", || async {
        get(h, &secrets(), "root", "mixed")
            .await
            .is_some_and(|m| owner_uids(&m) == vec![owner_uid.clone()])
    })
    .await;
    assert!(get(h, &configmaps(), "root", "owner").await.is_some());
}

async fn owners_in_other_logical_clusters_never_match(h: &Harness) {
    ensure_cluster(h, "other").await;
    let owner = create(h, &configmaps(), "root", configmap("owner", vec![])).await;
    // The other cluster has an object of the same name, and a dependent naming root's owner exactly.
    create(h, &configmaps(), "other", configmap("owner", vec![])).await;
    create(
        h,
        &secrets(),
        "other",
        secret("far", vec![owner_ref(&owner, false)]),
    )
    .await;
    create(
        h,
        &secrets(),
        "root",
        secret("near", vec![owner_ref(&owner, false)]),
    )
    .await;

    eventually_gone(h, &secrets(), "other", "far").await;
    assert!(get(h, &configmaps(), "root", "owner").await.is_some());
    assert!(get(h, &configmaps(), "other", "owner").await.is_some());

    // The same-cluster dependent is collected only when its owner goes.
    assert!(get(h, &secrets(), "root", "near").await.is_some());
    delete(h, &configmaps(), "root", "owner", None).await;
    eventually_gone(h, &secrets(), "root", "near").await;
    assert!(get(h, &configmaps(), "other", "owner").await.is_some());
}

kcp_apiserver::on_both_stores!(with common::harness; background_cascades_through_two_levels);
kcp_apiserver::on_both_stores!(with common::harness; foreground_waits_for_blocking_dependents);
kcp_apiserver::on_both_stores!(with common::harness; foreground_chains_wait_for_the_deepest_dependent);
kcp_apiserver::on_both_stores!(with common::harness; foreground_deletion_breaks_ownership_cycles);
kcp_apiserver::on_both_stores!(with common::harness; orphan_keeps_dependents_without_the_reference);
kcp_apiserver::on_both_stores!(with common::harness; dangling_owners_are_matched_by_uid);
kcp_apiserver::on_both_stores!(with common::harness; owners_in_other_logical_clusters_never_match);

/// A collector starting over (first start, or after being cut off from the cache when it fell
/// behind) builds its graph from a full listing and collects what lost its owner before it looked.
async fn a_collector_starting_late_collects_from_the_listing(engine: common::Engine) {
    let h = common::harness_with(engine, None).await;
    let owner = create(&h, &configmaps(), "root", configmap("owner", vec![])).await;
    let keep = create(&h, &configmaps(), "root", configmap("keep", vec![])).await;
    for i in 0..5 {
        let name = format!("dep{i}");
        create(
            &h,
            &secrets(),
            "root",
            secret(&name, vec![owner_ref(&owner, false)]),
        )
        .await;
    }
    create(
        &h,
        &secrets(),
        "root",
        secret("kept", vec![owner_ref(&keep, false)]),
    )
    .await;
    delete(&h, &configmaps(), "root", "owner", None).await;

    let options = kcp_controllers::gc::GcOptions {
        workers: 1,
        event_queue: 1,
    };
    let gc = kcp_controllers::gc::spawn_with(h.server.clone(), options);
    for i in 0..5 {
        eventually_gone(&h, &secrets(), "root", &format!("dep{i}")).await;
    }
    assert!(get(&h, &secrets(), "root", "kept").await.is_some());
    // Only `kept` still references an owner; the graph forgets the collected ones.
    eventually("the graph tracks only kept", || async { gc.tracked() == 1 }).await;
}

#[tokio::test]
async fn a_collector_starting_late_collects_from_the_listing_embedded() {
    a_collector_starting_late_collects_from_the_listing(common::Engine::Embedded).await;
}

#[tokio::test]
async fn a_collector_starting_late_collects_from_the_listing_etcd() {
    a_collector_starting_late_collects_from_the_listing(common::Engine::Etcd).await;
}
