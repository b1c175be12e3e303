//! ResourceQuota object counts on both stores: admission refuses creates beyond `status.hard` with
//! Kubernetes' message, the controller keeps `status.hard`/`status.used` right (on quota creation,
//! after deletions, on resync), racing creates never exceed a limit, and custom resources count.

mod common_ctrl;

use kcp_apiserver::testing::lc;
use std::sync::Arc;
use std::time::Duration;

use common_ctrl::{Harness, create, create_cluster, create_namespace, delete, eventually, get};
use kcp_apimachinery::status::Reason;
use serde_json::{Value, json};

kcp_apiserver::on_both_stores!(
    status_shows_hard_limits_and_current_counts,
    creates_beyond_the_limit_are_refused_until_a_delete,
    legacy_names_count_like_count_names,
    quotas_are_per_namespace_and_cluster,
    racing_creates_never_exceed_the_limit,
    racing_creates_never_exceed_the_limit_during_recounts,
    custom_resources_count,
    resync_returns_usage_of_failed_creates,
    only_quotas_with_status_limit_and_unknown_usage_refuses,
    dry_runs_are_checked_but_reserve_nothing,
);

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

fn secret(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}})
}

async fn create_quota(h: &Harness, cluster: &str, namespace: &str, name: &str, hard: Value) {
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": name}, "spec": {"hard": hard}});
    create(h, cluster, Some(namespace), "", "resourcequotas", quota)
        .await
        .unwrap_or_else(|e| panic!("creating quota {name}: {e:?}"));
}

