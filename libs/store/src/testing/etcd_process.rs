//! A throwaway etcd for tests: the system `etcd` binary (Debian `etcd-server`, 3.4) on free loopback
//! ports with a temporary data dir, killed on drop. Set `ETCD_SERVERS` (comma-separated endpoints) to
//! use an external etcd instead, and `ETCD_BIN` to pick another binary.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running etcd (or an external one named by `ETCD_SERVERS`).
pub struct EtcdProcess {
    endpoints: Vec<String>,
    child: Option<Child>,
    _data_dir: Option<tempfile::TempDir>,
    /// How this etcd was launched (`None` for an external one), so it can be restarted.
    launch: Option<Launch>,
}

/// The command line of a throwaway etcd: binary, data dir and ports.
struct Launch {
    binary: PathBuf,
    data_dir: PathBuf,
    client: u16,
    peer: u16,
}

impl Launch {
    fn spawn(&self) -> io::Result<Child> {
        let client_url = format!("http://127.0.0.1:{}", self.client);
        let peer_url = format!("http://127.0.0.1:{}", self.peer);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.data_dir.join("etcd.log"))?;
        Command::new(&self.binary)
            .arg("--name=kcp-test")
            .arg(format!(
                "--data-dir={}",
                self.data_dir.join("data").display()
            ))
            .arg(format!("--listen-client-urls={client_url}"))
            .arg(format!("--advertise-client-urls={client_url}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=kcp-test={peer_url}"))
            .arg("--initial-cluster-state=new")
            .arg("--experimental-watch-progress-notify-interval=2s")
            // etcd 3.5's default: 3.4's array freelist scans the free pages on every allocation,
            // which slows writes as the store grows (deleting a 10k-workspace tree beside 60k
            // others took 38 s with it, 32 s beside 74k without). etcd 3.6 renames the flag
            // (`--backend-bbolt-freelist-type`) and later releases drop this spelling.
            .arg("--experimental-backend-bbolt-freelist-type=map")
            // etcd 3.4 copies every write not yet committed to its backend for each transaction
            // it applies (to evaluate the compares); 3.5 caches that copy. Committing every 10 ms
            // instead of 100 keeps the copy, and the garbage it makes, a tenth as large: a
            // 10k-workspace tree beside 50k others was deleted in 24 s instead of 31 (18 s with
            // deletions batched by Store::write_all, which alone gain nothing at 100 ms). The
            // price, measured: the shard's ConfigMap creates at 16-64 clients ran 15-25 % slower;
            // 25 ms was no better. At 10 ms each copy is already 3.4's smallest (512 entries for
            // each bucket written): about 50 KB per transaction, still 61 % of what etcd allocated
            // while creating workspaces (a heap profile of etcd); 3.5 reads the buffer in place.
            .arg("--backend-batch-interval=10ms")
            // etcd 3.6's default (etcd-io/etcd#15408). etcd holds every raft entry since its last
            // snapshot in memory, and its Go GC marks them all: at 3.4's 100,000, etcd's live heap
            // after creating 110k workspaces was 624 MB instead of 363. Those marks are etcd's
            // stalls: in a 10k-workspace run, every creation slower than the p99 ended within one
            // (100-230 ms each at 10k workspaces, 0.6-1.0 s at 110k, on the two shared cores).
            .arg("--snapshot-count=10000")
            // GOGC is left at Go's default. 200 and 400 made those marks rarer, not shorter: in
            // two interleaved rounds each (10k-workspace tree beside 103k), the tree's p99 was
            // 54.8/83.1 ms at 100, 51.3/49.3 at 200, 52.0/90.1 at 400. One 0.6 s mark stalls
            // more than 1 % of a 7 s phase's creations, so only no mark at all would help.
            .arg("--log-level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| {
                io::Error::new(e.kind(), format!("spawning {}: {e}", self.binary.display()))
            })
    }
}

const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

impl EtcdProcess {
    /// Starts etcd and waits until it answers. Panics with the reason when it cannot; this is test
    /// support, and a test cannot go on without its etcd.
    pub fn start() -> EtcdProcess {
        match Self::try_start() {
            Ok(etcd) => etcd,
            Err(err) => panic!(
                "cannot start etcd (install it with `apt-get install -y etcd-server`): {err}"
            ),
        }
    }

