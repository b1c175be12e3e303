//! Server-side apply next to a merge patch: each client changes its own object again and again with
//! the same full body, once as an apply (`application/apply-patch+yaml`, one field manager) and once
//! as a JSON merge patch; for ConfigMaps and, when served, for Widgets.

use http::{Method, StatusCode};

use crate::client::Conn;
use crate::config::Plan;
use crate::phase::{self, Limits, Probe, Summary, Worker};
use crate::shard::ShardProcess;
use crate::shard_load::Kind;

const NS: &str = "apply";
const APPLY: &str = "application/apply-patch+yaml";
const MERGE: &str = "application/merge-patch+json";
pub const FIELD_MANAGER: &str = "kcp-bench";

/// Apply and merge patch of one kind.
#[derive(Debug, Clone)]
pub struct ApplyPair {
    pub kind: Kind,
    pub apply: Summary,
    pub merge: Summary,
}

#[derive(Debug, Clone, Default)]
pub struct ApplyResults {
    pub clients: usize,
    pub pairs: Vec<ApplyPair>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Apply,
    Merge,
}

impl Style {
    fn content_type(self) -> &'static str {
        match self {
            Style::Apply => APPLY,
            Style::Merge => MERGE,
        }
    }
}

struct ApplyWorker {
    conn: Conn,
    kind: Kind,
    style: Style,
    name: String,
    path: String,
    payload_bytes: usize,
    generation: u64,
}

impl ApplyWorker {
    async fn write(&mut self) -> anyhow::Result<()> {
        self.generation += 1;
        let body = self
            .kind
            .object(&self.name, self.payload_bytes, self.generation);
        self.conn
            .expect_as(
                Method::PATCH,
                &self.path,
                Some(body),
                self.style.content_type(),
                |s| s == StatusCode::OK || s == StatusCode::CREATED,
            )
            .await?;
        Ok(())
    }
}

impl Worker for ApplyWorker {
    async fn op(&mut self, _seq: u64) -> anyhow::Result<()> {
        self.write().await
    }
}

/// Runs apply and merge patch at `plan.apply_clients` for each of `kinds`.
pub async fn run(
    plan: &Plan,
    shard: &ShardProcess,
    kinds: &[Kind],
    probe: Probe,
) -> anyhow::Result<ApplyResults> {
    let clients = plan.apply_clients;
    let limits = Limits {
        duration: plan.phase,
        max_ops: plan.max_ops,
    };
    let mut results = ApplyResults {
        clients,
        pairs: Vec::new(),
    };
    for &kind in kinds {
        let mut summaries = Vec::new();
        for style in [Style::Apply, Style::Merge] {
            eprintln!(
                "kcp-bench: {}: {style:?} {kind:?}, {clients} clients",
                shard.backend.label()
            );
            let conns = shard.connector.pool(Plan::connections_for(clients)).await?;
            let mut workers = Vec::with_capacity(clients);
            for id in 0..clients {
                let name = format!("{style:?}-{id}").to_lowercase();
                let mut path = format!("{}/{name}", kind.collection(NS));
                if style == Style::Apply {
                    path.push_str("?fieldManager=");
                    path.push_str(FIELD_MANAGER);
                }
                let mut conn = conns[id % conns.len()].clone();
                // The object exists before the phase: an apply creates it, a merge patch needs it.
                if style == Style::Merge {
                    conn.expect(
                        Method::POST,
                        &kind.collection(NS),
                        Some(kind.object(&name, plan.payload_bytes, 0)),
                        |s| s == StatusCode::CREATED,
                    )
                    .await?;
                }
                let mut worker = ApplyWorker {
                    conn,
                    kind,
                    style,
                    name,
                    path,
                    payload_bytes: plan.payload_bytes,
                    generation: 0,
                };
                if style == Style::Apply {
                    worker.write().await?;
                }
                workers.push(worker);
            }
            summaries.push(phase::run(workers, limits, probe).await);
        }
        let merge = summaries.pop().unwrap_or_default();
        let apply = summaries.pop().unwrap_or_default();
        results.pairs.push(ApplyPair { kind, apply, merge });
    }
    Ok(results)
}
