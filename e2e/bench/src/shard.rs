//! The processes under test: the release `kcp-shard` binary (on etcd or on its embedded store) and
//! the etcd it may use.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use http::Method;
use kcp_store::testing::EtcdProcess;

use crate::client::{Conn, Connector};
use crate::procfs;

/// How long a shard may take to write its kubeconfig and answer `/readyz`.
const STARTUP_DEADLINE: Duration = Duration::from_secs(60);
/// How long a shard may take to exit after SIGTERM before it is killed.
const SHUTDOWN_DEADLINE: Duration = Duration::from_secs(30);
/// Readiness is polled this often (it is also the resolution of the measured restart time).
const READY_POLL: Duration = Duration::from_millis(20);

/// Which store a shard runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Etcd,
    Embedded,
}

impl Backend {
    pub fn label(self) -> &'static str {
        match self {
            Backend::Etcd => "shard on etcd",
            Backend::Embedded => "shard on embedded store",
        }
    }
}

/// The workspace root (this crate is `e2e/bench`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The release `kcp-shard`: `explicit` when given, otherwise built with cargo (a no-op when up to date)
/// into the target directory this benchmark runs from.
pub fn shard_binary(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = explicit {
        if !path.is_file() {
            bail!("--shard-bin {} does not exist", path.display());
        }
        return Ok(path.to_path_buf());
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("kcp-bench: building the release kcp-shard (cargo build --release -p kcp-shard)");
    let status = Command::new(&cargo)
        .args(["build", "--release", "-p", "kcp-shard"])
        .current_dir(workspace_root())
        .status()
        .context("running cargo build --release -p kcp-shard")?;
    if !status.success() {
        bail!("cargo build --release -p kcp-shard failed: {status}");
    }
    // This executable is `<target>/<profile>/kcp-bench`; the shard is `<target>/release/kcp-shard`.
    let exe = std::env::current_exe().context("locating kcp-bench")?;
    let target = exe
        .parent()
        .and_then(Path::parent)
        .context("kcp-bench is not inside a cargo target directory")?;
    let candidates = [
        target.join("release/kcp-shard"),
        workspace_root().join("target/release/kcp-shard"),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .with_context(|| format!("no kcp-shard binary at {candidates:?}; pass --shard-bin"))
}

/// The release `kcp-vw`, built with cargo (a no-op when up to date) next to `shard`'s binary.
pub fn vw_binary(shard: &Path) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("kcp-bench: building the release kcp-vw (cargo build --release -p kcp-vw)");
    let status = Command::new(&cargo)
        .args(["build", "--release", "-p", "kcp-vw"])
        .current_dir(workspace_root())
        .status()
        .context("running cargo build --release -p kcp-vw")?;
    if !status.success() {
        bail!("cargo build --release -p kcp-vw failed: {status}");
    }
    let candidates = [
        shard.with_file_name("kcp-vw"),
        workspace_root().join("target/release/kcp-vw"),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .with_context(|| format!("no kcp-vw binary at {candidates:?}"))
}

/// A kcp-vw following a [`ShardProcess`], killed on drop.
pub struct VwProcess {
    child: Child,
    pub connector: Connector,
}

impl VwProcess {
    /// Starts `binary` beside `shard` on a free port, with the shard's certificates, and waits
    /// until it answers.
    pub async fn start(binary: &Path, shard: &ShardProcess) -> anyhow::Result<VwProcess> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let root = shard.dir.path().join("root");
        let log = std::fs::File::create(shard.dir.path().join("kcp-vw.log"))?;
        let child = Command::new(binary)
            .arg("--kubeconfig")
            .arg(root.join("admin.kubeconfig"))
            .args([
                "--context",
                "shard-base",
                "--secure-port",
                &port.to_string(),
            ])
            .arg("--tls-cert-file")
            .arg(root.join("apiserver.crt"))
            .arg("--tls-private-key-file")
            .arg(root.join("apiserver.key"))
            .env(
                "RUST_LOG",
                std::env::var("KCP_BENCH_SHARD_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("spawning {}", binary.display()))?;
        let mut vw = VwProcess {
            child,
            connector: shard.connector.at_port(port),
        };
        let deadline = Instant::now() + STARTUP_DEADLINE;
        loop {
            if let Some(status) = vw.child.try_wait()? {
                let log = std::fs::read_to_string(shard.dir.path().join("kcp-vw.log"))
                    .unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(5).collect();
                bail!(
                    "kcp-vw exited with {status} during startup: {}",
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                );
            }
            if let Ok(mut conn) = vw.connector.connect().await
                && conn.ok(Method::GET, "/readyz", None).await.is_ok()
            {
                return Ok(vw);
            }
            if Instant::now() > deadline {
                bail!("kcp-vw not ready after {STARTUP_DEADLINE:?}");
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for VwProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running shard with its own temporary root directory, killed on drop.
pub struct ShardProcess {
    pub backend: Backend,
    binary: PathBuf,
    child: Child,
    dir: tempfile::TempDir,
    pub connector: Connector,
    etcd: Option<EtcdProcess>,
    etcd_pid: Option<u32>,
}

/// What a graceful restart took.
#[derive(Debug, Clone, Copy)]
pub struct Restarted {
    /// SIGTERM → the old process exited.
    pub stop: Duration,
    /// Whether it exited by itself (not killed after [`SHUTDOWN_DEADLINE`]).
    pub clean_exit: bool,
    /// The new process was spawned at this instant ...
    pub spawned: Instant,
    /// ... and was ready (kubeconfig written, `/readyz` answered) this long after.
    pub ready: Duration,
}

impl ShardProcess {
    /// Starts `binary` on `backend` (a fresh etcd is started for [`Backend::Etcd`]) and waits until it
    /// answers `/readyz`.
    pub async fn start(binary: &Path, backend: Backend) -> anyhow::Result<ShardProcess> {
        let (etcd, etcd_pid) = match backend {
            Backend::Etcd => {
                let (etcd, pid) = start_etcd()?;
                (Some(etcd), pid)
            }
            Backend::Embedded => (None, None),
        };
        let dir = tempfile::Builder::new()
            .prefix("kcp-bench-shard-")
            .tempdir()
            .context("creating the shard's directory")?;
        std::fs::create_dir_all(dir.path().join("root"))?;
        let mut child = spawn(binary, dir.path(), etcd.as_ref())?;
        let connector = match wait_ready(&mut child, dir.path()).await {
            Ok(connector) => connector,
            Err(err) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(err);
            }
        };
        Ok(ShardProcess {
            backend,
            binary: binary.to_path_buf(),
            child,
            dir,
            connector,
            etcd,
            etcd_pid,
        })
    }

    /// Stops the shard gracefully (SIGTERM; SIGKILL after [`SHUTDOWN_DEADLINE`]) and starts it again on
    /// the same root directory and etcd. Its port changes: [`ShardProcess::connector`] follows, and
    /// connections opened before are dead.
    pub async fn restart(&mut self) -> anyhow::Result<Restarted> {
        let t0 = Instant::now();
        // The `kill` command: no signal crate for one SIGTERM.
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .context("running kill -TERM")?;
        if !status.success() {
            bail!("kill -TERM {} failed: {status}", self.child.id());
        }
        let mut clean_exit = true;
        loop {
            if self.child.try_wait()?.is_some() {
                break;
            }
            if t0.elapsed() > SHUTDOWN_DEADLINE {
                clean_exit = false;
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let stop = t0.elapsed();
        // The new process removes it too, but only once it runs: a stale one would look ready.
        let _ = std::fs::remove_file(self.dir.path().join("root/admin.kubeconfig"));
        keep_copy(self.data_dir().as_deref());
        let spawned = Instant::now();
        self.child = spawn(&self.binary, self.dir.path(), self.etcd.as_ref())?;
        self.connector = wait_ready(&mut self.child, self.dir.path()).await?;
        Ok(Restarted {
            stop,
            clean_exit,
            spawned,
            ready: spawned.elapsed(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn binary(&self) -> &Path {
        &self.binary
    }

    pub fn etcd_pid(&self) -> Option<u32> {
        self.etcd_pid
    }

    /// The directory holding the shard's (embedded) data, or etcd's data directory.
    pub fn data_dir(&self) -> Option<PathBuf> {
        match self.backend {
            Backend::Embedded => Some(self.dir.path().join("root")),
            Backend::Etcd => self
                .etcd_pid
                .and_then(|pid| procfs::cmdline_flag(pid, "--data-dir"))
                .map(PathBuf::from),
        }
    }

    pub fn log_tail(&self, lines: usize) -> String {
        log_tail(self.dir.path(), lines)
    }

    /// A connection to this shard.
    pub async fn conn(&self) -> anyhow::Result<Conn> {
        self.connector.connect().await
    }

    /// Connections as the user of another context of the shard's admin.kubeconfig.
    pub fn connector_for(&self, context: &str) -> anyhow::Result<Connector> {
        Connector::from_kubeconfig(&self.dir.path().join("root/admin.kubeconfig"), context)
    }
}

impl Drop for ShardProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // etcd (if any) is killed by its own drop, after the shard.
        drop(self.etcd.take());
    }
}

/// For work on start-up time: with `KCP_BENCH_KEEP=<dir>`, the stopped shard's data directory (or
/// etcd's) is copied to `<dir>/<n>` before the restart, so that start can be repeated by hand.
fn keep_copy(data: Option<&Path>) {
    let (Ok(keep), Some(data)) = (std::env::var("KCP_BENCH_KEEP"), data) else {
        return;
    };
    let Some(target) = (0..)
        .map(|n| Path::new(&keep).join(n.to_string()))
        .find(|p| !p.exists())
    else {
        return;
    };
    let copied = Command::new("cp").arg("-a").arg(data).arg(&target).status();
    eprintln!(
        "KCP_BENCH_KEEP: {} copied to {}: {copied:?}",
        data.display(),
        target.display()
    );
}

/// Spawns `kcp-shard start` on `dir/root` (and `etcd` when given), its output appended to
/// `dir/shard.log`.
fn spawn(binary: &Path, dir: &Path, etcd: Option<&EtcdProcess>) -> anyhow::Result<Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("shard.log"))?;
    let mut command = Command::new(binary);
    command
        .arg("start")
        .arg("--root-directory")
        .arg(dir.join("root"))
        .args(["--secure-port", "0", "--bind-address", "127.0.0.1"])
        // One log line per request would measure the log, not the server.
        .env(
            "RUST_LOG",
            std::env::var("KCP_BENCH_SHARD_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    if let Some(etcd) = etcd {
        command
            .arg("--etcd-servers")
            .arg(etcd.endpoints().join(","));
    }
    command
        .spawn()
        .with_context(|| format!("spawning {}", binary.display()))
}

fn log_tail(dir: &Path, lines: usize) -> String {
    let log = std::fs::read_to_string(dir.join("shard.log")).unwrap_or_default();
    let all: Vec<&str> = log.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Waits until the shard in `dir` has written its kubeconfig and answers `/readyz`.
async fn wait_ready(child: &mut Child, dir: &Path) -> anyhow::Result<Connector> {
    let kubeconfig = dir.join("root/admin.kubeconfig");
    let deadline = Instant::now() + STARTUP_DEADLINE;
    let mut last_error = String::from("no kubeconfig yet");
    loop {
        if let Some(status) = child.try_wait()? {
            bail!(
                "kcp-shard exited with {status} during startup:\n{}",
                log_tail(dir, 40)
            );
        }
        if Instant::now() > deadline {
            bail!(
                "kcp-shard not ready after {STARTUP_DEADLINE:?} ({last_error}):\n{}",
                log_tail(dir, 40)
            );
        }
        if kubeconfig.is_file() {
            match probe(&kubeconfig).await {
                Ok(connector) => return Ok(connector),
                Err(err) => last_error = format!("{err:#}"),
            }
        }
        tokio::time::sleep(READY_POLL).await;
    }
}

async fn probe(kubeconfig: &Path) -> anyhow::Result<Connector> {
    let connector = Connector::from_kubeconfig(kubeconfig, "system:admin")?;
    let mut conn = connector.connect().await?;
    conn.ok(Method::GET, "/readyz", None).await?;
    Ok(connector)
}

/// A fresh etcd and its process id (for CPU accounting).
pub fn start_etcd() -> anyhow::Result<(EtcdProcess, Option<u32>)> {
    let before = procfs::child_pids_named("etcd");
    let etcd = EtcdProcess::try_start().context(
        "starting etcd (install it with `apt-get install -y etcd-server`, or set ETCD_SERVERS)",
    )?;
    let pid = procfs::child_pids_named("etcd")
        .into_iter()
        .find(|pid| !before.contains(pid));
    Ok((etcd, pid))
}
