//! Garbage collection with kubectl against the real shard, on both stores: `kubectl delete
//! --cascade=background|foreground|orphan` on an owner ConfigMap with Secret dependents, and a
//! terminating namespace reporting the content that holds it.

use kcp_e2e::{Shard, StoreKind, json_str, on_both_stores};
use serde_json::Value;

on_both_stores!(
    cascade_background_deletes_dependents,
    cascade_foreground_deletes_dependents_first,
    cascade_orphan_keeps_dependents,
    terminating_namespace_shows_its_conditions,
);

/// Creates ConfigMap `owner` and Secrets `names` owned by it; returns the owner's uid.
fn owner_with_dependents(shard: &Shard, names: &[&str]) -> String {
    shard.kubectl_ok(&["create", "configmap", "owner", "--from-literal=k=v"]);
    let uid = shard.kubectl_ok(&[
        "get",
        "configmap",
        "owner",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    let uid = uid.trim().to_string();
    assert!(!uid.is_empty(), "owner without uid");
    for name in names {
        let manifest = format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: owner\n    uid: {uid}\n    blockOwnerDeletion: true\nstringData:\n  p: q\n"
        );
        shard
            .kubectl_cmd()
            .stdin(&manifest)
            .ok(&["apply", "-f", "-"]);
    }
    uid
}

fn exists(shard: &Shard, kind: &str, name: &str) -> bool {
    shard
        .kubectl(&["get", kind, name, "-o", "name"])
        .status
        .success()
}

fn cascade_background_deletes_dependents(store: StoreKind) {
    let shard = Shard::start(store);
    owner_with_dependents(&shard, &["dep-a", "dep-b"]);
    let out = shard.kubectl_ok(&["delete", "configmap", "owner", "--cascade=background"]);
    assert!(out.contains("configmap \"owner\" deleted"), "{out}");
    for name in ["dep-a", "dep-b"] {
        shard.eventually(&format!("secret {name} collected"), || {
            (!exists(&shard, "secret", name)).then_some(())
        });
    }
}

fn cascade_foreground_deletes_dependents_first(store: StoreKind) {
    let shard = Shard::start(store);
    owner_with_dependents(&shard, &["dep"]);
    // kubectl waits until the owner is gone, which foreground deletion allows only after `dep`.
    let out = shard.kubectl_ok(&[
        "delete",
        "configmap",
        "owner",
        "--cascade=foreground",
        "--timeout=60s",
    ]);
    assert!(out.contains("configmap \"owner\" deleted"), "{out}");
    assert!(!exists(&shard, "configmap", "owner"));
    assert!(
        !exists(&shard, "secret", "dep"),
        "the owner went before its blocking dependent"
    );
}

fn cascade_orphan_keeps_dependents(store: StoreKind) {
    let shard = Shard::start(store);
    owner_with_dependents(&shard, &["dep"]);
    shard.kubectl_ok(&[
        "delete",
        "configmap",
        "owner",
        "--cascade=orphan",
        "--timeout=60s",
    ]);
    shard.eventually("owner gone", || {
        (!exists(&shard, "configmap", "owner")).then_some(())
    });
    let dep = shard.kubectl_json(&["get", "secret", "dep", "-o", "json"]);
    assert!(
        dep.pointer("/metadata/ownerReferences").is_none(),
        "orphaned dependent still references its owner: {dep}"
    );
}

fn terminating_namespace_shows_its_conditions(store: StoreKind) {
    let shard = Shard::start(store);
    shard.kubectl_ok(&["create", "namespace", "doomed"]);
    let held = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: doomed\n  finalizers:\n  - example.com/hold\n";
    shard.kubectl_cmd().stdin(held).ok(&["apply", "-f", "-"]);
    shard.kubectl_ok(&["delete", "namespace", "doomed", "--wait=false"]);

    let ns: Value = shard.eventually("the namespace reports its finalizers", || {
        let ns = shard.kubectl_json(&["get", "namespace", "doomed", "-o", "json"]);
        let reported = ns["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "NamespaceFinalizersRemaining" && c["status"] == "True")
        });
        reported.then_some(ns)
    });
    assert_eq!(json_str(&ns, "/status/phase"), "Terminating");
    let message = ns["status"]["conditions"]
        .as_array()
        .and_then(|c| {
            c.iter()
                .find(|c| c["type"] == "NamespaceFinalizersRemaining")
        })
        .map(|c| json_str(c, "/message").to_string())
        .unwrap_or_default();
    assert_eq!(
        message,
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    );

    let refused = shard.kubectl_fails(&[
        "-n",
        "doomed",
        "create",
        "configmap",
        "late",
        "--from-literal=k=v",
    ]);
    assert!(refused.contains("being terminated"), "{refused}");
    let (code, body) = shard.curl(
        "POST",
        "/clusters/root/api/v1/namespaces/doomed/configmaps",
        Some((
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"late"}}"#,
        )),
    );
    assert_eq!(code, 403, "{body}");
    let status: Value = serde_json::from_str(&body).expect("a Status");
    assert_eq!(json_str(&status, "/reason"), "Forbidden", "{body}");
    assert_eq!(
        json_str(&status, "/details/causes/0/reason"),
        "NamespaceTerminating",
        "{body}"
    );
    // NamespaceLifecycle's words: forbidden for the object, the cause naming the namespace.
    assert_eq!(
        json_str(&status, "/message"),
        r#"configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated"#
    );
    assert_eq!(
        (
            json_str(&status, "/details/name"),
            json_str(&status, "/details/kind"),
            json_str(&status, "/details/causes/0/message")
        ),
        ("late", "configmaps", "namespace doomed is being terminated")
    );

    shard.kubectl_ok(&[
        "-n",
        "doomed",
        "patch",
        "configmap",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    shard.eventually("the namespace goes", || {
        (!exists(&shard, "namespace", "doomed")).then_some(())
    });
}