/// The quota once its status shows `used` (and hard limits equal to `hard`).
async fn status_becomes(
    h: &Harness,
    cluster: &str,
    namespace: &str,
    name: &str,
    hard: Value,
    used: Value,
) -> Value {
    let mut last = Value::Null;
    let what = format!("{cluster}/{namespace} quota {name}: hard {hard}, used {used}");
    let found = tokio::time::timeout(common_ctrl::EVENTUALLY, async {
        loop {
            let quota = get(h, cluster, Some(namespace), "", "resourcequotas", name).await;
            if let Some(q) = quota {
                if q["status"]["hard"] == hard && q["status"]["used"] == used {
                    return q;
                }
                last = q["status"].clone();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("gave up waiting for {what}; last status {last}"))
}

async fn status_shows_hard_limits_and_current_counts(h: &Harness) {
    create_namespace(h, "root", "apps").await;
    for name in ["a", "b"] {
        create(h, "root", Some("apps"), "", "configmaps", config_map(name))
            .await
            .expect("config map created");
    }
    kcp_controllers::quota::spawn(h.server.clone());
    // Status quantities are canonical, as Kubernetes serialises them.
    create_quota(
        h,
        "root",
        "apps",
        "q1",
        json!({"count/configmaps": "2000", "count/secrets": "1Ki", "requests.cpu": "500m"}),
    )
    .await;
    let quota = status_becomes(
        h,
        "root",
        "apps",
        "q1",
        json!({"count/configmaps": "2k", "count/secrets": "1Ki", "requests.cpu": "500m"}),
        json!({"count/configmaps": "2", "count/secrets": "0"}),
    )
    .await;
    // spec is stored as Kubernetes stores what it decoded: canonical too.
    assert_eq!(quota["spec"]["hard"]["count/configmaps"], "2k");

    // A deletion is counted (replenishment).
    delete(h, "root", Some("apps"), "", "configmaps", "a").await;
    status_becomes(
        h,
        "root",
        "apps",
        "q1",
        json!({"count/configmaps": "2k", "count/secrets": "1Ki", "requests.cpu": "500m"}),
        json!({"count/configmaps": "1", "count/secrets": "0"}),
    )
    .await;
}

async fn creates_beyond_the_limit_are_refused_until_a_delete(h: &Harness) {
    kcp_controllers::quota::spawn(h.server.clone());
    create_namespace(h, "root", "apps").await;
    create_quota(h, "root", "apps", "q1", json!({"count/configmaps": "2"})).await;
    let hard = json!({"count/configmaps": "2"});
    status_becomes(
        h,
        "root",
        "apps",
        "q1",
        hard.clone(),
        json!({"count/configmaps": "0"}),
    )
    .await;

    for name in ["c1", "c2"] {
        create(h, "root", Some("apps"), "", "configmaps", config_map(name))
            .await
            .expect("within the quota");
    }
    // Admission reserved the usage itself, before any recount.
    status_becomes(
        h,
        "root",
        "apps",
        "q1",
        hard.clone(),
        json!({"count/configmaps": "2"}),
    )
    .await;
    let err = create(h, "root", Some("apps"), "", "configmaps", config_map("c3"))
        .await
        .expect_err("the third config map exceeds the quota");
    assert_eq!(err.code, 403);
    assert_eq!(err.reason, Reason::Forbidden);
    assert_eq!(
        err.message,
        "configmaps \"c3\" is forbidden: exceeded quota: q1, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2"
    );
    assert!(
        get(h, "root", Some("apps"), "", "configmaps", "c3")
            .await
            .is_none(),
        "a refused object was stored"
    );
    // Other kinds are not limited by it.
    create(h, "root", Some("apps"), "", "secrets", secret("s1"))
        .await
        .expect("secrets are not limited");

    delete(h, "root", Some("apps"), "", "configmaps", "c1").await;
    status_becomes(
        h,
        "root",
        "apps",
        "q1",
        hard.clone(),
        json!({"count/configmaps": "1"}),
    )
    .await;
    create(h, "root", Some("apps"), "", "configmaps", config_map("c3"))
        .await
        .expect("room again after a delete");
    status_becomes(
        h,
        "root",
        "apps",
        "q1",
        hard,
        json!({"count/configmaps": "2"}),
    )
    .await;
}

async fn legacy_names_count_like_count_names(h: &Harness) {
    kcp_controllers::quota::spawn(h.server.clone());
    create_namespace(h, "root", "apps").await;
    create_quota(
        h,
        "root",
        "apps",
        "legacy",
        json!({"configmaps": "1", "secrets": "5"}),
    )
    .await;
    status_becomes(
        h,
        "root",
        "apps",
        "legacy",
        json!({"configmaps": "1", "secrets": "5"}),
        json!({"configmaps": "0", "secrets": "0"}),
    )
    .await;
    create(h, "root", Some("apps"), "", "configmaps", config_map("one"))
        .await
        .expect("within the quota");
    let err = create(h, "root", Some("apps"), "", "configmaps", config_map("two"))
        .await
        .expect_err("configmaps=1 limits config maps");
    assert_eq!(
        err.message,
        "configmaps \"two\" is forbidden: exceeded quota: legacy, requested: configmaps=1, used: configmaps=1, limited: configmaps=1"
    );
}

async fn quotas_are_per_namespace_and_cluster(h: &Harness) {
    kcp_controllers::quota::spawn(h.server.clone());
    create_cluster(h, "team-a").await;
    for (cluster, ns) in [("root", "apps"), ("root", "other"), ("team-a", "apps")] {
        create_namespace(h, cluster, ns).await;
    }
    create_quota(h, "root", "apps", "none", json!({"count/secrets": "0"})).await;
    status_becomes(
        h,
        "root",
        "apps",
        "none",
        json!({"count/secrets": "0"}),
        json!({"count/secrets": "0"}),
    )
    .await;
    let err = create(h, "root", Some("apps"), "", "secrets", secret("s"))
        .await
        .expect_err("no secrets allowed in root/apps");
    assert_eq!(err.code, 403);
    // The same namespace name in another cluster, and another namespace here, are not limited.
    create(h, "team-a", Some("apps"), "", "secrets", secret("s"))
        .await
        .expect("team-a/apps has no quota");
    create(h, "root", Some("other"), "", "secrets", secret("s"))
        .await
        .expect("root/other has no quota");
}

async fn racing_creates_never_exceed_the_limit(h: &Harness) {
    kcp_controllers::quota::spawn(h.server.clone());
    race_for_five(h).await;
}

/// The controller recounting all the time must not hand out slots reserved by creates in flight.
async fn racing_creates_never_exceed_the_limit_during_recounts(h: &Harness) {
    kcp_controllers::quota::spawn_with_resync(h.server.clone(), Duration::from_millis(1));
    race_for_five(h).await;
}

/// 20 creates race for a quota of 5 secrets.
async fn race_for_five(h: &Harness) {
    create_namespace(h, "root", "race").await;
    create_quota(h, "root", "race", "five", json!({"count/secrets": "5"})).await;
    let hard = json!({"count/secrets": "5"});
    status_becomes(
        h,
        "root",
        "race",
        "five",
        hard.clone(),
        json!({"count/secrets": "0"}),
    )
    .await;

    let server = h.server.clone();
    let def = common_ctrl::def(h, "root", "", "secrets");
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let server = server.clone();
            let def = Arc::clone(&def);
            tokio::spawn(async move {
                server
                    .registry()
                    .create(
                        &def,
                        lc("root"),
                        Some("race"),
                        secret(&format!("s{i}")),
                        Default::default(),
                    )
                    .await
            })
        })
        .collect();
    let mut created = 0;
    for task in tasks {
        match task.await.expect("the create task ran") {
            Ok(_) => created += 1,
            Err(e) => {
                assert_eq!(e.code, 403, "unexpected refusal: {e:?}");
                assert!(
                    e.message.contains("exceeded quota: five, requested: count/secrets=1, used: count/secrets=5, limited: count/secrets=5"),
                    "unexpected message: {}",
                    e.message
                );
            }
        }
    }
    assert_eq!(created, 5, "exactly the limit is admitted");
    h.server
        .registry()
        .cache()
        .wait_fresh()
        .await
        .expect("the cache catches up");
    let stored = h
        .server
        .registry()
        .cache()
        .list(
            &kcp_apiserver::registry::keyspace(&def).namespace("root", "race"),
            None,
        )
        .len();
    assert_eq!(stored, 5, "secrets stored in the namespace");
    status_becomes(
        h,
        "root",
        "race",
        "five",
        hard,
        json!({"count/secrets": "5"}),
    )
    .await;
}

fn gadget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
}

