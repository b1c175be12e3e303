//! The baseline: raw etcd through `etcd-client`, with the same value bytes the shard stores.

use std::sync::Arc;

use anyhow::{Context as _, bail};
use etcd_client::{Client, Compare, CompareOp, GetOptions, KvClient, Txn, TxnOp};

use crate::config::Plan;
use crate::objects;
use crate::phase::{self, Limits, Probe, Summary, Worker};

/// Large ranges exceed tonic's default 4 MiB response limit.
const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// Baseline results, one entry per concurrency level of the plan.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    pub put: Vec<Summary>,
    pub txn_create: Vec<Summary>,
    pub get: Vec<Summary>,
    pub range_full: Vec<Summary>,
    pub range_page: Vec<Summary>,
    pub value_bytes: usize,
}

enum Op {
    Put {
        prefix: String,
    },
    TxnCreate {
        prefix: String,
    },
    Get {
        keys: Arc<Vec<String>>,
        rng: objects::Rng,
    },
    Range {
        prefix: String,
        expect: usize,
    },
    Page {
        prefix: String,
        limit: i64,
        next: Option<Vec<u8>>,
    },
}

struct EtcdWorker {
    kv: KvClient,
    value: Vec<u8>,
    op: Op,
}

fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

impl Worker for EtcdWorker {
    async fn op(&mut self, seq: u64) -> anyhow::Result<()> {
        match &mut self.op {
            Op::Put { prefix } => {
                self.kv
                    .put(format!("{prefix}{seq:09}"), self.value.clone(), None)
                    .await
                    .context("etcd put")?;
            }
            Op::TxnCreate { prefix } => {
                let key = format!("{prefix}{seq:09}");
                let txn = Txn::new()
                    .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(key, self.value.clone(), None)]);
                let response = self.kv.txn(txn).await.context("etcd txn")?;
                if !response.succeeded() {
                    bail!("etcd txn create: key already existed");
                }
            }
            Op::Get { keys, rng } => {
                let key = &keys[rng.below(keys.len())];
                let response = self.kv.get(key.as_str(), None).await.context("etcd get")?;
                if response.kvs().is_empty() {
                    bail!("etcd get {key}: not found");
                }
            }
            Op::Range { prefix, expect } => {
                let response = self
                    .kv
                    .get(prefix.as_str(), Some(GetOptions::new().with_prefix()))
                    .await
                    .context("etcd range")?;
                if response.kvs().len() != *expect {
                    bail!(
                        "etcd range {prefix}: {} keys, expected {expect}",
                        response.kvs().len()
                    );
                }
            }
            Op::Page {
                prefix,
                limit,
                next,
            } => {
                let start = next.take().unwrap_or_else(|| prefix.as_bytes().to_vec());
                let response = self
                    .kv
                    .get(
                        start,
                        Some(
                            GetOptions::new()
                                .with_range(prefix_end(prefix))
                                .with_limit(*limit),
                        ),
                    )
                    .await
                    .context("etcd range page")?;
                if response.more()
                    && let Some(last) = response.kvs().last()
                {
                    let mut after = last.key().to_vec();
                    after.push(0);
                    *next = Some(after);
                }
            }
        }
        Ok(())
    }
}

async fn clients(endpoint: &str, n: usize) -> anyhow::Result<Vec<KvClient>> {
    let mut kvs = Vec::with_capacity(n);
    for _ in 0..n.max(1) {
        let client = Client::connect([endpoint], None)
            .await
            .with_context(|| format!("connecting to etcd at {endpoint}"))?;
        kvs.push(
            client
                .kv_client()
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
        );
    }
    Ok(kvs)
}

async fn workers(
    endpoint: &str,
    clients_n: usize,
    value: &[u8],
    make: impl Fn(usize) -> Op,
) -> anyhow::Result<Vec<EtcdWorker>> {
    let kvs = clients(endpoint, Plan::connections_for(clients_n)).await?;
    Ok((0..clients_n)
        .map(|id| EtcdWorker {
            kv: kvs[id % kvs.len()].clone(),
            value: value.to_vec(),
            op: make(id),
        })
        .collect())
}

/// Runs every baseline phase against the etcd at `endpoint` (process `etcd_pid`).
pub async fn run(plan: &Plan, endpoint: &str, etcd_pid: Option<u32>) -> anyhow::Result<Baseline> {
    let probe = Probe {
        shard: None,
        etcd: etcd_pid,
    };
    let limits = Limits {
        duration: plan.phase,
        max_ops: plan.max_ops,
    };
    let value = objects::configmap("bench-object-000000000", plan.payload_bytes, 0).to_vec();
    let mut baseline = Baseline {
        value_bytes: value.len(),
        ..Baseline::default()
    };

    for &c in &plan.concurrency {
        eprintln!("kcp-bench: etcd put, {c} clients");
        let prefix = format!("/bench/put/c{c}/");
        let ws = workers(endpoint, c, &value, |_| Op::Put {
            prefix: prefix.clone(),
        })
        .await?;
        baseline.put.push(phase::run(ws, limits, probe).await);
    }
    for &c in &plan.concurrency {
        eprintln!("kcp-bench: etcd txn create, {c} clients");
        let prefix = format!("/bench/txn/c{c}/");
        let ws = workers(endpoint, c, &value, |_| Op::TxnCreate {
            prefix: prefix.clone(),
        })
        .await?;
        baseline
            .txn_create
            .push(phase::run(ws, limits, probe).await);
    }
    // The listed collection: exactly `list_objects` keys under one prefix.
    eprintln!(
        "kcp-bench: etcd filling {} keys for range",
        plan.list_objects
    );
    let prefix = "/bench/range/".to_string();
    let ws = workers(endpoint, 64, &value, |_| Op::TxnCreate {
        prefix: prefix.clone(),
    })
    .await?;
    let fill = phase::run(
        ws,
        Limits {
            duration: plan.setup_cap,
            max_ops: plan.list_objects as u64,
        },
        probe,
    )
    .await;
    if fill.ops != plan.list_objects as u64 || fill.errors > 0 {
        bail!(
            "filling the etcd range collection: {} of {} keys written ({})",
            fill.ops,
            plan.list_objects,
            fill.first_error.unwrap_or_default()
        );
    }
    // Keys that exist: the listed collection, filled without errors.
    let keys: Arc<Vec<String>> = Arc::new(
        (0..plan.list_objects)
            .map(|i| format!("{prefix}{i:09}"))
            .collect(),
    );
    for &c in &plan.concurrency {
        eprintln!("kcp-bench: etcd get, {c} clients");
        let keys = keys.clone();
        let ws = workers(endpoint, c, &value, |id| Op::Get {
            keys: keys.clone(),
            rng: objects::Rng::new(id as u64 + 1),
        })
        .await?;
        baseline.get.push(phase::run(ws, limits, probe).await);
    }
    for &c in &plan.concurrency {
        eprintln!("kcp-bench: etcd range (full), {c} clients");
        let ws = workers(endpoint, c, &value, |_| Op::Range {
            prefix: prefix.clone(),
            expect: plan.list_objects,
        })
        .await?;
        baseline
            .range_full
            .push(phase::run(ws, limits, probe).await);
    }
    for &c in &plan.concurrency {
        eprintln!(
            "kcp-bench: etcd range (pages of {}), {c} clients",
            plan.page_size
        );
        let ws = workers(endpoint, c, &value, |_| Op::Page {
            prefix: prefix.clone(),
            limit: plan.page_size as i64,
            next: None,
        })
        .await?;
        baseline
            .range_page
            .push(phase::run(ws, limits, probe).await);
    }
    Ok(baseline)
}
