//! The APIExport virtual workspace through the real binary with kubectl and curl, on both stores:
//! a provider sees every Cowboy of the workspaces that bind its export through the URL its
//! endpoint slice publishes, works inside each of them, and sees nothing else; the official
//! Python client follows them there as an informer would.

use kcp_e2e::cowboys::{bind_and_wait, create_ready_workspace, publish};
use kcp_e2e::python::{python_with_kubernetes, script};
use kcp_e2e::{Caller, Shard, StoreKind, json_str, on_both_stores};
use serde_json::{Value, json};

on_both_stores!(apiexport_virtual_workspace);

const BOB_TOKEN: &str = "vw-bob-token-51c2e0";
const ALICE_TOKEN: &str = "vw-alice-token-93d7aa";

fn cowboy(name: &str, intent: &str) -> String {
    format!(
        "apiVersion: wildwest.dev/v1alpha1\nkind: Cowboy\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  intent: {intent}\n"
    )
}

fn cluster_of(shard: &Shard, workspace: &str) -> String {
    let ws = shard.kubectl_json(&["get", "workspace", workspace, "-o", "json"]);
    json_str(&ws, "/spec/cluster").to_string()
}

fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    (obj["status"]["conditions"].as_array()?.iter()).find(|c| c["type"] == kind)
}

fn names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = (list["items"].as_array().into_iter().flatten())
        .map(|o| {
            format!(
                "{}/{}",
                json_str(o, "/metadata/annotations/kcp.io~1cluster"),
                json_str(o, "/metadata/name")
            )
        })
        .collect();
    names.sort();
    names
}

