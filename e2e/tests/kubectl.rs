//! kubectl, unmodified, against the real shard: every command issue 2 lists, on both stores, asserting
//! what the command did (not only its exit code).

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt as _;

use kcp_e2e::{Background, Shard, StoreKind, json_str, on_both_stores};
use serde_json::Value;

on_both_stores!(
    discovery_version_and_identity,
    create_get_and_list,
    watch_sees_added_modified_deleted,
    apply_diff_and_replace,
    label_annotate_patch_edit_delete,
    second_logical_cluster_is_isolated,
    errors_are_status_with_kubernetes_codes,
    delete_namespace_waits_until_it_is_empty_and_gone,
    openapi_for_validation_and_apply,
);

fn names(list: &Value) -> BTreeSet<String> {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| json_str(i, "/metadata/name").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn discovery_version_and_identity(store: StoreKind) {
    let shard = Shard::start(store);

    let version = shard.kubectl_json(&["version", "-o", "json"]);
    assert!(
        !json_str(&version, "/serverVersion/gitVersion").is_empty(),
        "no server version: {version}"
    );

    let resources = shard.kubectl_ok(&["api-resources"]);
    for name in [
        "configmaps",
        "namespaces",
        "secrets",
        "leases",
        "logicalclusters",
    ] {
        assert!(
            resources
                .lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "api-resources lacks {name}:\n{resources}"
        );
    }
    // Short names and groups as Kubernetes has them.
    assert!(
        resources
            .lines()
            .any(|l| l.starts_with("configmaps") && l.contains(" cm ")),
        "configmaps without short name cm:\n{resources}"
    );
    assert!(
        resources
            .lines()
            .any(|l| l.starts_with("leases") && l.contains("coordination.k8s.io/v1")),
        "leases not in coordination.k8s.io/v1:\n{resources}"
    );

    let namespaces = shard.kubectl_ok(&["get", "ns"]);
    assert!(namespaces.starts_with("NAME"), "not a table:\n{namespaces}");
    assert!(
        namespaces
            .lines()
            .any(|l| l.split_whitespace().next() == Some("default") && l.contains("Active")),
        "no Active default namespace:\n{namespaces}"
    );

    let explain = shard.kubectl_ok(&["explain", "configmaps.data"]);
    assert!(
        explain.contains("KIND:") && explain.contains("ConfigMap"),
        "{explain}"
    );
    assert!(
        explain.contains("FIELD:") && explain.contains("data"),
        "{explain}"
    );
    assert!(
        explain.contains("map[string]string"),
        "field type missing:\n{explain}"
    );
    let description = explain
        .split("DESCRIPTION:")
        .nth(1)
        .unwrap_or_else(|| panic!("no DESCRIPTION:\n{explain}"));
    assert!(
        description.trim().len() > 10,
        "empty description:\n{explain}"
    );

    // `auth can-i` posts a protobuf SelfSubjectAccessReview; the admin may do anything.
    let can = shard.kubectl_ok(&["auth", "can-i", "create", "configmaps"]);
    assert_eq!(can.trim(), "yes", "{can}");
    let whoami = shard.kubectl_ok(&["auth", "whoami"]);
    assert!(whoami.contains("kcp-admin"), "{whoami}");
    assert!(whoami.contains("system:kcp:admin"), "{whoami}");
    // The system:admin context addresses the `system:admin` logical cluster, as kcp's does.
    let namespaces = shard
        .kubectl_cmd()
        .context("system:admin")
        .ok(&["get", "ns", "-o", "name"]);
    assert!(namespaces.contains("namespace/default"), "{namespaces}");
    let whoami = shard
        .kubectl_cmd()
        .context("system:admin")
        .cluster("root")
        .ok(&["auth", "whoami"]);
    assert!(
        whoami.contains("shard-admin") && whoami.contains("system:masters"),
        "{whoami}"
    );
}

fn create_get_and_list(store: StoreKind) {
    let shard = Shard::start(store);

    let out = shard.kubectl_ok(&["create", "namespace", "x"]);
    assert!(out.contains("namespace/x created"), "{out}");
    let namespaces = shard.kubectl_ok(&["get", "ns", "-o", "name"]);
    assert!(
        namespaces.lines().any(|l| l == "namespace/x"),
        "{namespaces}"
    );

    let out = shard.kubectl_ok(&["create", "configmap", "c", "--from-literal=a=b"]);
    assert!(out.contains("configmap/c created"), "{out}");
    let cm = shard.kubectl_json(&["get", "cm", "c", "-o", "json"]);
    assert_eq!(json_str(&cm, "/data/a"), "b", "{cm}");
    assert_eq!(json_str(&cm, "/metadata/namespace"), "default", "{cm}");
    assert!(!json_str(&cm, "/metadata/uid").is_empty(), "no uid: {cm}");
    assert!(
        !json_str(&cm, "/metadata/resourceVersion").is_empty(),
        "no resourceVersion: {cm}"
    );
    assert!(
        !json_str(&cm, "/metadata/creationTimestamp").is_empty(),
        "no creationTimestamp: {cm}"
    );

    let out = shard.kubectl_ok(&["create", "secret", "generic", "s", "--from-literal=p=q"]);
    assert!(out.contains("secret/s created"), "{out}");
    let secret = shard.kubectl_json(&["get", "secret", "s", "-o", "json"]);
    assert_eq!(
        json_str(&secret, "/data/p"),
        "cQ==",
        "data.p is not base64(\"q\"): {secret}"
    );
    assert_eq!(json_str(&secret, "/type"), "Opaque", "{secret}");
    let table = shard.kubectl_ok(&["get", "secrets"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "TYPE", "DATA", "AGE"], "{table}");

    // Table output: NAME DATA AGE, one row per object.
    let table = shard.kubectl_ok(&["get", "cm"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "DATA", "AGE"], "{table}");
    let row: Vec<&str> = table
        .lines()
        .find(|l| l.starts_with("c "))
        .unwrap_or_else(|| panic!("no row for c:\n{table}"))
        .split_whitespace()
        .collect();
    assert_eq!(row[1], "1", "DATA column of c:\n{table}");

    shard.kubectl_ok(&[
        "create",
        "configmap",
        "in-x",
        "-n",
        "x",
        "--from-literal=z=y",
    ]);
    let all = shard.kubectl_ok(&["get", "cm", "-A"]);
    assert!(all.starts_with("NAMESPACE"), "{all}");
    let rows: BTreeSet<(String, String)> = all
        .lines()
        .skip(1)
        .filter_map(|l| {
            let mut cells = l.split_whitespace();
            Some((cells.next()?.to_string(), cells.next()?.to_string()))
        })
        .collect();
    assert!(rows.contains(&("default".into(), "c".into())), "{all}");
    assert!(rows.contains(&("x".into(), "in-x".into())), "{all}");
    let all = shard.kubectl_json(&["get", "cm", "-A", "-o", "json"]);
    assert!(
        names(&all).is_superset(&["c".to_string(), "in-x".to_string()].into()),
        "{all}"
    );

    let yaml = shard.kubectl_ok(&["get", "cm", "-o", "yaml"]);
    assert!(yaml.contains("kind: List"), "{yaml}");
    assert!(yaml.contains("name: c\n"), "{yaml}");
    assert!(yaml.contains("a: b"), "{yaml}");
    assert!(
        !yaml.contains("in-x"),
        "namespace x leaked into default:\n{yaml}"
    );

    // Pagination: more objects than the chunk size, every one of them returned once.
    // Every namespace also holds the root CA the shard publishes, as in Kubernetes.
    shard.eventually("kube-root-ca.crt in x", || {
        let out = shard.kubectl(&["get", "cm", "kube-root-ca.crt", "-n", "x"]);
        out.status.success().then_some(())
    });
    let mut expected: BTreeSet<String> = ["in-x", "kube-root-ca.crt"].map(String::from).into();
    for i in 0..7 {
        let name = format!("chunk-{i}");
        shard.kubectl_ok(&[
            "create",
            "configmap",
            &name,
            "-n",
            "x",
            &format!("--from-literal=i={i}"),
        ]);
        expected.insert(name);
    }
    let chunked = shard.kubectl_ok(&["get", "cm", "-n", "x", "--chunk-size=2", "-o", "name"]);
    let got: Vec<String> = chunked
        .lines()
        .map(|l| l.trim_start_matches("configmap/").to_string())
        .collect();
    assert_eq!(got.len(), expected.len(), "duplicates or gaps:\n{chunked}");
    assert_eq!(
        got.iter().cloned().collect::<BTreeSet<_>>(),
        expected,
        "{chunked}"
    );
    let chunked = shard.kubectl_ok(&["get", "cm", "-n", "x", "--chunk-size=2"]);
    assert_eq!(
        chunked.lines().filter(|l| l.starts_with("NAME")).count(),
        1,
        "{chunked}"
    );
    assert_eq!(chunked.lines().count(), expected.len() + 1, "{chunked}");
    // The server really paginates: a limited list carries a continue token.
    let (code, body) = shard.curl(
        "GET",
        "/clusters/root/api/v1/namespaces/x/configmaps?limit=2",
        None,
    );
    assert_eq!(code, 200, "{body}");
    let page: Value = serde_json::from_str(&body).expect("a list");
    assert_eq!(page["items"].as_array().map(Vec::len), Some(2), "{page}");
    assert!(
        !json_str(&page, "/metadata/continue").is_empty(),
        "no continue token: {page}"
    );
}

/// Parses the concatenated (pretty-printed) JSON documents of `kubectl get -w -o json`.
fn json_events(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map_while(Result::ok)
        .collect()
}

fn has_event(events: &[Value], kind: &str, name: &str) -> bool {
    events
        .iter()
        .any(|e| json_str(e, "/type") == kind && json_str(e, "/object/metadata/name") == name)
}

fn table_has_event(text: &str, kind: &str, name: &str) -> bool {
    text.lines().any(|l| {
        let mut cells = l.split_whitespace();
        cells.next() == Some(kind) && cells.next() == Some(name)
    })
}

fn watch_sees_added_modified_deleted(store: StoreKind) {
    let shard = Shard::start(store);
    shard.kubectl_ok(&["create", "configmap", "before", "--from-literal=a=1"]);

    let kubectl = shard.kubectl_cmd();
    let table = Background::spawn(
        kubectl.command(&["get", "cm", "-w", "--output-watch-events"]),
        shard.dir(),
        "watch-table",
    );
    let json = Background::spawn(
        kubectl.command(&["get", "cm", "-w", "--output-watch-events", "-o", "json"]),
        shard.dir(),
        "watch-json",
    );
    let both = |kind: &str, name: &str| {
        let text = table.stdout();
        let events = json_events(&json.stdout());
        (table_has_event(&text, kind, name) && has_event(&events, kind, name)).then_some(())
    };
    let describe = |what: &str| {
        format!(
            "{what}\ntable watch:\n{}{}\njson watch:\n{}{}",
            table.stdout(),
            table.stderr(),
            json.stdout(),
            json.stderr()
        )
    };
    // The initial list arrives as ADDED; after that the watch is established.
    shard.eventually(&describe("initial ADDED before"), || {
        both("ADDED", "before")
    });

    shard.kubectl_ok(&["create", "configmap", "w", "--from-literal=k=v1"]);
    shard.eventually(&describe("ADDED w"), || both("ADDED", "w"));

    shard.kubectl_ok(&[
        "patch",
        "cm",
        "w",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"k":"v2"}}"#,
    ]);
    shard.eventually(&describe("MODIFIED w"), || both("MODIFIED", "w"));
    let events = json_events(&json.stdout());
    assert!(
        events
            .iter()
            .any(|e| json_str(e, "/type") == "MODIFIED" && json_str(e, "/object/data/k") == "v2"),
        "{}",
        describe("MODIFIED event without the new data")
    );

    shard.kubectl_ok(&["delete", "cm", "w"]);
    shard.eventually(&describe("DELETED w"), || both("DELETED", "w"));

    let table_out = table.kill();
    let json_out = json.kill();
    // Nothing about `before` changed: it is announced once.
    let events = json_events(&json_out);
    assert_eq!(
        events
            .iter()
            .filter(|e| json_str(e, "/object/metadata/name") == "before")
            .count(),
        1,
        "{json_out}"
    );
    assert!(
        !table_has_event(&table_out, "MODIFIED", "before"),
        "{table_out}"
    );
}

