//! DeleteOptions.propagationPolicy at the registry, without a garbage collector running: which
//! finalizers each policy sets, how a later delete with another policy changes them, and Background
//! completing a deletion that only waited for the collector.

mod common;

use kcp_apiserver::on_both_stores;
use kcp_apiserver::testing::lc;

use common::Harness;
use kcp_apiserver::registry::{DeleteOptions, DeleteOutcome, ObjectRef, UpdateKind, WriteOptions};
use serde_json::{Value, json};

fn at(name: &str) -> ObjectRef<'_> {
    ObjectRef {
        cluster: lc("root"),
        namespace: Some("default"),
        name,
    }
}

fn policy(p: &str) -> DeleteOptions {
    DeleteOptions {
        propagation_policy: Some(p.to_string()),
        ..Default::default()
    }
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

async fn pending(h: &Harness, name: &str, opts: &DeleteOptions) -> Value {
    let cms = common::builtin("", "configmaps");
    match h.server.registry().delete(&cms, at(name), opts).await {
        Ok(DeleteOutcome::Pending(w)) => w.object,
        Ok(DeleteOutcome::Deleted(_)) => panic!("{name} was deleted at once"),
        Err(e) => panic!("delete {name} failed: {e}"),
    }
}

async fn policies_switch_the_collector_finalizers(h: &Harness) {
    let cms = common::builtin("", "configmaps");
    let reg = h.server.registry();
    let held = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    reg.create(
        &cms,
        lc("root"),
        Some("default"),
        held,
        WriteOptions::default(),
    )
    .await
    .expect("create");

    let orphaning = pending(h, "held", &policy("Orphan")).await;
    assert_eq!(finalizers(&orphaning), vec!["example.com/hold", "orphan"]);
    let since = orphaning["metadata"]["deletionTimestamp"].clone();
    assert!(since.is_string());

    // A second delete with another policy swaps the collector's finalizer, keeping the timestamp.
    let foreground = pending(h, "held", &policy("Foreground")).await;
    assert_eq!(
        finalizers(&foreground),
        vec!["example.com/hold", "foregroundDeletion"]
    );
    assert_eq!(foreground["metadata"]["deletionTimestamp"], since);
    // Without a policy, what the object asks for stays.
    let unchanged = pending(h, "held", &DeleteOptions::default()).await;
    assert_eq!(
        finalizers(&unchanged),
        vec!["example.com/hold", "foregroundDeletion"]
    );
    let background = pending(h, "held", &policy("Background")).await;
    assert_eq!(finalizers(&background), vec!["example.com/hold"]);

    reg.update(
        &cms,
        at("held"),
        UpdateKind::Main,
        WriteOptions::default(),
        |old| {
            let mut new = old.clone();
            new["metadata"]["finalizers"] = json!([]);
            Ok(new)
        },
    )
    .await
    .expect("release");
    assert_eq!(
        reg.get(&cms, at("held")).await.err().map(|e| e.code),
        Some(404)
    );

    // Foreground waits for the collector; Background then completes the deletion at once.
    let plain = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plain"}});
    reg.create(
        &cms,
        lc("root"),
        Some("default"),
        plain,
        WriteOptions::default(),
    )
    .await
    .expect("create");
    let waiting = pending(h, "plain", &policy("Foreground")).await;
    assert_eq!(finalizers(&waiting), vec!["foregroundDeletion"]);
    let outcome = reg
        .delete(&cms, at("plain"), &policy("Background"))
        .await
        .expect("background delete");
    assert!(matches!(outcome, DeleteOutcome::Deleted(_)));
    assert_eq!(
        reg.get(&cms, at("plain")).await.err().map(|e| e.code),
        Some(404)
    );
}

on_both_stores!(policies_switch_the_collector_finalizers);
