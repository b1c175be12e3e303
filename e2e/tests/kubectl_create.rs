//! kubectl's create generators send protobuf (`application/vnd.kubernetes.protobuf`): the shard
//! decodes ServiceAccount, ResourceQuota and the RBAC kinds, on both stores, and stores what a
//! JSON client would have sent.

use kcp_e2e::{Shard, StoreKind, json_str, on_both_stores};
use serde_json::{Value, json};

on_both_stores!(
    serviceaccount_and_quota,
    roles_and_bindings,
    unknown_protobuf_kind_is_415,
);

/// Runs `kubectl -v=8 ARGS`, asserting it succeeded and sent its body as protobuf.
fn create_sends_protobuf(shard: &Shard, args: &[&str]) {
    let mut with_verbosity = vec!["-v=8"];
    with_verbosity.extend_from_slice(args);
    let output = shard.kubectl(&with_verbosity);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "kubectl {args:?} failed:\n{stderr}\n{}",
        shard.logs()
    );
    assert!(
        stderr.contains("Content-Type: application/vnd.kubernetes.protobuf"),
        "kubectl {args:?} did not send protobuf:\n{stderr}"
    );
}

fn get(shard: &Shard, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    shard.kubectl_json(&all)
}

/// Stored objects get a uid and a creation time from the server.
fn assert_stored(object: &Value) {
    assert!(!json_str(object, "/metadata/uid").is_empty(), "{object}");
    assert!(
        !json_str(object, "/metadata/creationTimestamp").is_empty(),
        "{object}"
    );
}

fn serviceaccount_and_quota(store: StoreKind) {
    let shard = Shard::start(store);
    shard.kubectl_ok(&["create", "namespace", "team"]);

    create_sends_protobuf(&shard, &["create", "serviceaccount", "robot", "-n", "team"]);
    let sa = get(&shard, &["serviceaccount", "robot", "-n", "team"]);
    assert_eq!(sa["kind"], "ServiceAccount");
    assert_eq!(json_str(&sa, "/metadata/namespace"), "team");
    assert_stored(&sa);
    // The controller's `default` sits next to it.
    shard.eventually("default and robot service accounts in team", || {
        let list = get(&shard, &["serviceaccounts", "-n", "team"]);
        let mut names: Vec<&str> = list["items"]
            .as_array()?
            .iter()
            .map(|i| json_str(i, "/metadata/name"))
            .collect();
        names.sort_unstable();
        (names == ["default", "robot"]).then_some(())
    });

    // The published CA counts as one config map.
    shard.eventually("kube-root-ca.crt in team", || {
        shard
            .kubectl(&["get", "configmap", "kube-root-ca.crt", "-n", "team"])
            .status
            .success()
            .then_some(())
    });
    create_sends_protobuf(
        &shard,
        &[
            "create",
            "quota",
            "q",
            "-n",
            "team",
            "--hard=count/configmaps=3,secrets=2",
        ],
    );
    let quota = get(&shard, &["quota", "q", "-n", "team"]);
    assert_stored(&quota);
    assert_eq!(
        quota["spec"],
        json!({"hard": {"count/configmaps": "3", "secrets": "2"}})
    );
    shard.eventually("quota q counted", || {
        let quota = get(&shard, &["quota", "q", "-n", "team"]);
        (quota["status"]["hard"] == json!({"count/configmaps": "3", "secrets": "2"})
            && json_str(&quota, "/status/used/count~1configmaps") == "1")
            .then_some(())
    });
    // And enforced.
    shard.kubectl_ok(&["create", "configmap", "c1", "-n", "team"]);
    shard.kubectl_ok(&["create", "configmap", "c2", "-n", "team"]);
    let err = shard.kubectl_fails(&["create", "configmap", "c3", "-n", "team"]);
    assert!(err.contains("exceeded quota: q"), "{err}");
}

fn roles_and_bindings(store: StoreKind) {
    let shard = Shard::start(store);

    create_sends_protobuf(
        &shard,
        &[
            "create",
            "role",
            "reader",
            "-n",
            "default",
            "--verb=get,list",
            "--resource=configmaps,leases.coordination.k8s.io",
            "--resource-name=a",
        ],
    );
    let role = get(&shard, &["role", "reader", "-n", "default"]);
    assert_stored(&role);
    assert_eq!(
        role["rules"],
        json!([
            {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]},
            {"verbs": ["get", "list"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": ["a"]}
        ])
    );

    create_sends_protobuf(
        &shard,
        &[
            "create",
            "rolebinding",
            "read",
            "-n",
            "default",
            "--role=reader",
            "--user=alice",
            "--serviceaccount=default:robot",
        ],
    );
    let binding = get(&shard, &["rolebinding", "read", "-n", "default"]);
    assert_stored(&binding);
    assert_eq!(
        binding["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"})
    );
    assert_eq!(
        binding["subjects"],
        json!([
            {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
            {"kind": "ServiceAccount", "name": "robot", "namespace": "default"}
        ])
    );

    create_sends_protobuf(
        &shard,
        &[
            "create",
            "clusterrole",
            "aggregate",
            "--aggregation-rule=example.com/aggregate-to-view=true,tier=a",
        ],
    );
    let aggregate = get(&shard, &["clusterrole", "aggregate"]);
    assert_stored(&aggregate);
    assert_eq!(
        aggregate["aggregationRule"],
        json!({"clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate-to-view": "true", "tier": "a"}}]})
    );

    create_sends_protobuf(
        &shard,
        &[
            "create",
            "clusterrole",
            "metrics",
            "--verb=get",
            "--non-resource-url=/metrics",
        ],
    );
    let metrics = get(&shard, &["clusterrole", "metrics"]);
    assert_eq!(
        metrics["rules"],
        json!([{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}])
    );
    assert!(metrics.get("aggregationRule").is_none(), "{metrics}");

    create_sends_protobuf(
        &shard,
        &[
            "create",
            "clusterrolebinding",
            "metrics-readers",
            "--clusterrole=metrics",
            "--group=devs",
            "--serviceaccount=team:robot",
        ],
    );
    let cluster_binding = get(&shard, &["clusterrolebinding", "metrics-readers"]);
    assert_stored(&cluster_binding);
    assert_eq!(
        cluster_binding["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics"})
    );
    assert_eq!(
        cluster_binding["subjects"],
        json!([
            {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"},
            {"kind": "ServiceAccount", "name": "robot", "namespace": "team"}
        ])
    );
}

fn unknown_protobuf_kind_is_415(store: StoreKind) {
    let shard = Shard::start(store);
    // `k8s\0`, then runtime.Unknown{typeMeta: {apiVersion: "v1", kind: "Pod"}}.
    let body: &[u8] = &[
        b'k', b'8', b's', 0, 0x0a, 0x09, 0x0a, 0x02, b'v', b'1', 0x12, 0x03, b'P', b'o', b'd',
    ];
    let path = shard.dir().join("pod.pb");
    std::fs::write(&path, body).expect("writing the body");
    let data = format!("@{}", path.display());
    let (code, response) = shard.curl(
        "POST",
        "/clusters/root/api/v1/namespaces/default/configmaps",
        Some(("application/vnd.kubernetes.protobuf", &data)),
    );
    assert_eq!(code, 415, "{response}");
    let status: Value = serde_json::from_str(&response).expect("a Status");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["code"], 415);
    // The reason is quoted inside the message.
    assert!(
        json_str(&status, "/message")
            .contains(r#"no kind \"Pod\" is registered for version \"v1\""#),
        "{status}"
    );
}
