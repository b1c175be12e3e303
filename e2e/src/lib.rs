//! Harness for end-to-end tests: starts the real `kcp-shard` binary on loopback (on the embedded store
//! or on a throwaway etcd), and drives it with the real `kubectl`, `curl` and the `kube` crate.
//!
//! ```no_run
//! use kcp_e2e::{Shard, StoreKind};
//! let shard = Shard::start(StoreKind::Embedded);
//! let out = shard.kubectl_ok(&["get", "ns"]);
//! assert!(out.contains("default"));
//! ```
//!
//! Every scenario that exercises API behaviour is written once as a function taking a [`StoreKind`] and
//! run on both stores through [`on_both_stores!`].
//!
//! The binary is found next to the test executable (`target/<profile>/kcp-shard`), or at
//! `$KCP_SHARD_BIN`; when it is missing or older than its sources it is built once with
//! `cargo build -p kcp-shard`.
//! Nothing here asserts wall-clock times: deadlines only turn a hang into a failure with a message.

pub mod cowboys;
pub mod kcp_vw;
pub mod python;
pub mod tenancy;

pub use kcp_vw::VirtualWorkspaces;

use std::fmt;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use kcp_store::testing::EtcdProcess;
use serde::Deserialize;

/// How long a shard may take to write its kubeconfig and answer `/readyz`.
pub(crate) const STARTUP_DEADLINE: Duration = Duration::from_secs(90);
/// How long a shard may take to exit after SIGTERM before it is killed.
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(20);
/// Generous bound for "eventually" checks (a watch event arriving, a controller acting).
pub const EVENTUALLY: Duration = Duration::from_secs(30);
/// How much of a shard's log a failing test prints.
pub const LOG_TAIL_LINES: usize = 60;

/// Which store the shard runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// The embedded (redb) store under the root directory: no `--etcd-servers`.
    Embedded,
    /// A throwaway etcd started for this shard (`kcp_store::testing::EtcdProcess`).
    Etcd,
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreKind::Embedded => f.write_str("embedded"),
            StoreKind::Etcd => f.write_str("etcd"),
        }
    }
}

/// Runs each named scenario (`fn(StoreKind)`) on both stores: generates a module per scenario with the
/// tests `embedded` and `etcd`. `async` scenarios (`async fn(StoreKind)`) run on a multi-threaded tokio
/// runtime.
///
/// ```ignore
/// fn creates_configmaps(store: StoreKind) { /* ... */ }
/// async fn watches(store: StoreKind) { /* ... */ }
/// kcp_e2e::on_both_stores!(creates_configmaps);
/// kcp_e2e::on_both_stores!(async watches);
/// ```
#[macro_export]
macro_rules! on_both_stores {
    (async $($scenario:ident),+ $(,)?) => {
        $(
            mod $scenario {
                #[test]
                fn embedded() {
                    $crate::block_on(super::$scenario($crate::StoreKind::Embedded))
                }
                #[test]
                fn etcd() {
                    $crate::block_on(super::$scenario($crate::StoreKind::Etcd))
                }
            }
        )+
    };
    ($($scenario:ident),+ $(,)?) => {
        $(
            mod $scenario {
                #[test]
                fn embedded() {
                    super::$scenario($crate::StoreKind::Embedded)
                }
                #[test]
                fn etcd() {
                    super::$scenario($crate::StoreKind::Etcd)
                }
            }
        )+
    };
}

/// Runs a future to completion on a fresh multi-threaded runtime (what `#[tokio::test]` would do).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    install_crypto_provider();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("building a tokio runtime")
        .block_on(future)
}

