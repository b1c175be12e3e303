//! kcp's quickstart for APIs as a service with its tools, on both stores: apigen turns a CRD kept in
//! git into an APIResourceSchema and an APIExport, the provider applies them in its workspace,
//! `kubectl kcp bind apiexport` binds them in a consumer workspace (and answers permission claims
//! with the export's own), `kubectl kcp claims` lists and answers claims, `kubectl kcp crd
//! snapshot` gives a schema the server accepts; malformed references fail.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use kcp_e2e::{Shard, StoreKind, json_str, on_both_stores, plugin_dir};
use serde_json::Value;

on_both_stores!(quickstart_with_the_cli);

const COWBOYS_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: cowboys.wildwest.dev
spec:
  group: wildwest.dev
  names:
    kind: Cowboy
    listKind: CowboyList
    plural: cowboys
    singular: cowboy
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Intent
      type: string
      jsonPath: .spec.intent
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              intent:
                type: string
          status:
            type: object
            properties:
              result:
                type: string
"#;

const COWBOY: &str = "apiVersion: wildwest.dev/v1alpha1\nkind: Cowboy\nmetadata:\n  name: billy\n  namespace: default\nspec:\n  intent: ride-west\n";

/// kubectl (or `program` from the plugin directory) with the plugins on `PATH`, `$KUBECONFIG` set
/// to `kubeconfig` and `$HOME` inside the shard's directory.
fn command(shard: &Shard, kubeconfig: &Path, program: &str, args: &[&str]) -> Command {
    let path = format!(
        "{}:{}",
        plugin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new(program);
    command
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", shard.dir())
        .env("PATH", path);
    command
}

fn run(shard: &Shard, kubeconfig: &Path, args: &[&str]) -> Output {
    command(shard, kubeconfig, "kubectl", args)
        .output()
        .expect("running kubectl")
}

/// Runs kubectl and expects success: stdout.
fn ok(shard: &Shard, kubeconfig: &Path, args: &[&str]) -> String {
    let out = run(shard, kubeconfig, args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "kubectl {}: {}\n{stdout}\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr),
        shard.logs()
    );
    stdout
}

/// Runs kubectl and expects failure: stderr.
fn fails(shard: &Shard, kubeconfig: &Path, args: &[&str]) -> String {
    let out = run(shard, kubeconfig, args);
    assert!(
        !out.status.success(),
        "kubectl {} should fail:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(shard: &Shard, kubeconfig: &Path, args: &[&str]) -> Value {
    let out = ok(shard, kubeconfig, args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("kubectl {args:?}: {e}\n{out}"))
}

/// `git <args>` in `dir`, with an identity of its own; stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=kcp-e2e",
            "-c",
            "user.email=kcp-e2e@example.com",
        ])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("running git (is it installed?)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn yaml_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

fn quickstart_with_the_cli(store: StoreKind) {
    let shard = Shard::start(store);
    // The plugins rewrite the kubeconfig: work on a copy.
    let kc = shard.dir().join("cli.kubeconfig");
    std::fs::copy(shard.kubeconfig(), &kc).expect("copying the kubeconfig");
    let kc = kc.as_path();

    // The provider's CRD, kept in git as apigen wants.
    let crds = shard.dir().join("crds");
    std::fs::create_dir_all(&crds).expect("creating the CRD directory");
    let crd_file = crds.join("wildwest.dev_cowboys.yaml");
    std::fs::write(&crd_file, COWBOYS_CRD).expect("writing the CRD");
    git(&crds, &["init", "-q"]);
    git(&crds, &["add", "."]);
    git(&crds, &["commit", "-q", "-m", "cowboys"]);
    let head = git(&crds, &["rev-parse", "--short", "HEAD"]);

    // apigen: one schema named after today and the commit, one export for the group.
    let manifests = shard.dir().join("manifests");
    let apigen = plugin_dir().join("apigen");
    let out = Command::new(&apigen)
        .arg("--input-dir")
        .arg(&crds)
        .arg("--output-dir")
        .arg(&manifests)
        .output()
        .expect("running apigen");
    assert!(
        out.status.success(),
        "apigen: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut files: Vec<String> = std::fs::read_dir(&manifests)
        .expect("listing apigen's output")
        .map(|e| {
            e.expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "apiexport-wildwest.dev.yaml",
            "apiresourceschema-cowboys.wildwest.dev.yaml"
        ]
    );
    let schema = yaml_file(&manifests.join("apiresourceschema-cowboys.wildwest.dev.yaml"));
    let schema_name = json_str(&schema, "/metadata/name").to_owned();
    let prefix = schema_name
        .strip_suffix(".cowboys.wildwest.dev")
        .unwrap_or_else(|| panic!("schema name {schema_name}"));
    let (date, commit) = prefix
        .strip_prefix('v')
        .and_then(|p| p.split_once('-'))
        .unwrap_or_else(|| panic!("prefix {prefix}"));
    assert!(
        date.len() == 6 && date.chars().all(|c| c.is_ascii_digit()),
        "{prefix}"
    );
    assert_eq!(commit, head);
    let export = yaml_file(&manifests.join("apiexport-wildwest.dev.yaml"));
    assert_eq!(json_str(&export, "/apiVersion"), "apis.kcp.io/v1alpha2");
    assert_eq!(
        export["spec"]["resources"],
        serde_json::json!([{"name": "cowboys", "group": "wildwest.dev", "schema": schema_name,
                            "storage": {"crd": {}}}])
    );

    // The provider publishes them in root:wildwest:cowboys-service.
    let out = ok(&shard, kc, &["create", "workspace", "wildwest", "--enter"]);
    assert!(out.contains("is ready to use"), "{out}");
    let out = ok(
        &shard,
        kc,
        &["create", "workspace", "cowboys-service", "--enter"],
    );
    assert!(out.contains("is ready to use"), "{out}");
    let out = ok(&shard, kc, &["ws", "."]);
    assert!(out.contains("'root:wildwest:cowboys-service'"), "{out}");
    ok(
        &shard,
        kc,
        &["apply", "-f", manifests.to_str().unwrap_or_default()],
    );
    shard.eventually("the export's identity", || {
        let export = json(
            &shard,
            kc,
            &["get", "apiexport", "wildwest.dev", "-o", "json"],
        );
        (!json_str(&export, "/status/identityHash").is_empty()).then_some(())
    });

    // A consumer binds it with the plugin: kcp's texts, then the API is there.
    ok(&shard, kc, &["ws", ":root"]);
    ok(&shard, kc, &["create", "workspace", "consumer", "--enter"]);
    let out = ok(
        &shard,
        kc,
        &[
            "kcp",
            "bind",
            "apiexport",
            "root:wildwest:cowboys-service:wildwest.dev",
            "--name",
            "cowboys",
            "--timeout",
            "2m",
        ],
    );
    assert_eq!(
        out,
        "apibinding cowboys created. Waiting to successfully bind ...\ncowboys created and bound.\n"
    );
    let binding = json(
        &shard,
        kc,
        &[
            "get",
            "apibindings.v1alpha2.apis.kcp.io",
            "cowboys",
            "-o",
            "json",
        ],
    );
    assert_eq!(json_str(&binding, "/status/phase"), "Bound", "{binding}");
    assert_eq!(
        json_str(&binding, "/spec/reference/export/path"),
        "root:wildwest:cowboys-service"
    );
    assert_eq!(
        binding["status"]["boundResources"][0]["schema"]["name"], schema_name,
        "{binding}"
    );
    let resources = shard.eventually("cowboys in discovery", || {
        let out = ok(
            &shard,
            kc,
            &["api-resources", "--api-group", "wildwest.dev"],
        );
        out.contains("cowboys").then_some(out)
    });
    assert!(resources.contains("wildwest.dev/v1alpha1"), "{resources}");
    assert!(resources.contains("Cowboy"), "{resources}");
    let cowboy = shard.write_file("cowboy.yaml", COWBOY);
    ok(
        &shard,
        kc,
        &["create", "-f", cowboy.to_str().unwrap_or_default()],
    );
    let listed = ok(&shard, kc, &["get", "cowboys", "-n", "default"]);
    assert!(
        listed.contains("billy") && listed.contains("INTENT") && listed.contains("ride-west"),
        "{listed}"
    );

    // Bad references fail with a message and a non-zero exit, and bind nothing.
    let err = fails(&shard, kc, &["kcp", "bind", "apiexport", "wildwest.dev"]);
    assert!(
        err.contains(
            "error: fully qualified reference to workspace where APIExport exists is required"
        ),
        "{err}"
    );
    let err = fails(
        &shard,
        kc,
        &["kcp", "bind", "apiexport", "root:wildwest:cowboys-service:"],
    );
    assert!(
        err.contains("error: the APIExport name is missing"),
        "{err}"
    );
    let err = fails(
        &shard,
        kc,
        &[
            "kcp",
            "bind",
            "apiexport",
            "root:wildwest:cowboys-service:nope",
        ],
    );
    assert!(
        err.contains("error: failed to create APIBinding: ")
            && err.contains("no permission to bind to export root:wildwest:cowboys-service:nope"),
        "{err}"
    );
    let err = fails(
        &shard,
        kc,
        &[
            "kcp",
            "bind",
            "apiexport",
            "root:x:e",
            "--accept-all-permission-claims",
            "--reject-all-permission-claims",
        ],
    );
    assert!(
        err.contains("error: cannot use both --accept-all-permission-claims and --reject-all-permission-claims"),
        "{err}"
    );
    let bindings = ok(&shard, kc, &["get", "apibindings", "-o", "name"]);
    assert_eq!(
        bindings.lines().filter(|l| l.contains("cowboys")).count(),
        1,
        "{bindings}"
    );

    // The export claims config maps; a second consumer accepts the claim, which carries the
    // export's verbs, then rejects it with `claims reject`.
    ok(&shard, kc, &["ws", ":root:wildwest:cowboys-service"]);
    ok(
        &shard,
        kc,
        &[
            "patch",
            "apiexports.v1alpha2.apis.kcp.io",
            "wildwest.dev",
            "--type=merge",
            "-p",
            r#"{"spec":{"permissionClaims":[{"resource":"configmaps","verbs":["get","list"]}]}}"#,
        ],
    );
    ok(&shard, kc, &["ws", ":root"]);
    ok(&shard, kc, &["create", "workspace", "consumer2", "--enter"]);
    let err = fails(
        &shard,
        kc,
        &[
            "kcp",
            "bind",
            "apiexport",
            "root:wildwest:cowboys-service:wildwest.dev",
            "--accept-permission-claim",
            "secrets.core",
        ],
    );
    assert!(
        err.contains("error: APIExport root:wildwest:cowboys-service:wildwest.dev has no permission claim for secrets"),
        "{err}"
    );
    let out = ok(
        &shard,
        kc,
        &[
            "kcp",
            "bind",
            "apiexport",
            "root:wildwest:cowboys-service:wildwest.dev",
            "--name",
            "cowboys",
            "--accept-permission-claim",
            "configmaps.core",
            "--timeout=2m",
        ],
    );
    assert!(out.ends_with("cowboys created and bound.\n"), "{out}");
    let binding = json(
        &shard,
        kc,
        &[
            "get",
            "apibindings.v1alpha2.apis.kcp.io",
            "cowboys",
            "-o",
            "json",
        ],
    );
    assert_eq!(
        binding["spec"]["permissionClaims"],
        serde_json::json!([{"group": "", "identityHash": "", "resource": "configmaps",
                            "verbs": ["get", "list"], "selector": {"matchAll": true},
                            "state": "Accepted"}]),
        "{binding}"
    );
    let table = ok(
        &shard,
        kc,
        &["kcp", "claims", "get", "apibinding", "cowboys"],
    );
    assert_eq!(
        table,
        "APIBINDING   GROUP-RESOURCE   VERBS      STATUS\ncowboys      configmaps       get,list   Accepted\n"
    );
    let out = ok(
        &shard,
        kc,
        &[
            "kcp",
            "claims",
            "reject",
            "apibinding",
            "cowboys",
            "--resource",
            "configmaps",
        ],
    );
    assert_eq!(
        out,
        "claim \"configmaps\" on APIBinding \"cowboys\" is rejected\n"
    );
    let table = ok(&shard, kc, &["kcp", "claims", "get", "apibinding"]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("cowboys") && l.ends_with("Rejected")),
        "{table}"
    );
    let err = fails(
        &shard,
        kc,
        &[
            "kcp",
            "claims",
            "accept",
            "cowboys",
            "--resource",
            "secrets",
        ],
    );
    assert!(err.contains("error: no permission claim"), "{err}");

    // `crd snapshot` gives a schema the server accepts, named with the prefix.
    let snapshot = ok(
        &shard,
        kc,
        &[
            "kcp",
            "crd",
            "snapshot",
            "-f",
            crd_file.to_str().unwrap_or_default(),
            "--prefix",
            "today",
        ],
    );
    assert!(snapshot.ends_with("---\n"), "{snapshot}");
    let snapshot_file = shard.write_file("snapshot.yaml", &snapshot);
    ok(&shard, kc, &["ws", ":root:wildwest:cowboys-service"]);
    ok(
        &shard,
        kc,
        &["apply", "-f", snapshot_file.to_str().unwrap_or_default()],
    );
    let applied = json(
        &shard,
        kc,
        &[
            "get",
            "apiresourceschema",
            "today.cowboys.wildwest.dev",
            "-o",
            "json",
        ],
    );
    assert_eq!(json_str(&applied, "/spec/group"), "wildwest.dev");
    assert_eq!(json_str(&applied, "/spec/names/listKind"), "CowboyList");
    assert_eq!(
        applied["spec"]["versions"][0]["additionalPrinterColumns"][0]["jsonPath"],
        ".spec.intent"
    );
    // From stdin, as JSON.
    let mut child = command(
        &shard,
        kc,
        "kubectl",
        &[
            "kcp", "crd", "snapshot", "-f", "-", "--prefix", "json", "-o", "json",
        ],
    )
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawning kubectl kcp crd snapshot");
    {
        use std::io::Write as _;
        let mut stdin = child.stdin.take().expect("the plugin's stdin");
        stdin
            .write_all(COWBOYS_CRD.as_bytes())
            .expect("writing the CRD to the plugin");
    }
    let out = child.wait_with_output().expect("waiting for the plugin");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.split("\n---\n").next().unwrap_or_default();
    let parsed: Value = serde_json::from_str(first).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(
        json_str(&parsed, "/metadata/name"),
        "json.cowboys.wildwest.dev"
    );
    let err = fails(
        &shard,
        kc,
        &[
            "kcp",
            "crd",
            "snapshot",
            "-f",
            crd_file.to_str().unwrap_or_default(),
        ],
    );
    assert!(err.contains("error: --prefix is required"), "{err}");
}