const APP_V1: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  k: v1\n";

fn app(value: &str) -> String {
    APP_V1.replace("k: v1", &format!("k: {value}"))
}

fn apply_diff_and_replace(store: StoreKind) {
    let shard = Shard::start(store);
    let get_k = || {
        json_str(
            &shard.kubectl_json(&["get", "cm", "app", "-o", "json"]),
            "/data/k",
        )
        .to_string()
    };

    let file = shard.write_file("app.yaml", &app("v1"));
    let file = file.to_str().expect("utf-8 path");
    let out = shard.kubectl_ok(&["apply", "-f", file]);
    assert!(out.contains("configmap/app created"), "{out}");
    let cm = shard.kubectl_json(&["get", "cm", "app", "-o", "json"]);
    assert_eq!(json_str(&cm, "/data/k"), "v1", "{cm}");
    assert!(
        json_str(
            &cm,
            "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration"
        )
        .contains("\"v1\""),
        "no last-applied annotation: {cm}"
    );

    shard.write_file("app.yaml", &app("v2"));
    let out = shard.kubectl_ok(&["apply", "-f", file]);
    assert!(out.contains("configmap/app configured"), "{out}");
    assert_eq!(get_k(), "v2");

    // Unchanged: nothing to do, and diff agrees.
    let out = shard.kubectl_ok(&["apply", "-f", file]);
    assert!(out.contains("configmap/app unchanged"), "{out}");
    let diff = shard.kubectl(&["diff", "-f", file]);
    assert_eq!(
        diff.status.code(),
        Some(0),
        "diff of the applied file should be empty:\n{}{}",
        String::from_utf8_lossy(&diff.stdout),
        String::from_utf8_lossy(&diff.stderr)
    );

    shard.write_file("app.yaml", &app("v3"));
    let rv_before = json_str(
        &shard.kubectl_json(&["get", "cm", "app", "-o", "json"]),
        "/metadata/resourceVersion",
    )
    .to_string();
    let out = shard.kubectl_ok(&["apply", "--dry-run=server", "-f", file]);
    assert!(
        out.contains("configmap/app configured (server dry run)"),
        "{out}"
    );
    let cm = shard.kubectl_json(&["get", "cm", "app", "-o", "json"]);
    assert_eq!(
        json_str(&cm, "/data/k"),
        "v2",
        "dry run changed the object: {cm}"
    );
    assert_eq!(
        json_str(&cm, "/metadata/resourceVersion"),
        rv_before,
        "dry run wrote: {cm}"
    );

    // diff exits 1 when there are differences and shows them.
    let diff = shard.kubectl(&["diff", "-f", file]);
    let stdout = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(
        diff.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&diff.stderr)
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with('-') && l.contains("k: v2")),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with('+') && l.contains("k: v3")),
        "{stdout}"
    );
    assert_eq!(get_k(), "v2", "diff changed the object");

    // A new object through dry run is not created.
    let other = shard.write_file("other.yaml", &APP_V1.replace("name: app", "name: other"));
    let out = shard.kubectl_ok(&[
        "apply",
        "--dry-run=server",
        "-f",
        other.to_str().expect("utf-8"),
    ]);
    assert!(
        out.contains("configmap/other created (server dry run)"),
        "{out}"
    );
    let err = shard.kubectl_fails(&["get", "cm", "other"]);
    assert!(err.contains("not found"), "{err}");

    // replace -f: the whole object is replaced.
    let replaced = shard.write_file(
        "replace.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  labels:\n    replaced: \"yes\"\ndata:\n  only: this\n",
    );
    let out = shard.kubectl_ok(&["replace", "-f", replaced.to_str().expect("utf-8")]);
    assert!(out.contains("configmap/app replaced"), "{out}");
    let cm = shard.kubectl_json(&["get", "cm", "app", "-o", "json"]);
    assert_eq!(json_str(&cm, "/data/only"), "this", "{cm}");
    assert!(
        cm.pointer("/data/k").is_none(),
        "replace kept an old key: {cm}"
    );
    assert_eq!(json_str(&cm, "/metadata/labels/replaced"), "yes", "{cm}");
}

