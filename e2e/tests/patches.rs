//! Patches through the real binary, on both stores: the patched object is decoded as
//! kube-apiserver decodes it, so a JSON, merge or strategic patch cannot store what a body could
//! not (a value of the wrong type in a built-in kind: 422 at `patch`), and unknown fields are
//! dropped (a warning by default, 422 with `fieldValidation=Strict`).

use kcp_e2e::{Shard, StoreKind, json_str, on_both_stores};
use serde_json::Value;

on_both_stores!(patched_objects_are_decoded);

fn patched_objects_are_decoded(store: StoreKind) {
    let shard = Shard::start(store);
    shard.kubectl_ok(&["create", "configmap", "cm", "--from-literal=a=b"]);
    shard.kubectl_ok(&["create", "role", "r", "--verb=get", "--resource=configmaps"]);
    let lease = shard.write_file(
        "lease.yaml",
        "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: l\nspec:\n  leaseDurationSeconds: 10\n",
    );
    shard.kubectl_ok(&["create", "-f", lease.to_str().expect("utf-8")]);
    let path = "/clusters/root/api/v1/namespaces/default/configmaps/cm";
    let get = || -> Value {
        let (code, body) = shard.curl("GET", path, None);
        assert_eq!(code, 200, "{body}");
        serde_json::from_str(&body).expect("json")
    };
    let before = get();

    // A number where a ConfigMap holds strings: refused whatever the patch type.
    for (content_type, patch) in [
        ("application/merge-patch+json", r#"{"data":{"a":5}}"#),
        (
            "application/json-patch+json",
            r#"[{"op":"add","path":"/data/z","value":true}]"#,
        ),
        (
            "application/strategic-merge-patch+json",
            r#"{"data":{"y":{"x":1}}}"#,
        ),
    ] {
        let (code, body) = shard.curl("PATCH", path, Some((content_type, patch)));
        let status: Value = serde_json::from_str(&body).expect("status");
        assert_eq!(
            (code, json_str(&status, "/reason")),
            (422, "Invalid"),
            "{body}"
        );
        assert_eq!(
            json_str(&status, "/details/causes/0/field"),
            "patch",
            "{body}"
        );
        // Go's decoder words it for JSON bytes (Kubernetes' strategic merge converts a map, in
        // other words).
        // A strategic merge shows the patch (Go's print of its map), not the object.
        if content_type == "application/strategic-merge-patch+json" {
            assert!(
                json_str(&status, "/message")
                    .contains(r#"Invalid value: "map[data:map[y:map[x:1]]]""#)
                    && !body.contains("managedFields"),
                "{body}"
            );
        } else {
            assert!(
                json_str(&status, "/message").contains("cannot unmarshal")
                    && json_str(&status, "/message").contains("ConfigMap.data of type string"),
                "{body}"
            );
        }
    }
    assert_eq!(get(), before);
    // A strategic merge decodes from float64s, as Kubernetes' does: an integral 15.0 is an integer.
    let (code, body) = shard.curl(
        "PATCH",
        "/clusters/root/apis/coordination.k8s.io/v1/namespaces/default/leases/l",
        Some((
            "application/strategic-merge-patch+json",
            r#"{"spec":{"leaseDurationSeconds":15.0}}"#,
        )),
    );
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains(r#""leaseDurationSeconds":15"#) && !body.contains("15.0"),
        "{body}"
    );
    // A Role whose rules are not a list would have stopped granting anything.
    let (code, body) = shard.curl(
        "PATCH",
        "/clusters/root/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/r",
        Some(("application/merge-patch+json", r#"{"rules":"all"}"#)),
    );
    assert_eq!(code, 422, "{body}");
    shard.kubectl_ok(&["describe", "role", "r"]);

    // Unknown fields are dropped with a warning: nothing changes, not even the resourceVersion.
    let out = shard.kubectl(&[
        "patch",
        "cm",
        "cm",
        "--type=merge",
        "-p",
        r#"{"bogus":1,"metadata":{"bogus2":2}}"#,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(r#"Warning: unknown field "bogus""#)
            && stderr.contains(r#"Warning: unknown field "metadata.bogus2""#),
        "{stderr}"
    );
    assert_eq!(get(), before);
    // ...and refused when asked to be strict.
    let (code, body) = shard.curl(
        "PATCH",
        &format!("{path}?fieldValidation=Strict"),
        Some(("application/merge-patch+json", r#"{"bogus":1}"#)),
    );
    assert_eq!(code, 422, "{body}");
    assert!(
        body.contains(r#"strict decoding error: unknown field \"bogus\""#),
        "{body}"
    );
    // The object still reads back into typed clients, and round-trips through replace.
    shard.kubectl_ok(&["describe", "configmap", "cm"]);
    let yaml = shard.kubectl_ok(&["get", "configmap", "cm", "-o", "yaml"]);
    let file = shard.write_file("cm.yaml", &yaml);
    shard.kubectl_ok(&["replace", "-f", file.to_str().expect("utf-8")]);
}
