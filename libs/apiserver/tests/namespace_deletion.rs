//! Namespace deletion as Kubernetes reports it, on the embedded store and on etcd: the Terminating
//! phase, the namespace controller's conditions while content with finalizers remains, creations
//! refused in a terminating namespace, and the namespace going once its content is gone.

mod common;

use kcp_apiserver::on_both_stores;
use kcp_apiserver::testing::lc;

use std::time::{Duration, Instant};

use common::Harness;
use kcp_apiserver::registry::{DeleteOptions, DeleteOutcome, ObjectRef, UpdateKind, WriteOptions};
use serde_json::{Value, json};

const EVENTUALLY: Duration = Duration::from_secs(30);

fn ns_ref(name: &str) -> ObjectRef<'_> {
    ObjectRef {
        cluster: lc("root"),
        namespace: None,
        name,
    }
}

async fn namespace(h: &Harness, name: &str) -> Option<Value> {
    let ns = common::builtin("", "namespaces");
    match h.server.registry().get(&ns, ns_ref(name)).await {
        Ok(obj) => Some(obj.value().expect("stored JSON")),
        Err(e) if e.code == 404 => None,
        Err(e) => panic!("get namespace failed: {e}"),
    }
}

fn condition<'a>(ns: &'a Value, type_: &str) -> Option<&'a Value> {
    ns.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

async fn terminating_namespace_reports_remaining_content(h: &Harness) {
    let ns_def = common::builtin("", "namespaces");
    let cms = common::builtin("", "configmaps");
    let registry = h.server.registry();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}});
    registry
        .create(&ns_def, lc("root"), None, ns, WriteOptions::default())
        .await
        .expect("namespace created");
    let held = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    registry
        .create(
            &cms,
            lc("root"),
            Some("doomed"),
            held,
            WriteOptions::default(),
        )
        .await
        .expect("config map created");

    let outcome = registry
        .delete(&ns_def, ns_ref("doomed"), &DeleteOptions::default())
        .await
        .expect("namespace deletion starts");
    let DeleteOutcome::Pending(marked) = outcome else {
        panic!("a namespace waits for its finalizer");
    };
    assert_eq!(marked.object["status"]["phase"], "Terminating");
    // No request handler is involved: the finalizer notices the deletion from the watch cache.

    let deadline = Instant::now() + EVENTUALLY;
    let reported = loop {
        let ns = namespace(h, "doomed").await.expect("namespace still there");
        if condition(&ns, "NamespaceFinalizersRemaining").is_some_and(|c| c["status"] == "True") {
            break ns;
        }
        assert!(Instant::now() < deadline, "no conditions reported: {ns}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(reported["status"]["phase"], "Terminating");
    let remaining = condition(&reported, "NamespaceContentRemaining").expect("content condition");
    assert_eq!(remaining["status"], "True");
    assert_eq!(remaining["reason"], "SomeResourcesRemain");
    assert_eq!(
        remaining["message"],
        "Some resources are remaining: configmaps. has 1 resource instances"
    );
    let finalizers = condition(&reported, "NamespaceFinalizersRemaining").expect("finalizers");
    assert_eq!(finalizers["reason"], "SomeFinalizersRemain");
    assert_eq!(
        finalizers["message"],
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    );
    for (type_, reason) in [
        ("NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered"),
        (
            "NamespaceDeletionGroupVersionParsingFailure",
            "ParsedGroupVersions",
        ),
        ("NamespaceDeletionContentFailure", "ContentDeleted"),
    ] {
        let c = condition(&reported, type_).unwrap_or_else(|| panic!("no {type_}"));
        assert_eq!(c["status"], "False", "{type_}");
        assert_eq!(c["reason"], reason, "{type_}");
    }

    // New content is refused while the namespace terminates.
    let late = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}});
    let err = registry
        .create(
            &cms,
            lc("root"),
            Some("doomed"),
            late,
            WriteOptions::default(),
        )
        .await
        .err()
        .expect("creating into a terminating namespace is refused");
    assert_eq!(err.code, 403);
    assert_eq!(err.reason, kcp_apimachinery::status::Reason::Forbidden);
    assert!(
        err.details
            .causes
            .iter()
            .any(|c| c.reason == "NamespaceTerminating"),
        "{err:?}"
    );

    // Releasing the finalizer lets the content, then the namespace, go.
    let held_at = ObjectRef {
        cluster: lc("root"),
        namespace: Some("doomed"),
        name: "held",
    };
    registry
        .update(
            &cms,
            held_at,
            UpdateKind::Main,
            WriteOptions::default(),
            |old| {
                let mut new = old.clone();
                new["metadata"]["finalizers"] = json!([]);
                Ok(new)
            },
        )
        .await
        .expect("finalizer removed");
    let deadline = Instant::now() + EVENTUALLY;
    while namespace(h, "doomed").await.is_some() {
        assert!(Instant::now() < deadline, "the namespace never went");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

on_both_stores!(terminating_namespace_reports_remaining_content);