fn label_annotate_patch_edit_delete(store: StoreKind) {
    let shard = Shard::start(store);
    let get = || shard.kubectl_json(&["get", "cm", "m", "-o", "json"]);
    shard.kubectl_ok(&["create", "configmap", "m", "--from-literal=a=b"]);
    let rv0: u64 = json_str(&get(), "/metadata/resourceVersion")
        .parse()
        .expect("numeric resourceVersion");

    let out = shard.kubectl_ok(&["label", "cm", "m", "tier=web"]);
    assert!(out.contains("configmap/m labeled"), "{out}");
    assert_eq!(json_str(&get(), "/metadata/labels/tier"), "web");
    let selected = shard.kubectl_ok(&["get", "cm", "-l", "tier=web", "-o", "name"]);
    assert_eq!(selected.trim(), "configmap/m");
    let selected = shard.kubectl_ok(&["get", "cm", "-l", "tier!=web", "-o", "name"]);
    assert!(!selected.contains("configmap/m"), "{selected}");

    let out = shard.kubectl_ok(&["annotate", "cm", "m", "note=hi"]);
    assert!(out.contains("configmap/m annotated"), "{out}");
    let cm = get();
    assert_eq!(json_str(&cm, "/metadata/annotations/note"), "hi", "{cm}");
    let rv1: u64 = json_str(&cm, "/metadata/resourceVersion")
        .parse()
        .expect("numeric resourceVersion");
    assert!(rv1 > rv0, "resourceVersion did not grow: {rv0} -> {rv1}");

    // Strategic merge patch (kubectl's default for built-in kinds): keys merge.
    let out = shard.kubectl_ok(&["patch", "cm", "m", "-p", r#"{"data":{"s":"1"}}"#]);
    assert!(out.contains("configmap/m patched"), "{out}");
    let cm = get();
    assert_eq!(
        (json_str(&cm, "/data/a"), json_str(&cm, "/data/s")),
        ("b", "1"),
        "{cm}"
    );

    // JSON merge patch: null deletes.
    shard.kubectl_ok(&[
        "patch",
        "cm",
        "m",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"a":null,"mm":"2"}}"#,
    ]);
    let cm = get();
    assert!(
        cm.pointer("/data/a").is_none(),
        "merge patch null did not delete: {cm}"
    );
    assert_eq!(json_str(&cm, "/data/mm"), "2", "{cm}");

    // JSON patch.
    shard.kubectl_ok(&[
        "patch",
        "cm",
        "m",
        "--type",
        "json",
        "-p",
        r#"[{"op":"add","path":"/data/j","value":"three"},{"op":"remove","path":"/data/s"}]"#,
    ]);
    let cm = get();
    assert_eq!(json_str(&cm, "/data/j"), "three", "{cm}");
    assert!(cm.pointer("/data/s").is_none(), "{cm}");
    // A failing JSON patch test op changes nothing.
    let err = shard.kubectl_fails(&[
        "patch",
        "cm",
        "m",
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/data/j","value":"nope"},{"op":"add","path":"/data/x","value":"y"}]"#,
    ]);
    assert!(!err.is_empty());
    assert!(get().pointer("/data/x").is_none());

    // edit: KUBE_EDITOR is a script editing the temp file in place.
    let editor = shard.write_file(
        "editor.sh",
        "#!/bin/sh\nset -e\nsed -i 's/j: three/j: edited/' \"$1\"\n",
    );
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = shard
        .kubectl_cmd()
        .env("KUBE_EDITOR", editor.to_str().expect("utf-8"))
        .ok(&["edit", "cm", "m"]);
    assert!(out.contains("configmap/m edited"), "{out}");
    assert_eq!(json_str(&get(), "/data/j"), "edited");

    let out = shard.kubectl_ok(&["delete", "cm", "m"]);
    assert!(out.contains("configmap \"m\" deleted"), "{out}");
    let err = shard.kubectl_fails(&["get", "cm", "m"]);
    assert!(
        err.contains("(NotFound)") && err.contains("\"m\" not found"),
        "{err}"
    );
    let list = shard.kubectl_json(&["get", "cm", "-o", "json"]);
    assert!(!names(&list).contains("m"), "{list}");
}

