//! Workspaces at scale, on one fresh shard per store: creation to Ready (flat, then as a tree),
//! deleting the tree, RSS per Ready empty workspace, restarting with many workspaces.
//!
//! Order on the shard: `flat` in `root`, warm-up children; a few more children of `flat` from fewer
//! creators (timed: the latency of a fresh shard that is not saturated), RSS; `flat`'s first
//! children (timed), RSS; more children of `flat` up to the memory target, RSS; restart (timed),
//! RSS once idle; `tree` with its children and grandchildren (timed), then its deletion (timed).
//! The tree comes last so that what it leaves behind (freed memory the allocator keeps, watch
//! history) is not counted as memory per workspace; it so runs next to all the flat workspaces.

pub mod create;
mod delete;
mod restart;

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::board::{self, Board};
use crate::client::Conn;
use crate::config::{Plan, WorkspacePlan};
use crate::idle::settle;
use crate::phase::{self, Limits, Probe, Summary};
use crate::procfs;
use crate::shard::{Backend, ShardProcess};
use create::{Flat, Tree, TreeJobs, create_ready};
pub use delete::Deletion;
pub use restart::Restart;

/// Children of `flat` created before the first RSS reading, so one-time allocations are not counted.
pub const WARM_UP: u64 = 100;

/// A timed creation phase.
#[derive(Debug, Clone)]
pub struct Creation {
    pub requested: usize,
    pub cap: Duration,
    /// One op = one workspace, POST → Ready event; throughput = Ready workspaces ÷ (first POST →
    /// last Ready).
    pub load: Summary,
}

impl Creation {
    pub fn capped(&self) -> bool {
        (self.load.ops as usize) < self.requested
    }
}

/// RSS of the shard (idle) with some number of Ready workspaces beyond the warm-up.
#[derive(Debug, Clone, Copy)]
pub struct RssAt {
    pub workspaces: u64,
    pub rss: u64,
    /// LogicalClusters on the shard then (a cross-check of `workspaces`).
    pub lcs: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct Memory {
    /// After the warm-up.
    pub before: RssAt,
    /// After the first flat set.
    pub at_flat: RssAt,
    /// After the flat children up to the target.
    pub at_total: Option<RssAt>,
    pub requested_total: usize,
    /// Creating the children beyond the first flat set.
    pub more: Option<Creation>,
    pub peak_rss: u64,
}

impl RssAt {
    /// (this − before) ÷ the workspaces added since.
    pub fn per_workspace(&self, before: &RssAt) -> Option<f64> {
        let added = self.workspaces.saturating_sub(before.workspaces);
        (added > 0).then(|| self.rss.saturating_sub(before.rss) as f64 / added as f64)
    }
}

/// Everything measured on one store; each step fails on its own.
#[derive(Debug, Clone)]
pub struct Workspaces {
    pub flat: Creation,
    pub tree: Result<Creation, String>,
    pub delete: Result<Deletion, String>,
    pub memory: Memory,
    pub restart: Result<Restart, String>,
    /// Children of `flat` from `light_clients` creators, right after the warm-up.
    pub light: Creation,
    /// Failures of the Ready watch (re-opened each time), and the first one.
    pub watch_failures: u64,
    pub watch_first_failure: Option<String>,
    /// The end of the shard's log (it logs warnings and errors only, unless `KCP_BENCH_SHARD_LOG`).
    pub shard_log: String,
}

/// Lines of the shard's log kept for the report.
const LOG_LINES: usize = 12;

/// The whole part on a fresh shard on `backend`.
pub async fn measure(plan: &Plan, binary: &Path, backend: Backend) -> Result<Workspaces, String> {
    let mut shard = ShardProcess::start(binary, backend)
        .await
        .map_err(|e| format!("starting the shard: {e:#}"))?;
    let result = run(&plan.ws, &mut shard).await;
    result.map_err(|e| format!("{e:#}\nshard log tail:\n{}", shard.log_tail(20)))
}

/// Who creates the workspaces: `kcp-admin` (group `system:kcp:admin`), the user of the shard's
/// admin.kubeconfig's current context, as kubectl and the `ws` plugin use it. Not system:masters,
/// for which kcp records no creator and makes no `workspace-admin` binding.
const CREATOR_CONTEXT: &str = "root";

/// What the creators of one shard share.
struct Creators {
    /// The store, for progress lines.
    label: &'static str,
    board: Arc<Board>,
    conns: Vec<Conn>,
    probe: Probe,
}

impl Creators {
    async fn new(shard: &ShardProcess, clients: usize) -> anyhow::Result<Creators> {
        Ok(Creators {
            label: shard.backend.label(),
            board: Arc::new(Board::start(&shard.connector, board::WORKSPACES).await?),
            conns: (shard.connector_for(CREATOR_CONTEXT)?)
                .pool(Plan::connections_for(clients))
                .await?,
            probe: Probe {
                shard: Some(shard.pid()),
                etcd: shard.etcd_pid(),
            },
        })
    }

