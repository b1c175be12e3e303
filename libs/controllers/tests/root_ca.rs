//! The root CA publisher on both stores: every namespace of every logical cluster gets
//! `kube-root-ca.crt` with the shard's CA, recreated when deleted and restored when edited.

mod common_ctrl;

use common_ctrl::{
    Harness, create, create_cluster, create_namespace, delete, edit, eventually, get,
};
use kcp_apiserver::testing::lc;
use kcp_controllers::root_ca::{DESCRIPTION, DESCRIPTION_ANNOTATION, ROOT_CA_CONFIG_MAP};
use serde_json::{Value, json};

const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n";

kcp_apiserver::on_both_stores!(
    every_namespace_gets_the_ca,
    deleted_or_edited_config_maps_are_restored,
    a_refused_create_is_retried,
);

async fn root_ca(h: &Harness, cluster: &str, namespace: &str) -> Option<Value> {
    get(
        h,
        cluster,
        Some(namespace),
        "",
        "configmaps",
        ROOT_CA_CONFIG_MAP,
    )
    .await
}

/// The config map once it carries exactly the CA and the description.
async fn published(h: &Harness, cluster: &str, namespace: &str) -> Value {
    eventually(
        &format!("{ROOT_CA_CONFIG_MAP} in {cluster}/{namespace}"),
        || async {
            root_ca(h, cluster, namespace).await.filter(|cm| {
                cm["data"] == json!({"ca.crt": PEM})
                    && cm["metadata"]["annotations"][DESCRIPTION_ANNOTATION] == DESCRIPTION
            })
        },
    )
    .await
}

async fn every_namespace_gets_the_ca(h: &Harness) {
    create_namespace(h, "root", "early").await;
    kcp_controllers::root_ca::spawn(h.server.clone(), PEM.to_string());
    published(h, "root", "default").await;
    published(h, "root", "early").await;
    create_namespace(h, "root", "later").await;
    let cm = published(h, "root", "later").await;
    assert_eq!(cm["metadata"]["namespace"], "later");
    // A namespace created while the publisher runs brings the ConfigMap in its own write; one
    // from before gets it from the controller, later.
    let revision = |v: &Value| {
        v["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|rv| rv.parse::<u64>().ok())
            .expect("a resourceVersion")
    };
    let namespace = |name| get(h, "root", None, "", "namespaces", name);
    let later = namespace("later").await.expect("namespace later");
    assert!(revision(&cm) <= revision(&later), "{cm} came after {later}");
    let early = namespace("early").await.expect("namespace early");
    let early_cm = root_ca(h, "root", "early").await.expect("published");
    assert!(revision(&early_cm) > revision(&early));

    create_cluster(h, "team-a").await;
    let cm = published(h, "team-a", "default").await;
    assert_eq!(cm["metadata"]["annotations"]["kcp.io/cluster"], "team-a");
}

async fn deleted_or_edited_config_maps_are_restored(h: &Harness) {
    kcp_controllers::root_ca::spawn(h.server.clone(), PEM.to_string());
    create_namespace(h, "root", "apps").await;
    let first = published(h, "root", "apps").await;

    delete(
        h,
        "root",
        Some("apps"),
        "",
        "configmaps",
        ROOT_CA_CONFIG_MAP,
    )
    .await;
    let again = published(h, "root", "apps").await;
    assert_ne!(
        again["metadata"]["uid"], first["metadata"]["uid"],
        "not recreated"
    );

    // Forged data and a dropped description are put back; a label the user added stays.
    let edited = edit(
        h,
        "root",
        Some("apps"),
        "",
        "configmaps",
        ROOT_CA_CONFIG_MAP,
        |cm| {
            cm["data"] = json!({"ca.crt": "forged", "extra": "x"});
            cm["metadata"]["annotations"] = json!({});
            cm["metadata"]["labels"] = json!({"team": "a"});
        },
    )
    .await;
    let restored = eventually("the CA restored after an edit", || async {
        root_ca(h, "root", "apps")
            .await
            .filter(|cm| cm["metadata"]["resourceVersion"] != edited["metadata"]["resourceVersion"])
    })
    .await;
    assert_eq!(restored["data"], json!({"ca.crt": PEM}));
    assert_eq!(
        restored["metadata"]["annotations"][DESCRIPTION_ANNOTATION],
        DESCRIPTION
    );
    assert_eq!(restored["metadata"]["labels"]["team"], "a");
    assert_eq!(restored["metadata"]["uid"], again["metadata"]["uid"]);
}

async fn a_refused_create_is_retried(h: &Harness) {
    kcp_controllers::root_ca::spawn(h.server.clone(), PEM.to_string());
    create_namespace(h, "root", "full").await;
    published(h, "root", "full").await;
    // A quota admitting no config maps (its status set by hand: no quota controller runs here).
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "none"},
        "spec": {"hard": {"count/configmaps": "0"}}});
    create(h, "root", Some("full"), "", "resourcequotas", quota)
        .await
        .expect("quota created");
    let at = kcp_apiserver::registry::ObjectRef {
        cluster: lc("root"),
        namespace: Some("full"),
        name: "none",
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
                new["status"] =
                    json!({"hard": {"count/configmaps": "0"}, "used": {"count/configmaps": "0"}});
                Ok(new)
            },
        )
        .await
        .expect("quota status set");
    delete(
        h,
        "root",
        Some("full"),
        "",
        "configmaps",
        ROOT_CA_CONFIG_MAP,
    )
    .await;
    let refused = create(
        h,
        "root",
        Some("full"),
        "",
        "configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}}),
    )
    .await
    .expect_err("the quota refuses config maps");
    assert_eq!(refused.code, 403);
    // Once the quota is gone, a retry publishes it (no event of the namespace or config map says so).
    delete(h, "root", Some("full"), "", "resourcequotas", "none").await;
    published(h, "root", "full").await;
}