fn second_logical_cluster_is_isolated(store: StoreKind) {
    let shard = Shard::start(store);
    let second = || shard.kubectl_cmd().cluster("second");

    shard.kubectl_ok(&["create", "configmap", "only-root", "--from-literal=in=root"]);
    shard.kubectl_ok(&["create", "namespace", "root-ns"]);

    let lc = shard.write_file(
        "lc.json",
        r#"{"apiVersion":"core.kcp.io/v1alpha1","kind":"LogicalCluster","metadata":{"name":"cluster"}}"#,
    );
    let out = shard
        .kubectl_cmd()
        .context("system:admin")
        .cluster("second")
        .ok(&["create", "-f", lc.to_str().expect("utf-8")]);
    assert!(
        out.contains("logicalcluster.core.kcp.io/cluster created"),
        "{out}"
    );

    // The shard gives a new LC its `default` namespace.
    shard.eventually("namespace default in LC second", || {
        second()
            .run(&["get", "ns", "default"])
            .status
            .success()
            .then_some(())
    });
    let namespaces = second().ok(&["get", "ns", "-o", "name"]);
    assert!(namespaces.contains("namespace/default"), "{namespaces}");
    assert!(
        !namespaces.contains("root-ns"),
        "root's namespace visible in second:\n{namespaces}"
    );

    // Root's objects are not visible in second...
    let err = second().fails(&["get", "cm", "only-root"]);
    assert!(err.contains("not found"), "{err}");
    assert!(!names(&second().json(&["get", "cm", "-A", "-o", "json"])).contains("only-root"));

    // ...and second's are not visible in root, even with the same names.
    second().ok(&[
        "create",
        "configmap",
        "only-second",
        "--from-literal=in=second",
    ]);
    second().ok(&[
        "create",
        "configmap",
        "only-root",
        "--from-literal=in=second-too",
    ]);
    second().ok(&["create", "secret", "generic", "s2", "--from-literal=p=q"]);
    second().ok(&["label", "cm", "only-second", "lc=second"]);
    let err = shard.kubectl_fails(&["get", "cm", "only-second"]);
    assert!(err.contains("not found"), "{err}");
    assert!(
        shard
            .kubectl_fails(&["get", "secret", "s2"])
            .contains("not found")
    );
    let root_cm = shard.kubectl_json(&["get", "cm", "only-root", "-o", "json"]);
    assert_eq!(json_str(&root_cm, "/data/in"), "root", "{root_cm}");
    let second_cm = second().json(&["get", "cm", "only-root", "-o", "json"]);
    assert_eq!(
        json_str(&second_cm, "/data/in"),
        "second-too",
        "{second_cm}"
    );
    assert!(
        shard
            .kubectl_ok(&["get", "cm", "-l", "lc=second", "-o", "name"])
            .trim()
            .is_empty()
    );
    assert_eq!(
        second()
            .ok(&["get", "cm", "-l", "lc=second", "-o", "name"])
            .trim(),
        "configmap/only-second"
    );

    // apply / patch / delete of same-named objects stay in their LC.
    let shared = |value: &str| {
        APP_V1
            .replace("name: app", "name: shared")
            .replace("k: v1", &format!("k: {value}"))
    };
    let file = shard.write_file("shared.yaml", &shared("root"));
    let file = file.to_str().expect("utf-8");
    assert!(shard.kubectl_ok(&["apply", "-f", file]).contains("created"));
    shard.write_file("shared.yaml", &shared("second"));
    assert!(
        second().ok(&["apply", "-f", file]).contains("created"),
        "apply in second saw root's object"
    );
    second().ok(&[
        "patch",
        "cm",
        "shared",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"p":"x"}}"#,
    ]);
    let root_shared = shard.kubectl_json(&["get", "cm", "shared", "-o", "json"]);
    assert_eq!(json_str(&root_shared, "/data/k"), "root", "{root_shared}");
    assert!(
        root_shared.pointer("/data/p").is_none(),
        "patch in second reached root: {root_shared}"
    );
    second().ok(&["delete", "cm", "shared"]);
    assert!(
        second()
            .fails(&["get", "cm", "shared"])
            .contains("not found")
    );
    shard.kubectl_ok(&["get", "cm", "shared"]);

    // The LogicalCluster objects themselves.
    let lc = second().json(&["get", "logicalclusters", "cluster", "-o", "json"]);
    assert_eq!(json_str(&lc, "/metadata/name"), "cluster", "{lc}");
    shard.kubectl_ok(&["get", "logicalclusters", "cluster"]);

    // The wildcard sees both LCs, each object annotated with its LC; it is for privileged
    // identities only (shard-admin, in system:masters), not for kcp-admin.
    let denied = shard.kubectl_fails(&["get", "--raw", "/clusters/*/api/v1/configmaps"]);
    assert!(denied.contains("Forbidden"), "{denied}");
    let raw = shard.kubectl_cmd().context("system:admin").ok(&[
        "get",
        "--raw",
        "/clusters/*/api/v1/configmaps",
    ]);
    let list: Value = serde_json::from_str(&raw).expect("wildcard list is JSON");
    let mut seen = BTreeSet::new();
    for item in list["items"].as_array().expect("items") {
        let cluster = json_str(item, "/metadata/annotations/kcp.io~1cluster");
        assert!(!cluster.is_empty(), "item without kcp.io/cluster: {item}");
        seen.insert((
            cluster.to_string(),
            json_str(item, "/metadata/name").to_string(),
        ));
    }
    for expected in [
        ("root", "only-root"),
        ("second", "only-second"),
        ("second", "only-root"),
    ] {
        assert!(
            seen.contains(&(expected.0.to_string(), expected.1.to_string())),
            "wildcard list lacks {expected:?}: {seen:?}"
        );
    }
}