    fn conn(&self, i: usize) -> Conn {
        self.conns[i % self.conns.len()].clone()
    }
}

/// The children of `flat` that got Ready, in creation order.
type Names = Arc<Mutex<Vec<String>>>;

/// Children `<prefix>-<offset + i>` of `flat`, i < n, created within `cap` by `clients` creators.
struct FlatSet {
    /// What the step is, for the progress line.
    what: &'static str,
    prefix: &'static str,
    offset: u64,
    n: usize,
    cap: Duration,
    clients: usize,
}

async fn flat_phase(
    ws: &WorkspacePlan,
    creators: &Creators,
    parent: &Arc<str>,
    set: FlatSet,
    names: &Names,
) -> Creation {
    eprintln!(
        "kcp-bench: {}: {} {} in flat, {} creators (cap {:?})",
        creators.label, set.n, set.what, set.clients, set.cap
    );
    let workers = (0..set.clients)
        .map(|i| Flat {
            conn: creators.conn(i),
            board: creators.board.clone(),
            parent: parent.clone(),
            prefix: set.prefix,
            offset: set.offset,
            timeout: ws.ready_timeout,
            ready: names.clone(),
        })
        .collect();
    let limits = Limits {
        duration: set.cap,
        max_ops: set.n as u64,
    };
    Creation {
        requested: set.n,
        cap: set.cap,
        load: phase::run_timed(workers, limits, creators.probe).await,
    }
}

/// An idle RSS reading with `workspaces` Ready beyond the warm-up.
async fn rss_at(shard: &ShardProcess, conn: &mut Conn, workspaces: u64) -> anyhow::Result<RssAt> {
    settle(shard.pid()).await;
    Ok(RssAt {
        workspaces,
        rss: procfs::rss_bytes(shard.pid()).context("reading the shard's RSS")?,
        lcs: delete::lc_count(conn).await.ok(),
    })
}

async fn run(ws: &WorkspacePlan, shard: &mut ShardProcess) -> anyhow::Result<Workspaces> {
    let label = shard.backend.label();
    let creators = Creators::new(shard, ws.clients).await?;
    let mut conn = shard.conn().await?;
    let (_, flat) = create_ready(
        &mut creators.conn(0),
        &creators.board,
        "root",
        "flat",
        ws.ready_timeout,
    )
    .await
    .context("creating workspace flat in root")?;
    let flat: Arc<str> = Arc::from(flat.cluster);
    let warm_names = Names::default();
    let warm = flat_phase(
        ws,
        &creators,
        &flat,
        FlatSet {
            what: "warm-up workspaces",
            prefix: "warm",
            offset: 0,
            n: WARM_UP as usize,
            cap: ws.ready_timeout,
            clients: ws.clients,
        },
        &warm_names,
    )
    .await;
    if warm.load.errors > 0 {
        bail!(
            "warm-up workspaces: {} errors, first: {}",
            warm.load.errors,
            warm.load.first_error.unwrap_or_default()
        );
    }
    let names = Names::default();
    // Its workspaces stay, in `names`: they are on the shard at the restart.
    let light = flat_phase(
        ws,
        &creators,
        &flat,
        FlatSet {
            what: "workspaces (the latency step)",
            prefix: "l",
            offset: 0,
            n: ws.light,
            cap: ws.light_cap,
            clients: ws.light_clients.min(ws.clients),
        },
        &names,
    )
    .await;
    let before = rss_at(shard, &mut conn, 0).await?;

    let flat_set = flat_phase(
        ws,
        &creators,
        &flat,
        FlatSet {
            what: "workspaces",
            prefix: "f",
            offset: 0,
            n: ws.flat,
            cap: ws.flat_cap,
            clients: ws.clients,
        },
        &names,
    )
    .await;
    let at_flat = rss_at(shard, &mut conn, flat_set.load.ops).await?;

    let more_n = ws.total.saturating_sub(flat_set.load.ops as usize);
    let (more, at_total) = if more_n > 0 {
        let more = flat_phase(
            ws,
            &creators,
            &flat,
            // After every name the first set may have used.
            FlatSet {
                what: "more workspaces",
                prefix: "f",
                offset: ws.flat as u64,
                n: more_n,
                cap: ws.total_cap,
                clients: ws.clients,
            },
            &names,
        )
        .await;
        let at_total = rss_at(shard, &mut conn, flat_set.load.ops + more.load.ops).await?;
        (Some(more), Some(at_total))
    } else {
        (None, None)
    };
    let memory = Memory {
        before,
        at_flat,
        at_total,
        requested_total: ws.total,
        more,
        peak_rss: procfs::peak_rss_bytes(shard.pid()).unwrap_or_default(),
    };
    let (mut watch_failures, mut watch_first_failure) = creators.board.failures();
    // Its watch and connections die with the old process.
    drop(creators);

    let ready_names = names.lock().unwrap_or_else(PoisonError::into_inner).clone();
    // Everything on the shard: the children of `flat` (the light step's too), the warm-up ones
    // and `flat`.
    let on_shard = ready_names.len() as u64 + WARM_UP + 1;
    eprintln!("kcp-bench: {label}: restarting with {on_shard} workspaces");
    let restart = restart::measure(shard, on_shard, &ready_names)
        .await
        .map_err(|e| format!("{e:#}"));

    let (tree, delete) = match &restart {
        Ok(_) => {
            let creators = Creators::new(shard, ws.clients).await?;
            let mut conn = shard.conn().await?;
            eprintln!(
                "kcp-bench: {label}: a tree of {} workspaces (cap {:?})",
                ws.tree_size(),
                ws.tree_cap
            );
            let tree = tree_phase(ws, &creators).await;
            let delete = match &tree {
                Ok(tree) => {
                    eprintln!(
                        "kcp-bench: {label}: deleting the tree (cap {:?})",
                        ws.delete_cap
                    );
                    delete::measure(
                        &mut conn,
                        &creators.board,
                        "tree",
                        tree.load.ops + 1,
                        ws.delete_cap,
                    )
                    .await
                    .map_err(|e| format!("{e:#}"))
                }
                Err(err) => Err(format!("no tree to delete: {err}")),
            };
            let (failures, first) = creators.board.failures();
            watch_failures += failures;
            watch_first_failure = watch_first_failure.or(first);
            (tree, delete)
        }
        Err(_) => {
            let not_run = "not run: the restart failed".to_string();
            (Err(not_run.clone()), Err(not_run))
        }
    };
    Ok(Workspaces {
        flat: flat_set,
        tree,
        delete,
        memory,
        restart,
        light,
        watch_failures,
        watch_first_failure,
        shard_log: shard.log_tail(LOG_LINES),
    })
}

/// `tree` in root, then its children and grandchildren, each once its parent is Ready.
async fn tree_phase(ws: &WorkspacePlan, creators: &Creators) -> Result<Creation, String> {
    let (_, top) = create_ready(
        &mut creators.conn(0),
        &creators.board,
        "root",
        "tree",
        ws.ready_timeout,
    )
    .await
    .map_err(|e| format!("creating workspace tree in root: {e:#}"))?;
    let jobs = TreeJobs::new(&top.cluster, ws.tree_children, ws.tree_grandchildren);
    let workers = (0..ws.clients)
        .map(|i| Tree {
            conn: creators.conn(i),
            board: creators.board.clone(),
            jobs: jobs.clone(),
            timeout: ws.ready_timeout,
        })
        .collect();
    let limits = Limits {
        duration: ws.tree_cap,
        max_ops: ws.tree_size() as u64,
    };
    Ok(Creation {
        requested: ws.tree_size(),
        cap: ws.tree_cap,
        load: phase::run_timed(workers, limits, creators.probe).await,
    })
}
