//! Command-line flags and the plan (sizes and caps) they select.

use std::path::PathBuf;
use std::time::Duration;

/// Benchmarks raw etcd, the shard on etcd and the shard on the embedded store in one run, and writes a
/// Markdown report.
#[derive(clap::Parser, Debug, Clone)]
#[command(name = "kcp-bench", version)]
pub struct Args {
    /// Where the report is written.
    #[arg(long, default_value = "docs/benchmarks.md", value_name = "FILE")]
    pub out: PathBuf,
    /// A small smoke run (short phases, 1,000 logical clusters for the memory phase).
    #[arg(long)]
    pub quick: bool,
    /// The `kcp-shard` binary to measure. Default: `cargo build --release -p kcp-shard`, then
    /// `<target>/release/kcp-shard`. Also read from `KCP_SHARD_BIN`.
    #[arg(long, env = "KCP_SHARD_BIN", value_name = "PATH")]
    pub shard_bin: Option<PathBuf>,
    /// Override the length of every timed load phase (seconds).
    #[arg(long, value_name = "SECS")]
    pub phase_secs: Option<f64>,
    /// Override how many logical clusters the memory phase creates.
    #[arg(long, value_name = "N")]
    pub lcs: Option<usize>,
    /// Override how many logical clusters the CRD memory phase creates (without, then with the CRD).
    #[arg(long, value_name = "N")]
    pub crd_lcs: Option<usize>,
    /// Concurrent creators of the workspaces part (each waits for its workspace to be Ready before
    /// creating the next one).
    #[arg(long, value_name = "N")]
    pub ws_clients: Option<usize>,
    /// Override how many workspaces the workspaces part aims for in its memory and restart steps.
    #[arg(long, value_name = "N")]
    pub workspaces: Option<usize>,
    /// Run only these parts (comma-separated); the report says "not run" for the others. For
    /// focused measurements while working on one area, never for the published report.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "PART")]
    pub only: Vec<Part>,
}

/// The parts of a run that `--only` selects.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Raw etcd put / txn / get / range.
    Baseline,
    /// Load phases on the shard on etcd and on the embedded store.
    Load,
    /// RSS per logical cluster.
    Memory,
    /// RSS per logical cluster with and without a CRD.
    CrdMemory,
    /// GET through kcp's authorizer chain next to system:masters.
    Authz,
    /// Workspaces: creation to Ready (flat and as a tree), RSS per workspace, deleting a tree,
    /// restarting with many workspaces.
    Workspaces,
    /// APIBindings of one APIExport in many workspaces: to Bound, RSS per binding.
    Bindings,
}

impl Args {
    /// Whether this run includes `part`.
    pub fn runs(&self, part: Part) -> bool {
        self.only.is_empty() || self.only.contains(&part)
    }
}

/// Sizes and caps of one run.
#[derive(Debug, Clone)]
pub struct Plan {
    pub quick: bool,
    /// Wall-clock cap of every timed load phase.
    pub phase: Duration,
    /// Operation cap of every timed load phase.
    pub max_ops: u64,
    /// Concurrent clients of the load phases.
    pub concurrency: Vec<usize>,
    /// Objects in the listed collection.
    pub list_objects: usize,
    /// Page size of the paged list.
    pub page_size: usize,
    /// Bytes of payload in each ConfigMap / etcd value.
    pub payload_bytes: usize,
    /// Watcher counts of the watch-latency phase, and how many events each measures.
    pub watchers: Vec<usize>,
    pub watch_events: usize,
    /// Pause between two measured creates in the watch phase.
    pub watch_interval: Duration,
    /// Logical clusters of the memory phase and its wall-clock cap.
    pub lcs: usize,
    pub lcs_cap: Duration,
    /// Cap of setup steps (filling the list collection, ...).
    pub setup_cap: Duration,
    /// Concurrent clients of the server-side apply phases.
    pub apply_clients: usize,
    /// Logical clusters of the CRD memory phase (without, then with the CRD) and its cap per run.
    pub crd_lcs: usize,
    pub crd_lcs_cap: Duration,
    pub ws: WorkspacePlan,
    pub bindings: BindingPlan,
}

/// Sizes and caps of the bindings part (per store).
#[derive(Debug, Clone)]
pub struct BindingPlan {
    /// Concurrent creators (of the workspaces, then of the bindings).
    pub clients: usize,
    /// Consumer workspaces, each binding the export once (beyond a warm-up of
    /// [`crate::workspaces::WARM_UP`]), and the cap of creating them and of binding them.
    pub workspaces: usize,
    pub workspaces_cap: Duration,
    pub bind_cap: Duration,
    /// How long one binding may take from its POST to Bound before it counts as an error.
    pub bound_timeout: Duration,
    /// Widgets created in each bound workspace for the virtual-workspace measurement.
    pub objects_per_workspace: usize,
}

