//! Rights on one object by name (`resourceNames`), for lists and watches as Kubernetes judges them,
//! on both stores: a watch of one object by its path is narrowed to that object and authorized as
//! its name; a list or watch whose field selector requires one `metadata.name` is authorized as that
//! name, so `kubectl wait` works for a user allowed only that object; `?watch=true` on an object's
//! path is a plain get.

use kcp_e2e::{Caller, Shard, StoreKind, on_both_stores};
use serde_json::Value;

on_both_stores!(one_object_by_name);

const SAM_TOKEN: &str = "sam-token-0123456789abcdef";
const SECRETS: &str = "/clusters/root/api/v1/namespaces/default/secrets";

fn one_object_by_name(store: StoreKind) {
    let shard = Shard::start_with_tokens(store, &format!("{SAM_TOKEN},sam,sam-uid\n"));
    for name in ["s1", "s2"] {
        shard.kubectl_ok(&[
            "create",
            "secret",
            "generic",
            name,
            &format!("--from-literal=key={name}-data"),
        ]);
    }
    shard.kubectl_ok(&[
        "create",
        "role",
        "s1-only",
        "--verb=get,list,watch",
        "--resource=secrets",
        "--resource-name=s1",
    ]);
    shard.kubectl_ok(&[
        "create",
        "rolebinding",
        "sam-s1",
        "--role=s1-only",
        "--user=sam",
    ]);
    let sam = Caller::Token(SAM_TOKEN.to_string());
    let get = |path: &str| shard.curl_with(&sam, "GET", path, &[], None);

    // A watch of s1 by its path shows s1 alone; s2's data never reaches sam.
    let watch_s1 = "/clusters/root/api/v1/watch/namespaces/default/secrets/s1?timeoutSeconds=1";
    let (code, body) = shard.eventually("sam may watch s1", || {
        let (code, body) = get(watch_s1);
        (code == 200).then_some((code, body))
    });
    assert_eq!(code, 200);
    let names: Vec<String> = body
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| {
            e["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(names, ["s1"], "{body}");
    let (code, body) =
        get("/clusters/root/api/v1/watch/namespaces/default/secrets/s2?timeoutSeconds=1");
    assert_eq!(code, 403, "{body}");
    // A path naming s1 with a selector naming another object is refused.
    let (code, body) = get(&format!("{watch_s1}&fieldSelector=metadata.name%3Ds2"));
    assert_eq!(code, 400, "{body}");
    assert!(
        body.contains("fieldSelector metadata.name doesn't match requested name"),
        "{body}"
    );
    // `?watch=true` on an object's path is a get of that object.
    let (code, body) = get(&format!("{SECRETS}/s1?watch=true"));
    assert_eq!(code, 200, "{body}");
    let secret: Value = serde_json::from_str(&body).expect("a Secret");
    assert_eq!(secret["kind"], "Secret", "{body}");

    // A list or watch selecting s1 by name is authorized as s1; any other is not.
    let (code, body) = get(&format!("{SECRETS}?fieldSelector=metadata.name%3Ds1"));
    assert_eq!(code, 200, "{body}");
    let list: Value = serde_json::from_str(&body).expect("a SecretList");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{body}");
    for path in [
        SECRETS.to_string(),
        format!("{SECRETS}?fieldSelector=metadata.name%3Ds2"),
        format!("{SECRETS}?watch=true&timeoutSeconds=1"),
    ] {
        let (code, body) = get(&path);
        assert_eq!(code, 403, "{path}: {body}");
    }

    // kubectl wait lists and watches the one object by field selector.
    let config = shard.write_file(
        "sam.kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: root\n  cluster:\n    server: {}/clusters/root\n    certificate-authority: {}\nusers:\n- name: sam\n  user:\n    token: {SAM_TOKEN}\ncontexts:\n- name: root\n  context: {{cluster: root, user: sam, namespace: default}}\ncurrent-context: root\n",
            shard.base_url(),
            shard.root_directory().join("ca.crt").display()
        ),
    );
    let waited = shard.kubectl_cmd().kubeconfig(&config).ok(&[
        "wait",
        "--for=jsonpath={.type}=Opaque",
        "secret/s1",
        "--timeout=30s",
    ]);
    assert!(waited.contains("secret/s1 condition met"), "{waited}");
}