fn status_of(body: &str) -> Value {
    let status: Value =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    assert_eq!(json_str(&status, "/kind"), "Status", "{status}");
    assert_eq!(json_str(&status, "/status"), "Failure", "{status}");
    status
}

fn assert_status(
    shard: &Shard,
    (code, body): (u16, String),
    want_code: u16,
    reason: &str,
) -> Value {
    assert_eq!(
        code,
        want_code,
        "body: {body}\n{}",
        if code == 0 {
            shard.logs()
        } else {
            String::new()
        }
    );
    let status = status_of(&body);
    assert_eq!(
        status["code"].as_u64(),
        Some(u64::from(want_code)),
        "{status}"
    );
    assert_eq!(json_str(&status, "/reason"), reason, "{status}");
    status
}

fn errors_are_status_with_kubernetes_codes(store: StoreKind) {
    let shard = Shard::start(store);
    let cms = "/clusters/root/api/v1/namespaces/default/configmaps";
    let json = "application/json";

    // 404
    let err = shard.kubectl_fails(&["get", "cm", "nope"]);
    assert!(
        err.contains("(NotFound)") && err.contains("configmaps \"nope\" not found"),
        "{err}"
    );
    assert_status(
        &shard,
        shard.curl("GET", &format!("{cms}/nope"), None),
        404,
        "NotFound",
    );
    let err = shard.kubectl_fails(&["create", "configmap", "q", "-n", "missing"]);
    assert!(
        err.contains("not found"),
        "namespaced create in a missing namespace: {err}"
    );

    // 409 AlreadyExists
    shard.kubectl_ok(&["create", "configmap", "dup"]);
    let err = shard.kubectl_fails(&["create", "configmap", "dup"]);
    assert!(err.contains("already exists"), "{err}");
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"}}"#;
    assert_status(
        &shard,
        shard.curl("POST", cms, Some((json, body))),
        409,
        "AlreadyExists",
    );

    // 409 Conflict: an update with a stale resourceVersion.
    let stale = shard.kubectl_json(&["get", "cm", "dup", "-o", "json"]);
    shard.kubectl_ok(&["label", "cm", "dup", "bump=1"]);
    let stale_file = shard.write_file("stale.json", &stale.to_string());
    let err = shard.kubectl_fails(&["replace", "-f", stale_file.to_str().expect("utf-8")]);
    assert!(
        err.contains("Conflict") || err.contains("has been modified"),
        "{err}"
    );
    assert_status(
        &shard,
        shard.curl(
            "PUT",
            &format!("{cms}/dup"),
            Some((json, &stale.to_string())),
        ),
        409,
        "Conflict",
    );

    // 422 Invalid, with the field named.
    let err = shard.kubectl_fails(&["create", "configmap", "Bad_Name"]);
    assert!(
        err.contains("is invalid") || err.contains("Invalid"),
        "{err}"
    );
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#;
    let status = assert_status(
        &shard,
        shard.curl("POST", cms, Some((json, body))),
        422,
        "Invalid",
    );
    let causes = status
        .pointer("/details/causes")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    assert!(
        causes
            .iter()
            .any(|c| json_str(c, "/field") == "metadata.name"),
        "{status}"
    );

    // 401 without credentials; health endpoints stay open.
    assert_status(
        &shard,
        shard.curl_anonymous("GET", "/clusters/root/api/v1/namespaces"),
        401,
        "Unauthorized",
    );
    assert_eq!(shard.curl_anonymous("GET", "/readyz").0, 200);
    assert_eq!(shard.curl_anonymous("GET", "/livez").0, 200);

    // 400 for a malformed query parameter and a malformed body.
    let err = shard.kubectl_fails(&["get", "--raw", &format!("{cms}?limit=abc")]);
    assert!(err.contains("(BadRequest)"), "{err}");
    assert_status(
        &shard,
        shard.curl("GET", &format!("{cms}?limit=abc"), None),
        400,
        "BadRequest",
    );
    assert_status(
        &shard,
        shard.curl("POST", cms, Some((json, "{not json"))),
        400,
        "BadRequest",
    );
    let err = shard.kubectl_fails(&["get", "cm", "-l", "a in (b"]);
    assert!(
        err.contains("BadRequest") || err.contains("unable to parse requirement"),
        "{err}"
    );
}