fn gadget(name: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name}})
}

async fn custom_resources_count(h: &Harness) {
    kcp_controllers::quota::spawn(h.server.clone());
    create(
        h,
        "root",
        None,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        gadget_crd(),
    )
    .await
    .expect("CRD created");
    eventually("gadgets served", || async {
        h.server
            .apis_of("root")
            .find("example.com", "v1", "gadgets")
            .map(|_| ())
    })
    .await;
    create(
        h,
        "root",
        Some("default"),
        "example.com",
        "gadgets",
        gadget("g1"),
    )
    .await
    .expect("first gadget");
    create_quota(
        h,
        "root",
        "default",
        "gadgets",
        json!({"count/gadgets.example.com": "2"}),
    )
    .await;
    let hard = json!({"count/gadgets.example.com": "2"});
    status_becomes(
        h,
        "root",
        "default",
        "gadgets",
        hard.clone(),
        json!({"count/gadgets.example.com": "1"}),
    )
    .await;
    create(
        h,
        "root",
        Some("default"),
        "example.com",
        "gadgets",
        gadget("g2"),
    )
    .await
    .expect("second gadget");
    let err = create(
        h,
        "root",
        Some("default"),
        "example.com",
        "gadgets",
        gadget("g3"),
    )
    .await
    .expect_err("a third gadget exceeds the quota");
    assert_eq!(
        err.message,
        "gadgets.example.com \"g3\" is forbidden: exceeded quota: gadgets, requested: count/gadgets.example.com=1, used: count/gadgets.example.com=2, limited: count/gadgets.example.com=2"
    );
    delete(h, "root", Some("default"), "example.com", "gadgets", "g1").await;
    status_becomes(
        h,
        "root",
        "default",
        "gadgets",
        hard,
        json!({"count/gadgets.example.com": "1"}),
    )
    .await;
    create(
        h,
        "root",
        Some("default"),
        "example.com",
        "gadgets",
        gadget("g3"),
    )
    .await
    .expect("room again after a delete");
}

