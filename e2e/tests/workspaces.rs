//! Workspaces end to end with kubectl, on both stores: a workspace is created with its type
//! defaulted from the parent's, scheduled onto this shard's LogicalCluster, initialized by the
//! `root:universal` initializer (namespaces `default` and `kube-system`) and Ready; its path
//! `root:org[:team]` is served; type rules refuse what kcp refuses; an unknown path is 404; custom
//! initializers hold readiness and terminators hold deletion until PATCHed away.

use std::path::Path;
use std::process::Command;

use kcp_e2e::{Caller, Shard, StoreKind, on_both_stores, plugin_dir};
use serde_json::Value;

on_both_stores!(
    create_and_enter_workspaces,
    workspace_type_rules,
    kubectl_ws_walk,
    home_workspaces,
    delete_workspace_tree,
    deletion_joins_writes,
    held_content_holds_the_workspace,
    finalizer_removed_by_hand,
    scheduled_onto_content_already_there,
    initializers_and_terminators,
    workspace_isolation,
    lifecycle_objects_are_guarded,
    masters_creators_and_older_lcs
);
on_both_stores!(async inactive_logical_clusters);

/// Creates a workspace in `parent` (a path) and waits until it is Ready; its object then.
fn create_ready(shard: &Shard, parent: &str, name: &str, ty: Option<&str>) -> Value {
    let spec = match ty {
        Some(t) => format!("spec:\n  type:\n    name: {t}\n    path: root\n"),
        None => String::new(),
    };
    let file = shard.write_file(
        &format!("ws-{name}.yaml"),
        &format!("apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\n{spec}"),
    );
    shard
        .kubectl_cmd()
        .cluster(parent)
        .ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    shard.eventually(&format!("workspace {parent}:{name} Ready"), || {
        let ws =
            shard
                .kubectl_cmd()
                .cluster(parent)
                .json(&["get", "workspace", name, "-o", "json"]);
        (ws["status"]["phase"] == "Ready").then_some(ws)
    })
}