/// `kubectl delete ns` waits (kubectl polls until 404): the shard marks the namespace Terminating,
/// refuses new content, deletes everything in it, then releases the `kubernetes` finalizer.
fn delete_namespace_waits_until_it_is_empty_and_gone(store: StoreKind) {
    let shard = Shard::start(store);
    shard.kubectl_ok(&["create", "namespace", "doomed"]);
    for name in ["a", "b", "c"] {
        shard.kubectl_ok(&[
            "-n",
            "doomed",
            "create",
            "configmap",
            name,
            "--from-literal=k=v",
        ]);
    }
    shard.kubectl_ok(&[
        "-n",
        "doomed",
        "create",
        "secret",
        "generic",
        "s",
        "--from-literal=p=q",
    ]);
    // A namespace of the same name in another place is untouched: keep one object outside.
    shard.kubectl_ok(&["create", "configmap", "outside", "--from-literal=k=v"]);

    let out = shard.kubectl_ok(&["delete", "namespace", "doomed", "--timeout=60s"]);
    assert!(out.contains("namespace \"doomed\" deleted"), "{out}");
    // The namespaces every workspace keeps may not be deleted (kcp's WorkspaceNamespaceLifecycle).
    shard.kubectl_ok(&["create", "namespace", "kube-public"]);
    shard.kubectl_ok(&["create", "namespace", "kube-system"]);
    for immortal in ["default", "kube-system", "kube-public"] {
        let refused = shard.kubectl_fails(&["delete", "namespace", immortal]);
        assert!(
            refused.contains(&format!(
                "namespaces \"{immortal}\" is forbidden: this namespace may not be deleted"
            )),
            "{refused}"
        );
        shard.kubectl_ok(&["get", "namespace", immortal]);
    }

    let gone = shard.kubectl_fails(&["get", "namespace", "doomed"]);
    assert!(
        gone.contains("NotFound") || gone.contains("not found"),
        "{gone}"
    );
    let raw = shard.kubectl_ok(&[
        "get",
        "--raw",
        "/clusters/root/api/v1/namespaces/doomed/configmaps",
    ]);
    let list: Value = serde_json::from_str(&raw).expect("a list");
    assert!(
        names(&list).is_empty(),
        "content of a deleted namespace is gone: {raw}"
    );
    let outside = shard.kubectl_ok(&["get", "configmap", "outside", "-o", "name"]);
    assert_eq!(outside.trim(), "configmap/outside");
}

