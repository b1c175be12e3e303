//! Memory per logical cluster: a fresh shard, N logical clusters holding one ConfigMap each, RSS before
//! and after. [`measure_with`] does the same for other contents (see `crd_memory`).

use std::time::Duration;

use anyhow::{Context as _, bail};
use http::{Method, StatusCode};

use crate::client::{Conn, describe_failure};
use crate::config::Plan;
use crate::idle::settle;
use crate::objects;
use crate::phase::{self, Limits, Probe, Summary, Worker};
use crate::procfs;
use crate::shard::ShardProcess;

/// Logical clusters created before the "before" reading, so one-time allocations are not counted.
pub const WARM_UP_LCS: u64 = 200;
/// Retries of a ConfigMap create that finds no `default` namespace yet.
const NAMESPACE_RETRIES: usize = 50;

#[derive(Debug, Clone)]
pub struct LcMemory {
    pub requested: usize,
    /// Logical clusters with their ConfigMap.
    pub created: u64,
    pub rss_before: u64,
    pub rss_after: u64,
    pub peak_rss: u64,
    pub disk_before: Option<u64>,
    pub disk_after: Option<u64>,
    /// One op = one logical cluster + one ConfigMap.
    pub load: Summary,
}

impl LcMemory {
    pub fn bytes_per_lc(&self) -> Option<f64> {
        (self.created > 0)
            .then(|| self.rss_after.saturating_sub(self.rss_before) as f64 / self.created as f64)
    }

    pub fn disk_per_lc(&self) -> Option<f64> {
        let (before, after) = (self.disk_before?, self.disk_after?);
        (self.created > 0).then(|| after.saturating_sub(before) as f64 / self.created as f64)
    }
}

/// Creates logical cluster `<prefix><seq>` (as the `system:admin` user may: by creating its
/// `LogicalCluster` object).
pub async fn create_lc(conn: &mut Conn, prefix: &str, seq: u64) -> anyhow::Result<String> {
    let lc = format!("{prefix}{seq:07}");
    conn.expect(
        Method::POST,
        &format!("/clusters/{lc}/apis/core.kcp.io/v1alpha1/logicalclusters"),
        Some(objects::logical_cluster()),
        |s| s == StatusCode::CREATED,
    )
    .await?;
    Ok(lc)
}

struct LcWorker {
    conn: Conn,
    prefix: &'static str,
    payload_bytes: usize,
}

impl Worker for LcWorker {
    async fn op(&mut self, seq: u64) -> anyhow::Result<()> {
        let lc = create_lc(&mut self.conn, self.prefix, seq).await?;
        let path = format!("/clusters/{lc}/api/v1/namespaces/default/configmaps");
        let body = objects::configmap("data", self.payload_bytes, seq);
        for _ in 0..NAMESPACE_RETRIES {
            let (status, answer) = self
                .conn
                .call(Method::POST, &path, Some(body.clone()))
                .await?;
            match status {
                StatusCode::CREATED => return Ok(()),
                // The `default` namespace may be created just after the logical cluster.
                StatusCode::NOT_FOUND => tokio::time::sleep(Duration::from_millis(10)).await,
                _ => bail!(
                    "{}",
                    describe_failure(&Method::POST, &path, Some(&body), status, &answer)
                ),
            }
        }
        bail!("POST {path}: namespace default still missing after {NAMESPACE_RETRIES} tries")
    }
}

/// Creates `plan.lcs` logical clusters (each with one ConfigMap) on a fresh `shard`.
pub async fn measure(plan: &Plan, shard: &ShardProcess) -> anyhow::Result<LcMemory> {
    let payload_bytes = plan.payload_bytes;
    let what = "logical clusters with one ConfigMap each";
    measure_with(
        shard,
        what,
        plan.lcs,
        plan.lcs_cap,
        plan.setup_cap,
        |conn, prefix| LcWorker {
            conn,
            prefix,
            payload_bytes,
        },
    )
    .await
}

/// On a fresh `shard`: [`WARM_UP_LCS`] operations, RSS, `n` operations (within `cap`), RSS. Each
/// operation creates one logical cluster named `<prefix><seq>` (and whatever the worker adds).
pub async fn measure_with<W: Worker>(
    shard: &ShardProcess,
    what: &str,
    n: usize,
    cap: Duration,
    setup_cap: Duration,
    make: impl Fn(Conn, &'static str) -> W,
) -> anyhow::Result<LcMemory> {
    let label = shard.backend.label();
    let probe = Probe {
        shard: Some(shard.pid()),
        etcd: shard.etcd_pid(),
    };
    let clients = 64;
    let conns = shard.connector.pool(Plan::connections_for(clients)).await?;
    let workers = |prefix: &'static str| -> Vec<W> {
        (0..clients)
            .map(|i| make(conns[i % conns.len()].clone(), prefix))
            .collect()
    };
    eprintln!("kcp-bench: {label}: {WARM_UP_LCS} warm-up {what}");
    let warm = phase::run(
        workers("warm"),
        Limits {
            duration: setup_cap,
            max_ops: WARM_UP_LCS,
        },
        probe,
    )
    .await;
    if warm.errors > 0 {
        bail!(
            "warm-up {what}: {} errors, first: {}",
            warm.errors,
            warm.first_error.unwrap_or_default()
        );
    }
    settle(shard.pid()).await;
    let rss_before = procfs::rss_bytes(shard.pid()).context("RSS before")?;
    let disk_before = shard.data_dir().map(|d| procfs::disk_usage(&d));

    eprintln!("kcp-bench: {label}: creating {n} {what} (cap {cap:?})");
    let load = phase::run(
        workers("lc"),
        Limits {
            duration: cap,
            max_ops: n as u64,
        },
        probe,
    )
    .await;
    settle(shard.pid()).await;
    let rss_after = procfs::rss_bytes(shard.pid()).context("RSS after")?;
    let peak_rss = procfs::peak_rss_bytes(shard.pid()).unwrap_or(rss_after);
    let disk_after = shard.data_dir().map(|d| procfs::disk_usage(&d));
    Ok(LcMemory {
        requested: n,
        created: load.ops,
        rss_before,
        rss_after,
        peak_rss,
        disk_before,
        disk_after,
        load,
    })
}