    pub fn try_start() -> io::Result<EtcdProcess> {
        if let Ok(servers) = std::env::var("ETCD_SERVERS") {
            let endpoints: Vec<String> = servers
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            if !endpoints.is_empty() {
                return Ok(EtcdProcess {
                    endpoints,
                    child: None,
                    _data_dir: None,
                    launch: None,
                });
            }
        }
        let binary = std::env::var_os("ETCD_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/bin/etcd"));
        let binary = if binary.exists() {
            binary
        } else {
            PathBuf::from("etcd")
        };
        // Ports are found by binding port 0 and releasing it, so another process can take one
        // before etcd binds it (seen under a parallel test run): then start again on new ports.
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Self::start_on_free_ports(binary.clone()) {
                Err(err) if attempt < 3 && err.to_string().contains("address already in use") => {
                    continue;
                }
                other => return other,
            }
        }
    }

    fn start_on_free_ports(binary: PathBuf) -> io::Result<EtcdProcess> {
        let data_dir = tempfile::Builder::new()
            .prefix("kcp-store-etcd-")
            .tempdir()?;
        let client = free_port()?;
        let peer = free_port()?;
        let launch = Launch {
            binary,
            data_dir: data_dir.path().to_path_buf(),
            client,
            peer,
        };
        let child = launch.spawn()?;
        let mut etcd = EtcdProcess {
            endpoints: vec![format!("http://127.0.0.1:{client}")],
            child: Some(child),
            _data_dir: Some(data_dir),
            launch: Some(launch),
        };
        etcd.wait_healthy(SocketAddr::from(([127, 0, 0, 1], client)))?;
        Ok(etcd)
    }

    /// Kills etcd (SIGKILL) and starts it again on the same data and ports, waiting until it answers:
    /// what a client sees when its etcd restarts. Not possible for an external etcd.
    pub fn restart(&mut self) -> io::Result<()> {
        self.kill()?;
        self.start_again()
    }

    /// Kills etcd (SIGKILL), keeping its data and ports for [`EtcdProcess::start_again`]. Not
    /// possible for an external etcd.
    pub fn kill(&mut self) -> io::Result<()> {
        if self.launch.is_none() {
            return Err(io::Error::other("an external etcd cannot be stopped"));
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        Ok(())
    }

    /// Deletes etcd's data after [`EtcdProcess::kill`]: started again, it is a new, empty etcd (as
    /// one restored from an older backup, its revisions start over).
    pub fn wipe(&mut self) -> io::Result<()> {
        let Some(launch) = self.launch.as_ref() else {
            return Err(io::Error::other("an external etcd cannot be wiped"));
        };
        match std::fs::remove_dir_all(launch.data_dir.join("data")) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
            _ => Ok(()),
        }
    }

    /// Starts etcd again on the same data and ports after [`EtcdProcess::kill`], waiting until it
    /// answers.
    pub fn start_again(&mut self) -> io::Result<()> {
        let Some(launch) = self.launch.as_ref() else {
            return Err(io::Error::other("an external etcd cannot be started"));
        };
        let client = launch.client;
        self.child = Some(launch.spawn()?);
        self.wait_healthy(SocketAddr::from(([127, 0, 0, 1], client)))
    }

    /// The first client endpoint, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        self.endpoints.first().cloned().unwrap_or_default()
    }

    pub fn endpoints(&self) -> Vec<String> {
        self.endpoints.clone()
    }

    fn wait_healthy(&mut self, addr: SocketAddr) -> io::Result<()> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                let log = self
                    ._data_dir
                    .as_ref()
                    .and_then(|d| std::fs::read_to_string(d.path().join("etcd.log")).ok())
                    .unwrap_or_default();
                return Err(io::Error::other(format!(
                    "etcd exited with {status}: {log}"
                )));
            }
            if health(addr).unwrap_or(false) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "etcd did not become healthy",
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// etcd serves `/health` over plain HTTP/1 on the client port.
fn health(addr: SocketAddr) -> io::Result<bool> {
    let mut conn = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    conn.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")?;
    let mut answer = String::new();
    conn.read_to_string(&mut answer)?;
    Ok(answer.contains("\"health\":\"true\""))
}

fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Drop for EtcdProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
