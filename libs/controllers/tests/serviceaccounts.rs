//! The service-account controller on both stores: every namespace of every logical cluster gets a
//! `default` ServiceAccount, again after it is deleted, and none while the namespace or its logical
//! cluster terminates.

mod common_ctrl;

use common_ctrl::{Harness, create, create_cluster, create_namespace, delete, eventually, get};
use serde_json::json;

kcp_apiserver::on_both_stores!(
    existing_and_new_namespaces_get_a_default_service_account,
    a_deleted_default_service_account_comes_back,
    terminating_namespaces_get_none,
    deleting_logical_clusters_get_none,
);

async fn default_sa(h: &Harness, cluster: &str, namespace: &str) -> Option<serde_json::Value> {
    get(
        h,
        cluster,
        Some(namespace),
        "",
        "serviceaccounts",
        "default",
    )
    .await
}

async fn existing_and_new_namespaces_get_a_default_service_account(h: &Harness) {
    // Exists before the controller starts.
    create_namespace(h, "root", "early").await;
    kcp_controllers::serviceaccounts::spawn(h.server.clone());

    for ns in ["default", "early"] {
        eventually(&format!("default SA in root/{ns}"), || {
            default_sa(h, "root", ns)
        })
        .await;
    }
    create_namespace(h, "root", "later").await;
    let sa = eventually("default SA in root/later", || {
        default_sa(h, "root", "later")
    })
    .await;
    assert_eq!(sa["kind"], "ServiceAccount");
    assert_eq!(sa["metadata"]["namespace"], "later");

    // Another logical cluster: its own account, in its own namespaces.
    create_cluster(h, "team-a").await;
    create_namespace(h, "team-a", "apps").await;
    for ns in ["default", "apps"] {
        let sa = eventually(&format!("default SA in team-a/{ns}"), || {
            default_sa(h, "team-a", ns)
        })
        .await;
        assert_eq!(sa["metadata"]["annotations"]["kcp.io/cluster"], "team-a");
    }
    assert!(
        default_sa(h, "root", "apps").await.is_none(),
        "a namespace of team-a leaked into root"
    );
}

async fn a_deleted_default_service_account_comes_back(h: &Harness) {
    kcp_controllers::serviceaccounts::spawn(h.server.clone());
    create_namespace(h, "root", "apps").await;
    let first = eventually("default SA in apps", || default_sa(h, "root", "apps")).await;
    delete(h, "root", Some("apps"), "", "serviceaccounts", "default").await;
    let again = eventually("a new default SA in apps", || async {
        default_sa(h, "root", "apps")
            .await
            .filter(|sa| sa["metadata"]["uid"] != first["metadata"]["uid"])
    })
    .await;
    assert_eq!(again["metadata"]["name"], "default");

    // Other service accounts are the user's: deleting one brings nothing back.
    let other =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}});
    create(h, "root", Some("apps"), "", "serviceaccounts", other)
        .await
        .expect("robot created");
    delete(h, "root", Some("apps"), "", "serviceaccounts", "robot").await;
    // Sync point: the controller handles a later namespace, so it has seen the robot's deletion.
    create_namespace(h, "root", "sync").await;
    eventually("default SA in sync", || default_sa(h, "root", "sync")).await;
    assert!(
        get(h, "root", Some("apps"), "", "serviceaccounts", "robot")
            .await
            .is_none(),
        "a deleted non-default service account was recreated"
    );
}

async fn terminating_namespaces_get_none(h: &Harness) {
    kcp_controllers::serviceaccounts::spawn(h.server.clone());
    create_namespace(h, "root", "doomed").await;
    eventually("default SA in doomed", || default_sa(h, "root", "doomed")).await;
    // A finalizer keeps the namespace terminating after everything else in it is deleted.
    let held = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    create(h, "root", Some("doomed"), "", "configmaps", held)
        .await
        .expect("held created");
    delete(h, "root", None, "", "namespaces", "doomed").await;
    // The API handler hands deleted namespaces to the finalizer; the registry alone does not.
    h.server.finalize_namespaces_now().await;
    eventually("the default SA of doomed deleted", || async {
        default_sa(h, "root", "doomed")
            .await
            .is_none()
            .then_some(())
    })
    .await;
    create_namespace(h, "root", "sync").await;
    eventually("default SA in sync", || default_sa(h, "root", "sync")).await;
    assert!(
        default_sa(h, "root", "doomed").await.is_none(),
        "a terminating namespace got a default SA again"
    );
    let ns = get(h, "root", None, "", "namespaces", "doomed")
        .await
        .expect("doomed still terminating");
    assert!(!ns["metadata"]["deletionTimestamp"].is_null());
}

async fn deleting_logical_clusters_get_none(h: &Harness) {
    kcp_controllers::serviceaccounts::spawn(h.server.clone());
    // A finalizer holds the LC in deletion, as the workspace controller's does while it deletes
    // the content.
    let lc = json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster",
        "metadata": {"name": "cluster", "finalizers": ["example.com/hold"]}});
    create(h, "going", None, "core.kcp.io", "logicalclusters", lc)
        .await
        .expect("LC created");
    create_namespace(h, "going", "apps").await;
    eventually("default SA in going/apps", || {
        default_sa(h, "going", "apps")
    })
    .await;
    delete(
        h,
        "going",
        None,
        "core.kcp.io",
        "logicalclusters",
        "cluster",
    )
    .await;
    let lc = get(
        h,
        "going",
        None,
        "core.kcp.io",
        "logicalclusters",
        "cluster",
    )
    .await
    .expect("LC held by its finalizer");
    assert!(!lc["metadata"]["deletionTimestamp"].is_null());
    delete(h, "going", Some("apps"), "", "serviceaccounts", "default").await;
    // Sync point: the controller handles a later namespace, so it has seen the deletion.
    create_namespace(h, "root", "sync").await;
    eventually("default SA in sync", || default_sa(h, "root", "sync")).await;
    assert!(
        default_sa(h, "going", "apps").await.is_none(),
        "a deleting LC got its default SA back"
    );
}