fn apiexport_virtual_workspace(store: StoreKind) {
    let shard = Shard::start_with_tokens(
        store,
        &format!("{BOB_TOKEN},bob,bob-uid\n{ALICE_TOKEN},alice,alice-uid\n"),
    );
    for ws in [
        "provider",
        "other-provider",
        "one",
        "two",
        "unbound",
        "elsewhere",
    ] {
        create_ready_workspace(&shard, ws);
    }
    publish(&shard, "root:provider", "today.cowboys.wildwest.dev");
    // An export of the same name and resource by someone else, bound elsewhere.
    let other_identity = publish(&shard, "root:other-provider", "today.cowboys.wildwest.dev");
    for ws in ["one", "two"] {
        bind_and_wait(&shard, &format!("root:{ws}"), "root:provider");
    }
    bind_and_wait(&shard, "root:elsewhere", "root:other-provider");
    let provider_lc = cluster_of(&shard, "provider");
    let (one, two, unbound) = (
        cluster_of(&shard, "one"),
        cluster_of(&shard, "two"),
        cluster_of(&shard, "unbound"),
    );

    // The default endpoint slice publishes the shard's URL, as it hosts bindings of the export.
    let provider = || shard.kubectl_cmd().cluster("root:provider");
    let url = shard.eventually("the endpoint slice's URL", || {
        let slice = provider().json(&["get", "apiexportendpointslice", "cowboys", "-o", "json"]);
        let url = json_str(&slice, "/status/endpoints/0/url").to_string();
        (!url.is_empty()).then_some(url)
    });
    assert_eq!(
        url,
        format!(
            "{}/services/apiexport/{provider_lc}/cowboys",
            shard.base_url()
        )
    );

    for (ws, name) in [("one", "joe"), ("two", "ann"), ("elsewhere", "zed")] {
        let file = shard.write_file(&format!("{name}.yaml"), &cowboy(name, "ride"));
        (shard.kubectl_cmd().cluster(&format!("root:{ws}"))).ok(&[
            "create",
            "-f",
            file.to_str().unwrap_or_default(),
        ]);
    }

    // Across the bound workspaces: their Cowboys only, each with its logical cluster.
    let all = format!("{url}/clusters/*");
    let vw = || shard.kubectl_cmd().server(&all);
    let list = vw().json(&["get", "cowboys", "-A", "-o", "json"]);
    let mut expected = vec![format!("{one}/joe"), format!("{two}/ann")];
    expected.sort();
    assert_eq!(names(&list), expected, "{list}");
    let table = vw().ok(&["get", "cowboys", "-A"]);
    assert!(table.contains("INTENT") && table.contains("joe"), "{table}");
    let resources = vw().ok(&["api-resources", "-o", "name"]);
    let mut resources: Vec<&str> = resources.lines().collect();
    resources.sort();
    assert_eq!(
        resources,
        ["apibindings.apis.kcp.io", "cowboys.wildwest.dev"],
        "discovery lists the export's resources and its bindings only"
    );
    // The export's bindings, read-only; not the other export's.
    let bindings = vw().json(&["get", "apibindings", "-o", "json"]);
    let mut expected = vec![format!("{one}/cowboys"), format!("{two}/cowboys")];
    expected.sort();
    assert_eq!(names(&bindings), expected, "{bindings}");
    let refused = (shard.kubectl_cmd().server(&format!("{url}/clusters/{one}"))).fails(&[
        "delete",
        "apibinding",
        "cowboys",
    ]);
    assert!(
        refused.contains("write access to APIBinding is not allowed from virtual workspace"),
        "{refused}"
    );

    // Inside one bound workspace: status written back, objects created.
    let in_one = || shard.kubectl_cmd().server(&format!("{url}/clusters/{one}"));
    in_one().ok(&[
        "patch",
        "cowboy",
        "joe",
        "-n",
        "default",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"result":"caught"}}"#,
    ]);
    let joe = (shard.kubectl_cmd().cluster("root:one"))
        .json(&["get", "cowboy", "joe", "-n", "default", "-o", "json"]);
    assert_eq!(json_str(&joe, "/status/result"), "caught", "{joe}");
    let file = shard.write_file("kid.yaml", &cowboy("kid", "rest"));
    in_one().ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    let listed = (shard.kubectl_cmd().cluster("root:one"))
        .ok(&["get", "cowboys", "-n", "default", "-o", "name"]);
    assert!(listed.contains("cowboy.wildwest.dev/kid"), "{listed}");
    // Only what the binding bound.
    let refused = in_one().fails(&["create", "configmap", "x", "-n", "default"]);
    assert!(
        refused.contains("failed to find suitable reason to allow access in APIBinding"),
        "{refused}"
    );

    // A workspace that never bound the export is not reachable through it.
    let refused = (shard
        .kubectl_cmd()
        .server(&format!("{url}/clusters/{unbound}")))
    .fails(&["get", "cowboys", "-n", "default"]);
    assert!(
        refused.contains("could not find suitable APIBinding in target logical cluster"),
        "{refused}"
    );
    // kcp keys exports by logical cluster: a workspace path in the URL addresses nothing.
    let (code, _) = shard.curl(
        "GET",
        "/services/apiexport/root:provider/cowboys/clusters/*/apis/wildwest.dev/v1alpha1/cowboys",
        None,
    );
    assert_eq!(code, 404);

    // Naming another export's identity reaches nothing through this one's URL.
    let (code, body) = shard.curl(
        "GET",
        &format!("/services/apiexport/{provider_lc}/cowboys/clusters/*/apis/wildwest.dev/v1alpha1/cowboys:{other_identity}"),
        None,
    );
    assert_eq!(code, 404, "{body}");

    // A wildcard list's resourceVersion resumes a wildcard watch: only what came after.
    let path = format!(
        "/services/apiexport/{provider_lc}/cowboys/clusters/*/apis/wildwest.dev/v1alpha1/cowboys"
    );
    let (code, body) = shard.curl("GET", &path, None);
    assert_eq!(code, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap_or_default();
    let rv = json_str(&list, "/metadata/resourceVersion").to_string();
    let file = shard.write_file("sue.yaml", &cowboy("sue", "ride"));
    (shard.kubectl_cmd().cluster("root:two")).ok(&[
        "create",
        "-f",
        file.to_str().unwrap_or_default(),
    ]);
    let (code, events) = shard.curl(
        "GET",
        &format!("{path}?watch=true&resourceVersion={rv}&timeoutSeconds=2"),
        None,
    );
    assert_eq!(code, 200, "{events}");
    let events: Vec<Value> = (events.lines())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let seen: Vec<(&str, &str)> = (events.iter())
        .map(|e| (json_str(e, "/type"), json_str(e, "/object/metadata/name")))
        .collect();
    assert_eq!(seen, [("ADDED", "sue")], "{events:?}");

    // The official Python client, as a provider's informer: list across the bound workspaces,
    // then watch from the list while Cowboys change in two of them.
    let output = std::process::Command::new(python_with_kubernetes())
        .arg(script("vw_informer.py"))
        .arg(shard.kubeconfig())
        .arg(&url)
        .arg(shard.cluster_url("root:one"))
        .arg(shard.cluster_url("root:two"))
        .output()
        .expect("running the Python client");
    assert!(
        output.status.success(),
        "vw_informer.py failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let out: Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    let mut listed = vec![
        json!([one, "joe"]),
        json!([one, "kid"]),
        json!([two, "ann"]),
        json!([two, "sue"]),
    ];
    listed.sort_by_key(|v| v.to_string());
    assert_eq!(out["listed"], json!(listed), "{out}");
    assert_eq!(
        out["events"],
        json!([
            ["ADDED", one, "py"],
            ["MODIFIED", two, "ann"],
            ["DELETED", one, "py"]
        ]),
        "{out}"
    );

    // Users: without content access nothing is served; with it, everything above.
    let as_bob = Caller::Token(BOB_TOKEN.to_string());
    let (code, body) = shard.curl_with(&as_bob, "GET", &path, &[], None);
    assert_eq!(code, 403, "{body}");
    let status: Value = serde_json::from_str(&body).unwrap_or_default();
    let wanted = format!("API export: \"cowboys\", workspace: \"{provider_lc}\" RBAC decision:");
    assert!(json_str(&status, "/message").contains(&wanted), "{body}");
    let grant = shard.write_file(
        "content.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: cowboys-content}\nrules:\n- {apiGroups: [apis.kcp.io], resources: [apiexports/content], resourceNames: [cowboys], verbs: [\"*\"]}\n- {nonResourceURLs: [\"/\"], verbs: [access]}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: cowboys-content}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cowboys-content}\nsubjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}\n",
    );
    provider().ok(&["apply", "-f", grant.to_str().unwrap_or_default()]);
    let as_alice = Caller::Token(ALICE_TOKEN.to_string());
    let (code, body) = shard.curl_with(&as_alice, "GET", &path, &[], None);
    assert_eq!(code, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap_or_default();
    assert_eq!(names(&list).len(), 4, "{list}");
    // Content access is per export: alice gets nothing of the other provider's.
    let other_lc = cluster_of(&shard, "other-provider");
    let (code, _) = shard.curl_with(
        &as_alice,
        "GET",
        &format!(
            "/services/apiexport/{other_lc}/cowboys/clusters/*/apis/wildwest.dev/v1alpha1/cowboys"
        ),
        &[],
        None,
    );
    assert_eq!(code, 403);

    // Slices naming a topology Partition list the shard only when its labels match (every shard
    // carries `name: <shard>`); a Partition that is not there lists nothing, with kcp's reason.
    let partitions = shard.write_file(
        "partitions.yaml",
        "apiVersion: topology.kcp.io/v1alpha1\nkind: Partition\nmetadata: {name: here}\nspec: {selector: {matchLabels: {name: root}}}\n---\napiVersion: topology.kcp.io/v1alpha1\nkind: Partition\nmetadata: {name: west}\nspec: {selector: {matchLabels: {region: west}}}\n",
    );
    provider().ok(&["apply", "-f", partitions.to_str().unwrap_or_default()]);
    let slices = ["here", "west", "nowhere"]
        .map(|p| format!("apiVersion: apis.kcp.io/v1alpha1\nkind: APIExportEndpointSlice\nmetadata: {{name: cowboys-{p}}}\nspec:\n  export: {{path: root:provider, name: cowboys}}\n  partition: {p}\n"))
        .join("---\n");
    let slices = shard.write_file("slices.yaml", &slices);
    provider().ok(&["apply", "-f", slices.to_str().unwrap_or_default()]);
    let slice =
        |name: &str| provider().json(&["get", "apiexportendpointslice", name, "-o", "json"]);
    shard.eventually("the partitioned slices' status", || {
        let (here, west, nowhere) = (
            slice("cowboys-here"),
            slice("cowboys-west"),
            slice("cowboys-nowhere"),
        );
        let nowhere = condition(&nowhere, "PartitionValid")?.clone();
        (json_str(&here, "/status/endpoints/0/url") == url
            && json_str(&here, "/status/shardSelector") == "name=root"
            && json_str(&west, "/status/shardSelector") == "region=west"
            && condition(&west, "PartitionValid")?["status"] == "True"
            && west["status"].get("endpoints").is_none()
            && nowhere["reason"] == "PartitionInvalidReference")
            .then_some(())
    });

    // The last binding gone, the shard's URL leaves the slice.
    for ws in ["one", "two"] {
        (shard.kubectl_cmd().cluster(&format!("root:{ws}"))).ok(&[
            "delete",
            "apibinding",
            "cowboys",
        ]);
    }
    shard.eventually("the endpoint slice without URLs", || {
        let slice = provider().json(&["get", "apiexportendpointslice", "cowboys", "-o", "json"]);
        slice["status"].get("endpoints").is_none().then_some(())
    });
}
