//! Starting and stopping an in-process shard for the tests of this crate.
#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Parser;
use kcp_shard::Options;
use kcp_shard::kubeconfig::Config;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A shard running in this process on a random port, its state under `root`.
pub struct Running {
    pub root: PathBuf,
    pub kubeconfig_path: PathBuf,
    pub kubeconfig: Config,
    /// The `base` context's server: `https://host:port`.
    pub base_url: String,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<anyhow::Result<()>>,
}

impl Running {
    /// Starts `kcp-shard --root-directory <root> --secure-port 0 <extra_args>` and waits (30 s at
    /// most, only a bound against hangs) until it wrote its kubeconfig.
    pub async fn start(root: &Path, extra_args: &[&str]) -> Running {
        let mut args = vec![
            "kcp-shard",
            "--root-directory",
            root.to_str().unwrap(),
            "--secure-port",
            "0",
        ];
        args.extend_from_slice(extra_args);
        let options = Options::try_parse_from(args).unwrap();
        // The shard deletes a stale kubeconfig itself, but a poller started at the same moment could
        // still read the old one (and its old port); harnesses restarting a shard must do this too.
        let kubeconfig_path = root.join("admin.kubeconfig");
        let _ = std::fs::remove_file(&kubeconfig_path);
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(kcp_shard::run(options, shutdown.clone()));
        // The kubeconfig appears once the shard listens; it holds the real port.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !kubeconfig_path.exists() {
            assert!(
                !task.is_finished(),
                "the shard stopped early: {:?}",
                task.await
            );
            assert!(Instant::now() < deadline, "no kubeconfig after 30s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let kubeconfig: Config =
            serde_saphyr::from_str(&std::fs::read_to_string(&kubeconfig_path).unwrap()).unwrap();
        let base_url = kubeconfig
            .clusters
            .iter()
            .find(|c| c.name == "base")
            .unwrap()
            .cluster
            .server
            .clone();
        Running {
            root: root.to_path_buf(),
            kubeconfig_path,
            kubeconfig,
            base_url,
            shutdown,
            task,
        }
    }

    /// Cancels the shard and waits (15 s at most) for a clean stop.
    pub async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(15), self.task)
            .await
            .expect("the shard did not stop within 15s")
            .unwrap()
            .unwrap();
    }
}
