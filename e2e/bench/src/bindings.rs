//! One APIExport bound into many workspaces, on a fresh shard per store: the rate at which the
//! bindings get Bound, the latency from a binding's POST to its Bound event, and the RSS each
//! binding adds beyond its workspace.
//!
//! Order: the provider workspace with the export (the Widgets of [`crate::bound`]); a `consumers`
//! workspace with `warm-up + n` Ready children; bindings in the warm-up children (not timed);
//! an idle RSS reading; a binding in each other child (timed, closed loop); an idle RSS reading.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::board::{self, Board};
use crate::bound;
use crate::client::Conn;
use crate::config::Plan;
use crate::idle::settle;
use crate::phase::{self, Limits, Probe, Summary, TimedWorker};
use crate::procfs;
use crate::shard::{Backend, ShardProcess};
use crate::workspaces::WARM_UP;
use crate::workspaces::create::{Flat, create_ready, flat_name};

/// Where the export lives, as the bindings name it.
const PROVIDER: &str = "root:provider";
/// The parent of the consumer workspaces.
const CONSUMERS: &str = "root:consumers";
/// The consumer workspaces' name prefix.
const PREFIX: &str = "c";

/// What one store measured.
#[derive(Debug, Clone)]
pub struct Bindings {
    /// Bindings asked for (beyond the warm-up), and the cap of their creation.
    pub requested: usize,
    pub cap: Duration,
    /// One op = one binding, POST → Bound event; throughput = Bound bindings ÷ (first POST → last
    /// Bound).
    pub load: Summary,
    /// Idle RSS before and after the timed bindings.
    pub rss_before: u64,
    pub rss_after: u64,
    /// Failures of the Bound watch, and the first one.
    pub watch_failures: u64,
    pub watch_first_failure: Option<String>,
    /// The APIExport virtual workspace over the bound workspaces.
    pub virtual_ws: Result<crate::virtual_ws::Virtual, String>,
}

impl Bindings {
    /// RSS added per Bound binding.
    pub fn rss_per_binding(&self) -> Option<f64> {
        (self.load.ops > 0)
            .then(|| self.rss_after.saturating_sub(self.rss_before) as f64 / self.load.ops as f64)
    }
}

/// The whole part on a fresh shard on `backend`.
pub async fn measure(plan: &Plan, binary: &Path, backend: Backend) -> Result<Bindings, String> {
    let shard = ShardProcess::start(binary, backend)
        .await
        .map_err(|e| format!("starting the shard: {e:#}"))?;
    let result = run(plan, &shard).await;
    result.map_err(|e| format!("{e:#}\nshard log tail:\n{}", shard.log_tail(20)))
}

/// Binds the export in workspace `root:consumers:<prefix>-<seq + offset>`; the binding is named
/// after the workspace, so the board tells them apart.
struct Bind {
    conn: Conn,
    board: Arc<Board>,
    offset: u64,
    timeout: Duration,
}

impl TimedWorker for Bind {
    async fn op(&mut self, seq: u64) -> anyhow::Result<Duration> {
        let name = flat_name(PREFIX, seq + self.offset);
        let collection = bound::bindings(&format!("{CONSUMERS}:{name}"));
        let body = bound::binding(&name, PROVIDER);
        let (took, _) = self
            .board
            .create_and_wait(&mut self.conn, &collection, &name, body, self.timeout)
            .await?;
        Ok(took)
    }
}

async fn run(whole: &Plan, shard: &ShardProcess) -> anyhow::Result<Bindings> {
    let plan = &whole.bindings;
    let label = shard.backend.label();
    let probe = Probe {
        shard: Some(shard.pid()),
        etcd: shard.etcd_pid(),
    };
    // kcp-admin, as kubectl and the plugins use the shard.
    let conns = shard
        .connector_for("root")?
        .pool(Plan::connections_for(plan.clients))
        .await?;
    let conn = |i: usize| conns[i % conns.len()].clone();
    let workspaces = Arc::new(Board::start(&shard.connector, board::WORKSPACES).await?);
    let timeout = plan.bound_timeout;
    let (_, provider) = create_ready(&mut conn(0), &workspaces, "root", "provider", timeout)
        .await
        .context("creating workspace provider")?;
    bound::publish(&mut conn(0), PROVIDER).await?;
    let (_, consumers) = create_ready(&mut conn(0), &workspaces, "root", "consumers", timeout)
        .await
        .context("creating workspace consumers")?;
    let parent: Arc<str> = Arc::from(consumers.cluster);

    let total = WARM_UP as usize + plan.workspaces;
    eprintln!("kcp-bench: {label}: {total} consumer workspaces for the bindings");
    let ready = Arc::new(Mutex::new(Vec::new()));
    let creators = (0..plan.clients)
        .map(|i| Flat {
            conn: conn(i),
            board: workspaces.clone(),
            parent: parent.clone(),
            prefix: PREFIX,
            offset: 0,
            timeout,
            ready: ready.clone(),
        })
        .collect();
    let created = phase::run_timed(
        creators,
        Limits {
            duration: plan.workspaces_cap,
            max_ops: total as u64,
        },
        probe,
    )
    .await;
    if created.errors > 0 || (created.ops as usize) < total {
        bail!(
            "consumer workspaces: {} of {total} Ready, {} errors (first: {})",
            created.ops,
            created.errors,
            created.first_error.unwrap_or_default()
        );
    }
    drop(workspaces);

    let bindings = Arc::new(Board::start(&shard.connector, board::API_BINDINGS).await?);
    let binders = |offset: u64| -> Vec<Bind> {
        (0..plan.clients)
            .map(|i| Bind {
                conn: conn(i),
                board: bindings.clone(),
                offset,
                timeout,
            })
            .collect()
    };
    eprintln!("kcp-bench: {label}: {WARM_UP} warm-up bindings");
    let warm = phase::run_timed(
        binders(0),
        Limits {
            duration: plan.bind_cap,
            max_ops: WARM_UP,
        },
        probe,
    )
    .await;
    if warm.errors > 0 || warm.ops < WARM_UP {
        bail!(
            "warm-up bindings: {} of {WARM_UP} Bound, {} errors (first: {})",
            warm.ops,
            warm.errors,
            warm.first_error.unwrap_or_default()
        );
    }
    settle(shard.pid()).await;
    let rss_before = procfs::rss_bytes(shard.pid()).context("reading the shard's RSS")?;
    eprintln!(
        "kcp-bench: {label}: {} bindings, {} creators (cap {:?})",
        plan.workspaces, plan.clients, plan.bind_cap
    );
    let load = phase::run_timed(
        binders(WARM_UP),
        Limits {
            duration: plan.bind_cap,
            max_ops: plan.workspaces as u64,
        },
        probe,
    )
    .await;
    settle(shard.pid()).await;
    let rss_after = procfs::rss_bytes(shard.pid()).context("reading the shard's RSS")?;
    let (watch_failures, watch_first_failure) = bindings.failures();
    drop(bindings);
    let setup = crate::virtual_ws::Setup {
        shard,
        conns: &conns,
        provider_cluster: &provider.cluster,
        provider_path: PROVIDER,
        workspaces: total as u64,
        workspace: Arc::new(|i| format!("{CONSUMERS}:{}", flat_name(PREFIX, i))),
        probe,
    };
    let virtual_ws = crate::virtual_ws::measure(whole, &setup)
        .await
        .map_err(|e| format!("{e:#}"));
    Ok(Bindings {
        requested: plan.workspaces,
        cap: plan.bind_cap,
        load,
        rss_before,
        rss_after,
        watch_failures,
        watch_first_failure,
        virtual_ws,
    })
}
