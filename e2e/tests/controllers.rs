//! The shard's controllers through kubectl, on both stores: a new namespace gets the `default`
//! ServiceAccount and `kube-root-ca.crt` with the shard's CA (in every logical cluster), and
//! ResourceQuota refuses creates beyond its limits with Kubernetes' message.

use kcp_e2e::{Shard, StoreKind, json_str, on_both_stores};
use serde_json::Value;

on_both_stores!(
    namespaces_get_a_service_account_and_the_root_ca,
    quota_refuses_creates_beyond_its_limit,
    racing_requests_never_exceed_a_quota,
);

const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// `kubectl get ARGS -o json` once it succeeds.
fn eventually_get(shard: &Shard, cluster: &str, what: &str, args: &[&str]) -> Value {
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["-o", "json"]);
    shard.eventually(what, || {
        let out = shard.kubectl_cmd().cluster(cluster).run(&full);
        if !out.status.success() {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    })
}

fn namespaces_get_a_service_account_and_the_root_ca(store: StoreKind) {
    let shard = Shard::start(store);
    let ca = std::fs::read_to_string(shard.root_directory().join("ca.crt"))
        .expect("the shard's CA certificate");
    shard.kubectl_ok(&["create", "namespace", "apps"]);

    let sa = eventually_get(
        &shard,
        "root",
        "SA default in apps",
        &["sa", "default", "-n", "apps"],
    );
    assert_eq!(json_str(&sa, "/metadata/namespace"), "apps");

    let cm = eventually_get(
        &shard,
        "root",
        "kube-root-ca.crt in apps",
        &["configmap", "kube-root-ca.crt", "-n", "apps"],
    );
    assert_eq!(json_str(&cm, "/data/ca.crt"), ca, "not the shard's CA");
    assert_eq!(
        cm["metadata"]["annotations"]["kubernetes.io/description"], DESCRIPTION,
        "{cm}"
    );

    // Deleted: published again.
    shard.kubectl_ok(&["delete", "configmap", "kube-root-ca.crt", "-n", "apps"]);
    let uid = json_str(&cm, "/metadata/uid").to_string();
    shard.eventually("kube-root-ca.crt recreated", || {
        let out = shard.kubectl(&[
            "get",
            "configmap",
            "kube-root-ca.crt",
            "-n",
            "apps",
            "-o",
            "json",
        ]);
        let again: Value = serde_json::from_slice(&out.stdout).ok()?;
        (json_str(&again, "/metadata/uid") != uid && json_str(&again, "/data/ca.crt") == ca)
            .then_some(())
    });

    // A new logical cluster's default namespace gets both too.
    let lc = shard.write_file(
        "lc.json",
        r#"{"apiVersion":"core.kcp.io/v1alpha1","kind":"LogicalCluster","metadata":{"name":"cluster"}}"#,
    );
    shard
        .kubectl_cmd()
        .context("system:admin")
        .cluster("second")
        .ok(&["create", "-f", lc.to_str().expect("utf-8")]);
    eventually_get(
        &shard,
        "second",
        "SA default in second",
        &["sa", "default", "-n", "default"],
    );
    let cm = eventually_get(
        &shard,
        "second",
        "kube-root-ca.crt in second",
        &["configmap", "kube-root-ca.crt", "-n", "default"],
    );
    assert_eq!(json_str(&cm, "/data/ca.crt"), ca);
    assert_eq!(
        json_str(&cm, "/metadata/annotations/kcp.io~1cluster"),
        "second"
    );
}