/// kubectl fetches `/openapi/v2` in protobuf (gnostic's form, nothing else) to validate a kind its
/// v3 lookup did not find. `kubectl apply` of an existing built-in object computes its patch with
/// the strategic-merge-patch metadata of the v3 document (v2 when v3 lacks the kind).
fn openapi_for_validation_and_apply(store: StoreKind) {
    let shard = Shard::start(store);
    // A kind the shard does not serve: kubectl validates against v2, then says what is wrong.
    let deployment = shard.write_file(
        "deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx\n",
    );
    let output = shard.kubectl(&[
        "-v=8",
        "create",
        "-f",
        deployment.to_str().unwrap_or_default(),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains(r#"no matches for kind "Deployment" in version "apps/v1""#),
        "{stderr}"
    );
    assert!(!stderr.contains("error validating data"), "{stderr}");
    // The answer's media type, as kubectl -v=8 prints the response headers.
    assert!(
        stderr.contains("Content-Type: application/com.github.proto-openapi.spec.v2.v1.0+protobuf"),
        "kubectl did not get /openapi/v2 in protobuf: {stderr}"
    );

    // Client-side apply of an existing ConfigMap: a finalizer removed from the file goes, because
    // kubectl learns from the document that finalizers merge (and so sends their removal; sent
    // whole, the list would be merged into the stored one).
    let cm = |finalizers: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [{finalizers}]\ndata:\n  k: v\n"
        )
    };
    let file = shard.write_file("held.yaml", &cm("example.com/a, example.com/b"));
    let file = file.to_str().unwrap_or_default();
    shard.kubectl_ok(&["apply", "-f", file]);
    shard.write_file("held.yaml", &cm("example.com/a"));
    shard.kubectl_ok(&["apply", "-f", file]);
    let stored = shard.kubectl_json(&["get", "cm", "held", "-o", "json"]);
    assert_eq!(
        stored["metadata"]["finalizers"],
        serde_json::json!(["example.com/a"]),
        "{stored}"
    );
    // kubectl explain's v2 output reads the protobuf document.
    let explained =
        shard.kubectl_ok(&["explain", "--output=plaintext-openapiv2", "configmaps.data"]);
    assert!(
        explained.contains("data <map[string]string>"),
        "{explained}"
    );
    // The JSON form is still what a plain GET gets.
    let v2 = shard.kubectl_json(&["get", "--raw", "/clusters/root/openapi/v2"]);
    assert_eq!(v2["swagger"], "2.0");
}
