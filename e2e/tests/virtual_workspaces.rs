//! The APIExport virtual workspace through the real binary with kubectl and curl, on both stores:
//! a provider sees every Cowboy of the workspaces that bind its export through the URL its
//! endpoint slice publishes, works inside each of them, and sees nothing else; the official
//! Python client follows them there as an informer would.

use kcp_e2e::cowboys::{bind_and_wait, create_ready_workspace, publish};
use kcp_e2e::python::{python_with_kubernetes, script};
use kcp_e2e::{Caller, Shard, StoreKind, VirtualWorkspaces, json_str, on_both_stores};
use serde_json::{Value, json};

on_both_stores!(
    apiexport_virtual_workspace,
    object_partitions,
    lifecycle_workspaces,
    provider_controller,
    identity_claims
);

/// The same scenarios with the virtual workspaces served by a kcp-vw beside the shard, which
/// publishes its URL.
mod kcp_vw {
    use super::*;

    on_both_stores!(
        apiexport_virtual_workspace,
        object_partitions,
        lifecycle_workspaces,
        provider_controller,
        identity_claims
    );

    fn apiexport_virtual_workspace(store: StoreKind) {
        super::apiexport_virtual_workspace_in(store, VirtualWorkspaces::KcpVw)
    }

    fn object_partitions(store: StoreKind) {
        super::object_partitions_in(store, VirtualWorkspaces::KcpVw)
    }

    fn lifecycle_workspaces(store: StoreKind) {
        super::lifecycle_workspaces_in(store, VirtualWorkspaces::KcpVw)
    }

    fn provider_controller(store: StoreKind) {
        super::provider_controller_in(store, VirtualWorkspaces::KcpVw)
    }

    fn identity_claims(store: StoreKind) {
        super::identity_claims_in(store, VirtualWorkspaces::KcpVw)
    }

    on_both_stores!(standalone_server);