fn quota_refuses_creates_beyond_its_limit(store: StoreKind) {
    let shard = Shard::start(store);
    shard.kubectl_ok(&["create", "namespace", "q"]);
    // The published CA is a config map too, and counts like any other.
    eventually_get(
        &shard,
        "root",
        "kube-root-ca.crt in q",
        &["configmap", "kube-root-ca.crt", "-n", "q"],
    );
    // From a manifest, so the quantities are written exactly as here (`kubectl create quota` is
    // covered by kubectl_create.rs).
    let quota = shard.write_file(
        "q1.yaml",
        "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q1\n  namespace: q\nspec:\n  hard:\n    count/configmaps: \"2\"\n    secrets: \"1\"\n",
    );
    shard.kubectl_ok(&["create", "-f", quota.to_str().expect("utf-8")]);
    shard.eventually("quota q1 counted", || {
        let quota = shard.kubectl_json(&["get", "quota", "q1", "-n", "q", "-o", "json"]);
        (json_str(&quota, "/status/used/count~1configmaps") == "1"
            && json_str(&quota, "/status/used/secrets") == "0")
            .then_some(())
    });

    shard.kubectl_ok(&["create", "configmap", "c1", "-n", "q"]);
    let err = shard.kubectl_fails(&["create", "configmap", "c2", "-n", "q"]);
    assert!(
        err.contains("configmaps \"c2\" is forbidden: exceeded quota: q1, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2"),
        "{err}"
    );
    let table = shard.kubectl_ok(&["get", "quota", "q1", "-n", "q"]);
    assert!(table.contains("count/configmaps: 2/2"), "{table}");

    // kubectl apply reports it as a server-side Forbidden.
    let manifest = shard.write_file(
        "c3.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c3\n  namespace: q\n",
    );
    let err = shard.kubectl_fails(&["apply", "-f", manifest.to_str().expect("utf-8")]);
    assert!(err.contains("Error from server (Forbidden)"), "{err}");
    assert!(err.contains("exceeded quota: q1"), "{err}");

    // The legacy name counts secrets.
    shard.kubectl_ok(&["create", "secret", "generic", "s1", "-n", "q"]);
    let err = shard.kubectl_fails(&["create", "secret", "generic", "s2", "-n", "q"]);
    assert!(
        err.contains("secrets \"s2\" is forbidden: exceeded quota: q1, requested: secrets=1, used: secrets=1, limited: secrets=1"),
        "{err}"
    );

    // A deletion makes room again.
    shard.kubectl_ok(&["delete", "configmap", "c1", "-n", "q"]);
    shard.eventually("room for c2 after deleting c1", || {
        shard
            .kubectl(&["create", "configmap", "c2", "-n", "q"])
            .status
            .success()
            .then_some(())
    });
}

fn racing_requests_never_exceed_a_quota(store: StoreKind) {
    let shard = Shard::start(store);
    shard.kubectl_ok(&["create", "namespace", "race"]);
    let quota = shard.write_file(
        "five.yaml",
        "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: five\n  namespace: race\nspec:\n  hard:\n    count/secrets: \"5\"\n",
    );
    shard.kubectl_ok(&["create", "-f", quota.to_str().expect("utf-8")]);
    shard.eventually("quota five counted", || {
        let quota = shard.kubectl_json(&["get", "quota", "five", "-n", "race", "-o", "json"]);
        (json_str(&quota, "/status/used/count~1secrets") == "0").then_some(())
    });

    // 20 clients at once, each creating one secret.
    let codes: Vec<(u16, String)> = std::thread::scope(|scope| {
        let shard = &shard;
        let racers: Vec<_> = (0..20)
            .map(|i| {
                scope.spawn(move || {
                    let body = format!(
                        r#"{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"s{i}"}}}}"#
                    );
                    shard.curl(
                        "POST",
                        "/clusters/root/api/v1/namespaces/race/secrets",
                        Some(("application/json", &body)),
                    )
                })
            })
            .collect();
        racers
            .into_iter()
            .map(|r| r.join().expect("a racing client"))
            .collect()
    });
    let created = codes.iter().filter(|(code, _)| *code == 201).count();
    for (code, body) in codes.iter().filter(|(code, _)| *code != 201) {
        assert_eq!(*code, 403, "{body}");
        let status: Value = serde_json::from_str(body).expect("a Status");
        assert_eq!(status["reason"], "Forbidden", "{status}");
        assert!(
            json_str(&status, "/message").ends_with("is forbidden: exceeded quota: five, requested: count/secrets=1, used: count/secrets=5, limited: count/secrets=5"),
            "{status}"
        );
    }
    assert_eq!(created, 5, "{codes:?}");
    let secrets = shard.kubectl_json(&["get", "secrets", "-n", "race", "-o", "json"]);
    assert_eq!(
        secrets["items"].as_array().map(Vec::len),
        Some(5),
        "{secrets}"
    );
}