/// rustls needs to be told which crypto provider to use when more than one is compiled in.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A running `kcp-shard` process with its own temporary directory, stopped (SIGTERM, then SIGKILL) on
/// drop. When the test is panicking, the shard's log is printed on drop.
pub struct Shard {
    store: StoreKind,
    dir: tempfile::TempDir,
    child: Option<Child>,
    /// `https://127.0.0.1:PORT`, read from the kubeconfig of the current run.
    base_url: String,
    /// How many times the process was started (each run logs to its own file).
    runs: u32,
    /// Flags added to every `kcp-shard start` of this shard (e.g. `--token-auth-file`).
    extra_args: Vec<std::ffi::OsString>,
    /// A kcp-vw beside the shard, serving its virtual workspaces.
    vw: Option<kcp_vw::KcpVw>,
    // Dropped after the shard (fields drop in declaration order... but `Drop for Shard` stops the
    // process first anyway).
    etcd: Option<EtcdProcess>,
}

/// The parts of `admin.kubeconfig` the harness reads.
#[derive(Deserialize)]
struct Kubeconfig {
    clusters: Vec<NamedCluster>,
    users: Vec<NamedUser>,
}

#[derive(Deserialize)]
struct NamedCluster {
    name: String,
    cluster: ClusterEntry,
}

#[derive(Deserialize)]
struct ClusterEntry {
    server: String,
}

#[derive(Deserialize)]
struct NamedUser {
    name: String,
    user: UserEntry,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct UserEntry {
    client_certificate_data: String,
    client_key_data: String,
}

/// Writes `tokens` as `<dir>/tokens.csv` (kcp-vw reads it there too) and answers the flag naming it.
pub(crate) fn token_file_args(dir: &tempfile::TempDir, tokens: &str) -> Vec<std::ffi::OsString> {
    let file = dir.path().join("tokens.csv");
    fs::write(&file, tokens).expect("writing the token file");
    vec!["--token-auth-file".into(), file.into_os_string()]
}

/// A fresh temporary directory for one test's shard.
pub(crate) fn test_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("kcp-e2e-")
        .tempdir()
        .expect("creating a temporary directory")
}

impl Shard {
    /// Starts a shard on `store` with a fresh root directory and waits until it is ready.
    pub fn start(store: StoreKind) -> Shard {
        Shard::start_with_args(store, Vec::<std::ffi::OsString>::new())
    }

    /// [`Shard::start`] with extra `kcp-shard start` flags (kept for [`Shard::start_again`]). Files the
    /// flags name must exist before the call, so they live outside [`Shard::dir`].
    pub fn start_with_args<I, S>(store: StoreKind, extra_args: I) -> Shard
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString>,
    {
        Shard::start_in(
            store,
            test_dir(),
            extra_args.into_iter().map(Into::into).collect(),
        )
    }

    /// [`Shard::start`] with static bearer tokens: `tokens` is the `--token-auth-file`, one
    /// `token,user,uid[,"group,..."]` line each. The file stays in [`Shard::dir`], so restarts
    /// read it too.
    pub fn start_with_tokens(store: StoreKind, tokens: &str) -> Shard {
        let dir = test_dir();
        let args = token_file_args(&dir, tokens);
        Shard::start_in(store, dir, args)
    }

    pub(crate) fn start_in(
        store: StoreKind,
        dir: tempfile::TempDir,
        extra_args: Vec<std::ffi::OsString>,
    ) -> Shard {
        let etcd = match store {
            StoreKind::Embedded => None,
            StoreKind::Etcd => Some(EtcdProcess::start()),
        };
        let mut shard = Shard {
            store,
            dir,
            child: None,
            base_url: String::new(),
            runs: 0,
            extra_args,
            vw: None,
            etcd,
        };
        shard.spawn();
        shard
    }

    pub fn store(&self) -> StoreKind {
        self.store
    }

