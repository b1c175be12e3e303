//! The Rust `kube` client against the shard: CRUD on a ConfigMap, discovery, and a
//! `kube::runtime::watcher` that sees an object created after it started.

use std::collections::BTreeMap;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kcp_e2e::{EVENTUALLY, Shard, StoreKind, on_both_stores};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

on_both_stores!(async crud_discovery_and_watcher);

fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_string());
    cm.metadata.labels = Some(BTreeMap::from([("app".to_string(), "kube-rs".to_string())]));
    cm.data = Some(
        data.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    cm
}

async fn crud_discovery_and_watcher(store: StoreKind) {
    let shard = Shard::start(store);
    let client = shard.kube_client().await;

    // Discovery, both the legacy and the aggregated form.
    for aggregated in [false, true] {
        let discovery = kube::Discovery::new(client.clone());
        let discovery = if aggregated {
            discovery.run_aggregated().await
        } else {
            discovery.run().await
        }
        .unwrap_or_else(|e| {
            panic!(
                "discovery (aggregated: {aggregated}): {e}\n{}",
                shard.logs()
            )
        });
        let core = discovery
            .groups()
            .find(|g| g.name().is_empty())
            .expect("the core group");
        let kinds: Vec<String> = core
            .recommended_resources()
            .into_iter()
            .map(|(ar, _)| ar.plural)
            .collect();
        assert!(
            kinds.iter().any(|k| k == "configmaps"),
            "aggregated: {aggregated}: {kinds:?}"
        );
        assert!(
            discovery.has_group("coordination.k8s.io"),
            "aggregated: {aggregated}"
        );
    }

    let namespaces: Api<Namespace> = Api::all(client.clone());
    assert!(
        namespaces.get("default").await.is_ok(),
        "no default namespace"
    );

    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &config_map("k1", &[("a", "b")]))
        .await
        .expect("create");
    assert!(created.metadata.uid.is_some() && created.metadata.resource_version.is_some());

    let got = api.get("k1").await.expect("get");
    assert_eq!(
        got.data
            .as_ref()
            .and_then(|d| d.get("a"))
            .map(String::as_str),
        Some("b")
    );
    assert_eq!(got.metadata.uid, created.metadata.uid);

    api.create(&PostParams::default(), &config_map("k2", &[]))
        .await
        .expect("create k2");
    let listed = api
        .list(&ListParams::default().labels("app=kube-rs"))
        .await
        .expect("list");
    let names: Vec<_> = listed
        .items
        .iter()
        .filter_map(|cm| cm.metadata.name.clone())
        .collect();
    assert_eq!(names, ["k1", "k2"]);
    let page = api
        .list(&ListParams::default().limit(1))
        .await
        .expect("list limit 1");
    assert_eq!(page.items.len(), 1);
    assert!(
        page.metadata.continue_.is_some_and(|c| !c.is_empty()),
        "no continue token"
    );

    let patched = api
        .patch(
            "k1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"c": "d"}})),
        )
        .await
        .expect("merge patch");
    let data = patched.data.expect("data");
    assert_eq!((data["a"].as_str(), data["c"].as_str()), ("b", "d"));
    let patched = api
        .patch(
            "k1",
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .expect("strategic patch");
    assert_eq!(
        patched
            .metadata
            .labels
            .expect("labels")
            .get("x")
            .map(String::as_str),
        Some("y")
    );

    // Optimistic concurrency: replacing with a stale resourceVersion is a 409.
    let mut stale = got.clone();
    stale.data = Some(BTreeMap::from([("stale".to_string(), "yes".to_string())]));
    match api.replace("k1", &PostParams::default(), &stale).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 409, "{status:?}"),
        other => panic!("stale replace: {other:?}"),
    }

    api.delete("k2", &DeleteParams::default())
        .await
        .expect("delete");
    match api.get("k2").await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 404, "{status:?}");
            assert_eq!(status.reason, "NotFound");
        }
        other => panic!("get after delete: {other:?}"),
    }

    // A watcher sees an object created after it started.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let watch_api = api.clone();
    let watching = tokio::spawn(async move {
        let mut stream = watcher(watch_api, watcher::Config::default()).boxed();
        while let Some(event) = stream.next().await {
            if tx.send(event.map_err(|e| e.to_string())).is_err() {
                break;
            }
        }
    });
    let next = async |rx: &mut tokio::sync::mpsc::UnboundedReceiver<
        Result<watcher::Event<ConfigMap>, String>,
    >| {
        tokio::time::timeout(EVENTUALLY, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("no watch event in time\n{}", shard.logs()))
            .expect("watcher ended")
    };
    // The initial listing ends with InitDone; only then create.
    let mut initial = Vec::new();
    loop {
        match next(&mut rx).await {
            Ok(watcher::Event::InitApply(cm)) => initial.push(cm.metadata.name.unwrap_or_default()),
            Ok(watcher::Event::InitDone) => break,
            Ok(_) => {}
            Err(err) => panic!("watcher error during the initial list: {err}"),
        }
    }
    assert!(initial.contains(&"k1".to_string()), "{initial:?}");
    api.create(
        &PostParams::default(),
        &config_map("after-watch", &[("n", "1")]),
    )
    .await
    .expect("create");
    loop {
        match next(&mut rx).await {
            Ok(watcher::Event::Apply(cm)) if cm.metadata.name.as_deref() == Some("after-watch") => {
                assert_eq!(
                    cm.data.and_then(|d| d.get("n").cloned()).as_deref(),
                    Some("1")
                );
                break;
            }
            Ok(_) => {}
            // A watcher retries on its own; errors are not fatal to it, but they are a server bug here.
            Err(err) => panic!("watcher error: {err}\n{}", shard.logs()),
        }
    }
    api.delete("after-watch", &DeleteParams::default())
        .await
        .expect("delete");
    loop {
        match next(&mut rx).await {
            Ok(watcher::Event::Delete(cm))
                if cm.metadata.name.as_deref() == Some("after-watch") =>
            {
                break;
            }
            Ok(_) => {}
            Err(err) => panic!("watcher error: {err}\n{}", shard.logs()),
        }
    }
    watching.abort();
}
