//! kcp's tenancy kinds through kubectl, on both stores: the bootstrap WorkspaceTypes and this
//! shard's Shard in `root`, Workspace and WorkspaceType served with kcp's schema and printer
//! columns, and the `use` grant of the general-purpose types to every authenticated user.

use kcp_e2e::{Shard, StoreKind, on_both_stores};

on_both_stores!(bootstrap_types_and_shard, workspaces_are_validated);

fn bootstrap_types_and_shard(store: StoreKind) {
    let shard = Shard::start(store);

    let types = shard.kubectl_ok(&["get", "workspacetypes", "-o", "name"]);
    for name in ["universal", "root", "home", "organization", "team"] {
        assert!(
            types.contains(&format!("workspacetype.tenancy.kcp.io/{name}\n")),
            "{name} in:\n{types}"
        );
    }
    let root = shard.kubectl_json(&["get", "workspacetype", "root", "-o", "json"]);
    assert_eq!(root["spec"]["limitAllowedParents"]["none"], true, "{root}");
    assert_eq!(
        root["spec"]["defaultChildWorkspaceType"]["name"], "organization",
        "{root}"
    );
    let universal = shard.kubectl_json(&["get", "workspacetype", "universal", "-o", "json"]);
    assert_eq!(universal["spec"]["initializer"], true, "{universal}");

    // The shard registered itself, reachable at its own URL.
    let shards = shard.kubectl_ok(&["get", "shards"]);
    let header = shards.lines().next().unwrap_or_default();
    for column in ["NAME", "REGION", "URL", "EXTERNAL URL", "AGE"] {
        assert!(header.contains(column), "{column} in {header}");
    }
    let root_shard = shard.kubectl_json(&["get", "shard", "root", "-o", "json"]);
    assert_eq!(
        root_shard["spec"]["baseURL"],
        shard.base_url(),
        "{root_shard}"
    );
    assert_eq!(
        root_shard["metadata"]["labels"]["name"], "root",
        "{root_shard}"
    );
    // Every type publishes its initializing and terminating virtual-workspace URLs per shard.
    let vw = root_shard["spec"]["virtualWorkspaceURL"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!vw.is_empty(), "{root_shard}");
    let universal = shard.eventually("universal's virtual workspace URLs", || {
        let t = shard.kubectl_json(&["get", "workspacetype", "universal", "-o", "json"]);
        t["status"]["virtualWorkspaces"].is_array().then_some(t)
    });
    assert_eq!(
        universal["status"]["virtualWorkspaces"],
        serde_json::json!([
            {"url": format!("{vw}/services/initializingworkspaces/root:universal"), "type": "initializing"},
            {"url": format!("{vw}/services/terminatingworkspaces/root:universal"), "type": "terminating"},
        ]),
        "{universal}"
    );
    let ready = universal["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "VirtualWorkspaceURLsReady"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(ready["status"], "True", "{universal}");

    // Every authenticated user may use the general-purpose types, not `root` or `home`.
    for (name, expected) in [
        ("universal", "yes"),
        ("organization", "yes"),
        ("team", "yes"),
        ("root", "no"),
        ("home", "no"),
    ] {
        let output = shard.kubectl(&[
            "auth",
            "can-i",
            "use",
            &format!("workspacetypes.tenancy.kcp.io/{name}"),
            "--as",
            "alice",
            "--as-group",
            "system:authenticated",
        ]);
        let answer = String::from_utf8_lossy(&output.stdout);
        assert_eq!(answer.trim(), expected, "use {name}: {answer}");
    }

    // A workspace placed on a shard with a region carries it (the REGION column), as in kcp.
    shard.kubectl_ok(&["label", "shard", "root", "region=eu-west"]);
    shard.eventually("the region in the shard's cache", || {
        let s = shard.kubectl_json(&["get", "shard", "root", "-o", "json"]);
        (s["metadata"]["labels"]["region"] == "eu-west").then_some(())
    });
    let placed = shard.write_file(
        "placed.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: placed\n",
    );
    shard.kubectl_ok(&["create", "-f", placed.to_str().unwrap_or_default()]);
    let ws = shard.eventually("placed Ready", || {
        let ws = shard.kubectl_json(&["get", "workspace", "placed", "-o", "json"]);
        (ws["status"]["phase"] == "Ready").then_some(ws)
    });
    assert_eq!(ws["metadata"]["labels"]["region"], "eu-west", "{ws}");
    let table = shard.kubectl_ok(&["get", "workspace", "placed"]);
    assert!(table.contains("eu-west"), "{table}");
}

fn workspaces_are_validated(store: StoreKind) {
    let shard = Shard::start(store);

    let explained = shard.kubectl_ok(&["explain", "workspaces.spec.type"]);
    assert!(explained.contains("tenancy.kcp.io"), "{explained}");
    assert!(explained.contains("path"), "{explained}");
    let resources = shard.kubectl_ok(&["api-resources", "--api-group", "tenancy.kcp.io"]);
    assert!(
        resources.contains("workspaces") && resources.contains(" ws "),
        "{resources}"
    );
    assert!(resources.contains("workspacetypes"), "{resources}");

    let bad = shard.write_file(
        "bad-ws.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: a\nspec:\n  type:\n    name: Not_A_Type\n",
    );
    // Admission resolves the type before the schema is checked, as in kcp: 403.
    let err = shard.kubectl_fails(&["create", "-f", bad.to_str().unwrap_or_default()]);
    assert!(
        err.contains(r#"is forbidden: workspace type "Not_A_Type" cannot be resolved"#),
        "{err}"
    );
    let bad_name = shard.write_file(
        "bad-name.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: a.b\n",
    );
    let err = shard.kubectl_fails(&["create", "-f", bad_name.to_str().unwrap_or_default()]);
    assert!(err.contains("Invalid value"), "{err}");

    // A path no workspace could have is a bad request, as kcp answers it.
    let (code, body) = shard.curl("GET", "/clusters/Root:BAD/api/v1/namespaces", None);
    assert_eq!(code, 400, "{body}");
    assert!(
        body.contains(r#"invalid cluster: \"Root:BAD\" does not match the regex"#),
        "{body}"
    );

    // Neither invalid workspace was stored.
    let listed = shard.kubectl_ok(&["get", "workspaces", "-o", "name"]);
    assert!(listed.trim().is_empty(), "{listed}");

    // The LC name the shard picked cannot be pointed elsewhere (its content is written beside
    // the LC), not even by an admin; the shard replaces whatever a create sends.
    let sent = shard.write_file(
        "named.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: named\n  annotations:\n    internal.tenancy.kcp.io/cluster: root\n",
    );
    shard.kubectl_ok(&["create", "-f", sent.to_str().unwrap_or_default()]);
    let picked = shard.kubectl_ok(&[
        "get",
        "workspace",
        "named",
        "-o",
        "jsonpath={.metadata.annotations.internal\\.tenancy\\.kcp\\.io/cluster}",
    ]);
    assert!(!picked.is_empty() && picked != "root", "{picked}");
    let err = shard.kubectl_fails(&[
        "annotate",
        "workspace",
        "named",
        "--overwrite",
        "internal.tenancy.kcp.io/cluster=root",
    ]);
    assert!(err.contains("field is immutable"), "{err}");

    // A type's parent and child limits name either no type or some types (kcp's schema).
    for (name, limits) in [
        ("empty", "limitAllowedChildren: {}"),
        (
            "both",
            "limitAllowedParents: {none: true, types: [{name: root, path: root}]}",
        ),
    ] {
        let file = shard.write_file(
            "wt.yaml",
            &format!("apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata:\n  name: {name}\nspec:\n  {limits}\n"),
        );
        let err = shard.kubectl_fails(&["create", "-f", file.to_str().unwrap_or_default()]);
        assert!(
            err.contains("must validate one and only one schema (oneOf)"),
            "{err}"
        );
    }

    // Its type neither changes (kcp's schema rules, 422) nor goes (kcp's admission, 403).
    for (patch, why) in [
        (
            r#"{"spec":{"type":{"name":"team"}}}"#,
            r#"spec.type: Invalid value: "object": name is immutable"#,
        ),
        (
            r#"{"spec":{"type":{"path":"root:other"}}}"#,
            r#"spec.type: Invalid value: "object": path is immutable"#,
        ),
        (
            r#"{"spec":{"type":{"name":"team","path":"root:other"}}}"#,
            "* spec.type: Invalid value: \"object\": name is immutable\n* spec.type: Invalid value: \"object\": path is immutable",
        ),
        (
            r#"{"spec":{"type":null}}"#,
            r#"is forbidden: spec.type: Invalid value: "null": field is immutable"#,
        ),
    ] {
        let err =
            shard.kubectl_fails(&["patch", "workspace", "named", "--type=merge", "-p", patch]);
        assert!(err.contains(why), "{patch}: {err}");
    }
}