    /// The temporary directory of this test (holds `root/`, logs, kubectl's cache, scratch files).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The shard's `--root-directory`.
    pub fn root_directory(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// The store the shard keeps its objects in, as it opens it (default shard name `root`): for
    /// a test to open it itself while the shard is stopped.
    pub fn store_config(&self) -> kcp_store::StoreConfig {
        match &self.etcd {
            Some(etcd) => kcp_store::StoreConfig::Etcd {
                endpoints: etcd.endpoints(),
                prefix: "/kcp-rs/root".into(),
            },
            None => kcp_store::StoreConfig::Embedded {
                path: self.root_directory().join("store.redb"),
            },
        }
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.root_directory().join("admin.kubeconfig")
    }

    /// `https://127.0.0.1:PORT` (no path).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// `https://127.0.0.1:PORT/clusters/<cluster>`.
    pub fn cluster_url(&self, cluster: &str) -> String {
        format!("{}/clusters/{cluster}", self.base_url)
    }

    /// The process id of the running shard.
    pub fn pid(&self) -> u32 {
        self.child
            .as_ref()
            .map(Child::id)
            .expect("the shard is not running")
    }

    fn spawn(&mut self) {
        assert!(self.child.is_none(), "the shard is already running");
        let root = self.root_directory();
        fs::create_dir_all(&root).expect("creating the root directory");
        // A kubeconfig left by a killed run would look like "ready" before the new process removes it.
        let _ = fs::remove_file(self.kubeconfig());
        self.runs += 1;
        let log_path = self.log_path(self.runs);
        let log = fs::File::create(&log_path).expect("creating the shard log");
        let mut command = Command::new(shard_binary());
        command
            .arg("start")
            .arg("--root-directory")
            .arg(&root)
            .args(["--secure-port", "0", "--bind-address", "127.0.0.1"])
            .env(
                "RUST_LOG",
                std::env::var("KCP_E2E_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("cloning the log handle"))
            .stderr(log);
        if let Some(etcd) = &self.etcd {
            command
                .arg("--etcd-servers")
                .arg(etcd.endpoints().join(","));
        }
        command.args(&self.extra_args);
        let child = command.spawn().expect("spawning kcp-shard");
        self.child = Some(child);
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + STARTUP_DEADLINE;
        let kubeconfig = self.kubeconfig();
        loop {
            self.assert_alive("while starting");
            if let Ok(text) = fs::read_to_string(&kubeconfig)
                && let Ok(config) = serde_saphyr::from_str::<Kubeconfig>(&text)
                && let Some(base) = config.clusters.iter().find(|c| c.name == "base")
            {
                self.base_url = base.cluster.server.trim_end_matches('/').to_string();
                self.write_client_certs(&config);
                break;
            }
            if Instant::now() > deadline {
                panic!(
                    "{} was not written in time\n{}",
                    kubeconfig.display(),
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        loop {
            self.assert_alive("while waiting for /readyz");
            let (code, _) = self.curl_anonymous("GET", "/readyz");
            if code == 200 {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "/readyz did not answer 200 in time (last: {code})\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Writes the users' client certificates as PEM files for curl: `<dir>/<user>.crt|.key`.
    fn write_client_certs(&self, config: &Kubeconfig) {
        for user in &config.users {
            let cert = STANDARD
                .decode(&user.user.client_certificate_data)
                .expect("base64 client cert");
            let key = STANDARD
                .decode(&user.user.client_key_data)
                .expect("base64 client key");
            fs::write(self.dir().join(format!("{}.crt", user.name)), cert).expect("writing a cert");
            fs::write(self.dir().join(format!("{}.key", user.name)), key).expect("writing a key");
        }
    }

    fn assert_alive(&mut self, when: &str) {
        let child = self.child.as_mut().expect("the shard is not running");
        if let Some(status) = child.try_wait().expect("polling the shard") {
            self.child = None;
            panic!("kcp-shard exited {when} with {status}\n{}", self.logs());
        }
    }

    fn log_path(&self, run: u32) -> PathBuf {
        self.dir().join(format!("kcp-shard.{run}.log"))
    }

    /// The end of every run's log (the last [`LOG_TAIL_LINES`] lines of each), oldest run first.
    pub fn logs(&self) -> String {
        let mut all = String::new();
        for run in 1..=self.runs {
            let path = self.log_path(run);
            let text = fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let skip = lines.len().saturating_sub(LOG_TAIL_LINES);
            all.push_str(&format!(
                "----- kcp-shard log, run {run} ({}), {}{} -----\n",
                self.store,
                path.display(),
                if skip > 0 {
                    format!(", last {LOG_TAIL_LINES} lines")
                } else {
                    String::new()
                },
            ));
            for line in &lines[skip..] {
                all.push_str(line);
                all.push('\n');
            }
        }
        all.push_str(&self.vw_logs());
        all
    }

    /// SIGTERM, then wait for the process (SIGKILL after a deadline). Returns its exit status.
    pub fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("the shard is not running");
        signal(&child, "TERM");
        let deadline = Instant::now() + SHUTDOWN_DEADLINE;
        loop {
            if let Some(status) = child.try_wait().expect("polling the shard") {
                return status;
            }
            if Instant::now() > deadline {
                eprintln!("kcp-shard did not exit {SHUTDOWN_DEADLINE:?} after SIGTERM; killing it");
                let _ = child.kill();
                return child.wait().expect("waiting for the shard");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: the process gets no chance to flush or clean up.
    pub fn kill9(&mut self) {
        let mut child = self.child.take().expect("the shard is not running");
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Kills this shard's etcd (SIGKILL) and starts it again on the same data and ports, under the
    /// running shard. Only for a shard on etcd.
    pub fn kill9_etcd(&mut self) {
        let etcd = self.etcd.as_mut().expect("the shard runs on etcd");
        etcd.restart().expect("etcd starts again");
    }

    /// Kills this shard's etcd (SIGKILL) and leaves it down under the running shard, until
    /// [`Shard::start_etcd_again`]. Only for a shard on etcd.
    pub fn kill_etcd(&mut self) {
        let etcd = self.etcd.as_mut().expect("the shard runs on etcd");
        etcd.kill().expect("etcd stops");
    }

    /// Starts this shard's etcd again on the same data and ports after [`Shard::kill_etcd`].
    pub fn start_etcd_again(&mut self) {
        let etcd = self.etcd.as_mut().expect("the shard runs on etcd");
        etcd.start_again().expect("etcd starts again");
    }

    /// Starts the shard again on the same root directory (and the same etcd) after [`Shard::stop`] or
    /// [`Shard::kill9`]. The port changes; [`Shard::base_url`] and the kubeconfig follow.
    pub fn start_again(&mut self) {
        self.spawn();
    }

    /// A kubectl invocation against this shard (`--kubeconfig admin.kubeconfig`, private cache dir).
    pub fn kubectl_cmd(&self) -> Kubectl<'_> {
        Kubectl {
            shard: self,
            kubeconfig: None,
            cluster: None,
            server: None,
            context: None,
            env: Vec::new(),
            stdin: None,
        }
    }

    /// `kubectl ARGS` against the root LC as kcp-admin; returns the output whatever the exit code.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_cmd().run(args)
    }

    /// `kubectl ARGS`; fails the test (with stdout, stderr and the shard log) unless it exits 0.
    /// Returns stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        self.kubectl_cmd().ok(args)
    }

    /// `kubectl ARGS`; fails the test if it exits 0. Returns stderr.
    pub fn kubectl_fails(&self, args: &[&str]) -> String {
        self.kubectl_cmd().fails(args)
    }

    /// Writes a scratch file into the test's directory and returns its path.
    pub fn write_file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir().join(name);
        fs::write(&path, contents).expect("writing a scratch file");
        path
    }

    /// `curl` as kcp-admin (client certificate from the kubeconfig). `path` is absolute on the server
    /// (e.g. `/clusters/root/api/v1/namespaces`). Returns the status code and the body.
    pub fn curl(&self, method: &str, path: &str, body: Option<(&str, &str)>) -> (u16, String) {
        self.curl_as(Some("kcp-admin"), method, path, body)
    }

    /// `curl` without any credentials.
    pub fn curl_anonymous(&self, method: &str, path: &str) -> (u16, String) {
        self.curl_as(None, method, path, None)
    }

    /// `curl` as `user` (a user of admin.kubeconfig: `kcp-admin` or `shard-admin`) or anonymously.
    /// `body` is `(content type, body)`.
    pub fn curl_as(
        &self,
        user: Option<&str>,
        method: &str,
        path: &str,
        body: Option<(&str, &str)>,
    ) -> (u16, String) {
        let caller = match user {
            Some(user) => Caller::KubeconfigUser(user.to_string()),
            None => Caller::Anonymous,
        };
        self.curl_with(&caller, method, path, &[], body)
    }

    /// `curl` as any [`Caller`], with extra request headers (`(name, value)`). `path` is absolute on
    /// the server; `body` is `(content type, body)`. Returns the status code and the body.
    pub fn curl_with(
        &self,
        caller: &Caller,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<(&str, &str)>,
    ) -> (u16, String) {
        let mut command = Command::new("curl");
        command
            .args(["-sS", "-k", "--max-time", "30", "-X", method])
            .args(["-w", "\n%{http_code}"]);
        match caller {
            Caller::Anonymous => {}
            Caller::KubeconfigUser(user) => {
                command
                    .arg("--cert")
                    .arg(self.dir().join(format!("{user}.crt")))
                    .arg("--key")
                    .arg(self.dir().join(format!("{user}.key")));
            }
            Caller::Cert { cert, key } => {
                command.arg("--cert").arg(cert).arg("--key").arg(key);
            }
            Caller::Token(token) => {
                command
                    .arg("-H")
                    .arg(format!("Authorization: Bearer {token}"));
            }
        }
        for (name, value) in headers {
            command.arg("-H").arg(format!("{name}: {value}"));
        }
        if let Some((content_type, body)) = body {
            // HTTP/2, as kubectl uses it. (Answers given before the body is read used to reach curl
            // as error 92, "Stream error in the HTTP/2 framing layer", most of the time; the shard
            // now reads such bodies to their end, see `kcp_http::request_body`.)
            command
                .arg("-H")
                .arg(format!("Content-Type: {content_type}"))
                .arg("--data-binary")
                .arg(body);
        }
        // --globoff: `[` and `{` in paths are literal; `*` in /clusters/*/ is left alone by curl anyway.
        // `/services/...` goes where the virtual workspaces are served.
        let base = match path.starts_with("/services/") {
            true => self.services_url(),
            false => self.base_url.clone(),
        };
        command.arg("--globoff").arg(format!("{base}{path}"));
        let output = command.output().expect("running curl (is it installed?)");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let (body, code) = stdout.rsplit_once('\n').unwrap_or(("", stdout.as_str()));
        let code = code.trim().parse().unwrap_or(0);
        if code == 0 {
            // No HTTP response at all: say why (curl's own error).
            return (
                0,
                format!(
                    "curl failed ({}): {}{body}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                ),
            );
        }
        (code, body.to_string())
    }

    /// Status code and headers (names lower-cased) of a GET as kcp-admin, with `extra` request
    /// headers (`"Name: value"`).
    pub fn head(&self, path: &str, extra: &[&str]) -> (u16, Vec<(String, String)>) {
        let mut command = Command::new("curl");
        command
            .args([
                "-sS",
                "-k",
                "--max-time",
                "30",
                "-o",
                "/dev/null",
                "-D",
                "-",
            ])
            .arg("--cert")
            .arg(self.dir().join("kcp-admin.crt"))
            .arg("--key")
            .arg(self.dir().join("kcp-admin.key"));
        for header in extra {
            command.args(["-H", header]);
        }
        let output = command
            .arg(format!("{}{path}", self.base_url))
            .output()
            .expect("running curl");
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let mut lines = text.lines();
        let code = lines
            .next()
            .and_then(|status| status.split_whitespace().nth(1))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        (code, headers)
    }

    /// A `kube` client built from admin.kubeconfig (context `root`, i.e. the root LC).
    pub async fn kube_client(&self) -> kube::Client {
        self.kube_client_for("root").await
    }

    /// The `kube` config of context `context` of admin.kubeconfig.
    async fn kube_config(&self, context: &str) -> kube::Config {
        install_crypto_provider();
        let kubeconfig = kube::config::Kubeconfig::read_from(self.kubeconfig())
            .expect("reading admin.kubeconfig");
        let options = kube::config::KubeConfigOptions {
            context: Some(context.to_string()),
            ..Default::default()
        };
        kube::Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .expect("a kube config from admin.kubeconfig")
    }

    /// A `kube` client for the user of context `context` of admin.kubeconfig, at the logical
    /// cluster `cluster` (a name, a path or `*`).
    pub async fn kube_client_at(&self, context: &str, cluster: &str) -> kube::Client {
        let mut config = self.kube_config(context).await;
        config.cluster_url = self.cluster_url(cluster).parse().expect("a cluster URL");
        kube::Client::try_from(config).expect("building a kube client")
    }

    /// A `kube` client for the context `context` of admin.kubeconfig.
    pub async fn kube_client_for(&self, context: &str) -> kube::Client {
        let config = self.kube_config(context).await;
        kube::Client::try_from(config).expect("building a kube client")
    }

    /// Polls `check` until it returns `Some`, failing the test with `what` (and the shard log) after
    /// [`EVENTUALLY`].
    pub fn eventually<T>(&self, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + EVENTUALLY;
        loop {
            if let Some(value) = check() {
                return value;
            }
            if Instant::now() > deadline {
                panic!("gave up waiting: {what}\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Who a [`Shard::curl_with`] request comes from.
#[derive(Clone, Debug)]
pub enum Caller {
    /// No credentials.
    Anonymous,
    /// A user of admin.kubeconfig (`kcp-admin`, `shard-admin`): its certificate written by the harness.
    KubeconfigUser(String),
    /// A client certificate and key (PEM files).
    Cert { cert: PathBuf, key: PathBuf },
    /// A bearer token (static token, ServiceAccount JWT).
    Token(String),
}

impl Drop for Shard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
            eprintln!("(test directory: {})", self.dir().display());
        }
        self.stop_vw();
        if self.child.is_some() {
            self.stop();
        }
    }
}

pub(crate) fn signal(child: &Child, name: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// A kubectl invocation being built: which LC (server path), context, environment and stdin.
pub struct Kubectl<'a> {
    shard: &'a Shard,
    kubeconfig: Option<PathBuf>,
    cluster: Option<String>,
    /// A whole server URL instead (a virtual workspace's).
    server: Option<String>,
    context: Option<String>,
    env: Vec<(String, String)>,
    stdin: Option<Vec<u8>>,
}

impl Kubectl<'_> {
    /// Target another LC: `--server https://HOST:PORT/clusters/<cluster>`.
    pub fn cluster(mut self, cluster: &str) -> Self {
        self.cluster = Some(cluster.to_string());
        self
    }

    /// Target any URL of the server: `--server <url>` (a virtual workspace's `.../clusters/*`).
    pub fn server(mut self, url: &str) -> Self {
        self.server = Some(url.to_string());
        self
    }

    /// Use another kubeconfig than admin.kubeconfig (e.g. one for an ordinary user).
    pub fn kubeconfig(mut self, path: &Path) -> Self {
        self.kubeconfig = Some(path.to_path_buf());
        self
    }

    /// Use another context of admin.kubeconfig (e.g. `system:admin`).
    pub fn context(mut self, context: &str) -> Self {
        self.context = Some(context.to_string());
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    pub fn stdin(mut self, input: &str) -> Self {
        self.stdin = Some(input.as_bytes().to_vec());
        self
    }

    /// The command, ready to run or spawn.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("kubectl");
        command
            .arg("--kubeconfig")
            .arg(
                self.kubeconfig
                    .clone()
                    .unwrap_or_else(|| self.shard.kubeconfig()),
            )
            .arg("--cache-dir")
            .arg(self.shard.dir().join("kubectl-cache"))
            .arg("--request-timeout=60s");
        if let Some(context) = &self.context {
            command.arg("--context").arg(context);
        }
        if let Some(cluster) = &self.cluster {
            command.arg("--server").arg(self.shard.cluster_url(cluster));
        }
        if let Some(server) = &self.server {
            command.arg("--server").arg(server);
        }
        command.args(args);
        command.env_remove("KUBECONFIG");
        for (key, value) in &self.env {
            command.env(key, value);
        }
        command
    }

    fn describe(&self, args: &[&str]) -> String {
        let mut line = String::from("kubectl");
        if let Some(context) = &self.context {
            line.push_str(&format!(" --context {context}"));
        }
        if let Some(cluster) = &self.cluster {
            line.push_str(&format!(" --server .../clusters/{cluster}"));
        }
        if let Some(server) = &self.server {
            line.push_str(&format!(" --server {server}"));
        }
        for arg in args {
            line.push(' ');
            line.push_str(arg);
        }
        line
    }

    /// Runs kubectl to completion; returns its output whatever the exit code.
    pub fn run(&self, args: &[&str]) -> Output {
        let mut command = self.command(args);
        command.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .expect("spawning kubectl (is it installed?)");
        if let Some(input) = &self.stdin {
            let mut pipe = child.stdin.take().expect("kubectl's stdin");
            pipe.write_all(input).expect("writing kubectl's stdin");
        }
        child.wait_with_output().expect("waiting for kubectl")
    }

    /// Runs kubectl; fails the test unless it exits 0. Returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        if !output.status.success() {
            panic!(
                "`{}` failed with {}\nstdout:\n{}\nstderr:\n{}",
                self.describe(args),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
            );
        }
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Runs kubectl; fails the test if it exits 0. Returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args);
        if output.status.success() {
            panic!(
                "`{}` succeeded but should have failed\nstdout:\n{}\nstderr:\n{}",
                self.describe(args),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
            );
        }
        String::from_utf8_lossy(&output.stderr).into_owned()
    }

    /// Runs kubectl and parses its stdout as JSON (use with `-o json`).
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.ok(args);
        serde_json::from_str(&out).unwrap_or_else(|err| {
            panic!(
                "`{}` did not print JSON ({err}):\n{out}",
                self.describe(args)
            )
        })
    }
}

impl Shard {
    /// `kubectl ARGS` (which should include `-o json`) parsed as JSON.
    pub fn kubectl_json(&self, args: &[&str]) -> serde_json::Value {
        self.kubectl_cmd().json(args)
    }
}

/// A background process (e.g. `kubectl get -w`) whose stdout goes to a file that can be read while it
/// runs. Killed on drop.
pub struct Background {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Background {
    /// Spawns `command` with stdout/stderr going to `<dir>/<name>.out|.err`.
    pub fn spawn(mut command: Command, dir: &Path, name: &str) -> Background {
        let stdout = dir.join(format!("{name}.out"));
        let stderr = dir.join(format!("{name}.err"));
        command
            .stdin(Stdio::null())
            .stdout(fs::File::create(&stdout).expect("creating a stdout file"))
            .stderr(fs::File::create(&stderr).expect("creating a stderr file"));
        let child = command.spawn().expect("spawning a background process");
        Background {
            child,
            stdout,
            stderr,
        }
    }

    /// Everything written to stdout so far.
    pub fn stdout(&self) -> String {
        fs::read_to_string(&self.stdout).unwrap_or_default()
    }

    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the process and returns its stdout.
    pub fn kill(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.stdout()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `kcp-shard` binary: `$KCP_SHARD_BIN`, else `target/<profile>/kcp-shard` next to the running
/// test executable. When that binary is missing or older than the sources it is built from (`libs/`,
/// `services/`, `Cargo.toml`, `Cargo.lock`), it is built once with `cargo build -p kcp-shard`, so
/// `cargo test -p kcp-e2e` never tests a stale server.
pub fn shard_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(find_or_build_shard_binary).clone()
}

fn find_or_build_shard_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("KCP_SHARD_BIN") {
        return PathBuf::from(path);
    }
    find_or_build(
        "kcp-shard",
        "kcp-shard",
        &["libs", "services", "Cargo.toml", "Cargo.lock"],
    )
}

/// The directory holding the kubectl plugins (`kubectl-ws`, `kubectl-create-workspace`,
/// `kubectl-kcp`) and `apigen`, each built like [`shard_binary`] when missing or stale: put it on
/// `PATH` and kubectl finds them.
pub fn plugin_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let sources = ["cli", "libs", "Cargo.toml", "Cargo.lock"];
        let dirs: Vec<PathBuf> = [
            ("kubectl-ws", "kubectl-ws"),
            ("kubectl-kcp", "kubectl-kcp"),
            ("apigen", "apigen"),
        ]
        .into_iter()
        .map(|(package, binary)| {
            find_or_build(package, binary, &sources)
                .parent()
                .expect("the plugin's directory")
                .to_path_buf()
        })
        .collect();
        assert!(
            dirs.windows(2).all(|pair| pair[0] == pair[1]),
            "the plugins were built into different directories: {dirs:?}"
        );
        dirs[0].clone()
    })
    .clone()
}

/// The binary of example `package` (`examples/<package>`), built like [`shard_binary`] when
/// missing or stale.
pub fn example_binary(package: &str) -> PathBuf {
    find_or_build(package, package, &["examples", "Cargo.toml", "Cargo.lock"])
}

/// `target/<profile>/<binary>` next to the running test executable, built with `cargo build -p
/// <package>` when missing or older than `sources` (paths under the workspace root).
pub(crate) fn find_or_build(package: &str, binary: &str, sources: &[&str]) -> PathBuf {
    let exe = std::env::current_exe().expect("locating the test executable");
    // Test executables live in target/<profile>/deps/; binaries in target/<profile>/.
    let profile_dir = exe
        .ancestors()
        .skip(1)
        .find(|dir| {
            dir.file_name()
                .is_some_and(|n| n != "deps" && n != "examples")
        })
        .expect("the test executable's profile directory")
        .to_path_buf();
    let binary = profile_dir.join(binary);
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root");
    let built = fs::metadata(&binary).and_then(|m| m.modified()).ok();
    let newest = newest_source(workspace, sources);
    match (built, newest) {
        (Some(built), Some(newest)) if built >= newest => return binary,
        (Some(_), None) => return binary,
        (None, _) => eprintln!(
            "{} is missing; running `cargo build -p {package}`",
            binary.display()
        ),
        (Some(_), Some(_)) => {
            eprintln!("{} is older than its sources; rebuilding", binary.display())
        }
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace)
        .args(["build", "-p", package]);
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        command.arg("--release");
    }
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("running cargo build -p {package}: {e}"));
    assert!(
        status.success(),
        "cargo build -p {package} failed: {status}"
    );
    assert!(
        binary.is_file(),
        "{} still missing after building it",
        binary.display()
    );
    binary
}

/// The newest modification time of the files under `parts` of the workspace.
fn newest_source(workspace: &Path, parts: &[&str]) -> Option<std::time::SystemTime> {
    fn walk(path: &Path, newest: &mut Option<std::time::SystemTime>) {
        let Ok(meta) = fs::metadata(path) else { return };
        if meta.is_dir() {
            if path
                .file_name()
                .is_some_and(|n| n == "target" || n == "tests")
            {
                return;
            }
            for entry in fs::read_dir(path).into_iter().flatten().flatten() {
                walk(&entry.path(), newest);
            }
        } else if path
            .extension()
            .is_some_and(|e| e == "rs" || e == "toml" || e == "lock")
            && let Ok(modified) = meta.modified()
        {
            *newest = Some(newest.map_or(modified, |n| n.max(modified)));
        }
    }
    let mut newest = None;
    for part in parts {
        walk(&workspace.join(part), &mut newest);
    }
    newest
}

/// A small JSON helper: `value` at a `/`-separated pointer as a string, or "" if absent.
pub fn json_str<'a>(value: &'a serde_json::Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
}