/// The logical cluster a workspace was placed on (`spec.cluster`), or "" before placement.
fn cluster_of(ws: &Value) -> String {
    ws["spec"]["cluster"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn create_and_enter_workspaces(store: StoreKind) {
    let shard = Shard::start(store);

    let org = create_ready(&shard, "root", "org", None);
    // Defaulted from root's type, with the creator recorded.
    assert_eq!(org["spec"]["type"]["name"], "organization", "{org}");
    assert_eq!(org["spec"]["type"]["path"], "root", "{org}");
    let owner = org["metadata"]["annotations"]["experimental.tenancy.kcp.io/owner"]
        .as_str()
        .unwrap_or_default();
    // Ready, it keeps only the name (kcp's metadata reconciler); the LC's createdBy keeps all.
    assert_eq!(owner, r#"{"username":"kcp-admin"}"#, "{org}");
    let cluster = cluster_of(&org);
    assert_eq!(cluster.len(), 16, "{org}");
    // kcp's URL names the workspace by its path.
    assert_eq!(
        org["spec"]["URL"],
        format!("{}/clusters/root:org", shard.base_url()),
        "{org}"
    );

    // Printer columns.
    let table = shard.kubectl_ok(&["get", "workspaces"]);
    let header = table.lines().next().unwrap_or_default();
    for column in ["NAME", "TYPE", "REGION", "PHASE", "URL", "AGE"] {
        assert!(header.contains(column), "{column} in {header}");
    }
    assert!(
        table.contains("organization") && table.contains("Ready"),
        "{table}"
    );

    // The workspace by path and by LC name: the same logical cluster, initialized.
    let by_path = shard.kubectl_cmd().cluster("root:org");
    by_path.ok(&["get", "namespace", "default"]);
    let lc = by_path.json(&["get", "logicalcluster", "cluster", "-o", "json"]);
    assert_eq!(
        lc["metadata"]["annotations"]["kcp.io/path"], "root:org",
        "{lc}"
    );
    assert_eq!(lc["spec"]["createdBy"]["username"], "kcp-admin", "{lc}");
    assert!(
        lc["spec"]["createdBy"]["groups"]
            .as_array()
            .is_some_and(|g| !g.is_empty()),
        "{lc}"
    );
    assert_eq!(
        lc["metadata"]["annotations"]["kcp.io/cluster"],
        cluster.as_str(),
        "{lc}"
    );
    assert_eq!(lc["status"]["phase"], "Ready", "{lc}");
    assert_eq!(lc["spec"]["owner"]["name"], "org", "{lc}");
    by_path.ok(&["create", "configmap", "hello", "--from-literal=a=b"]);
    let same =
        shard
            .kubectl_cmd()
            .cluster(&cluster)
            .ok(&["get", "configmap", "hello", "-o", "name"]);
    assert_eq!(same.trim(), "configmap/hello");
    // The creator is cluster-admin there.
    let admin = by_path.json(&["get", "clusterrolebinding", "workspace-admin", "-o", "json"]);
    assert_eq!(admin["roleRef"]["name"], "cluster-admin", "{admin}");
    assert_eq!(admin["subjects"][0]["name"], "kcp-admin", "{admin}");

    // A child of the organization: type defaulted to universal, path root:org:team.
    let child = create_ready(&shard, "root:org", "team", None);
    assert_eq!(child["spec"]["type"]["name"], "universal", "{child}");
    shard
        .kubectl_cmd()
        .cluster("root:org:team")
        .ok(&["get", "namespace", "default"]);

    // An unknown path is 404, as kcp answers it.
    let err = shard
        .kubectl_cmd()
        .cluster("root:nope")
        .fails(&["get", "namespaces"]);
    assert!(
        err.contains("not found") || err.contains("NotFound"),
        "{err}"
    );
    let (code, body) = shard.curl("GET", "/clusters/root:nope/api/v1/namespaces", None);
    assert_eq!(code, 404, "{body}");
    assert!(
        body.contains("workspaces.tenancy.kcp.io \\\"root:nope\\\" not found"),
        "{body}"
    );
}

fn workspace_type_rules(store: StoreKind) {
    let shard = Shard::start(store);
    let create = |parent: &str, name: &str, ty: &str| {
        let file = shard.write_file(
            &format!("ws-{name}.yaml"),
            &format!(
                "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\nspec:\n  type:\n    name: {ty}\n"
            ),
        );
        shard.kubectl_cmd().cluster(parent).run(&[
            "create",
            "-f",
            file.to_str().unwrap_or_default(),
        ])
    };
    // `root` and `home` types allow no parent; a team wants an organization or team parent.
    // Refused as kcp refuses them: 403, in its words.
    for (name, ty, why) in [
        (
            "r",
            "root",
            "workspace type root:root cannot have any parent".to_string(),
        ),
        (
            "h",
            "home",
            "workspace type root:home cannot have any parent".into(),
        ),
        (
            "t",
            "team",
            "workspace type root:team only allows [root:organization root:team] parent \
             workspaces, but parent type root:root only implements [root:root root:universal]"
                .into(),
        ),
    ] {
        let out = create("root", name, ty);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{ty} under root was accepted");
        let expected = format!(
            "Error from server (Forbidden): error when creating \"{}\": workspaces.tenancy.kcp.io \"{name}\" is forbidden: {why}",
            shard.dir().join(format!("ws-{name}.yaml")).display()
        );
        assert_eq!(stderr.trim(), expected, "{ty}");
    }
    // A type that does not exist.
    let out = create("root", "x", "nosuchtype");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(r#"is forbidden: workspace type "nosuchtype" cannot be resolved"#),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Named with its path, kcp wraps the lookup's NotFound as an internal error.
    let file = shard.write_file(
        "ws-p.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: p\nspec:\n  type:\n    name: nosuch\n    path: root\n",
    );
    let err = shard.kubectl_fails(&["create", "-f", file.to_str().unwrap_or_default()]);
    assert!(
        err.contains(r#"is forbidden: Internal error occurred: workspacetypes.tenancy.kcp.io "root:nosuch" not found"#),
        "{err}"
    );
    // A universal workspace directly under root is fine (root allows any child), found by name.
    let out = create("root", "u", "universal");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ws = shard.eventually("u Ready", || {
        let ws = shard.kubectl_json(&["get", "workspace", "u", "-o", "json"]);
        (ws["status"]["phase"] == "Ready").then_some(ws)
    });
    assert_eq!(ws["spec"]["type"]["path"], "root", "{ws}");
    // Types default their children to root:universal (kcp's schema default), so a child of a
    // universal workspace needs no type; a type made without the field gets it too.
    let child = create_ready(&shard, "root:u", "child", None);
    assert_eq!(
        child["spec"]["type"],
        serde_json::json!({"name": "universal", "path": "root"}),
        "{child}"
    );
    let custom = shard.write_file(
        "wt-custom.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata:\n  name: custom\nspec: {}\n",
    );
    shard.kubectl_ok(&["create", "-f", custom.to_str().unwrap_or_default()]);
    let custom = shard.kubectl_json(&["get", "workspacetype", "custom", "-o", "json"]);
    assert_eq!(
        custom["spec"]["defaultChildWorkspaceType"],
        serde_json::json!({"name": "universal", "path": "root"}),
        "{custom}"
    );
    // Types extending each other in a circle cannot be used.
    let circle = shard.write_file(
        "wt-circle.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata:\n  name: ping\nspec:\n  extend:\n    with: [{name: pong, path: root}]\n---\napiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata:\n  name: pong\nspec:\n  extend:\n    with: [{name: ping, path: root}]\n",
    );
    shard.kubectl_ok(&["create", "-f", circle.to_str().unwrap_or_default()]);
    let out = create("root", "c", "ping");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "is forbidden: circular dependency detected in workspace type root:ping: root:ping -> root:pong"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The type and the scheduled cluster never change.
    let out = shard.kubectl(&[
        "patch",
        "workspace",
        "u",
        "--type=merge",
        "-p",
        r#"{"spec":{"type":{"name":"organization","path":"root"}}}"#,
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("immutable"));
}

/// `kubectl <args>` through kubectl's plugin mechanism (no flags before the plugin name), with
/// the plugins on PATH and `kubeconfig` as KUBECONFIG; stdout, after asserting success.
fn plugin(kubeconfig: &Path, args: &[&str]) -> String {
    let path = format!(
        "{}:{}",
        plugin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("PATH", path)
        .output()
        .expect("running kubectl");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "kubectl {}: {}\n{stdout}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// kcp's quickstart walk with the plugins: create, enter, go up, jump, go back.
fn kubectl_ws_walk(store: StoreKind) {
    let shard = Shard::start(store);
    // The plugins rewrite the kubeconfig: work on a copy.
    let config = shard.dir().join("walk.kubeconfig");
    std::fs::copy(shard.kubeconfig(), &config).expect("copying the kubeconfig");

    let out = plugin(&config, &["ws", "."]);
    assert!(out.contains("Current workspace is 'root'"), "{out}");
    let out = plugin(&config, &["create", "workspace", "org", "--enter"]);
    assert!(
        out.contains(
            r#"Workspace "org" (type root:organization) created. Waiting for it to be ready..."#
        ),
        "{out}"
    );
    assert!(out.contains("is ready to use"), "{out}");
    let out = plugin(&config, &["ws", "."]);
    assert!(out.contains("'root:org'"), "{out}");
    plugin(&config, &["ws", "create", "team", "--type", "team"]);
    let out = plugin(&config, &["ws", "team"]);
    assert!(out.contains("'root:org:team'"), "{out}");
    // Plain kubectl now works inside the workspace.
    // The universal initializer gave it kcp's two namespaces.
    let namespaces = plugin(&config, &["get", "namespaces", "-o", "name"]);
    assert_eq!(
        namespaces.trim(),
        "namespace/default\nnamespace/kube-system"
    );
    let out = plugin(&config, &["ws", ".."]);
    assert!(out.contains("'root:org'"), "{out}");
    let tree = plugin(&config, &["ws", "tree"]);
    assert!(tree.contains("team"), "{tree}");
    let out = plugin(&config, &["ws", ":root"]);
    assert!(out.contains("'root'"), "{out}");
    let out = plugin(&config, &["ws", "-"]);
    assert!(out.contains("'root:org'"), "{out}");
    let listed = plugin(&config, &["get", "workspaces"]);
    assert!(
        listed.contains("team") && listed.contains("Ready"),
        "{listed}"
    );
}

const ALICE_TOKEN: &str = "alice-token-0123456789";
const TESS_TOKEN: &str = "tess-token-0123456789";
/// A user whose name is alice's home path and one of its workspaces.
const COLON_TOKEN: &str = "colon-token-0123456789";

/// A user's home: created on the first `GET workspaces/~` in root (429 while it initializes), then
/// answered as a Ready Workspace; reachable as `user:<name>`, where the user is cluster-admin; other
/// users' workspaces stay closed to it; `kubectl ws` (no argument) goes there.
fn home_workspaces(store: StoreKind) {
    let shard = Shard::start_with_tokens(
        store,
        &format!(
            "{ALICE_TOKEN},alice,alice-uid,\"team-a\"\n{TESS_TOKEN},tess,tess-uid,\"team-a\"\n\
             {COLON_TOKEN},alice:sub,colon-uid\n"
        ),
    );
    let alice = Caller::Token(ALICE_TOKEN.to_string());
    const HOME: &str = "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/~";

    let (code, body) = shard.curl_with(&alice, "GET", HOME, &[], None);
    assert_eq!(code, 429, "the first request creates the home: {body}");
    assert!(body.contains("Creating the home workspace"), "{body}");
    let home: Value = shard.eventually("alice's home Ready", || {
        let (code, body) = shard.curl_with(&alice, "GET", HOME, &[], None);
        (code == 200).then(|| serde_json::from_str(&body).expect("a Workspace"))
    });
    assert_eq!(home["kind"], "Workspace", "{home}");
    assert_eq!(home["status"]["phase"], "Ready", "{home}");
    let cluster = cluster_of(&home);
    assert!(!cluster.is_empty(), "{home}");
    assert_eq!(
        home["spec"]["URL"],
        format!("{}/clusters/{cluster}", shard.base_url()),
        "{home}"
    );

    // Alice is cluster-admin at home, by path and by name; the universal initializer ran.
    let (code, body) = shard.curl_with(
        &alice,
        "POST",
        "/clusters/user:alice/api/v1/namespaces/default/configmaps",
        &[],
        Some(("application/json", r#"{"metadata":{"name":"mine"}}"#)),
    );
    assert_eq!(code, 201, "{body}");
    // A type named without a path is found in root too, from a home's tree (as in kcp).
    let (code, body) = shard.curl_with(
        &alice,
        "POST",
        "/clusters/user:alice/apis/tenancy.kcp.io/v1alpha1/workspaces",
        &[],
        Some((
            "application/json",
            r#"{"metadata":{"name":"sub"},"spec":{"type":{"name":"universal"}}}"#,
        )),
    );
    assert_eq!(code, 201, "{body}");
    assert!(
        body.contains(r#""type":{"name":"universal","path":"root"}"#),
        "{body}"
    );
    let (code, body) = shard.curl_with(
        &alice,
        "GET",
        &format!("/clusters/{cluster}/api/v1/namespaces/default/configmaps/mine"),
        &[],
        None,
    );
    assert_eq!(code, 200, "{body}");
    let lc = shard.kubectl_cmd().cluster(&cluster).json(&[
        "get",
        "logicalcluster",
        "cluster",
        "-o",
        "json",
    ]);
    assert_eq!(
        lc["metadata"]["annotations"]["kcp.io/path"], "user:alice",
        "{lc}"
    );
    assert_eq!(
        lc["metadata"]["annotations"]["internal.tenancy.kcp.io/type"], "root:home",
        "{lc}"
    );

    // Someone else's workspace stays closed to her; the same request again is the same home.
    create_ready(&shard, "root", "org", None);
    let (code, body) = shard.curl_with(
        &alice,
        "GET",
        "/clusters/root:org/api/v1/namespaces",
        &[],
        None,
    );
    assert_eq!(code, 403, "{body}");
    let (code, again) = shard.curl_with(&alice, "GET", HOME, &[], None);
    assert_eq!(code, 200, "{again}");
    assert!(again.contains(&cluster), "{again}");

    // `kubectl ws` without an argument goes home.
    let config = shard.dir().join("alice.kubeconfig");
    std::fs::write(
        &config,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: root\n  cluster:\n    server: {}/clusters/root\n    certificate-authority: {}\nusers:\n- name: alice\n  user:\n    token: {ALICE_TOKEN}\ncontexts:\n- name: root\n  context: {{cluster: root, user: alice}}\ncurrent-context: root\n",
            shard.base_url(),
            shard.root_directory().join("ca.crt").display()
        ),
    )
    .expect("writing alice's kubeconfig");
    plugin(&config, &["ws"]);
    let names = plugin(&config, &["get", "configmaps", "-o", "name"]);
    assert!(names.contains("configmap/mine"), "{names}");
    // From home (its URL names the LC), a child is entered by name: a path may start at any LC.
    let sub: Value = shard.eventually("alice's sub Ready", || {
        let (code, body) = shard.curl_with(
            &alice,
            "GET",
            "/clusters/user:alice/apis/tenancy.kcp.io/v1alpha1/workspaces/sub",
            &[],
            None,
        );
        let ws: Value = serde_json::from_str(&body).unwrap_or_default();
        (code == 200 && ws["status"]["phase"] == "Ready").then_some(ws)
    });
    plugin(&config, &["ws", "sub"]);
    let current = plugin(&config, &["ws", "."]);
    assert!(current.contains(":sub"), "{current}");
    let lc_of = |who: &Caller, path: &str| {
        let (code, body) = shard.curl_with(
            who,
            "GET",
            &format!("/clusters/{path}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"),
            &[],
            None,
        );
        assert_eq!(code, 200, "{path}: {body}");
        // The LC's URL names it, whatever path led to it.
        let url = serde_json::from_str::<Value>(&body).unwrap_or_default()["status"]["URL"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        url.rsplit('/').next().unwrap_or_default().to_string()
    };
    let sub_lc = sub["spec"]["cluster"].as_str().unwrap_or_default();
    assert!(!sub_lc.is_empty(), "{sub}");
    assert_eq!(lc_of(&alice, &format!("{cluster}:sub")), sub_lc);
    // A user named `alice:sub` gets a home of their own, but `user:alice:sub` stays alice's
    // workspace (kcp: `user:<name>` is the home of <name>, the rest a path below it).
    let colon = Caller::Token(COLON_TOKEN.to_string());
    shard.eventually("alice:sub's home Ready", || {
        (shard.curl_with(&colon, "GET", HOME, &[], None).0 == 200).then_some(())
    });
    assert_eq!(lc_of(&alice, "user:alice:sub"), sub_lc);
    let (code, body) = shard.curl_with(
        &colon,
        "GET",
        "/clusters/user:alice:sub/api/v1/namespaces",
        &[],
        None,
    );
    assert_eq!(code, 403, "{body}");

    // Without the grant, no home; refused in kcp's words.
    shard
        .kubectl_cmd()
        .context("system:admin")
        .cluster("root")
        .ok(&[
            "delete",
            "clusterrolebinding",
            "system:kcp:home-clusterworkspace-create",
        ]);
    let tess = Caller::Token(TESS_TOKEN.to_string());
    let (code, body) = shard.eventually("tess refused a home", || {
        let (code, body) = shard.curl_with(&tess, "GET", HOME, &[], None);
        (code == 403).then_some((code, body))
    });
    assert_eq!(code, 403);
    assert!(
        body.contains(r#"workspaces.tenancy.kcp.io \"~\" is forbidden: User \"tess\" cannot create resource \"workspaces\" in API group \"tenancy.kcp.io\" at the cluster scope: workspace access not permitted"#),
        "{body}"
    );
}

/// Deleting a workspace deletes its logical cluster with everything in it, child workspaces and
/// their logical clusters included; `kubectl delete` returns once the workspace is gone.
fn delete_workspace_tree(store: StoreKind) {
    let shard = Shard::start(store);
    let org = create_ready(&shard, "root", "org", None);
    let team = create_ready(&shard, "root:org", "team", None);
    let org_lc = cluster_of(&org);
    let team_lc = cluster_of(&team);
    let in_team = shard.kubectl_cmd().cluster("root:org:team");
    in_team.ok(&["create", "configmap", "data", "--from-literal=a=b"]);
    assert!(
        org["metadata"]["finalizers"]
            .to_string()
            .contains("core.kcp.io/logicalcluster"),
        "{org}"
    );

    shard.kubectl_ok(&["delete", "workspace", "org", "--timeout=60s"]);
    let listed = shard.kubectl_ok(&["get", "workspaces", "-o", "name"]);
    assert!(!listed.contains("org"), "{listed}");
    let (code, body) = shard.curl("GET", "/clusters/root:org:team/api/v1/namespaces", None);
    assert_eq!(code, 404, "{body}");
    // Both logical clusters are gone, with their content (seen by system:masters across LCs).
    shard.eventually("both LCs gone", || {
        let (code, body) = shard.curl_as(
            Some("shard-admin"),
            "GET",
            "/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters",
            None,
        );
        (code == 200 && !body.contains(&org_lc) && !body.contains(&team_lc)).then_some(())
    });
    let (code, body) = shard.curl_as(
        Some("shard-admin"),
        "GET",
        "/clusters/*/api/v1/configmaps",
        None,
    );
    assert_eq!(code, 200, "{body}");
    assert!(
        !body.contains(&team_lc),
        "the team's content is gone: {body}"
    );
}

/// The events of `resource` (all logical clusters) after revision `from` for the object named
/// `name`: (type, resourceVersion, object), read by a watch that ends after a second.
fn events_of(shard: &Shard, resource: &str, from: &str, name: &str) -> Vec<(String, i64, Value)> {
    let path = format!("/clusters/*/{resource}?watch=1&resourceVersion={from}&timeoutSeconds=1");
    let (code, body) = shard.curl_as(Some("shard-admin"), "GET", &path, None);
    assert_eq!(code, 200, "{body}");
    body.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["object"]["metadata"]["name"] == name)
        .map(|e| {
            let rv = e["object"]["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|v| v.parse().ok())
                .unwrap_or_default();
            (
                e["type"].as_str().unwrap_or_default().to_string(),
                rv,
                e["object"].clone(),
            )
        })
        .collect()
}

/// An empty workspace's deletion joins writes: its LC is marked deleting in the write that shows
/// the Workspace `Deleting`, and the LC and the Workspace go in one write (etcd gives a write
/// one revision, the embedded store one per object, in order).
fn deletion_joins_writes(store: StoreKind) {
    let shard = Shard::start(store);
    let ws = create_ready(&shard, "root", "gone", None);
    let lc = cluster_of(&ws);
    // The namespaces' ServiceAccounts and root CA ConfigMaps come after Ready: wait for them, so
    // nothing is written into the LC while it goes.
    let in_gone = shard.kubectl_cmd().cluster("root:gone");
    shard.eventually("content settled", || {
        let names = in_gone.ok(&["get", "serviceaccounts,configmaps", "-A", "-o", "name"]);
        (names.matches("serviceaccount/default").count() == 2
            && names.matches("configmap/kube-root-ca.crt").count() == 2)
            .then_some(())
    });
    let from = ws["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    shard.kubectl_ok(&["delete", "workspace", "gone", "--timeout=60s"]);

    let workspaces = events_of(
        &shard,
        "apis/tenancy.kcp.io/v1alpha1/workspaces",
        &from,
        "gone",
    );
    let lc_events: Vec<_> = events_of(
        &shard,
        "apis/core.kcp.io/v1alpha1/logicalclusters",
        &from,
        "cluster",
    )
    .into_iter()
    .filter(|(_, _, o)| o["metadata"]["annotations"]["kcp.io/cluster"] == lc.as_str())
    .collect();
    let rv_where = |events: &[(String, i64, Value)], test: &dyn Fn(&str, &Value) -> bool| {
        events
            .iter()
            .find(|(t, _, o)| test(t, o))
            .map(|(_, rv, _)| *rv)
            .unwrap_or_else(|| panic!("no such event among {events:?}"))
    };
    let shown_deleting = rv_where(&workspaces, &|_, o| o["status"]["phase"] == "Deleting");
    let marked = rv_where(&lc_events, &|_, o| {
        !o["metadata"]["deletionTimestamp"].is_null()
    });
    let ws_gone = rv_where(&workspaces, &|t, _| t == "DELETED");
    let lc_gone = rv_where(&lc_events, &|t, _| t == "DELETED");
    let apart = match store {
        StoreKind::Etcd => 0,
        _ => 1,
    };
    assert_eq!(
        marked - shown_deleting,
        apart,
        "{workspaces:?} {lc_events:?}"
    );
    assert_eq!(ws_gone - lc_gone, apart, "{workspaces:?} {lc_events:?}");
    let modified = workspaces
        .iter()
        .filter(|(t, _, _)| t == "MODIFIED")
        .count();
    assert_eq!(modified, 2, "marked, then shown Deleting: {workspaces:?}");
}

/// Content with a finalizer holds its namespace, its logical cluster and the workspace while the
/// rest goes; once the finalizer is removed, everything goes.
fn held_content_holds_the_workspace(store: StoreKind) {
    let shard = Shard::start(store);
    let ws = create_ready(&shard, "root", "org", None);
    let lc = cluster_of(&ws);
    let in_org = shard.kubectl_cmd().cluster("root:org");
    in_org.ok(&["create", "configmap", "free", "--from-literal=a=b"]);
    in_org.ok(&[
        "create",
        "configmap",
        "free",
        "-n",
        "kube-system",
        "--from-literal=a=b",
    ]);
    let held = shard.write_file(
        "held.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers: [example.com/hold]\n",
    );
    in_org.ok(&["create", "-f", held.to_str().unwrap_or_default()]);

    shard.kubectl_ok(&["delete", "workspace", "org", "--wait=false"]);
    // Everything nothing holds goes: the other namespace with its content, the free ConfigMap.
    shard.eventually("unheld content gone", || {
        let names = in_org.ok(&["get", "configmaps,namespaces", "-A", "-o", "name"]);
        (!names.contains("configmap/free") && !names.contains("namespace/kube-system"))
            .then_some(())
    });
    let names = in_org.ok(&["get", "configmaps,namespaces", "-A", "-o", "name"]);
    assert!(names.contains("configmap/held"), "{names}");
    assert!(names.contains("namespace/default"), "{names}");
    let phase = shard
        .kubectl_cmd()
        .json(&["get", "workspace", "org", "-o", "json"]);
    assert_eq!(phase["status"]["phase"], "Deleting", "{phase}");
    // The workspace says what holds it, in kcp's words, as its LC does.
    let said = shard.eventually("the workspace saying what remains", || {
        let ws = shard.kubectl_json(&["get", "workspace", "org", "-o", "json"]);
        let condition = (ws["status"]["conditions"].as_array()).and_then(|c| {
            c.iter()
                .find(|c| c["type"] == "WorkspaceContentDeleted")
                .cloned()
        })?;
        (condition["reason"] == "SomeResourcesRemain").then_some(condition)
    });
    assert_eq!(
        said["message"],
        "Some resources are remaining: configmaps. has 1 resource instances, namespaces. has 1 \
         resource instances; Some content in the logical cluster has finalizers remaining: \
         example.com/hold in 1 resource instances",
        "{said}"
    );

    in_org.ok(&[
        "patch",
        "configmap",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    let (code, body) = gone_with_configmaps(&shard, "org", "*");
    assert_eq!(code, 200, "{body}");
    assert!(!body.contains(&lc), "the content is gone: {body}");
}

/// Creates workspace `name` in root for shards labelled `region`, waits until it is
/// `Unavailable` as unschedulable (kcp's phase for a failing condition), and answers the name
/// admission chose for its LC.
fn create_unschedulable(shard: &Shard, name: &str, region: &str) -> String {
    let file = shard.write_file(
        &format!("{name}.yaml"),
        &format!("apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\nspec:\n  location:\n    selector:\n      matchLabels: {{region: {region}}}\n"),
    );
    shard.kubectl_ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    let waiting = shard.eventually(&format!("workspace {name} Unschedulable"), || {
        let ws = shard
            .kubectl_cmd()
            .json(&["get", "workspace", name, "-o", "json"]);
        let reason = &ws["status"]["conditions"][0]["reason"];
        let labelled = ws["metadata"]["labels"]["tenancy.kcp.io/phase"] == "Unavailable";
        (ws["status"]["phase"] == "Unavailable" && labelled && reason == "Unschedulable")
            .then_some(ws)
    });
    let lc = waiting["metadata"]["annotations"]["internal.tenancy.kcp.io/cluster"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(lc.len(), 16, "{waiting}");
    lc
}

/// A workspace whose finalizer is removed by hand is gone at once, before its LC: the LC and its
/// content go all the same. So does content already under the LC name of a workspace never
/// placed.
fn finalizer_removed_by_hand(store: StoreKind) {
    let shard = Shard::start(store);
    let ws = create_ready(&shard, "root", "placed", None);
    let placed_lc = cluster_of(&ws);
    assert_eq!(placed_lc.len(), 16, "{ws}");
    shard.kubectl_cmd().cluster("root:placed").ok(&[
        "create",
        "configmap",
        "data",
        "--from-literal=a=b",
    ]);

    // Two workspaces no shard can take, with content under their LC names before the LCs, as an
    // attempt that failed halfway leaves it (an unschedulable workspace's POST writes none).
    let mut lcs = vec![placed_lc];
    for name in ["unplaced", "waiting"] {
        let lc = create_unschedulable(&shard, name, "nowhere");
        // Only a privileged user writes where no LogicalCluster is (yet).
        let in_lc = shard.kubectl_cmd().context("system:admin").cluster(&lc);
        in_lc.ok(&["create", "namespace", "early"]);
        in_lc.ok(&["create", "configmap", "early", "-n", "early"]);
        lcs.push(lc);
    }

    let all = |path: &str| {
        let (code, body) = shard.curl_as(Some("shard-admin"), "GET", path, None);
        assert_eq!(code, 200, "{body}");
        body
    };
    assert!(all("/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters").contains(&lcs[0]));
    for name in ["placed", "unplaced"] {
        shard.kubectl_ok(&[
            "patch",
            "workspace",
            name,
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ]);
    }
    // `waiting` keeps its finalizer: deleted before it was placed, it goes once its content did.
    for name in ["placed", "unplaced", "waiting"] {
        shard.kubectl_ok(&["delete", "workspace", name, "--wait=false"]);
    }
    shard.eventually("the workspaces, their LC and all content gone", || {
        let listed = shard.kubectl_ok(&["get", "workspaces", "-o", "name"]);
        let lc_objects = all("/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters");
        let content = all("/clusters/*/api/v1/namespaces") + &all("/clusters/*/api/v1/configmaps");
        let left = lcs
            .iter()
            .any(|lc| lc_objects.contains(lc.as_str()) || content.contains(lc.as_str()));
        (!left && listed.trim().is_empty()).then_some(())
    });
}

/// A workspace no shard can take waits in `Scheduling` with the name of its future LC. Content
/// already written under that name (as by an earlier attempt that failed halfway) is kept once the
/// workspace is scheduled: the workspace gets that LC, not another name. Each of the LC's two
/// first writes is tried: `later` finds namespace `default` there, `later2` `kube-system`.
fn scheduled_onto_content_already_there(store: StoreKind) {
    let shard = Shard::start(store);
    let mut chosen = Vec::new();
    for (name, early) in [("later", "default"), ("later2", "kube-system")] {
        let lc = create_unschedulable(&shard, name, "later");
        // A namespace one of the LC's first writes would create, there before it (written by a
        // privileged user: nobody else may write where no LogicalCluster is).
        let in_lc = shard.kubectl_cmd().context("system:admin").cluster(&lc);
        in_lc.ok(&["create", "namespace", early]);
        in_lc.ok(&["label", "namespace", early, "early=yes"]);
        chosen.push((name, early, lc));
    }

    shard.kubectl_ok(&["label", "shard", "root", "region=later"]);
    for (name, early, lc) in chosen {
        shard.kubectl_ok(&["label", "workspace", name, "nudged=yes"]);
        let ready = shard.eventually(&format!("workspace {name} Ready"), || {
            let ws = shard
                .kubectl_cmd()
                .json(&["get", "workspace", name, "-o", "json"]);
            (ws["status"]["phase"] == "Ready").then_some(ws)
        });
        assert_eq!(ready["spec"]["cluster"], lc.as_str(), "{ready}");
        let inside = shard.kubectl_cmd().cluster(&format!("root:{name}"));
        let kept = inside.json(&["get", "namespace", early, "-o", "json"]);
        assert_eq!(kept["metadata"]["labels"]["early"], "yes", "{kept}");
        inside.ok(&["get", "namespace", "default"]);
        inside.ok(&["get", "namespace", "kube-system"]);
        inside.ok(&["get", "clusterrolebinding", "workspace-admin"]);
        let lc_object = inside.json(&["get", "logicalcluster", "cluster", "-o", "json"]);
        assert_eq!(lc_object["status"]["phase"], "Ready", "{lc_object}");
    }
}

/// Waits until workspace `name` in root is gone; answers a GET of the ConfigMaps of LC `lc` then.
fn gone_with_configmaps(shard: &Shard, name: &str, lc: &str) -> (u16, String) {
    shard.eventually(&format!("workspace {name} gone"), || {
        let listed = shard.kubectl_ok(&["get", "workspaces", "-o", "name"]);
        (!listed.contains(name)).then_some(())
    });
    shard.curl_as(
        Some("shard-admin"),
        "GET",
        &format!("/clusters/{lc}/api/v1/configmaps"),
        None,
    )
}

/// The LogicalCluster of a workspace, read in its own LC.
fn logical_cluster(shard: &Shard, lc: &str) -> Value {
    shard
        .kubectl_cmd()
        .cluster(lc)
        .json(&["get", "logicalcluster", "cluster", "-o", "json"])
}

/// kcp's label of a pending initializer or terminator: the key ends in the start of the SHA-224
/// (hex) of its name, 63 characters in all; the value is the whole hash.
fn lifecycle_label(prefix: &str, name: &str) -> (String, String) {
    use sha2::Digest as _;
    let hash: String = sha2::Sha224::digest(name.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    (format!("{prefix}{}", &hash[..63 - prefix.len()]), hash)
}

/// Removes `entry` from the LC's `status.<field>` with a JSON patch on the status subresource, as an
/// initializing or terminating controller does.
fn remove_from_status(shard: &Shard, lc: &str, field: &str, entry: &str) {
    let current = logical_cluster(shard, lc);
    let index = current["status"][field]
        .as_array()
        .and_then(|a| a.iter().position(|x| x == entry))
        .unwrap_or_else(|| panic!("{entry} not in status.{field}: {current}"));
    let patch = format!(
        r#"[{{"op":"test","path":"/status/{field}/{index}","value":"{entry}"}},{{"op":"remove","path":"/status/{field}/{index}"}}]"#
    );
    shard.kubectl_cmd().cluster(lc).ok(&[
        "patch",
        "logicalcluster",
        "cluster",
        "--subresource=status",
        "--type=json",
        "-p",
        &patch,
    ]);
}

fn initializers_and_terminators(store: StoreKind) {
    let shard = Shard::start(store);
    let types = shard.write_file(
        "types.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata:\n  name: slow\n\
         spec:\n  initializer: true\n  extend:\n    with:\n    - name: universal\n      path: root\n\
         ---\napiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata:\n  name: guarded\n\
         spec:\n  terminator: true\n  extend:\n    with:\n    - name: universal\n      path: root\n",
    );
    shard.kubectl_ok(&["create", "-f", types.to_str().unwrap_or_default()]);

    // A custom initializer holds the workspace in Initializing; the universal one still ran.
    let file = shard.write_file(
        "ws-slow.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: slow\nspec:\n  type:\n    name: slow\n    path: root\n",
    );
    shard.kubectl_ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    let ws = shard.eventually("slow initializing, universal done", || {
        let ws = shard.kubectl_json(&["get", "workspace", "slow", "-o", "json"]);
        (ws["status"]["phase"] == "Initializing"
            && ws["status"]["initializers"] == serde_json::json!(["root:slow"]))
        .then_some(ws)
    });
    let initialized = ws["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "WorkspaceInitialized"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(initialized["status"], "False", "{ws}");
    assert_eq!(initialized["reason"], "InitializerExists", "{ws}");
    assert_eq!(
        ws["metadata"]["labels"]["tenancy.kcp.io/phase"], "Initializing",
        "{ws}"
    );
    let lc = cluster_of(&ws);
    let namespaces = shard
        .kubectl_cmd()
        .cluster(&lc)
        .ok(&["get", "namespaces", "-o", "name"]);
    assert!(namespaces.contains("namespace/kube-system"), "{namespaces}");
    // kcp's LC metadata: its phase and each pending initializer as labels; the creator whole
    // until Ready.
    let (slow_key, slow_value) = lifecycle_label("initializer.internal.kcp.io/", "root:slow");
    let initializing = logical_cluster(&shard, &lc);
    let labels = &initializing["metadata"]["labels"];
    assert_eq!(
        labels["tenancy.kcp.io/phase"], "Initializing",
        "{initializing}"
    );
    assert_eq!(labels[&slow_key], slow_value.as_str(), "{initializing}");
    // And kcp's condition, waiting on it; `kubectl wait` reads it.
    let condition = &initializing["status"]["conditions"][0];
    assert_eq!(condition["type"], "WorkspaceInitialized", "{initializing}");
    assert_eq!(condition["status"], "False", "{initializing}");
    assert_eq!(
        condition["message"], "Initializers still exist: [root:slow]",
        "{initializing}"
    );
    let owner = initializing["metadata"]["annotations"]["experimental.tenancy.kcp.io/owner"]
        .as_str()
        .unwrap_or_default();
    assert!(owner.contains("\"groups\""), "{initializing}");
    let in_lc = shard.kubectl_cmd().cluster(&lc).ok(&[
        "get",
        "logicalclusters",
        "-l",
        &format!("{slow_key}={slow_value}"),
        "-o",
        "name",
    ]);
    assert_eq!(in_lc.trim(), "logicalcluster.core.kcp.io/cluster");
    // Still initializing a while later: nothing but the PATCH releases it.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let ws = shard.kubectl_json(&["get", "workspace", "slow", "-o", "json"]);
    assert_eq!(ws["status"]["phase"], "Initializing", "{ws}");
    remove_from_status(&shard, &lc, "initializers", "root:slow");
    shard.eventually("slow Ready", || {
        let ws = shard.kubectl_json(&["get", "workspace", "slow", "-o", "json"]);
        (ws["status"]["phase"] == "Ready").then_some(())
    });
    let ready = shard.kubectl_ok(&[
        "get",
        "workspaces",
        "-l",
        "tenancy.kcp.io/phase=Ready",
        "-o",
        "name",
    ]);
    assert!(ready.contains("workspace.tenancy.kcp.io/slow"), "{ready}");
    let ready_lc = logical_cluster(&shard, &lc);
    let labels = &ready_lc["metadata"]["labels"];
    assert_eq!(labels["tenancy.kcp.io/phase"], "Ready", "{ready_lc}");
    assert!(labels.get(&slow_key).is_none(), "{ready_lc}");
    shard.kubectl_cmd().cluster(&lc).ok(&[
        "wait",
        "--for=condition=WorkspaceInitialized",
        "logicalcluster/cluster",
        "--timeout=10s",
    ]);
    assert_eq!(
        ready_lc["metadata"]["annotations"]["experimental.tenancy.kcp.io/owner"],
        r#"{"username":"kcp-admin"}"#,
        "{ready_lc}"
    );

    // A terminator holds the deletion: the LC is Terminating, its content still served, until
    // the terminator is removed.
    let guarded = create_ready(&shard, "root", "guarded", Some("guarded"));
    let lc = cluster_of(&guarded);
    assert_eq!(
        logical_cluster(&shard, &lc)["spec"]["terminators"],
        serde_json::json!(["root:guarded"])
    );
    // As in kcp, the LC's status has them from the start (labelled), and its Workspace shows them.
    let born = logical_cluster(&shard, &lc);
    assert_eq!(
        born["status"]["terminators"],
        serde_json::json!(["root:guarded"])
    );
    let (guard_key, guard_value) = lifecycle_label("terminator.internal.kcp.io/", "root:guarded");
    assert_eq!(
        born["metadata"]["labels"][&guard_key],
        guard_value.as_str(),
        "{born}"
    );
    let shown = shard.eventually("guarded shows its terminator", || {
        let ws = shard.kubectl_json(&["get", "workspace", "guarded", "-o", "json"]);
        (ws["status"]["terminators"] == serde_json::json!(["root:guarded"])).then_some(ws)
    });
    assert_eq!(shown["status"]["phase"], "Ready", "{shown}");
    shard
        .kubectl_cmd()
        .cluster(&lc)
        .ok(&["create", "configmap", "kept", "--from-literal=a=b"]);
    shard.kubectl_ok(&["delete", "workspace", "guarded", "--wait=false"]);
    let ws = shard.eventually("guarded Terminating", || {
        let ws = shard.kubectl_json(&["get", "workspace", "guarded", "-o", "json"]);
        (ws["status"]["phase"] == "Terminating").then_some(ws)
    });
    assert_eq!(
        ws["status"]["terminators"],
        serde_json::json!(["root:guarded"]),
        "{ws}"
    );
    let lc_now = logical_cluster(&shard, &lc);
    assert_eq!(lc_now["status"]["phase"], "Terminating", "{lc_now}");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let kept = shard
        .kubectl_cmd()
        .cluster(&lc)
        .ok(&["get", "configmap", "kept", "-o", "name"]);
    assert_eq!(kept.trim(), "configmap/kept");
    remove_from_status(&shard, &lc, "terminators", "root:guarded");
    let (code, body) = gone_with_configmaps(&shard, "guarded", &lc);
    assert!(code == 404 || !body.contains("kept"), "{code} {body}");
}

const BOB_TOKEN: &str = "bob-token-9876543210";

/// Two users allowed to create workspaces in root: each becomes admin of what they create and
/// nothing else; a type they may not `use` is refused; root's content stays closed to them.
fn workspace_isolation(store: StoreKind) {
    let shard = Shard::start_with_tokens(
        store,
        &format!("{ALICE_TOKEN},alice,alice-uid\n{BOB_TOKEN},bob,bob-uid\n"),
    );
    let rbac = shard.write_file(
        "creators.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: workspace-creator\n\
         rules:\n- apiGroups: [tenancy.kcp.io]\n  resources: [workspaces]\n  verbs: [create, get, list, watch]\n\
         ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: workspace-creators\n\
         roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: workspace-creator}\n\
         subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}\n\
         - {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}\n\
         ---\napiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata:\n  name: private\nspec: {}\n",
    );
    shard.kubectl_ok(&["create", "-f", rbac.to_str().unwrap_or_default()]);
    let alice = Caller::Token(ALICE_TOKEN.to_string());
    let bob = Caller::Token(BOB_TOKEN.to_string());
    const WORKSPACES: &str = "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces";
    let create = |who: &Caller, name: &str, ty: &str| {
        shard.curl_with(
            who,
            "POST",
            WORKSPACES,
            &[],
            Some((
                "application/json",
                &format!(
                    r#"{{"apiVersion":"tenancy.kcp.io/v1alpha1","kind":"Workspace","metadata":{{"name":"{name}"}},"spec":{{"type":{{"name":"{ty}","path":"root"}}}}}}"#
                ),
            )),
        )
    };

    // A type without a `use` grant is refused, with kcp's message.
    let (code, body) = create(&alice, "secret", "private");
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("unable to use workspace type root:private"),
        "{body}"
    );
    for (who, name) in [(&alice, "alice-ws"), (&bob, "bob-ws")] {
        let (code, body) = create(who, name, "universal");
        assert_eq!(code, 201, "{body}");
        shard.eventually(&format!("{name} Ready"), || {
            let (code, body) =
                shard.curl_with(who, "GET", &format!("{WORKSPACES}/{name}"), &[], None);
            (code == 200 && body.contains(r#""phase":"Ready""#)).then_some(())
        });
    }

    // Each is admin in their own workspace ...
    let configmaps = |ws: &str| format!("/clusters/root:{ws}/api/v1/namespaces/default/configmaps");
    let body = Some(("application/json", r#"{"metadata":{"name":"mine"}}"#));
    let (code, text) = shard.curl_with(&alice, "POST", &configmaps("alice-ws"), &[], body);
    assert_eq!(code, 201, "{text}");
    let (code, text) = shard.curl_with(&bob, "POST", &configmaps("bob-ws"), &[], body);
    assert_eq!(code, 201, "{text}");
    // ... and a stranger in the other's, for reads, writes and by LC name alike.
    for (who, other) in [(&alice, "bob-ws"), (&bob, "alice-ws")] {
        let (code, text) = shard.curl_with(who, "GET", &configmaps(other), &[], None);
        assert_eq!(code, 403, "{text}");
        let (code, text) = shard.curl_with(who, "POST", &configmaps(other), &[], body);
        assert_eq!(code, 403, "{text}");
        let lc = shard.kubectl_json(&["get", "workspace", other, "-o", "json"])["spec"]["cluster"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let (code, text) = shard.curl_with(
            who,
            "GET",
            &format!("/clusters/{lc}/api/v1/namespaces"),
            &[],
            None,
        );
        assert_eq!(code, 403, "{text}");
    }
    // An LC's admin may edit its `kcp.io/path`, but paths lead through Workspaces: alice claiming
    // bob's path takes nothing from bob, and gives her nothing.
    let claim = |path: &str| {
        let (code, text) = shard.curl_with(
            &alice,
            "PATCH",
            "/clusters/root:alice-ws/apis/core.kcp.io/v1alpha1/logicalclusters/cluster",
            &[],
            Some((
                "application/merge-patch+json",
                &format!(r#"{{"metadata":{{"annotations":{{"kcp.io/path":"{path}"}}}}}}"#),
            )),
        );
        assert_eq!(code, 200, "{text}");
    };
    claim("root:bob-ws");
    let (code, text) = shard.curl_with(&bob, "GET", &configmaps("bob-ws"), &[], None);
    assert_eq!(code, 200, "{text}");
    assert!(text.contains(r#""name":"mine""#), "{text}");
    let (code, text) = shard.curl_with(&alice, "GET", &configmaps("bob-ws"), &[], None);
    assert_eq!(code, 403, "{text}");
    let (code, text) = shard.curl_with(&alice, "GET", &configmaps("alice-ws"), &[], None);
    assert_eq!(code, 200, "{text}");
    // Taking the claim back leaves both paths as they were.
    claim("root:alice-ws");
    for (who, ws) in [(&alice, "alice-ws"), (&bob, "bob-ws")] {
        let (code, text) = shard.curl_with(who, "GET", &configmaps(ws), &[], None);
        assert_eq!(code, 200, "{ws}: {text}");
    }

    // Workspace rights in root are not rights over root's content, nor over every LC at once.
    let (code, text) =
        shard.curl_with(&alice, "GET", "/clusters/root/api/v1/configmaps", &[], None);
    assert_eq!(code, 403, "{text}");
    let (code, text) = shard.curl_with(
        &alice,
        "GET",
        "/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces",
        &[],
        None,
    );
    assert_eq!(code, 403, "{text}");
}

/// kcp's admission of Workspaces and LogicalClusters, for a requester outside the privileged
/// groups (kcp-admin): placement is the shard's, and an LC moves only forward.
fn lifecycle_objects_are_guarded(store: StoreKind) {
    let shard =
        Shard::start_with_tokens(store, &format!("{TESS_TOKEN},tess,tess-uid,\"team-a\"\n"));
    let ws = create_ready(&shard, "root", "guarded", None);
    let lc = cluster_of(&ws);
    let inside = shard.kubectl_cmd().cluster("root:guarded");
    let refused = |out: std::process::Output, why: &str| {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "accepted, wanted: {why}");
        assert!(stderr.contains(why), "wanted {why:?}: {stderr}");
    };
    let lc_forbidden =
        |why: &str| format!(r#"logicalclusters.core.kcp.io "cluster" is forbidden: {why}"#);
    refused(
        inside.run(&[
            "patch",
            "logicalcluster",
            "cluster",
            "--type=merge",
            "-p",
            r#"{"spec":{"initializers":["root:other"]}}"#,
        ]),
        &lc_forbidden("spec.initializers is immutable"),
    );
    // The owner is the shard's: with another one the LC would be an orphan, deleted with its
    // content.
    inside.ok(&["create", "configmap", "precious", "-n", "default"]);
    refused(
        inside.run(&[
            "patch",
            "logicalcluster",
            "cluster",
            "--type=merge",
            "-p",
            r#"{"spec":{"owner":{"uid":"00000000-0000-0000-0000-000000000000"}}}"#,
        ]),
        &lc_forbidden("spec.owner: Invalid value: "),
    );
    refused(
        inside.run(&[
            "patch",
            "logicalcluster",
            "cluster",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Initializing"}}"#,
        ]),
        &lc_forbidden(r#"cannot transition from "Ready" to "Initializing""#),
    );
    refused(
        inside.run(&["delete", "logicalcluster", "cluster"]),
        &lc_forbidden("LogicalCluster cannot be deleted"),
    );
    let new_lc = shard.write_file(
        "lc.json",
        r#"{"apiVersion":"core.kcp.io/v1alpha1","kind":"LogicalCluster","metadata":{"name":"cluster"}}"#,
    );
    refused(
        inside.run(&["create", "-f", new_lc.to_str().unwrap_or_default()]),
        &lc_forbidden("LogicalCluster cannot be created"),
    );
    // Where no LogicalCluster is, nobody but the privileged enters (kcp's content authorizer),
    // not even the admin of every workspace.
    refused(
        shard
            .kubectl_cmd()
            .cluster("brandnew")
            .run(&["create", "namespace", "x"]),
        "access not permitted",
    );
    // The LC is untouched and its workspace still Ready.
    let object = logical_cluster(&shard, &lc);
    assert_eq!(object["status"]["phase"], "Ready", "{object}");
    inside.ok(&["get", "configmap", "precious", "-n", "default"]);

    let ws_forbidden = |name: &str, why: &str| {
        format!(r#"workspaces.tenancy.kcp.io "{name}" is forbidden: {why}"#)
    };
    let placed = shard.write_file(
        "placed.yaml",
        &format!("apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: placed\nspec:\n  cluster: {lc}\n"),
    );
    refused(
        shard.kubectl(&["create", "-f", placed.to_str().unwrap_or_default()]),
        &ws_forbidden(
            "placed",
            "spec.Cluster can only be set by system privileged users",
        ),
    );
    refused(
        shard.kubectl(&[
            "patch",
            "workspace",
            "guarded",
            "--type=merge",
            "-p",
            r#"{"spec":{"URL":"https://elsewhere.example/clusters/x"}}"#,
        ]),
        &ws_forbidden(
            "guarded",
            "spec.URL can only be changed by system privileged users",
        ),
    );
    refused(
        shard.kubectl(&[
            "patch",
            "workspace",
            "guarded",
            "--type=merge",
            "-p",
            r#"{"spec":{"cluster":"someothercluster"}}"#,
        ]),
        r#"spec.cluster: Invalid value: "string": cluster is immutable"#,
    );
    // A child needs the groups its parent needs: admission copies the parent LC's
    // required-groups to the Workspace, scheduling to the child's LC.
    let groups = "authorization.kcp.io/required-groups";
    let admin = |cluster: &str| shard.kubectl_cmd().context("system:admin").cluster(cluster);
    admin(&lc).ok(&[
        "annotate",
        "logicalcluster",
        "cluster",
        &format!("{groups}=team-a"),
    ]);
    admin(&lc).ok(&[
        "create",
        "clusterrolebinding",
        "tess-admin",
        "--clusterrole=cluster-admin",
        "--user=tess",
    ]);
    let tess = Caller::Token(TESS_TOKEN.to_string());
    let post = |name: &str, annotations: &str| {
        let body = format!(
            r#"{{"metadata":{{"name":"{name}","annotations":{{{annotations}}}}},"spec":{{"type":{{"name":"universal","path":"root"}}}}}}"#
        );
        shard.curl_with(
            &tess,
            "POST",
            "/clusters/root:guarded/apis/tenancy.kcp.io/v1alpha1/workspaces",
            &[],
            Some(("application/json", &body)),
        )
    };
    // tess (in team-a, not in system:masters) cannot pick other groups for her child.
    let (code, body) = shard.eventually("tess may create in root:guarded", || {
        let (code, body) = post("mine", &format!(r#""{groups}":"nobody""#));
        (code != 403).then_some((code, body))
    });
    assert_eq!(code, 201, "{body}");
    let created: Value = serde_json::from_str(&body).expect("a Workspace");
    assert_eq!(
        created["metadata"]["annotations"][groups], "team-a",
        "{created}"
    );
    let child = shard.eventually("mine Ready", || {
        let ws = admin("root:guarded").json(&["get", "workspace", "mine", "-o", "json"]);
        (ws["status"]["phase"] == "Ready").then_some(ws)
    });
    let child_lc =
        admin(&cluster_of(&child)).json(&["get", "logicalcluster", "cluster", "-o", "json"]);
    assert_eq!(
        child_lc["metadata"]["annotations"][groups], "team-a",
        "{child_lc}"
    );
    // system:masters may move the URL (kcp's privileged users).
    let moved = shard
        .kubectl_cmd()
        .context("system:admin")
        .cluster("root")
        .run(&[
            "patch",
            "workspace",
            "guarded",
            "--type=merge",
            "-p",
            r#"{"spec":{"URL":"https://elsewhere.example/clusters/root:guarded"}}"#,
        ]);
    assert!(
        moved.status.success(),
        "{}",
        String::from_utf8_lossy(&moved.stderr)
    );
}

/// As kcp: a workspace created by system:masters records no creator (no owner annotation, no
/// `createdBy`) and gets no `workspace-admin` binding. A placed workspace names its shard in both
/// of kcp's annotations. An LC from before the content finalizer took kcp's name is still deleted.
fn masters_creators_and_older_lcs(store: StoreKind) {
    let shard = Shard::start(store);
    let (code, body) = shard.curl_as(
        Some("shard-admin"),
        "POST",
        "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces",
        Some((
            "application/json",
            r#"{"apiVersion":"tenancy.kcp.io/v1alpha1","kind":"Workspace","metadata":{"name":"masters"}}"#,
        )),
    );
    assert_eq!(code, 201, "{body}");
    let ws = shard.eventually("masters Ready", || {
        let ws = shard.kubectl_json(&["get", "workspace", "masters", "-o", "json"]);
        (ws["status"]["phase"] == "Ready").then_some(ws)
    });
    let annotations = &ws["metadata"]["annotations"];
    assert!(
        annotations
            .get("experimental.tenancy.kcp.io/owner")
            .is_none(),
        "{ws}"
    );
    let hash = annotations["internal.tenancy.kcp.io/shard"]
        .as_str()
        .unwrap_or_default();
    assert!(
        hash.len() == 8
            && hash
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()),
        "{ws}"
    );
    assert!(annotations["core.kcp.io/shard"].is_string(), "{ws}");
    let lc_name = cluster_of(&ws);
    let lc = logical_cluster(&shard, &lc_name);
    assert!(lc["spec"].get("createdBy").is_none(), "{lc}");
    let lc_annotations = &lc["metadata"]["annotations"];
    assert!(
        lc_annotations
            .get("experimental.tenancy.kcp.io/owner")
            .is_none(),
        "{lc}"
    );
    let missing = shard.kubectl_cmd().cluster(&lc_name).fails(&[
        "get",
        "clusterrolebinding",
        "workspace-admin",
    ]);
    assert!(missing.contains("NotFound"), "{missing}");

    // An LC holding the content finalizer's former name.
    let older = create_ready(&shard, "root", "older", None);
    let older_lc = cluster_of(&older);
    let lc = logical_cluster(&shard, &older_lc);
    assert_eq!(
        lc["metadata"]["finalizers"],
        serde_json::json!(["core.kcp.io/logicalcluster-deletion"]),
        "{lc}"
    );
    let (code, body) = shard.curl_as(
        Some("shard-admin"),
        "PATCH",
        &format!("/clusters/{older_lc}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"),
        Some((
            "application/merge-patch+json",
            r#"{"metadata":{"finalizers":["core.kcp.io/logicalcluster-content"]}}"#,
        )),
    );
    assert_eq!(code, 200, "{body}");
    shard.kubectl_cmd().cluster(&older_lc).ok(&[
        "create",
        "configmap",
        "data",
        "--from-literal=a=b",
    ]);
    shard.kubectl_ok(&["delete", "workspace", "older", "--timeout=60s"]);
    shard.eventually("the older LC gone", || {
        let (code, _) = shard.curl_as(
            Some("shard-admin"),
            "GET",
            &format!("/clusters/{older_lc}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"),
            None,
        );
        (code == 404).then_some(())
    });
}

/// An LC marked inactive (kcp's `core.kcp.io/inactive`) refuses requests but for its OpenAPI and
/// its LogicalCluster, is `Inactive` while its workspace stays Ready, ends the watches open on it
/// and those across all clusters, and serves again once the mark is gone. Only a Ready LC may be
/// marked by a requester outside the privileged groups.
async fn inactive_logical_clusters(store: StoreKind) {
    use futures::StreamExt as _;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, WatchParams};

    let shard = Shard::start(store);
    let ws = create_ready(&shard, "root", "sleepy", None);
    let lc = cluster_of(&ws);
    let lc_path = format!("/clusters/{lc}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster");
    let in_lc = Api::<ConfigMap>::namespaced(shard.kube_client_at("root", &lc).await, "default");
    let mut watch_here = in_lc
        .watch(&WatchParams::default(), "0")
        .await
        .expect("a watch in the LC")
        .boxed();
    let across = Api::<ConfigMap>::all(shard.kube_client_at("system:admin", "*").await);
    let mut watch_all = across
        .watch(&WatchParams::default(), "0")
        .await
        .expect("a watch across all LCs")
        .boxed();

    // Marked by kcp-admin (not privileged), by kubectl through the workspace's path.
    shard.kubectl_cmd().cluster("root:sleepy").ok(&[
        "annotate",
        "logicalcluster",
        "cluster",
        "core.kcp.io/inactive=true",
    ]);
    for (what, watch) in [("in the LC", &mut watch_here), ("across", &mut watch_all)] {
        let ended = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while watch.next().await.is_some() {}
        })
        .await;
        assert!(ended.is_ok(), "the watch {what} ended");
    }
    let refused = format!(
        r#"logicalclusters.core.kcp.io \"{lc}\" is forbidden: logical cluster is marked inactive"#
    );
    for cluster in [lc.as_str(), "root:sleepy"] {
        let (code, body) = shard.curl(
            "GET",
            &format!("/clusters/{cluster}/api/v1/namespaces"),
            None,
        );
        assert_eq!(code, 403, "{body}");
        assert!(body.contains(&refused), "{body}");
    }
    let (code, body) = shard.curl("GET", &format!("/clusters/{lc}/openapi/v3"), None);
    assert_eq!(code, 200, "{body}");
    let (code, body) = shard.curl("GET", &lc_path, None);
    assert_eq!(code, 200, "{body}");
    let marked: Value = serde_json::from_str(&body).unwrap_or_default();
    assert_eq!(marked["status"]["phase"], "Inactive", "{marked}");
    assert_eq!(
        marked["metadata"]["labels"]["tenancy.kcp.io/phase"], "Inactive",
        "{marked}"
    );
    let ws = shard.kubectl_json(&["get", "workspace", "sleepy", "-o", "json"]);
    assert_eq!(ws["status"]["phase"], "Ready", "{ws}");

    // The mark taken off (through the LogicalCluster, which stays served): all is served again.
    let (code, body) = shard.curl(
        "PATCH",
        &lc_path,
        Some((
            "application/merge-patch+json",
            r#"{"metadata":{"annotations":{"core.kcp.io/inactive":null}}}"#,
        )),
    );
    assert_eq!(code, 200, "{body}");
    let active: Value = serde_json::from_str(&body).unwrap_or_default();
    assert_eq!(active["status"]["phase"], "Ready", "{active}");
    shard.eventually("the LC served again", || {
        let (code, _) = shard.curl("GET", &format!("/clusters/{lc}/api/v1/namespaces"), None);
        (code == 200).then_some(())
    });
    let again = in_lc.watch(&WatchParams::default(), "0").await;
    assert!(again.is_ok(), "a new watch opens");

    // An LC still initializing may not be marked.
    let types = shard.write_file(
        "slow.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: WorkspaceType\nmetadata:\n  name: slow\n\
         spec:\n  initializer: true\n  extend:\n    with:\n    - name: universal\n      path: root\n",
    );
    shard.kubectl_ok(&["create", "-f", types.to_str().unwrap_or_default()]);
    let file = shard.write_file(
        "ws-waiting.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: waiting\nspec:\n  type:\n    name: slow\n    path: root\n",
    );
    shard.kubectl_ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    let waiting = shard.eventually("waiting initializing", || {
        let ws = shard.kubectl_json(&["get", "workspace", "waiting", "-o", "json"]);
        (ws["status"]["phase"] == "Initializing").then_some(ws)
    });
    let err = shard.kubectl_cmd().cluster(&cluster_of(&waiting)).fails(&[
        "annotate",
        "logicalcluster",
        "cluster",
        "core.kcp.io/inactive=true",
    ]);
    assert!(
        err.contains(r#"LogicalCluster can only be marked inactive in phase "Ready", but is in phase "Initializing""#),
        "{err}"
    );
}
