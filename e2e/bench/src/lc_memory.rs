//! Memory per logical cluster: a fresh shard, N logical clusters holding one ConfigMap each, RSS before
//! and after.

use std::time::Duration;

use anyhow::{Context as _, bail};
use http::{Method, StatusCode};

use crate::client::{Conn, describe_failure};
use crate::config::Plan;
use crate::objects;
use crate::phase::{self, Limits, Probe, Summary, Worker};
use crate::procfs;
use crate::shard::ShardProcess;

/// Logical clusters created before the "before" reading, so one-time allocations are not counted.
const WARM_UP_LCS: u64 = 200;
/// Pause before each RSS reading (let background work settle).
const SETTLE: Duration = Duration::from_secs(3);
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

struct LcWorker {
    conn: Conn,
    prefix: &'static str,
    payload_bytes: usize,
}

impl Worker for LcWorker {
    async fn op(&mut self, seq: u64) -> anyhow::Result<()> {
        let lc = format!("{}{seq:07}", self.prefix);
        self.conn
            .expect(
                Method::POST,
                &format!("/clusters/{lc}/apis/core.kcp.io/v1alpha1/logicalclusters"),
                Some(objects::logical_cluster()),
                |s| s == StatusCode::CREATED,
            )
            .await?;
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

async fn workers(
    shard: &ShardProcess,
    clients: usize,
    prefix: &'static str,
    plan: &Plan,
) -> anyhow::Result<Vec<LcWorker>> {
    let conns = shard.connector.pool(Plan::connections_for(clients)).await?;
    Ok((0..clients)
        .map(|i| LcWorker {
            conn: conns[i % conns.len()].clone(),
            prefix,
            payload_bytes: plan.payload_bytes,
        })
        .collect())
}

/// Creates `plan.lcs` logical clusters (each with one ConfigMap) on a fresh `shard`.
pub async fn measure(plan: &Plan, shard: &ShardProcess) -> anyhow::Result<LcMemory> {
    let label = shard.backend.label();
    let probe = Probe {
        shard: Some(shard.pid()),
        etcd: shard.etcd_pid(),
    };
    let clients = 64;
    eprintln!("kcp-bench: {label}: {WARM_UP_LCS} warm-up logical clusters");
    let warm = phase::run(
        workers(shard, clients, "warm", plan).await?,
        Limits {
            duration: plan.setup_cap,
            max_ops: WARM_UP_LCS,
        },
        probe,
    )
    .await;
    if warm.errors > 0 {
        bail!(
            "warm-up logical clusters: {} errors, first: {}",
            warm.errors,
            warm.first_error.unwrap_or_default()
        );
    }
    tokio::time::sleep(SETTLE).await;
    let rss_before = procfs::rss_bytes(shard.pid()).context("RSS before")?;
    let disk_before = shard.data_dir().map(|d| procfs::disk_usage(&d));

    eprintln!(
        "kcp-bench: {label}: creating {} logical clusters with one ConfigMap each (cap {:?})",
        plan.lcs, plan.lcs_cap
    );
    let load = phase::run(
        workers(shard, clients, "lc", plan).await?,
        Limits {
            duration: plan.lcs_cap,
            max_ops: plan.lcs as u64,
        },
        probe,
    )
    .await;
    tokio::time::sleep(SETTLE).await;
    let rss_after = procfs::rss_bytes(shard.pid()).context("RSS after")?;
    let peak_rss = procfs::peak_rss_bytes(shard.pid()).unwrap_or(rss_after);
    let disk_after = shard.data_dir().map(|d| procfs::disk_usage(&d));
    Ok(LcMemory {
        requested: plan.lcs,
        created: load.ops,
        rss_before,
        rss_after,
        peak_rss,
        disk_before,
        disk_after,
        load,
    })
}
