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
    /// Bytes of the CRD as one logical cluster serves it (a GET, with status and managedFields).
    pub crd_bytes: Option<usize>,
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

/// The measurement, and the size of the stored CRD when `crd`.
async fn one(
    plan: &Plan,
    binary: &std::path::Path,
    backend: Backend,
    crd: bool,
) -> (Result<LcMemory, String>, Option<usize>) {
    let shard = match ShardProcess::start(binary, backend).await {
        Ok(shard) => shard,
        Err(e) => return (Err(format!("starting the shard: {e:#}")), None),
    };
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
    let result = result.map_err(|e| format!("{e:#}\nshard log tail:\n{}", shard.log_tail(20)));
    let mut crd_bytes = None;
    if crd && result.is_ok() {
        let path = format!(
            "/clusters/lc0000000/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{}",
            custom::CRD_NAME
        );
        if let Ok(mut conn) = shard.conn().await {
            crd_bytes = conn
                .ok(http::Method::GET, &path, None)
                .await
                .ok()
                .map(|b| b.len());
        }
    }
    (result, crd_bytes)
}

/// Both runs on `backend`, each on a fresh shard.
pub async fn measure(plan: &Plan, binary: &std::path::Path, backend: Backend) -> CrdMemory {
    let (without, _) = one(plan, binary, backend, false).await;
    let (with, crd_bytes) = one(plan, binary, backend, true).await;
    CrdMemory {
        without,
        with,
        crd_bytes,
    }
}