/// Sizes and caps of the workspaces part (per store). The caps keep the whole part within ~10 min on
/// 2 cores however slow the workspace controller is; whatever a cap cut short is reported as such.
#[derive(Debug, Clone)]
pub struct WorkspacePlan {
    /// Concurrent creators.
    pub clients: usize,
    /// Children of workspace `flat`, and the cap of their creation.
    pub flat: usize,
    pub flat_cap: Duration,
    /// `tree` gets `tree_children` children with `tree_grandchildren` children each.
    pub tree_children: usize,
    pub tree_grandchildren: usize,
    pub tree_cap: Duration,
    /// Workspaces (children of `flat`, counting the first `flat`) of the memory and restart steps,
    /// and the cap of creating those beyond `flat`.
    pub total: usize,
    pub total_cap: Duration,
    /// How long the deletion of `tree` is followed.
    pub delete_cap: Duration,
    /// How long one workspace may take from its POST to Ready before it counts as an error.
    pub ready_timeout: Duration,
    /// The latency step: `light` more children of `flat` from `light_clients` creators, few
    /// enough that the shard is not saturated (with `clients` creators the mean latency is just
    /// creators ÷ throughput), within `light_cap`.
    pub light_clients: usize,
    pub light: usize,
    pub light_cap: Duration,
}

impl WorkspacePlan {
    /// Workspaces below `tree`.
    pub fn tree_size(&self) -> usize {
        self.tree_children * (1 + self.tree_grandchildren)
    }
}

impl Plan {
    pub fn from_args(args: &Args) -> Plan {
        let mut plan = if args.quick {
            Plan {
                quick: true,
                phase: Duration::from_secs(1),
                max_ops: 20_000,
                concurrency: vec![1, 16, 64],
                list_objects: 2_000,
                page_size: 500,
                payload_bytes: 256,
                watchers: vec![1, 1_000],
                watch_events: 20,
                watch_interval: Duration::from_millis(20),
                lcs: 1_000,
                lcs_cap: Duration::from_secs(30),
                setup_cap: Duration::from_secs(30),
                apply_clients: 16,
                crd_lcs: 1_000,
                crd_lcs_cap: Duration::from_secs(30),
                ws: WorkspacePlan {
                    clients: 32,
                    flat: 500,
                    flat_cap: Duration::from_secs(20),
                    tree_children: 20,
                    tree_grandchildren: 24,
                    tree_cap: Duration::from_secs(20),
                    total: 2_000,
                    total_cap: Duration::from_secs(20),
                    delete_cap: Duration::from_secs(30),
                    ready_timeout: Duration::from_secs(30),
                    light_clients: 8,
                    light: 300,
                    light_cap: Duration::from_secs(10),
                },
                bindings: BindingPlan {
                    clients: 32,
                    workspaces: 500,
                    workspaces_cap: Duration::from_secs(30),
                    bind_cap: Duration::from_secs(30),
                    bound_timeout: Duration::from_secs(30),
                    objects_per_workspace: 2,
                },
            }
        } else {
            Plan {
                quick: false,
                phase: Duration::from_secs(5),
                max_ops: 400_000,
                concurrency: vec![1, 16, 64],
                list_objects: 10_000,
                page_size: 500,
                payload_bytes: 256,
                watchers: vec![1, 1_000],
                watch_events: 200,
                watch_interval: Duration::from_millis(20),
                lcs: 100_000,
                lcs_cap: Duration::from_secs(150),
                setup_cap: Duration::from_secs(60),
                apply_clients: 16,
                crd_lcs: 10_000,
                crd_lcs_cap: Duration::from_secs(90),
                ws: WorkspacePlan {
                    clients: 32,
                    flat: 10_000,
                    flat_cap: Duration::from_secs(70),
                    tree_children: 100,
                    tree_grandchildren: 99,
                    tree_cap: Duration::from_secs(70),
                    total: 100_000,
                    total_cap: Duration::from_secs(100),
                    // The old sequential controller took 60-145 s for the 10k tree; 13-48 s now.
                    delete_cap: Duration::from_secs(75),
                    ready_timeout: Duration::from_secs(30),
                    light_clients: 8,
                    light: 3_000,
                    light_cap: Duration::from_secs(30),
                },
                bindings: BindingPlan {
                    clients: 32,
                    workspaces: 10_000,
                    workspaces_cap: Duration::from_secs(90),
                    bind_cap: Duration::from_secs(120),
                    bound_timeout: Duration::from_secs(30),
                    objects_per_workspace: 10,
                },
            }
        };
        if let Some(secs) = args.phase_secs
            && secs > 0.0
        {
            plan.phase = Duration::from_secs_f64(secs);
        }
        if let Some(lcs) = args.lcs {
            plan.lcs = lcs;
        }
        if let Some(lcs) = args.crd_lcs {
            plan.crd_lcs = lcs;
        }
        if let Some(clients) = args.ws_clients
            && clients > 0
        {
            plan.ws.clients = clients;
        }
        if let Some(total) = args.workspaces {
            plan.ws.total = total;
        }
        plan
    }

    /// Connections shared by `clients` concurrent clients: 1 → 1, 16 → 4, 64 → 8 (as in the etcd
    /// baseline measured for this machine kind).
    pub fn connections_for(clients: usize) -> usize {
        match clients {
            0..=1 => 1,
            2..=16 => clients.div_ceil(4),
            _ => 8,
        }
    }
}
