//! Runs the built plugin binaries (directly and through kubectl's plugin lookup) against a fake kcp server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod fake;

use std::path::{Path, PathBuf};
use std::process::Output;

use fake::{Fake, HOME_LC, TOKEN};

const WS: &str = env!("CARGO_BIN_EXE_kubectl-ws");
const CREATE: &str = env!("CARGO_BIN_EXE_kubectl-create_workspace");

struct Setup {
    fake: Fake,
    dir: tempfile::TempDir,
}

impl Setup {
    async fn new(path: &str) -> Setup {
        Self::with(Fake::start().await, path)
    }

    fn with(fake: Fake, path: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), &fake.ca_pem).unwrap();
        // With a client certificate the user authenticates by it alone; else by token.
        let user = match &fake.client_cert {
            Some((cert, key)) => {
                std::fs::write(dir.path().join("client.crt"), cert).unwrap();
                std::fs::write(dir.path().join("client.key"), key).unwrap();
                format!(
                    "client-certificate: {}\n    client-key: {}",
                    dir.path().join("client.crt").display(),
                    dir.path().join("client.key").display()
                )
            }
            None => format!("token: {TOKEN}"),
        };
        let kubeconfig = format!(
            r#"apiVersion: v1
kind: Config
clusters:
- name: kcp
  cluster:
    server: {base}/clusters/{path}
    certificate-authority: {ca}
- name: unrelated
  cluster:
    server: https://example.invalid:6443
contexts:
- name: admin
  context:
    cluster: kcp
    user: admin
- name: unrelated
  context:
    cluster: unrelated
    user: admin
current-context: admin
users:
- name: admin
  user:
    {user}
preferences: {{}}
"#,
            base = fake.base,
            ca = dir.path().join("ca.pem").display(),
        );
        std::fs::write(dir.path().join("config"), kubeconfig).unwrap();
        Setup { fake, dir }
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("config")
    }

    async fn run(&self, bin: &str, args: &[&str]) -> Output {
        tokio::process::Command::new(bin)
            .args(args)
            .env("KUBECONFIG", self.kubeconfig())
            .env("HOME", self.dir.path())
            .output()
            .await
            .unwrap()
    }

    /// Runs and expects success; returns (stdout, stderr).
    async fn ok(&self, bin: &str, args: &[&str]) -> (String, String) {
        let out = self.run(bin, args).await;
        let (so, se) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(
            out.status.success(),
            "{bin} {args:?} failed:\nstdout: {so}\nstderr: {se}"
        );
        (so, se)
    }

    async fn fails(&self, bin: &str, args: &[&str]) -> String {
        let out = self.run(bin, args).await;
        assert!(!out.status.success(), "{bin} {args:?} should fail");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    fn config_text(&self) -> String {
        std::fs::read_to_string(self.kubeconfig()).unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn current_and_navigation() {
    let s = Setup::new("root:org").await;
    assert_eq!(
        s.ok(WS, &["."]).await.0,
        "Current workspace is 'root:org'.\n"
    );
    assert_eq!(
        s.ok(WS, &["current"]).await.0,
        "Current workspace is 'root:org'.\n"
    );
    assert_eq!(s.ok(WS, &["current", "--short"]).await.0, "root:org\n");
    assert_eq!(s.ok(WS, &[".", "--short"]).await.0, "root:org\n");
    // klog's flags, as kcp's plugins take them (kubectl users pass -v by habit).
    for flags in [
        &["-v=4"][..],
        &["-v", "6"],
        &["--v=2", "--logtostderr"],
        &["--vmodule=x=2"],
    ] {
        let args: Vec<&str> = flags.iter().copied().chain([".", "--short"]).collect();
        assert_eq!(s.ok(WS, &args).await.0, "root:org\n", "{flags:?}");
    }
    let kc = s.kubeconfig().display().to_string();
    assert_eq!(
        s.ok(WS, &["--kubeconfig", &kc, "current", "--short"])
            .await
            .0,
        "root:org\n"
    );

    assert_eq!(
        s.ok(WS, &["team"]).await.0,
        "Current workspace is 'root:org:team' (type root:universal).\n"
    );
    let cfg = s.config_text();
    assert!(
        cfg.contains("workspace.kcp.io/current") && cfg.contains("workspace.kcp.io/previous"),
        "{cfg}"
    );
    assert!(
        cfg.contains("https://example.invalid:6443"),
        "unrelated entries kept: {cfg}"
    );
    assert!(
        cfg.contains(&format!("{}/clusters/root:org:team", s.fake.base)),
        "{cfg}"
    );

    assert_eq!(
        s.ok(WS, &["-"]).await.0,
        "Current workspace is 'root:org'.\n"
    );
    assert_eq!(
        s.ok(WS, &["-"]).await.0,
        "Current workspace is 'root:org:team'.\n"
    );
    assert_eq!(
        s.ok(WS, &[".."]).await.0,
        "Current workspace is 'root:org' (type root:organization).\n"
    );
    assert_eq!(
        s.ok(WS, &["use", "team"]).await.0,
        "Current workspace is 'root:org:team' (type root:universal).\n"
    );
    assert_eq!(
        s.ok(WS, &["..:.."]).await.0,
        "Current workspace is 'root' (type root).\n"
    );
    assert_eq!(
        s.ok(WS, &["cd", ":root:org:team"]).await.0,
        "Current workspace is 'root:org:team' (type root:universal).\n"
    );
    assert_eq!(s.ok(WS, &[":"]).await.0, "Current workspace is 'root'.\n");
    let (out, err) = s.ok(WS, &["root:other"]).await;
    assert_eq!(
        out,
        "Current workspace is 'root:other' (type root:universal).\n"
    );
    assert!(
        err.contains("Note: Using 'root:' to define an absolute path is no longer supported."),
        "{err}"
    );

    let err = s.fails(WS, &["nope"]).await;
    assert_eq!(err, "Error: workspace \"root:other:nope\" not found\n");
    let err = s.fails(WS, &["Bad_Name"]).await;
    assert_eq!(err, "Error: invalid workspace path: Bad_Name\n");
    let err = s.fails(WS, &[":root:missing:deeper"]).await;
    assert_eq!(
        err,
        "Error: access to workspace \"root:missing:deeper\" denied\n"
    );
    // Failed switches leave the kubeconfig where it was.
    assert_eq!(s.ok(WS, &[".", "--short"]).await.0, "root:other\n");
    s.ok(WS, &[":"]).await;
    assert_eq!(
        s.fails(WS, &[".."]).await,
        "Error: invalid workspace path: ..\n"
    );
    assert_eq!(
        s.fails(WS, &["..:.."]).await,
        "Error: cannot go up from root\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_waits_through_429() {
    let s = Setup::new("root").await;
    let (out, err) = s.ok(WS, &[]).await;
    assert_eq!(out, format!("Current workspace is '{HOME_LC}'.\n"));
    assert!(
        err.contains("Note: 'kubectl ws' now matches 'cd' semantics"),
        "{err}"
    );
    let homes = s
        .fake
        .requests()
        .iter()
        .filter(|r| r.ends_with("/workspaces/~"))
        .count();
    assert_eq!(homes, 2, "one 429, then the answer");
    assert_eq!(
        s.ok(WS, &["~:proj"]).await.0,
        format!("Current workspace is '{HOME_LC}:proj' (type root:universal).\n")
    );
    assert_eq!(
        s.ok(WS, &["~"]).await.0,
        format!("Current workspace is '{HOME_LC}'.\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tree() {
    let s = Setup::new("root").await;
    assert_eq!(
        s.ok(WS, &["tree"]).await.0,
        ".\n└── root\n    ├── org\n    │   └── team\n    └── other\n\n"
    );
    assert_eq!(
        s.ok(WS, &["tree", "--full"]).await.0,
        ".\n└── root\n    ├── root:org\n    │   └── root:org:team\n    └── root:other\n\n"
    );
}

/// kcp's commands: a wrong number of arguments prints the help and succeeds, leaving the
/// kubeconfig alone; the create commands fail as cobra's `ExactArgs` does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argument_counts() {
    let s = Setup::new("root:org").await;
    let before = s.config_text();
    for args in [
        &["a", "b"][..],
        &["tree", "x"],
        &["current", "x"],
        &["create-context", "a", "b"],
    ] {
        let (out, err) = s.ok(WS, args).await;
        assert!(
            out.contains("Usage: kubectl ws [OPTIONS]"),
            "{args:?}: {out}"
        );
        assert_eq!(err, "", "{args:?}");
    }
    for args in [&["use"][..], &["use", "a", "b"]] {
        let (out, _) = s.ok(WS, args).await;
        assert!(out.contains("Usage: kubectl ws use"), "{args:?}: {out}");
    }
    assert_eq!(s.config_text(), before);
    for (args, received) in [(&[][..], 0), (&["a", "b"], 2)] {
        let err = s.fails(CREATE, args).await;
        assert!(
            err.ends_with(&format!("Error: accepts 1 arg(s), received {received}\n")),
            "{args:?}: {err}"
        );
    }
    let err = s.fails(WS, &["create"]).await;
    assert!(
        err.ends_with("Error: accepts 1 arg(s), received 0\n"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create() {
    let s = Setup::new("root:org").await;
    let (out, _) = s.ok(CREATE, &["new", "--type", "root:universal"]).await;
    assert_eq!(
        out,
        "Workspace \"new\" (type root:universal) created. Waiting for it to be ready...\nWorkspace \"new\" (type root:universal) is ready to use.\n"
    );
    let err = s.fails(CREATE, &["new"]).await;
    assert_eq!(
        err,
        "Error: workspaces.tenancy.kcp.io \"new\" already exists\n"
    );
    let (out, _) = s
        .ok(
            CREATE,
            &[
                "new",
                "--ignore-existing",
                "--type",
                "root:universal",
                "--enter",
            ],
        )
        .await;
    assert_eq!(
        out,
        "Workspace \"new\" (type root:universal) already exists.\nWorkspace \"new\" (type root:universal) is ready to use.\nCurrent workspace is 'root:org:new' (type root:universal).\n"
    );
    let err = s
        .fails(CREATE, &["x", "--ignore-existing", "--type", "universal"])
        .await;
    assert_eq!(
        err,
        "Error: --ignore-existing must not be used with non-absolute type path\n"
    );

    // The deprecated spelling works and says so.
    let (out, err) = s.ok(WS, &["create", "child", "--enter"]).await;
    assert!(err.contains("Command \"create\" is deprecated"), "{err}");
    assert!(
        out.ends_with("Current workspace is 'root:org:new:child' (type root:universal).\n"),
        "{out}"
    );
}

/// kubectl finds the plugins on PATH: `kubectl ws`, `kubectl create workspace`, `kubectl create-workspace`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_kubectl() {
    if std::process::Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        eprintln!("kubectl not installed; skipping");
        return;
    }
    let s = Setup::new("root:org").await;
    let bin_dir = Path::new(WS).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let kubectl = |args: &[&str]| {
        let mut c = tokio::process::Command::new("kubectl");
        c.args(args)
            .env("PATH", &path)
            .env("KUBECONFIG", s.kubeconfig())
            .env("HOME", s.dir.path());
        c
    };
    let out = kubectl(&["ws", "."]).output().await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Current workspace is 'root:org'.\n"
    );
    let out = kubectl(&["create", "workspace", "viakubectl", "--enter"])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.ends_with("Current workspace is 'root:org:viakubectl' (type root:universal).\n"),
        "{stdout}"
    );
    let out = kubectl(&["create-workspace", "hyphenated"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kubectl(&["ws", ".."]).output().await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Current workspace is 'root:org' (type root:organization).\n"
    );
    // kubectl itself uses the rewritten kubeconfig: the current context is the plugin's.
    let out = kubectl(&["config", "current-context"])
        .output()
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "workspace.kcp.io/current\n"
    );
}

/// The kubeconfig's client certificate and key authenticate the plugin's requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificate() {
    let s = Setup::with(Fake::start_mtls().await, "root:org");
    assert_eq!(
        s.ok(WS, &["team"]).await.0,
        "Current workspace is 'root:org:team' (type root:universal).\n"
    );
    assert_eq!(s.ok(WS, &["tree"]).await.0, ".\n└── team\n\n");
}

/// kcp's warnings after switching into a workspace whose APIBinding leaves an exported claim unanswered;
/// the switch itself succeeds and stdout is unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_claim_warnings() {
    let s = Setup::new("root:org").await;
    s.fake.add_binding(
        "root:org:team",
        serde_json::json!({
            "metadata": {"name": "cowboys"},
            "spec": {"permissionClaims": [
                {"resource": "configmaps", "verbs": ["get"], "state": "Accepted"},
            ]},
            "status": {"exportPermissionClaims": [
                {"resource": "configmaps", "verbs": ["get"]},
                {"resource": "secrets", "verbs": ["get"]},
            ]},
        }),
    );
    let (out, err) = s.ok(WS, &["team"]).await;
    assert_eq!(
        out,
        "Current workspace is 'root:org:team' (type root:universal).\n"
    );
    assert_eq!(
        err,
        "Warning: claim for secrets exported but not specified on APIBinding cowboys\nAdd this claim to the APIBinding's Spec.\n\
         Warning: claim for secrets specified on APIBinding cowboys but not accepted or rejected.\n\
         Warning: allowed verbs () on claim for secrets on APIBinding cowboys do not match expected verbs ().\n"
    );
    // Back in a workspace without the API: nothing to say.
    let (out, err) = s.ok(WS, &["-"]).await;
    assert_eq!(out, "Current workspace is 'root:org'.\n");
    assert_eq!(err, "");
}