async fn resync_returns_usage_of_failed_creates(h: &Harness) {
    kcp_controllers::quota::spawn_with_resync(h.server.clone(), Duration::from_millis(200));
    create_namespace(h, "root", "apps").await;
    create_quota(h, "root", "apps", "q1", json!({"count/configmaps": "3"})).await;
    let hard = json!({"count/configmaps": "3"});
    status_becomes(
        h,
        "root",
        "apps",
        "q1",
        hard.clone(),
        json!({"count/configmaps": "0"}),
    )
    .await;
    create(h, "root", Some("apps"), "", "configmaps", config_map("dup"))
        .await
        .expect("created");
    // As in Kubernetes, the second create reserves quota before the store refuses the name.
    let err = create(h, "root", Some("apps"), "", "configmaps", config_map("dup"))
        .await
        .expect_err("the name is taken");
    assert_eq!(err.code, 409);
    // The resync counts what is really there.
    status_becomes(
        h,
        "root",
        "apps",
        "q1",
        hard,
        json!({"count/configmaps": "1"}),
    )
    .await;
}

/// Sets a quota's status by hand (no controller runs in that test).
async fn set_status(h: &Harness, namespace: &str, name: &str, status: Value) {
    let at = kcp_apiserver::registry::ObjectRef {
        cluster: lc("root"),
        namespace: Some(namespace),
        name,
    };
    h.server
        .registry()
        .update(
            &common_ctrl::def(h, "root", "", "resourcequotas"),
            at,
            kcp_apiserver::registry::UpdateKind::Status,
            Default::default(),
            |old| {
                let mut new = old.clone();
                new["status"] = status.clone();
                Ok(new)
            },
        )
        .await
        .expect("status written");
}

async fn only_quotas_with_status_limit_and_unknown_usage_refuses(h: &Harness) {
    create_namespace(h, "root", "apps").await;
    create_quota(h, "root", "apps", "q1", json!({"count/configmaps": "0"})).await;
    // No status yet (no controller): as in Kubernetes, the quota limits nothing until it has one.
    create(
        h,
        "root",
        Some("apps"),
        "",
        "configmaps",
        config_map("free"),
    )
    .await
    .expect("a quota without status does not limit");
    set_status(h, "apps", "q1", json!({"hard": {"count/configmaps": "0"}})).await;
    let err = create(
        h,
        "root",
        Some("apps"),
        "",
        "configmaps",
        config_map("unknown"),
    )
    .await
    .expect_err("usage not known yet");
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        "configmaps \"unknown\" is forbidden: status unknown for quota: q1, resources: count/configmaps"
    );
}

async fn dry_runs_are_checked_but_reserve_nothing(h: &Harness) {
    kcp_controllers::quota::spawn(h.server.clone());
    create_namespace(h, "root", "apps").await;
    create_quota(h, "root", "apps", "q1", json!({"count/configmaps": "1"})).await;
    let hard = json!({"count/configmaps": "1"});
    let before = status_becomes(
        h,
        "root",
        "apps",
        "q1",
        hard.clone(),
        json!({"count/configmaps": "0"}),
    )
    .await;
    let cms = common_ctrl::def(h, "root", "", "configmaps");
    let dry_run = kcp_apiserver::registry::WriteOptions {
        dry_run: true,
        ..Default::default()
    };
    h.server
        .registry()
        .create(&cms, lc("root"), Some("apps"), config_map("dry"), dry_run)
        .await
        .expect("a dry run within the quota");
    let after = get(h, "root", Some("apps"), "", "resourcequotas", "q1")
        .await
        .expect("quota");
    assert_eq!(
        after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
        "a dry run reserved quota: {after}"
    );
    create(
        h,
        "root",
        Some("apps"),
        "",
        "configmaps",
        config_map("real"),
    )
    .await
    .expect("the one allowed");
    let err = h
        .server
        .registry()
        .create(&cms, lc("root"), Some("apps"), config_map("dry2"), dry_run)
        .await
        .err()
        .expect("a dry run beyond the quota is refused");
    assert_eq!(err.code, 403);
    assert!(
        err.message.contains("exceeded quota: q1"),
        "{}",
        err.message
    );
}
