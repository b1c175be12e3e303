//! Memory of a CRD per logical cluster: on a fresh shard, N logical clusters without a CRD; on another
//! fresh shard, N logical clusters each with the same CRD, Established. The compiled schema is meant
//! to be shared, so the CRD should add little per logical cluster.

use crate::client::Conn;
use crate::config::Plan;
use crate::custom;
use crate::lc_memory::{self, LcMemory};
use crate::phase::Worker;
use crate::shard::{Backend, ShardProcess};

/// Both runs on one store.
#[derive(Debug, Clone)]
pub struct CrdMemory {
    pub without: Result<LcMemory, String>,
    pub with: Result<LcMemory, String>,
}

impl CrdMemory {
    /// Bytes per LC with the CRD ÷ bytes per LC without it.
    pub fn ratio(&self) -> Option<f64> {
        let without = self.without.as_ref().ok()?.bytes_per_lc()?;
        let with = self.with.as_ref().ok()?.bytes_per_lc()?;
        (without > 0.0).then(|| with / without)
    }
}

struct CrdWorker {
    conn: Conn,
    prefix: &'static str,
    crd: bool,
}

impl Worker for CrdWorker {
    async fn op(&mut self, seq: u64) -> anyhow::Result<()> {
        let lc = lc_memory::create_lc(&mut self.conn, self.prefix, seq).await?;
        if self.crd {
            custom::install(&mut self.conn, &lc).await?;
        }
        Ok(())
    }
}

async fn one(
    plan: &Plan,
    binary: &std::path::Path,
    backend: Backend,
    crd: bool,
) -> Result<LcMemory, String> {
    let shard = ShardProcess::start(binary, backend)
        .await
        .map_err(|e| format!("starting the shard: {e:#}"))?;
    let what = if crd {
        "logical clusters, each with the CRD Established"
    } else {
        "logical clusters without a CRD"
    };
    let result = lc_memory::measure_with(
        &shard,
        what,
        plan.crd_lcs,
        plan.crd_lcs_cap,
        plan.setup_cap,
        |conn, prefix| CrdWorker { conn, prefix, crd },
    )
    .await;
    result.map_err(|e| format!("{e:#}\nshard log tail:\n{}", shard.log_tail(20)))
}

/// Both runs on `backend`, each on a fresh shard.
pub async fn measure(plan: &Plan, binary: &std::path::Path, backend: Backend) -> CrdMemory {
    CrdMemory {
        without: one(plan, binary, backend, false).await,
        with: one(plan, binary, backend, true).await,
    }
}
