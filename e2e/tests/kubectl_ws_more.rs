//! The workspace plugins beyond the basic walk, through kubectl's plugin lookup against a real shard on
//! both stores: `kubectl ws create-context`, `kubectl create workspace --location-selector` and
//! `--create-context`, the exact output of `kubectl ws tree` (plain, `--full`, `--wide`, `-w`), and a
//! `$KUBECONFIG` of several files (read merged, each change written to the file kubectl would use), with
//! `--kubeconfig`, `--context` and `--server`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kcp_e2e::{Shard, StoreKind, on_both_stores, plugin_dir};
use serde_json::{Value, json};

on_both_stores!(
    create_context_and_location,
    tree_output,
    multi_file_kubeconfig
);

/// kubectl with the plugins on `PATH`, `$KUBECONFIG` set to `kubeconfig` and `$HOME` inside the shard's
/// directory (so no real `~/.kube` is read or written).
fn run(shard: &Shard, kubeconfig: &str, args: &[&str]) -> Output {
    let path = format!(
        "{}:{}",
        plugin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", shard.dir())
        .env("PATH", path)
        .output()
        .expect("running kubectl")
}

/// Runs and expects success: stdout.
fn ok(shard: &Shard, kubeconfig: &str, args: &[&str]) -> String {
    let out = run(shard, kubeconfig, args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "kubectl {}: {}\n{stdout}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Runs and expects failure: stderr.
fn fails(shard: &Shard, kubeconfig: &str, args: &[&str]) -> String {
    let out = run(shard, kubeconfig, args);
    assert!(
        !out.status.success(),
        "kubectl {} should fail:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A copy of the admin kubeconfig the plugins may rewrite.
fn copy_kubeconfig(shard: &Shard, name: &str) -> PathBuf {
    let config = shard.dir().join(name);
    std::fs::copy(shard.kubeconfig(), &config).expect("copying the kubeconfig");
    config
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("reading a kubeconfig");
    serde_saphyr::from_str(&text).expect("a YAML kubeconfig")
}

/// The entry `name` of list `list` in a kubeconfig document.
fn entry<'a>(doc: &'a Value, list: &str, name: &str) -> Option<&'a Value> {
    doc[list].as_array()?.iter().find(|e| e["name"] == name)
}

fn server_of(doc: &Value, cluster: &str) -> String {
    entry(doc, "clusters", cluster)
        .and_then(|c| c["cluster"]["server"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn create_context_and_location(store: StoreKind) {
    let shard = Shard::start(store);
    let config = copy_kubeconfig(&shard, "ctx.kubeconfig");
    let kc = config.to_str().unwrap_or_default();

    // At root the default name is the path, `root`, which the admin kubeconfig already has.
    let err = fails(&shard, kc, &["ws", "create-context"]);
    assert!(
        err.contains(
            r#"Error: context "root" already exists in kubeconfig, use --overwrite to update it"#
        ),
        "{err}"
    );
    let out = ok(&shard, kc, &["ws", "create-context", "--overwrite"]);
    assert_eq!(out, "Updated context \"root\".\n");

    // A named context for the current workspace, switched to.
    let out = ok(&shard, kc, &["ws", "create-context", "admin-root"]);
    assert_eq!(out, "Created context \"admin-root\" and switched to it.\n");
    let doc = yaml(&config);
    assert_eq!(doc["current-context"], "admin-root");
    assert_eq!(
        server_of(&doc, "admin-root"),
        format!("{}/clusters/root", shard.base_url())
    );
    let ctx = entry(&doc, "contexts", "admin-root")
        .cloned()
        .unwrap_or_default();
    assert_eq!(ctx["context"]["cluster"], "admin-root", "{ctx}");
    assert_eq!(ctx["context"]["user"], "kcp-admin", "{ctx}");
    assert_eq!(
        ok(&shard, kc, &["get", "namespace", "default", "-o", "name"]).trim(),
        "namespace/default"
    );

    // A location selector that matches the shard (labelled name=root): scheduled, Ready, and recorded
    // as kcp converts it; a context of its own, kept aside since --enter is not given.
    let out = ok(
        &shard,
        kc,
        &[
            "create",
            "workspace",
            "placed",
            "--location-selector",
            "name in (root,elsewhere),!absent",
            "--create-context",
            "placed-ctx",
        ],
    );
    assert!(
        out.contains(r#"Workspace "placed" (type root:organization) is ready to use."#),
        "{out}"
    );
    assert!(out.ends_with("Created context \"placed-ctx\".\n"), "{out}");
    let ws: Value = serde_json::from_str(&ok(
        &shard,
        kc,
        &["get", "workspace", "placed", "-o", "json"],
    ))
    .expect("a Workspace");
    assert_eq!(
        ws["spec"]["location"]["selector"],
        json!({"matchExpressions": [
            {"key": "absent", "operator": "DoesNotExist"},
            {"key": "name", "operator": "In", "values": ["elsewhere", "root"]},
        ]}),
        "{ws}"
    );
    assert_eq!(ws["status"]["phase"], "Ready", "{ws}");
    let doc = yaml(&config);
    assert_eq!(doc["current-context"], "admin-root");
    // The new context points at the workspace's own URL (by its path), as kcp's does.
    assert_eq!(
        server_of(&doc, "placed-ctx"),
        ws["spec"]["URL"].as_str().unwrap_or("?")
    );
    assert_eq!(
        ok(
            &shard,
            kc,
            &[
                "--context",
                "placed-ctx",
                "get",
                "namespace",
                "default",
                "-o",
                "name"
            ]
        )
        .trim(),
        "namespace/default"
    );

    // `=` becomes matchLabels; --enter with --create-context switches to the new context.
    let out = ok(
        &shard,
        kc,
        &[
            "ws",
            "create",
            "entered",
            "--location-selector",
            "name=root",
            "--create-context",
            "entered-ctx",
            "--enter",
        ],
    );
    assert!(
        out.ends_with("Created context \"entered-ctx\" and switched to it.\n"),
        "{out}"
    );
    let entered: Value = serde_json::from_str(&ok(
        &shard,
        kc,
        &[
            "--context",
            "admin-root",
            "get",
            "workspace",
            "entered",
            "-o",
            "json",
        ],
    ))
    .expect("a Workspace");
    assert_eq!(
        entered["spec"]["location"]["selector"],
        json!({"matchLabels": {"name": "root"}}),
        "{entered}"
    );
    // The context is the workspace's URL, which names it by its path (as kcp's).
    assert_eq!(
        ok(&shard, kc, &["ws", "current", "--short"]).trim(),
        "root:entered"
    );

    // A selector kcp cannot express is refused before anything is created.
    let err = fails(
        &shard,
        kc,
        &["create", "workspace", "bad", "--location-selector", "a!=b"],
    );
    assert!(
        err.contains(
            r#"Error: invalid location selector: "!=" is not a valid label selector operator"#
        ),
        "{err}"
    );
    let err = fails(
        &shard,
        kc,
        &["--context", "admin-root", "get", "workspace", "bad"],
    );
    assert!(err.contains("not found"), "{err}");

    // Written by other means, such a selector leaves the workspace Unavailable with kcp's
    // reason, not retried as a failure of the shard's.
    let file = shard.write_file(
        "invalid.yaml",
        "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: invalid\nspec:\n  location:\n    selector:\n      matchExpressions: [{key: a, operator: Foo}]\n",
    );
    shard.kubectl_ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    let ws = shard.eventually("workspace invalid Unavailable", || {
        let ws = shard
            .kubectl_cmd()
            .json(&["get", "workspace", "invalid", "-o", "json"]);
        (ws["status"]["phase"] == "Unavailable").then_some(ws)
    });
    assert_eq!(
        ws["status"]["conditions"][0],
        json!({"type": "WorkspaceScheduled", "status": "False", "severity": "Error",
               "reason": "Unschedulable", "lastTransitionTime": ws["status"]["conditions"][0]["lastTransitionTime"],
               "message": "spec.location.selector is invalid: \"Foo\" is not a valid label selector operator"}),
        "{ws}"
    );
}

fn tree_output(store: StoreKind) {
    let shard = Shard::start(store);
    let config = copy_kubeconfig(&shard, "tree.kubeconfig");
    let kc = config.to_str().unwrap_or_default();

    ok(&shard, kc, &["create", "workspace", "org", "--enter"]);
    ok(&shard, kc, &["create", "workspace", "b"]);
    ok(&shard, kc, &["create", "workspace", "a", "--enter"]);
    // A universal workspace has no default child type: name one.
    ok(
        &shard,
        kc,
        &["create", "workspace", "deep", "--type", "universal"],
    );
    ok(&shard, kc, &["ws", ":root"]);

    // treeprint's drawing under a "." root, then Println's extra newline.
    assert_eq!(
        ok(&shard, kc, &["ws", "tree"]),
        ".\n└── root\n    └── org\n        ├── a\n        │   └── deep\n        └── b\n\n"
    );
    assert_eq!(
        ok(&shard, kc, &["ws", "tree", "--full"]),
        ".\n└── root\n    └── root:org\n        ├── root:org:a\n        │   └── root:org:a:deep\n        └── root:org:b\n\n"
    );
    // -w picks another starting point without switching.
    assert_eq!(
        ok(&shard, kc, &["ws", "tree", "-w", "org:a"]),
        ".\n└── a\n    └── deep\n\n"
    );
    assert!(ok(&shard, kc, &["ws", "."]).contains("'root'"));

    // --wide: phases in tabwriter columns, `-` for the starting workspace's own Workspace phase, and
    // no extra empty line.
    ok(&shard, kc, &["ws", "org"]);
    assert_eq!(
        ok(&shard, kc, &["ws", "tree", "--wide"]),
        ".\n└── org           ws=-      lc=Ready\n    ├── a         ws=Ready  lc=Ready\n    │   └── deep  ws=Ready  lc=Ready\n    └── b         ws=Ready  lc=Ready\n"
    );

    let err = fails(&shard, kc, &["ws", "tree", "-i"]);
    assert!(
        err.contains("interactive mode (-i) is not supported"),
        "{err}"
    );
    let err = fails(&shard, kc, &["ws", "-i", "org"]);
    assert!(
        err.contains("interactive mode does not accept arguments"),
        "{err}"
    );
}

fn multi_file_kubeconfig(store: StoreKind) {
    let shard = Shard::start(store);
    // Split the admin kubeconfig: contexts and current-context in `a`, clusters and users in `b`, and an
    // unrelated `c` that nothing should touch.
    let admin = yaml(&shard.kubeconfig());
    let a = shard.dir().join("a.kubeconfig");
    let b = shard.dir().join("b.kubeconfig");
    let c = shard.dir().join("c.kubeconfig");
    let header = |v: &mut serde_json::Map<String, Value>| {
        v.insert("apiVersion".into(), json!("v1"));
        v.insert("kind".into(), json!("Config"));
    };
    let mut doc_a = serde_json::Map::new();
    header(&mut doc_a);
    doc_a.insert("contexts".into(), admin["contexts"].clone());
    doc_a.insert("current-context".into(), admin["current-context"].clone());
    let mut doc_b = serde_json::Map::new();
    header(&mut doc_b);
    doc_b.insert("clusters".into(), admin["clusters"].clone());
    doc_b.insert("users".into(), admin["users"].clone());
    let write = |p: &Path, v: serde_json::Map<String, Value>| {
        std::fs::write(p, serde_saphyr::to_string(&Value::Object(v)).expect("YAML"))
            .expect("writing a kubeconfig")
    };
    write(&a, doc_a);
    write(&b, doc_b);
    let c_text = "apiVersion: v1\nkind: Config\nclusters:\n- name: elsewhere\n  cluster:\n    server: https://example.invalid\n";
    std::fs::write(&c, c_text).expect("writing c");
    let list = format!("{}:{}:{}", a.display(), b.display(), c.display());
    let kc = list.as_str();

    assert_eq!(
        ok(&shard, kc, &["ws", "."]),
        "Current workspace is 'root'.\n"
    );
    let out = ok(&shard, kc, &["create", "workspace", "org", "--enter"]);
    assert!(
        out.ends_with("Current workspace is 'root:org' (type root:organization).\n"),
        "{out}"
    );

    // The new context went where the copied context lives (a), with current-context; the new cluster
    // where the copied cluster lives (b); c is untouched.
    let (da, db) = (yaml(&a), yaml(&b));
    assert_eq!(da["current-context"], "workspace.kcp.io/current", "{da}");
    let current = entry(&da, "contexts", "workspace.kcp.io/current")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        current["context"]["cluster"], "workspace.kcp.io/current",
        "{da}"
    );
    assert_eq!(current["context"]["user"], "kcp-admin", "{da}");
    let previous = entry(&da, "contexts", "workspace.kcp.io/previous")
        .cloned()
        .unwrap_or_default();
    assert_eq!(previous["context"]["cluster"], "root", "{da}");
    assert!(da.get("clusters").is_none(), "{da}");
    assert_eq!(
        server_of(&db, "workspace.kcp.io/current"),
        format!("{}/clusters/root:org", shard.base_url())
    );
    assert!(
        entry(&db, "contexts", "workspace.kcp.io/current").is_none(),
        "{db}"
    );
    assert!(entry(&db, "users", "kcp-admin").is_some(), "{db}");
    assert_eq!(std::fs::read_to_string(&c).unwrap_or_default(), c_text);
    // client-go's `<file>.lock` files were held while writing, and released.
    for f in [&a, &b, &c] {
        assert!(
            !Path::new(&format!("{}.lock", f.display())).exists(),
            "{}",
            f.display()
        );
    }

    // Plain kubectl reads the same merged result.
    assert_eq!(
        ok(&shard, kc, &["get", "namespaces", "-o", "name"]).trim(),
        "namespace/default\nnamespace/kube-system"
    );
    assert_eq!(
        ok(&shard, kc, &["config", "current-context"]).trim(),
        "workspace.kcp.io/current"
    );

    // Back and forth across the files.
    assert_eq!(
        ok(&shard, kc, &["ws", "-"]),
        "Current workspace is 'root'.\n"
    );
    assert_eq!(
        ok(&shard, kc, &["ws", "-"]),
        "Current workspace is 'root:org'.\n"
    );
    // The first `-` kept root:org's cluster as `previous`, in b where it was copied from; the context
    // switched away from by the second is the original one, pointing at `root`.
    assert_eq!(
        server_of(&yaml(&b), "workspace.kcp.io/previous"),
        format!("{}/clusters/root:org", shard.base_url())
    );
    let previous = entry(&yaml(&a), "contexts", "workspace.kcp.io/previous")
        .cloned()
        .unwrap_or_default();
    assert_eq!(previous["context"]["cluster"], "root", "{previous}");

    // create-context splits the same way.
    let out = ok(&shard, kc, &["ws", "create-context"]);
    assert_eq!(out, "Created context \"root:org\" and switched to it.\n");
    assert!(entry(&yaml(&a), "contexts", "root:org").is_some());
    assert_eq!(
        server_of(&yaml(&b), "root:org"),
        format!("{}/clusters/root:org", shard.base_url())
    );
    assert_eq!(ok(&shard, kc, &["ws", "current", "--short"]), "root:org\n");

    // --context and --server change where requests go, not the kubeconfig.
    assert_eq!(
        ok(&shard, kc, &["ws", "--context", "root", "."]),
        "Current workspace is 'root'.\n"
    );
    let server = format!("{}/clusters/root", shard.base_url());
    assert_eq!(
        ok(&shard, kc, &["ws", "tree", "--server", &server]),
        ".\n└── root\n    └── org\n\n"
    );
    let err = fails(&shard, kc, &["ws", "--context", "nope", "."]);
    assert!(
        err.contains("context was not found for specified context: nope"),
        "{err}"
    );
    assert_eq!(yaml(&a)["current-context"], "root:org");

    // --kubeconfig: that file alone, whatever $KUBECONFIG says.
    let single = copy_kubeconfig(&shard, "single.kubeconfig");
    let single_str = single.to_str().unwrap_or_default();
    let out = ok(
        &shard,
        "/nonexistent/kubeconfig",
        &["ws", "--kubeconfig", single_str, "org"],
    );
    assert_eq!(
        out,
        "Current workspace is 'root:org' (type root:organization).\n"
    );
    assert_eq!(yaml(&single)["current-context"], "workspace.kcp.io/current");
    let err = fails(
        &shard,
        kc,
        &["ws", "--kubeconfig", "/nonexistent/kubeconfig", "."],
    );
    assert!(err.contains("/nonexistent/kubeconfig"), "{err}");
}