    /// What is kcp-vw's own: it serves nothing but `/services/...`, trusts no identity header,
    /// reaches the shard's store only as an administrator, and picks up after a crash where its
    /// clients left off, with the shard's resourceVersions.
    fn standalone_server(store: StoreKind) {
        let mut shard = Shard::start_serving(
            store,
            &format!("{BOB_TOKEN},bob,bob-uid\n"),
            VirtualWorkspaces::KcpVw,
        );
        for ws in ["provider", "one"] {
            create_ready_workspace(&shard, ws);
        }
        let identity = publish(&shard, "root:provider", "today.cowboys.wildwest.dev");
        bind_and_wait(&shard, "root:one", "root:provider");
        let provider_lc = cluster_of(&shard, "provider");
        let create = |shard: &Shard, name: &str| {
            let file = shard.write_file(&format!("{name}.yaml"), &cowboy(name, "ride"));
            (shard.kubectl_cmd().cluster("root:one")).ok(&[
                "create",
                "-f",
                file.to_str().unwrap_or_default(),
            ]);
        };
        create(&shard, "joe");
        let path = format!(
            "/services/apiexport/{provider_lc}/cowboys/clusters/*/apis/wildwest.dev/v1alpha1/cowboys"
        );
        let listed = |shard: &Shard| {
            shard.eventually("joe through kcp-vw", || {
                let (code, body) = shard.curl("GET", &path, None);
                (code == 200 && body.contains("\"joe\"")).then_some(body)
            })
        };
        let list: Value = serde_json::from_str(&listed(&shard)).unwrap_or_default();
        let rv = json_str(&list, "/metadata/resourceVersion").to_string();

        // Identity headers are nobody's word: not without credentials, not beside a token.
        let forged = [
            ("X-Remote-User", "system:admin"),
            ("X-Remote-Group", "system:masters"),
        ];
        let (code, body) = shard.curl_with(&Caller::Anonymous, "GET", &path, &forged, None);
        assert_eq!(code, 401, "{body}");
        let bob = Caller::Token(BOB_TOKEN.into());
        for headers in [
            &forged[..],
            &[
                ("Impersonate-User", "system:admin"),
                ("Impersonate-Group", "system:masters"),
            ],
        ] {
            let (code, body) = shard.curl_with(&bob, "GET", &path, headers, None);
            assert_eq!(code, 403, "{headers:?}: {body}");
            assert!(!body.contains("\"joe\""), "{body}");
        }
        // Those refusals were the shard's: kcp-vw asks it by SubjectAccessReview, as kcp's
        // virtual workspaces ask theirs.
        let (code, metrics) = shard.curl("GET", "/metrics", None);
        assert_eq!(code, 200, "{metrics}");
        let reviews: f64 = (metrics.lines())
            .filter(|l| {
                l.starts_with("apiserver_request_total{")
                    && l.contains(r#"resource="subjectaccessreviews""#)
                    && l.contains(r#"code="201""#)
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        assert!(reviews >= 1.0, "no review reached the shard:\n{metrics}");
        // Logical clusters are the shard's to serve.
        let vw = shard.services_url();
        let (code, body) = shard.curl("GET", "/clusters/root/api/v1/namespaces", None);
        assert_eq!(code, 200, "the shard serves them: {body}");
        let out = (shard.kubectl_cmd().server(&format!("{vw}/clusters/root")))
            .fails(&["get", "namespaces"]);
        assert!(
            out.contains("NotFound") || out.contains("not find"),
            "{out}"
        );

        // The shard's store answers its administrators only.
        let endpoint = kcp_pki::kubeconfig::read(&shard.kubeconfig()).expect("admin.kubeconfig");
        let revision = |context: &str| {
            let e = (endpoint.client_endpoint(Some(context))).expect("the context's endpoint");
            let options = kcp_store::remote::RemoteOptions {
                url: e.server,
                tls: Some(kcp_store::remote::RemoteTls {
                    ca_pem: e.ca_pem,
                    cert_pem: e.cert_pem,
                    key_pem: e.key_pem,
                }),
            };
            kcp_e2e::block_on(async move {
                use kcp_store::Store;
                let remote = kcp_store::remote::RemoteStore::connect(&options)?;
                remote.current_revision().await
            })
        };
        assert!(revision("shard-base").is_ok());
        let refused = (revision("base").expect_err("kcp-admin may not call the store")).to_string();
        assert!(refused.contains("PermissionDenied"), "{refused}");

        // Killed, a write while it is down, started again: its cache begins anew, so a watch
        // from before the crash is 410 Expired, as from a restarted kube-apiserver, and the
        // client lists again, which sees the write. The resourceVersions are the shard's: a
        // watch from the new list's resumes on kcp-vw and on the shard alike.
        shard.kill9_vw();
        create(&shard, "ann");
        shard.start_vw_again();
        let watch_from = |caller: &str, path: &str, rv: &str| {
            let (code, events) = shard.curl_as(
                Some(caller),
                "GET",
                &format!("{path}?watch=true&resourceVersion={rv}&timeoutSeconds=2"),
                None,
            );
            assert_eq!(code, 200, "{events}");
            let seen: Vec<String> = (events.lines())
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .map(|e| {
                    let kind = json_str(&e, "/type");
                    match kind {
                        "ERROR" => format!("{kind} {}", json_str(&e, "/object/code")),
                        _ => format!("{kind} {}", json_str(&e, "/object/metadata/name")),
                    }
                })
                .collect();
            (seen, events)
        };
        let (code, events) = shard.curl(
            "GET",
            &format!("{path}?watch=true&resourceVersion={rv}&timeoutSeconds=2"),
            None,
        );
        assert_eq!(code, 200, "{events}");
        assert!(
            events.contains(r#""reason":"Expired","code":410"#),
            "{events}"
        );
        let list: Value = serde_json::from_str(&listed(&shard)).unwrap_or_default();
        assert_eq!(names(&list).len(), 2, "joe and ann: {list}");
        let rv = json_str(&list, "/metadata/resourceVersion").to_string();
        create(&shard, "sue");
        let direct = format!("/clusters/*/apis/wildwest.dev/v1alpha1/cowboys:{identity}");
        for (caller, path) in [("kcp-admin", &path), ("shard-admin", &direct)] {
            let (seen, events) = watch_from(caller, path, &rv);
            assert_eq!(seen, ["ADDED sue"], "{caller} {path}: {events}");
        }

        // The shard gone: kcp-vw still answers what needs no consistency from its cache, and
        // refuses to guess what a consistent read must reflect. Only to a caller it need not ask
        // the shard about (system:masters): anyone else's authorization is the shard's to give.
        shard.kill9();
        let at_rv0 = format!("{path}?resourceVersion=0");
        let (code, body) = shard.curl_as(Some("shard-admin"), "GET", &at_rv0, None);
        assert_eq!(code, 200, "{body}");
        assert!(body.contains("\"sue\""), "{body}");
        let (code, body) = shard.curl_as(Some("shard-admin"), "GET", &path, None);
        assert_eq!(code, 503, "{body}");
        assert!(body.contains("ServiceUnavailable"), "{body}");
        let (code, body) = shard.curl("GET", &at_rv0, None);
        assert_eq!(code, 503, "{body}");
        assert!(
            body.contains("did not answer the authorization review"),
            "{body}"
        );
    }
}

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
    apiexport_virtual_workspace_in(store, VirtualWorkspaces::InShard)
}

fn apiexport_virtual_workspace_in(store: StoreKind, vw: VirtualWorkspaces) {
    let shard = Shard::start_serving(
        store,
        &format!("{BOB_TOKEN},bob,bob-uid\n{ALICE_TOKEN},alice,alice-uid\n"),
        vw,
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
            shard.services_url()
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

    // A PartitionSet generates a Partition per value of its dimensions among the shards' labels
    // (one shard here: `name: root`), owned by the set; a slice may name the generated one.
    let sets = shard.write_file(
        "sets.yaml",
        "apiVersion: topology.kcp.io/v1alpha1\nkind: PartitionSet\nmetadata: {name: by-name}\nspec: {dimensions: [name]}\n---\napiVersion: topology.kcp.io/v1alpha1\nkind: PartitionSet\nmetadata: {name: nowhere}\nspec: {dimensions: [name], shardSelector: {matchLabels: {region: nowhere}}}\n",
    );
    provider().ok(&["apply", "-f", sets.to_str().unwrap_or_default()]);
    let generated = shard.eventually("the generated Partition", || {
        let set = provider().json(&["get", "partitionset", "by-name", "-o", "json"]);
        let empty = provider().json(&["get", "partitionset", "nowhere", "-o", "json"]);
        let partitions = provider().json(&["get", "partitions", "-o", "json"]);
        let generated: Vec<&Value> = (partitions["items"].as_array()?.iter())
            .filter(|p| json_str(p, "/metadata/ownerReferences/0/name") == "by-name")
            .collect();
        (set["status"]["count"] == 1
            && condition(&set, "PartitionsReady")?["status"] == "True"
            && condition(&empty, "PartitionSetValid")?["status"] == "True"
            && empty["status"]["count"].as_u64().unwrap_or(0) == 0
            && generated.len() == 1)
            .then(|| generated[0].clone())
    });
    let generated_name = json_str(&generated, "/metadata/name").to_string();
    assert!(generated_name.starts_with("by-name-root-"), "{generated}");
    assert_eq!(
        generated["spec"]["selector"],
        json!({"matchLabels": {"name": "root"}}),
        "{generated}"
    );
    let file = shard.write_file(
        "generated-slice.yaml",
        &format!("apiVersion: apis.kcp.io/v1alpha1\nkind: APIExportEndpointSlice\nmetadata: {{name: cowboys-generated}}\nspec:\n  export: {{path: root:provider, name: cowboys}}\n  partition: {generated_name}\n"),
    );
    provider().ok(&["apply", "-f", file.to_str().unwrap_or_default()]);
    shard.eventually("the generated partition's slice lists the shard", || {
        let s = slice("cowboys-generated");
        (json_str(&s, "/status/endpoints/0/url") == url).then_some(())
    });
    provider().ok(&["delete", "partitionset", "by-name"]);
    shard.eventually("the generated Partition collected with its set", || {
        let out = provider().run(&["get", "partition", &generated_name]);
        (!out.status.success()).then_some(())
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

const EVE_TOKEN: &str = "vw-eve-token-0f31b7";
const TED_TOKEN: &str = "vw-ted-token-6c2a90";

/// A Cowboy with `labels` (`key: value` lines' YAML flow map, e.g. `{region: east}`).
fn labelled_cowboy(name: &str, labels: &str) -> String {
    format!(
        "apiVersion: wildwest.dev/v1alpha1\nkind: Cowboy\nmetadata:\n  name: {name}\n  namespace: default\n  labels: {labels}\nspec:\n  intent: ride\n"
    )
}

/// An endpoint slice of the provider's `cowboys`, with an object partition `region=<value>`
/// unless `value` is empty.
fn slice(name: &str, value: &str) -> String {
    let partition = match value {
        "" => String::new(),
        value => format!("  objectPartition: {{labelKey: region, value: {value}}}\n"),
    };
    format!(
        "apiVersion: apis.kcp.io/v1alpha1\nkind: APIExportEndpointSlice\nmetadata: {{name: {name}}}\nspec:\n  export: {{path: root:provider, name: cowboys}}\n{partition}"
    )
}

/// The events of a watch answer, as `(type, cluster/name)`.
fn events(body: &str) -> Vec<(String, String)> {
    (body.lines())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| {
            let object = &e["object"];
            (
                json_str(&e, "/type").to_string(),
                format!(
                    "{}/{}",
                    json_str(object, "/metadata/annotations/kcp.io~1cluster"),
                    json_str(object, "/metadata/name")
                ),
            )
        })
        .collect()
}

/// Object-partitioned endpoint slices (beyond kcp, kcp-dev/kcp#3497): each partition's URL
/// serves only its own objects, keeps writes in it, moves relabelled objects between watchers,
/// and is granted on its own; a tenant who may bind cannot mint one.
fn object_partitions(store: StoreKind) {
    object_partitions_in(store, VirtualWorkspaces::InShard)
}

fn object_partitions_in(store: StoreKind, vw: VirtualWorkspaces) {
    let shard = Shard::start_serving(
        store,
        &format!("{EVE_TOKEN},eve,eve-uid\n{TED_TOKEN},ted,ted-uid\n"),
        vw,
    );
    for ws in ["provider", "one", "two"] {
        create_ready_workspace(&shard, ws);
    }
    publish(&shard, "root:provider", "today.cowboys.wildwest.dev");
    for ws in ["one", "two"] {
        bind_and_wait(&shard, &format!("root:{ws}"), "root:provider");
    }
    let provider_lc = cluster_of(&shard, "provider");
    let (one, two) = (cluster_of(&shard, "one"), cluster_of(&shard, "two"));
    for (ws, name, labels) in [
        ("one", "e1", "{region: east}"),
        ("one", "w1", "{region: west}"),
        ("one", "u1", "{}"),
        ("two", "e2", "{region: east}"),
    ] {
        let file = shard.write_file(&format!("{name}.yaml"), &labelled_cowboy(name, labels));
        (shard.kubectl_cmd().cluster(&format!("root:{ws}"))).ok(&[
            "create",
            "-f",
            file.to_str().unwrap_or_default(),
        ]);
    }
    let provider = || shard.kubectl_cmd().cluster("root:provider");
    let file = shard.write_file(
        "partitions.yaml",
        &[slice("cowboys-east", "east"), slice("cowboys-west", "west")].join("---\n"),
    );
    provider().ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    let url_of = |name: &str| {
        shard.eventually(&format!("{name}'s URL"), || {
            let slice = provider().json(&["get", "apiexportendpointslice", name, "-o", "json"]);
            let url = json_str(&slice, "/status/endpoints/0/url").to_string();
            (!url.is_empty()).then_some(url)
        })
    };
    let (east, west, whole) = (
        url_of("cowboys-east"),
        url_of("cowboys-west"),
        url_of("cowboys"),
    );
    assert_eq!(
        east,
        format!(
            "{}/services/apiexportslice/{provider_lc}/cowboys-east",
            shard.services_url()
        )
    );
    let path_of = |url: &str| url.trim_start_matches(&shard.services_url()).to_string();
    let cowboys = |url: &str| {
        format!(
            "{}/clusters/*/apis/wildwest.dev/v1alpha1/cowboys",
            path_of(url)
        )
    };

    // Each partition lists its own objects; unlabelled ones only on the export's endpoint.
    // Listed as an informer lists (kubectl's `-o json` list carries no resourceVersion).
    let listed = |url: &str| {
        let (code, body) = shard.curl("GET", &cowboys(url), None);
        assert_eq!(code, 200, "{body}");
        let list: Value = serde_json::from_str(&body).unwrap_or_default();
        (
            names(&list),
            json_str(&list, "/metadata/resourceVersion").to_string(),
        )
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let (east_names, east_rv) = listed(&east);
    assert_eq!(
        east_names,
        sorted(vec![format!("{one}/e1"), format!("{two}/e2")])
    );
    let (west_names, west_rv) = listed(&west);
    assert_eq!(west_names, [format!("{one}/w1")]);
    let (all_names, _) = listed(&whole);
    assert_eq!(all_names.len(), 4, "{all_names:?}");
    let resources = (shard.kubectl_cmd().server(&format!("{east}/clusters/*"))).ok(&[
        "api-resources",
        "-o",
        "name",
    ]);
    assert!(resources.contains("cowboys.wildwest.dev"), "{resources}");

    // One object of another partition, or of none, is not there.
    let in_east_one = || {
        shard
            .kubectl_cmd()
            .server(&format!("{east}/clusters/{one}"))
    };
    for name in ["w1", "u1"] {
        let refused = in_east_one().fails(&["get", "cowboy", name, "-n", "default"]);
        assert!(
            refused.contains("NotFound") || refused.contains("not found"),
            "{refused}"
        );
        let refused = in_east_one().fails(&["delete", "cowboy", name, "-n", "default"]);
        assert!(refused.contains("not found"), "{refused}");
    }
    in_east_one().ok(&["get", "cowboy", "e1", "-n", "default"]);
    // No subresource but status through a virtual workspace (a scale or token would go around
    // the partition).
    let (code, body) = shard.curl(
        "GET",
        &format!(
            "{}/clusters/{one}/apis/wildwest.dev/v1alpha1/namespaces/default/cowboys/w1/scale",
            path_of(&east)
        ),
        None,
    );
    assert_eq!(code, 404, "{body}");

    // Writes stay in the partition: a create gets its label, another value is refused.
    let file = shard.write_file("kid.yaml", &labelled_cowboy("kid", "{}"));
    in_east_one().ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    let kid = (shard.kubectl_cmd().cluster("root:one"))
        .json(&["get", "cowboy", "kid", "-n", "default", "-o", "json"]);
    assert_eq!(json_str(&kid, "/metadata/labels/region"), "east", "{kid}");
    let file = shard.write_file("rogue.yaml", &labelled_cowboy("rogue", "{region: west}"));
    let refused = in_east_one().fails(&["create", "-f", file.to_str().unwrap_or_default()]);
    assert!(
        refused.contains("protected label region must have value east"),
        "{refused}"
    );
    let refused = in_east_one().fails(&[
        "label",
        "cowboy",
        "e1",
        "-n",
        "default",
        "region=west",
        "--overwrite",
    ]);
    assert!(
        refused.contains("protected label region must have value east"),
        "{refused}"
    );
    in_east_one().ok(&["delete", "cowboy", "kid", "-n", "default"]);

    // Relabelled from east to west (by the consumer): DELETED for the east watcher, ADDED for
    // the west one, each resuming from its own list.
    (shard.kubectl_cmd().cluster("root:two")).ok(&[
        "label",
        "cowboy",
        "e2",
        "-n",
        "default",
        "region=west",
        "--overwrite",
    ]);
    let watched = |url: &str, rv: &str| {
        let (code, body) = shard.curl(
            "GET",
            &format!(
                "{}?watch=true&resourceVersion={rv}&timeoutSeconds=2",
                cowboys(url)
            ),
            None,
        );
        assert_eq!(code, 200, "{body}");
        events(&body)
    };
    let e2 = format!("{two}/e2");
    let kid = format!("{one}/kid");
    assert_eq!(
        watched(&east, &east_rv),
        [
            ("ADDED".to_string(), kid.clone()),
            ("DELETED".to_string(), kid),
            ("DELETED".to_string(), e2.clone())
        ]
    );
    assert_eq!(watched(&west, &west_rv), [("ADDED".to_string(), e2)]);

    // A partition is granted on its own: eve may use east, not west nor the whole export.
    let as_eve = Caller::Token(EVE_TOKEN.to_string());
    let eve_get = |url: &str| shard.curl_with(&as_eve, "GET", &cowboys(url), &[], None);
    let (code, body) = eve_get(&east);
    assert_eq!(code, 403, "{body}");
    let status: Value = serde_json::from_str(&body).unwrap_or_default();
    assert!(
        json_str(&status, "/message").contains(&format!(
            "API export endpoint slice: \"cowboys-east\", workspace: \"{provider_lc}\""
        )),
        "{body}"
    );
    let grant = shard.write_file(
        "east.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: cowboys-east}\nrules:\n- {apiGroups: [apis.kcp.io], resources: [apiexportendpointslices/content], resourceNames: [cowboys-east], verbs: [\"*\"]}\n- {nonResourceURLs: [\"/\"], verbs: [access]}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: cowboys-east}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cowboys-east}\nsubjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: eve}\n",
    );
    provider().ok(&["apply", "-f", grant.to_str().unwrap_or_default()]);
    let (code, body) = eve_get(&east);
    assert_eq!(code, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap_or_default();
    assert_eq!(names(&list), [format!("{one}/e1")], "{list}");
    for other in [&west, &whole] {
        let (code, body) = eve_get(other);
        assert_eq!(code, 403, "{other}: {body}");
    }
    // A slice that is not there tells its existence to nobody without access to it.
    let (code, _) = shard.curl_with(
        &as_eve,
        "GET",
        &format!("/services/apiexportslice/{provider_lc}/cowboys-nowhere/clusters/*/apis"),
        &[],
        None,
    );
    assert_eq!(code, 403);

    // The slice records its export's logical cluster, and keeps it whatever a write says.
    let recorded = |name: &str| {
        let s = provider().json(&["get", "apiexportendpointslice", name, "-o", "json"]);
        json_str(
            &s,
            "/metadata/annotations/internal.apis.kcp.io~1export-cluster",
        )
        .to_string()
    };
    assert_eq!(recorded("cowboys-east"), provider_lc);
    provider().ok(&[
        "annotate",
        "apiexportendpointslice",
        "cowboys-east",
        "--overwrite",
        "internal.apis.kcp.io/export-cluster=elsewhere",
    ]);
    assert_eq!(recorded("cowboys-east"), provider_lc);

    // The partition is immutable.
    let refused = provider().fails(&[
        "patch",
        "apiexportendpointslice",
        "cowboys-east",
        "--type=merge",
        "-p",
        r#"{"spec":{"objectPartition":{"value":"north"}}}"#,
    ]);
    assert!(
        refused.contains("objectPartition is immutable"),
        "{refused}"
    );

    // ted may create slices: one needs bind on the export, a partitioned one content access.
    let as_ted = Caller::Token(TED_TOKEN.to_string());
    let create_slice = |name: &str, value: &str| {
        shard.curl_with(
            &as_ted,
            "POST",
            "/clusters/root:provider/apis/apis.kcp.io/v1alpha1/apiexportendpointslices",
            &[],
            Some(("application/yaml", &slice(name, value))),
        )
    };
    let rbac = |verbs: &str| {
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: ted}}\nrules:\n- {{apiGroups: [apis.kcp.io], resources: [apiexportendpointslices], verbs: [create, get]}}\n- {{apiGroups: [apis.kcp.io], resources: [apiexports], verbs: [{verbs}]}}\n- {{nonResourceURLs: [\"/\"], verbs: [access]}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: ted}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ted}}\nsubjects:\n- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: ted}}\n"
        )
    };
    let file = shard.write_file("ted.yaml", &rbac("get"));
    provider().ok(&["apply", "-f", file.to_str().unwrap_or_default()]);
    let (code, body) = create_slice("teds", "");
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("unable to create APIExportEndpointSlice: no permission to bind to export root:provider:cowboys"),
        "{body}"
    );
    let file = shard.write_file("ted.yaml", &rbac("get, bind"));
    provider().ok(&["apply", "-f", file.to_str().unwrap_or_default()]);
    let (code, body) = create_slice("teds", "");
    assert_eq!(code, 201, "{body}");
    let (code, body) = create_slice("teds-east", "east");
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("no content access to export root:provider:cowboys"),
        "{body}"
    );
}

const IVAN_TOKEN: &str = "vw-ivan-token-8e14d2";
const NICK_TOKEN: &str = "vw-nick-token-2b77c5";

/// kcp's initializingworkspaces and terminatingworkspaces virtual workspaces: a controller holding
/// `initialize` (`terminate`) on a WorkspaceType lists and watches the LogicalClusters waiting on
/// it, works inside them as their owner, and releases them by removing its own name only.
fn lifecycle_workspaces(store: StoreKind) {
    lifecycle_workspaces_in(store, VirtualWorkspaces::InShard)
}

fn lifecycle_workspaces_in(store: StoreKind, vw: VirtualWorkspaces) {
    let shard = Shard::start_serving(
        store,
        &format!("{IVAN_TOKEN},ivan,ivan-uid\n{NICK_TOKEN},nick,nick-uid\n"),
        vw,
    );
    let types = shard.write_file(
        "types.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata: {name: slow}\nspec:\n  initializer: true\n  extend: {with: [{name: universal, path: root}]}\n---\napiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata: {name: guarded}\nspec:\n  terminator: true\n  extend: {with: [{name: universal, path: root}]}\n",
    );
    shard.kubectl_ok(&["create", "-f", types.to_str().unwrap_or_default()]);
    let url_of = |type_name: &str, kind: &str| {
        shard.eventually(&format!("{type_name}'s {kind} URL"), || {
            let t = shard.kubectl_json(&["get", "workspacetype", type_name, "-o", "json"]);
            (t["status"]["virtualWorkspaces"].as_array()?.iter())
                .find(|w| w["type"] == kind)
                .map(|w| json_str(w, "/url").to_string())
        })
    };
    let initializing = url_of("slow", "initializing");
    assert_eq!(
        initializing,
        format!(
            "{}/services/initializingworkspaces/root:slow",
            shard.services_url()
        )
    );
    let path_of = |url: &str| url.trim_start_matches(&shard.services_url()).to_string();
    let lcs = |url: &str| {
        format!(
            "{}/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters",
            path_of(url)
        )
    };
    for name in ["w1", "w2"] {
        let file = shard.write_file(
            &format!("{name}.yaml"),
            &format!("apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec: {{type: {{name: slow, path: root}}}}\n"),
        );
        shard.kubectl_ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    }
    let (w1, w2) = (
        shard.eventually("w1 initializing", || {
            let ws = shard.kubectl_json(&["get", "workspace", "w1", "-o", "json"]);
            (ws["status"]["phase"] == "Initializing")
                .then(|| json_str(&ws, "/spec/cluster").to_string())
        }),
        shard.eventually("w2 initializing", || {
            let ws = shard.kubectl_json(&["get", "workspace", "w2", "-o", "json"]);
            (ws["status"]["phase"] == "Initializing")
                .then(|| json_str(&ws, "/spec/cluster").to_string())
        }),
    );

    // Nobody without `initialize` on the type.
    let as_nick = Caller::Token(NICK_TOKEN.to_string());
    let (code, body) = shard.curl_with(&as_nick, "GET", &lcs(&initializing), &[], None);
    assert_eq!(code, 403, "{body}");
    let grant = shard.write_file(
        "initializer.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: slow-initializer}\nrules:\n- {apiGroups: [tenancy.kcp.io], resources: [workspacetypes], resourceNames: [slow, guarded], verbs: [initialize, terminate]}\n- {nonResourceURLs: [\"/\"], verbs: [access]}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: slow-initializer}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: slow-initializer}\nsubjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ivan}\n",
    );
    shard.kubectl_ok(&["apply", "-f", grant.to_str().unwrap_or_default()]);

    // ivan lists the two clusters waiting on it.
    let as_ivan = Caller::Token(IVAN_TOKEN.to_string());
    let ivan = |method: &str, path: &str, body: Option<(&str, &str)>| {
        shard.curl_with(&as_ivan, method, path, &[], body)
    };
    let (code, body) = ivan("GET", &lcs(&initializing), None);
    assert_eq!(code, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap_or_default();
    let mut expected = vec![format!("{w1}/cluster"), format!("{w2}/cluster")];
    expected.sort();
    assert_eq!(names(&list), expected, "{list}");
    let rv = json_str(&list, "/metadata/resourceVersion").to_string();
    // kubectl across them, as kcp's users do.
    let listed = (shard
        .kubectl_cmd()
        .server(&format!("{initializing}/clusters/*")))
    .ok(&["get", "logicalclusters", "-o", "name"]);
    assert_eq!(listed.lines().count(), 2, "{listed}");

    // Inside w1: content as the owner, the LogicalCluster read, its status its own to release.
    let in_w1 = format!("{}/clusters/{w1}", path_of(&initializing));
    let (code, body) = ivan(
        "POST",
        &format!("{in_w1}/api/v1/namespaces/default/configmaps"),
        Some((
            "application/json",
            r#"{"metadata":{"name":"seeded"},"data":{"by":"initializer"}}"#,
        )),
    );
    assert_eq!(code, 201, "{body}");
    let seeded = (shard.kubectl_cmd().cluster(&w1)).json(&[
        "get",
        "configmap",
        "seeded",
        "-n",
        "default",
        "-o",
        "json",
    ]);
    assert_eq!(json_str(&seeded, "/data/by"), "initializer", "{seeded}");

    // With initializerPermissions on the type: as itself, with kcp's group, those rules only.
    shard.kubectl_ok(&[
        "patch",
        "workspacetype",
        "slow",
        "--type=merge",
        "-p",
        r#"{"spec":{"initializerPermissions":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","create"]},{"apiGroups":["authentication.k8s.io"],"resources":["selfsubjectreviews"],"verbs":["create"]}]}}"#,
    ]);
    let review = shard.eventually("the initializer acting as itself", || {
        let (code, body) = ivan(
            "POST",
            &format!("{in_w1}/apis/authentication.k8s.io/v1/selfsubjectreviews"),
            Some((
                "application/json",
                r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#,
            )),
        );
        let review: Value = serde_json::from_str(&body).unwrap_or_default();
        (code == 201 && review["status"]["userInfo"]["username"] == "ivan").then_some(review)
    });
    let groups = review["status"]["userInfo"]["groups"].to_string();
    assert!(
        groups.contains("system:kcp:initializer:root:slow"),
        "{review}"
    );
    let (code, body) = ivan(
        "POST",
        &format!("{in_w1}/api/v1/namespaces/default/configmaps"),
        Some(("application/json", r#"{"metadata":{"name":"scoped"}}"#)),
    );
    assert_eq!(code, 201, "{body}");
    let (code, body) = ivan(
        "POST",
        &format!("{in_w1}/api/v1/namespaces/default/secrets"),
        Some(("application/json", r#"{"metadata":{"name":"no"}}"#)),
    );
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains(r#"not allowed by the permissions of initializer \"root:slow\""#),
        "{body}"
    );
    let lc_path = format!("{in_w1}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster");
    let (code, body) = ivan("GET", &lc_path, None);
    assert_eq!(code, 200, "{body}");
    let (code, body) = ivan(
        "PATCH",
        &lc_path,
        Some((
            "application/merge-patch+json",
            r#"{"metadata":{"labels":{"x":"y"}}}"#,
        )),
    );
    assert_eq!(code, 405, "{body}");
    let (code, body) = ivan(
        "PATCH",
        &format!("{lc_path}/status"),
        Some((
            "application/merge-patch+json",
            r#"{"status":{"initializers":["root:slow","root:other"]}}"#,
        )),
    );
    assert_eq!(code, 422, "{body}");
    assert!(
        body.contains("only removing the \\\"root:slow\\\" initializer is supported"),
        "{body}"
    );
    let (code, body) = ivan(
        "PATCH",
        &format!("{lc_path}/status"),
        Some((
            "application/json-patch+json",
            r#"[{"op":"test","path":"/status/initializers/0","value":"root:slow"},{"op":"remove","path":"/status/initializers/0"}]"#,
        )),
    );
    assert_eq!(code, 200, "{body}");
    shard.eventually("w1 Ready", || {
        let ws = shard.kubectl_json(&["get", "workspace", "w1", "-o", "json"]);
        (ws["status"]["phase"] == "Ready").then_some(())
    });
    // Released: w1 left ivan's watch, and its content is no longer his.
    let (code, body) = ivan(
        "GET",
        &format!(
            "{}?watch=true&resourceVersion={rv}&timeoutSeconds=2",
            lcs(&initializing)
        ),
        None,
    );
    assert_eq!(code, 200, "{body}");
    let seen: Vec<(String, String)> = (body.lines())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| {
            (
                json_str(&e, "/type").to_string(),
                json_str(&e, "/object/metadata/annotations/kcp.io~1cluster").to_string(),
            )
        })
        .collect();
    assert!(
        seen.contains(&("DELETED".to_string(), w1.clone())),
        "{seen:?}"
    );
    assert!(!seen.iter().any(|(_, c)| *c == w2), "{seen:?}");
    let (code, body) = ivan(
        "GET",
        &format!("{in_w1}/api/v1/namespaces/default/configmaps"),
        None,
    );
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("cannot access this workspace"), "{body}");

    // A terminator: the deleted workspace of its type waits until it removes itself.
    let file = shard.write_file(
        "g1.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata: {name: g1}\nspec: {type: {name: guarded, path: root}}\n",
    );
    shard.kubectl_ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    let g1 = shard.eventually("g1 Ready", || {
        let ws = shard.kubectl_json(&["get", "workspace", "g1", "-o", "json"]);
        (ws["status"]["phase"] == "Ready").then(|| json_str(&ws, "/spec/cluster").to_string())
    });
    let terminating = url_of("guarded", "terminating");
    let (code, body) = ivan("GET", &lcs(&terminating), None);
    assert_eq!(code, 200, "{body}");
    let list: Value = serde_json::from_str(&body).unwrap_or_default();
    assert!(names(&list).is_empty(), "not deleted yet: {list}");
    shard.kubectl_ok(&["delete", "workspace", "g1", "--wait=false"]);
    let list = shard.eventually("g1 waiting on its terminator", || {
        let (_, body) = ivan("GET", &lcs(&terminating), None);
        let list: Value = serde_json::from_str(&body).ok()?;
        (!names(&list).is_empty()).then_some(list)
    });
    assert_eq!(names(&list), [format!("{g1}/cluster")], "{list}");
    let g1_lc = format!(
        "{}/clusters/{g1}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster/status",
        path_of(&terminating)
    );
    let (code, body) = ivan(
        "PATCH",
        &g1_lc,
        Some((
            "application/json-patch+json",
            r#"[{"op":"remove","path":"/status/terminators/0"}]"#,
        )),
    );
    assert_eq!(code, 200, "{body}");
    shard.eventually("g1 gone", || {
        let out = shard.kubectl_cmd().run(&["get", "workspace", "g1"]);
        (!out.status.success()).then_some(())
    });
}

/// A running `examples/cowboys-controller`, stopped on drop.
struct Controller(std::process::Child);

impl Controller {
    fn start(shard: &Shard, slice: &str, name: &str) -> Controller {
        let log = std::fs::File::create(shard.dir().join(format!("controller-{name}.log")))
            .expect("the controller's log");
        let child = std::process::Command::new(kcp_e2e::example_binary("cowboys-controller"))
            .arg("--kubeconfig")
            .arg(shard.kubeconfig())
            .args(["--server", &shard.cluster_url("root:provider")])
            .args(["--slice", slice, "--name", name])
            .stdout(log.try_clone().expect("the log again"))
            .stderr(log)
            .spawn()
            .expect("starting cowboys-controller");
        Controller(child)
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The example provider controller (kube-runtime) through the endpoint slices: one instance on
/// the export's slice reconciles the Cowboys of both consumer workspaces; then two instances on
/// two partitions reconcile only their own, and nobody touches a Cowboy of no partition.
fn provider_controller(store: StoreKind) {
    provider_controller_in(store, VirtualWorkspaces::InShard)
}

fn provider_controller_in(store: StoreKind, vw: VirtualWorkspaces) {
    let shard = Shard::start_serving(store, "", vw);
    for ws in ["provider", "one", "two"] {
        create_ready_workspace(&shard, ws);
    }
    publish(&shard, "root:provider", "today.cowboys.wildwest.dev");
    for ws in ["one", "two"] {
        bind_and_wait(&shard, &format!("root:{ws}"), "root:provider");
    }
    let cowboys = [
        ("one", "e1", "{region: east}"),
        ("one", "w1", "{region: west}"),
        ("two", "e2", "{region: east}"),
        ("two", "u2", "{}"),
    ];
    for (ws, name, labels) in cowboys {
        let file = shard.write_file(&format!("{name}.yaml"), &labelled_cowboy(name, labels));
        (shard.kubectl_cmd().cluster(&format!("root:{ws}"))).ok(&[
            "create",
            "-f",
            file.to_str().unwrap_or_default(),
        ]);
    }
    let result = |ws: &str, name: &str| {
        let cowboy = (shard.kubectl_cmd().cluster(&format!("root:{ws}")))
            .json(&["get", "cowboy", name, "-n", "default", "-o", "json"]);
        json_str(&cowboy, "/status/result").to_string()
    };
    let all_are = |expected: &dyn Fn(&str) -> String| {
        cowboys
            .iter()
            .all(|(ws, name, _)| result(ws, name) == expected(name))
    };

    // One controller on the export's own slice: every Cowboy of both workspaces.
    let everyone = Controller::start(&shard, "cowboys", "all");
    shard.eventually("every Cowboy reconciled by the one controller", || {
        all_are(&|_| "all: ride".to_string()).then_some(())
    });
    drop(everyone);

    // Two controllers on two partitions, then every intent changes.
    let provider = || shard.kubectl_cmd().cluster("root:provider");
    let file = shard.write_file(
        "partitions.yaml",
        &[slice("cowboys-east", "east"), slice("cowboys-west", "west")].join("---\n"),
    );
    provider().ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    let _east = Controller::start(&shard, "cowboys-east", "east");
    let _west = Controller::start(&shard, "cowboys-west", "west");
    for (ws, name, _) in cowboys {
        (shard.kubectl_cmd().cluster(&format!("root:{ws}"))).ok(&[
            "patch",
            "cowboy",
            name,
            "-n",
            "default",
            "--type=merge",
            "-p",
            r#"{"spec":{"intent":"rest"}}"#,
        ]);
    }
    let partitioned = |name: &str| match name {
        "e1" | "e2" => "east: rest".to_string(),
        "w1" => "west: rest".to_string(),
        // In no partition: only the (stopped) export-wide controller would have reconciled it.
        _ => "all: ride".to_string(),
    };
    shard.eventually(
        "each partition's Cowboys reconciled by its own controller",
        || all_are(&partitioned).then_some(()),
    );
    // And it stays so: neither controller writes what is not its own.
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(all_are(&partitioned));
}

/// A provider who exports nothing of its own but claims another export's Cowboys (by that
/// export's identity): once a consumer accepts, the claimer's endpoint serves the consumer's
/// Cowboys, within the claim's verbs, and no one else's.
fn identity_claims(store: StoreKind) {
    identity_claims_in(store, VirtualWorkspaces::InShard)
}

fn identity_claims_in(store: StoreKind, vw: VirtualWorkspaces) {
    let shard = Shard::start_serving(store, &format!("{BOB_TOKEN},bob,bob-uid\n"), vw);
    for ws in ["provider", "sheriff", "one", "two"] {
        create_ready_workspace(&shard, ws);
    }
    let identity = publish(&shard, "root:provider", "today.cowboys.wildwest.dev");
    for ws in ["one", "two"] {
        bind_and_wait(&shard, &format!("root:{ws}"), "root:provider");
    }
    let sheriff = || shard.kubectl_cmd().cluster("root:sheriff");
    let export = format!(
        "apiVersion: apis.kcp.io/v1alpha2\nkind: APIExport\nmetadata: {{name: sheriff}}\nspec:\n  permissionClaims:\n  - {{group: wildwest.dev, resource: cowboys, identityHash: {identity}, verbs: [get, list, watch]}}\n"
    );
    let file = shard.write_file("sheriff.yaml", &export);
    sheriff().ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    // Only `one` accepts the claim.
    let binding = format!(
        "apiVersion: apis.kcp.io/v1alpha2\nkind: APIBinding\nmetadata: {{name: sheriff}}\nspec:\n  reference: {{export: {{path: root:sheriff, name: sheriff}}}}\n  permissionClaims:\n  - {{group: wildwest.dev, resource: cowboys, identityHash: {identity}, verbs: [get, list, watch], selector: {{matchAll: true}}, state: Accepted}}\n"
    );
    let file = shard.write_file("sheriff-binding.yaml", &binding);
    let one = || shard.kubectl_cmd().cluster("root:one");
    one().ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    shard.eventually("the identity claim applied", || {
        let b = one().json(&["get", "apibinding", "sheriff", "-o", "json"]);
        let applied = b["status"]["appliedPermissionClaims"].as_array()?;
        (b["status"]["phase"] == "Bound" && applied.len() == 1).then_some(())
    });
    for (ws, name) in [("one", "joe"), ("two", "ann")] {
        let file = shard.write_file(&format!("{name}.yaml"), &cowboy(name, "ride"));
        (shard.kubectl_cmd().cluster(&format!("root:{ws}"))).ok(&[
            "create",
            "-f",
            file.to_str().unwrap_or_default(),
        ]);
    }
    let one_lc = cluster_of(&shard, "one");
    let url = shard.eventually("the sheriff's endpoint", || {
        let slice = sheriff().json(&["get", "apiexportendpointslice", "sheriff", "-o", "json"]);
        let url = json_str(&slice, "/status/endpoints/0/url").to_string();
        (!url.is_empty()).then_some(url)
    });
    let vw = || shard.kubectl_cmd().server(&format!("{url}/clusters/*"));
    let resources = vw().ok(&["api-resources", "-o", "name"]);
    assert!(resources.contains("cowboys.wildwest.dev"), "{resources}");
    // The claimed Cowboys of the workspace that accepted, not of the one that never bound it.
    let list = shard.eventually("joe through the claim", || {
        let list = vw().json(&["get", "cowboys", "-A", "-o", "json"]);
        (names(&list) == [format!("{one_lc}/joe")]).then_some(list)
    });
    assert_eq!(names(&list), [format!("{one_lc}/joe")], "{list}");
    let in_one = || {
        shard
            .kubectl_cmd()
            .server(&format!("{url}/clusters/{one_lc}"))
    };
    let joe = in_one().json(&["get", "cowboy", "joe", "-n", "default", "-o", "json"]);
    assert_eq!(json_str(&joe, "/metadata/name"), "joe", "{joe}");
    // The claim grants reading only.
    let refused = in_one().fails(&["delete", "cowboy", "joe", "-n", "default"]);
    assert!(
        refused.contains("Forbidden") || refused.contains("forbidden"),
        "{refused}"
    );

    // The claimed export bounds its Cowboys by a maximal permission policy: through the
    // sheriff's endpoint too, a caller (the administrator included) needs the grant the policy
    // gives its prefixed name in the provider's workspace, as in the consumer's.
    let provider = || shard.kubectl_cmd().cluster("root:provider");
    provider().ok(&[
        "patch",
        "apiexport",
        "cowboys",
        "--type=merge",
        "-p",
        r#"{"spec":{"maximalPermissionPolicy":{"local":{}}}}"#,
    ]);
    let provider_lc = cluster_of(&shard, "provider");
    let get_joe = || in_one().run(&["get", "cowboy", "joe", "-n", "default", "-o", "name"]);
    let refused = shard.eventually("the policy bounds the claimed Cowboys", || {
        let out = get_joe();
        let text = String::from_utf8_lossy(&out.stderr).to_string();
        (!out.status.success()).then_some(text)
    });
    assert!(
        refused.contains(&format!(
            r#"API export: "cowboys", workspace: "{provider_lc}" RBAC decision"#
        )),
        "{refused}"
    );
    let grant = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: read-cowboys}\nrules:\n- {apiGroups: [wildwest.dev], resources: [cowboys], verbs: [get, list, watch]}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: read-cowboys}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: read-cowboys}\nsubjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: \"apis.kcp.io:binding:system:authenticated\"}\n";
    let file = shard.write_file("policy-grant.yaml", grant);
    provider().ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    shard.eventually("the policy's grant lets the claim through again", || {
        get_joe().status.success().then_some(())
    });
    // And taken back, it stops doing so.
    provider().ok(&["delete", "clusterrolebinding", "read-cowboys"]);
    shard.eventually("the policy refuses again once the grant is gone", || {
        (!get_joe().status.success()).then_some(())
    });
}
