//! A `kcp-vw` process beside a test's shard: the shard publishes its URL and serves no
//! `/services/...` itself, so every virtual-workspace request of the test goes through it.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Caller, STARTUP_DEADLINE, Shard, StoreKind, find_or_build, signal, test_dir};

/// Where a test's virtual workspaces are served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VirtualWorkspaces {
    /// By the shard itself (the default).
    InShard,
    /// By a `kcp-vw` process following the shard.
    KcpVw,
}

/// The `kcp-vw` binary, built like [`crate::shard_binary`] when missing or stale.
pub fn vw_binary() -> PathBuf {
    static BINARY: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BINARY
        .get_or_init(|| {
            find_or_build(
                "kcp-vw",
                "kcp-vw",
                &["libs", "services", "proto", "Cargo.toml", "Cargo.lock"],
            )
        })
        .clone()
}

pub(crate) struct KcpVw {
    port: u16,
    child: Option<Child>,
    runs: u32,
}

/// A port nothing listens on now (the OS's choice; free again once the probe closes).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("finding a free port")
}

impl Shard {
    /// [`Shard::start_with_tokens`] with its virtual workspaces served `where_`.
    pub fn start_serving(store: StoreKind, tokens: &str, where_: VirtualWorkspaces) -> Shard {
        if where_ == VirtualWorkspaces::InShard {
            return Shard::start_with_tokens(store, tokens);
        }
        let dir = test_dir();
        let mut args = crate::token_file_args(&dir, tokens);
        let port = free_port();
        args.extend([
            "--run-virtual-workspaces=false".into(),
            "--shard-virtual-workspace-url".into(),
            format!("https://127.0.0.1:{port}").into(),
        ]);
        let mut shard = Shard::start_in(store, dir, args);
        shard.vw = Some(KcpVw {
            port,
            child: None,
            runs: 0,
        });
        shard.spawn_vw();
        shard
    }

    /// The URL `/services/...` is served at: kcp-vw's, or the shard's own.
    pub fn services_url(&self) -> String {
        match &self.vw {
            Some(vw) => format!("https://127.0.0.1:{}", vw.port),
            None => self.base_url().to_string(),
        }
    }

    fn vw_log(&self, run: u32) -> PathBuf {
        self.dir().join(format!("kcp-vw.{run}.log"))
    }

    fn spawn_vw(&mut self) {
        let root = self.root_directory();
        let dir = self.dir().to_path_buf();
        let vw = self.vw.as_mut().expect("the shard has a kcp-vw");
        assert!(vw.child.is_none(), "kcp-vw is already running");
        vw.runs += 1;
        let log = fs::File::create(dir.join(format!("kcp-vw.{}.log", vw.runs)))
            .expect("creating the kcp-vw log");
        let child = Command::new(vw_binary())
            .arg("--kubeconfig")
            .arg(root.join("admin.kubeconfig"))
            .args(["--context", "shard-base"])
            .args(["--secure-port", &vw.port.to_string()])
            .arg("--tls-cert-file")
            .arg(root.join("apiserver.crt"))
            .arg("--tls-private-key-file")
            .arg(root.join("apiserver.key"))
            .arg("--service-account-key-file")
            .arg(root.join("service-account.key"))
            .arg("--token-auth-file")
            .arg(dir.join("tokens.csv"))
            .env(
                "RUST_LOG",
                std::env::var("KCP_E2E_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("cloning the log handle"))
            .stderr(log)
            .spawn()
            .expect("spawning kcp-vw");
        vw.child = Some(child);
        let deadline = Instant::now() + STARTUP_DEADLINE;
        loop {
            if let Some(child) = self.vw.as_mut().and_then(|vw| vw.child.as_mut())
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!(
                    "kcp-vw exited while starting with {status}\n{}",
                    self.logs()
                );
            }
            let (code, _) =
                self.curl_with(&Caller::Anonymous, "GET", "/services/readyz", &[], None);
            // Any HTTP answer from kcp-vw means it serves: /services/readyz is no family's path.
            if code != 0 {
                return;
            }
            if Instant::now() > deadline {
                panic!("kcp-vw did not serve in time\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL to kcp-vw.
    pub fn kill9_vw(&mut self) {
        let vw = self.vw.as_mut().expect("the shard has a kcp-vw");
        if let Some(mut child) = vw.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts kcp-vw again on the same port after [`Shard::kill9_vw`].
    pub fn start_vw_again(&mut self) {
        self.spawn_vw();
    }

    /// kcp-vw's logs, every run, when there is one.
    pub(crate) fn vw_logs(&self) -> String {
        let Some(vw) = &self.vw else {
            return String::new();
        };
        (1..=vw.runs)
            .map(|run| {
                let path = self.vw_log(run);
                let text = fs::read_to_string(&path).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = &lines[lines.len().saturating_sub(crate::LOG_TAIL_LINES)..];
                format!(
                    "----- kcp-vw log, run {run}, {} -----\n{}\n",
                    path.display(),
                    tail.join("\n")
                )
            })
            .collect()
    }

    pub(crate) fn stop_vw(&mut self) {
        if let Some(child) = self.vw.as_mut().and_then(|vw| vw.child.take()) {
            signal(&child, "KILL");
            let mut child = child;
            let _ = child.wait();
        }
    }
}
