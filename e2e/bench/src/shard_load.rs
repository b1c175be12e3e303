//! Load phases against one shard: create, get, update, list (whole and paged) of ConfigMaps, then
//! watch latency.

use std::sync::Arc;

use anyhow::{Context as _, bail};
use http::{Method, StatusCode};
use serde::Deserialize;

use crate::client::Conn;
use crate::config::Plan;
use crate::objects;
use crate::phase::{self, Limits, Probe, Summary, Worker};
use crate::shard::ShardProcess;
use crate::watch::{self, WatchResult};

/// The logical cluster the load phases use.
pub const LC: &str = "bench";

/// Results of one shard, one entry per concurrency level of the plan.
#[derive(Debug, Clone)]
pub struct ShardResults {
    pub create: Vec<Summary>,
    pub get: Vec<Summary>,
    pub update: Vec<Summary>,
    pub list_full: Vec<Summary>,
    pub list_page: Vec<Summary>,
    pub watch: Vec<WatchResult>,
    /// Bytes of one whole list response.
    pub list_bytes: usize,
    /// Steps that could not run, with why.
    pub failures: Vec<String>,
}

impl ShardResults {
    pub fn new() -> ShardResults {
        ShardResults {
            create: Vec::new(),
            get: Vec::new(),
            update: Vec::new(),
            list_full: Vec::new(),
            list_page: Vec::new(),
            watch: Vec::new(),
            list_bytes: 0,
            failures: Vec::new(),
        }
    }
}

#[derive(Deserialize)]
struct ObjectMeta {
    metadata: Meta,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

#[derive(Deserialize)]
struct ListCount {
    items: Vec<serde::de::IgnoredAny>,
}

fn collection(ns: &str) -> String {
    format!("/clusters/{LC}/api/v1/namespaces/{ns}/configmaps")
}

fn resource_version_in(body: &[u8], what: &str) -> anyhow::Result<String> {
    let meta: ObjectMeta = serde_json::from_slice(body)
        .with_context(|| format!("{what}: response is not an object"))?;
    meta.metadata
        .resource_version
        .with_context(|| format!("{what}: response has no metadata.resourceVersion"))
}

enum Op {
    Create {
        prefix: String,
    },
    Get {
        names: Arc<Vec<String>>,
        rng: objects::Rng,
    },
    Update {
        name: String,
        resource_version: String,
        generation: u64,
    },
    ListFull,
    Page {
        continue_token: Option<String>,
    },
}

struct ShardWorker {
    conn: Conn,
    collection: String,
    payload_bytes: usize,
    page_size: usize,
    op: Op,
}

impl Worker for ShardWorker {
    async fn op(&mut self, seq: u64) -> anyhow::Result<()> {
        match &mut self.op {
            Op::Create { prefix } => {
                let name = format!("{prefix}{seq:09}");
                let body = objects::configmap(&name, self.payload_bytes, 0);
                self.conn
                    .expect(Method::POST, &self.collection, Some(body), |s| {
                        s == StatusCode::CREATED
                    })
                    .await?;
            }
            Op::Get { names, rng } => {
                let name = &names[rng.below(names.len())];
                let path = format!("{}/{name}", self.collection);
                self.conn
                    .expect(Method::GET, &path, None, |s| s == StatusCode::OK)
                    .await?;
            }
            Op::Update {
                name,
                resource_version,
                generation,
            } => {
                *generation += 1;
                let path = format!("{}/{name}", self.collection);
                let body = objects::configmap_update(
                    name,
                    resource_version,
                    self.payload_bytes,
                    *generation,
                );
                let answer = self
                    .conn
                    .expect(Method::PUT, &path, Some(body), |s| s == StatusCode::OK)
                    .await?;
                *resource_version = resource_version_in(&answer, &path)?;
            }
            Op::ListFull => {
                self.conn
                    .expect(Method::GET, &self.collection, None, |s| s == StatusCode::OK)
                    .await?;
            }
            Op::Page { continue_token } => {
                let mut path = format!("{}?limit={}", self.collection, self.page_size);
                if let Some(token) = continue_token.take() {
                    path.push_str("&continue=");
                    path.push_str(&percent_encode(&token));
                }
                let answer = self
                    .conn
                    .expect(Method::GET, &path, None, |s| s == StatusCode::OK)
                    .await?;
                let meta: ObjectMeta = serde_json::from_slice(&answer)
                    .with_context(|| format!("GET {path}: response is not a list"))?;
                *continue_token = meta.metadata.continue_token.filter(|t| !t.is_empty());
            }
        }
        Ok(())
    }
}

/// Query-string encoding of a continue token (base64 may hold `+`, `/`, `=`).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

struct Ctx<'a> {
    plan: &'a Plan,
    shard: &'a ShardProcess,
    probe: Probe,
    limits: Limits,
}

impl Ctx<'_> {
    async fn workers(
        &self,
        clients: usize,
        ns: &str,
        make: impl Fn(usize) -> Op,
    ) -> anyhow::Result<Vec<ShardWorker>> {
        let conns = self
            .shard
            .connector
            .pool(Plan::connections_for(clients))
            .await?;
        Ok((0..clients)
            .map(|id| ShardWorker {
                conn: conns[id % conns.len()].clone(),
                collection: collection(ns),
                payload_bytes: self.plan.payload_bytes,
                page_size: self.plan.page_size,
                op: make(id),
            })
            .collect())
    }
}

/// Creates the logical cluster and the namespaces the phases use.
async fn setup(conn: &mut Conn, namespaces: &[&str]) -> anyhow::Result<()> {
    let exists = |s: StatusCode| s.is_success() || s == StatusCode::CONFLICT;
    conn.expect(
        Method::POST,
        &format!("/clusters/{LC}/apis/core.kcp.io/v1alpha1/logicalclusters"),
        Some(objects::logical_cluster()),
        exists,
    )
    .await
    .context("creating the logical cluster")?;
    for ns in namespaces {
        conn.expect(
            Method::POST,
            &format!("/clusters/{LC}/api/v1/namespaces"),
            Some(objects::namespace(ns)),
            exists,
        )
        .await
        .with_context(|| format!("creating namespace {ns}"))?;
    }
    Ok(())
}

/// Runs every load phase of the plan against `shard`.
pub async fn run(plan: &Plan, shard: &ShardProcess) -> ShardResults {
    let mut results = ShardResults::new();
    if let Err(err) = run_inner(plan, shard, &mut results).await {
        results.failures.push(format!("{err:#}"));
    }
    results
}

async fn run_inner(
    plan: &Plan,
    shard: &ShardProcess,
    results: &mut ShardResults,
) -> anyhow::Result<()> {
    let label = shard.backend.label();
    let ctx = Ctx {
        plan,
        shard,
        probe: Probe {
            shard: Some(shard.pid()),
            etcd: shard.etcd_pid(),
        },
        limits: Limits {
            duration: plan.phase,
            max_ops: plan.max_ops,
        },
    };
    let mut conn = shard.conn().await?;
    let watch_namespaces: Vec<String> =
        plan.watchers.iter().map(|w| format!("watch-{w}")).collect();
    let mut namespaces = vec!["load", "list", "update"];
    namespaces.extend(watch_namespaces.iter().map(String::as_str));
    setup(&mut conn, &namespaces).await?;

    for &c in &plan.concurrency {
        eprintln!("kcp-bench: {label}: create, {c} clients");
        let prefix = format!("c{c}-");
        let ws = ctx
            .workers(c, "load", |_| Op::Create {
                prefix: prefix.clone(),
            })
            .await?;
        results
            .create
            .push(phase::run(ws, ctx.limits, ctx.probe).await);
    }

    eprintln!(
        "kcp-bench: {label}: filling {} objects to list",
        plan.list_objects
    );
    let ws = ctx
        .workers(64, "list", |_| Op::Create {
            prefix: "l-".into(),
        })
        .await?;
    let fill = phase::run(
        ws,
        Limits {
            duration: plan.setup_cap,
            max_ops: plan.list_objects as u64,
        },
        ctx.probe,
    )
    .await;
    if fill.ops != plan.list_objects as u64 || fill.errors > 0 {
        bail!(
            "filling the listed collection: {} of {} objects created, {} errors (first: {})",
            fill.ops,
            plan.list_objects,
            fill.errors,
            fill.first_error.unwrap_or_default()
        );
    }
    // The collection must list completely before it is measured.
    let (status, body) = conn.call(Method::GET, &collection("list"), None).await?;
    if status != StatusCode::OK {
        bail!(
            "{}",
            crate::client::describe_failure(&Method::GET, &collection("list"), None, status, &body)
        );
    }
    let listed: ListCount = serde_json::from_slice(&body).context("parsing the list")?;
    if listed.items.len() != plan.list_objects {
        bail!(
            "GET {} returned {} items, expected {}",
            collection("list"),
            listed.items.len(),
            plan.list_objects
        );
    }
    results.list_bytes = body.len();

    let names: Arc<Vec<String>> = Arc::new(
        (0..plan.list_objects)
            .map(|i| format!("l-{i:09}"))
            .collect(),
    );
    for &c in &plan.concurrency {
        eprintln!("kcp-bench: {label}: get, {c} clients");
        let ws = ctx
            .workers(c, "list", |id| Op::Get {
                names: names.clone(),
                rng: objects::Rng::new(id as u64 + 7),
            })
            .await?;
        results
            .get
            .push(phase::run(ws, ctx.limits, ctx.probe).await);
    }

    for &c in &plan.concurrency {
        eprintln!("kcp-bench: {label}: update, {c} clients");
        // Each client updates its own object, so conflicts mean a server bug, not contention.
        let mut versions = Vec::with_capacity(c);
        for id in 0..c {
            let name = format!("u{c}-{id}");
            let answer = conn
                .expect(
                    Method::POST,
                    &collection("update"),
                    Some(objects::configmap(&name, plan.payload_bytes, 0)),
                    |s| s == StatusCode::CREATED,
                )
                .await?;
            versions.push((name, resource_version_in(&answer, "create for update")?));
        }
        let ws = ctx
            .workers(c, "update", |id| Op::Update {
                name: versions[id].0.clone(),
                resource_version: versions[id].1.clone(),
                generation: 0,
            })
            .await?;
        results
            .update
            .push(phase::run(ws, ctx.limits, ctx.probe).await);
    }

    for &c in &plan.concurrency {
        eprintln!(
            "kcp-bench: {label}: list {} objects, {c} clients",
            plan.list_objects
        );
        let ws = ctx.workers(c, "list", |_| Op::ListFull).await?;
        results
            .list_full
            .push(phase::run(ws, ctx.limits, ctx.probe).await);
    }
    for &c in &plan.concurrency {
        eprintln!(
            "kcp-bench: {label}: list pages of {}, {c} clients",
            plan.page_size
        );
        let ws = ctx
            .workers(c, "list", |_| Op::Page {
                continue_token: None,
            })
            .await?;
        results
            .list_page
            .push(phase::run(ws, ctx.limits, ctx.probe).await);
    }

    for (&watchers, ns) in plan.watchers.iter().zip(&watch_namespaces) {
        eprintln!("kcp-bench: {label}: watch latency, {watchers} watchers");
        let path = collection(ns);
        match watch::measure(plan, &shard.connector, &path, watchers, ctx.probe).await {
            Ok(result) => results.watch.push(result),
            Err(err) => results
                .failures
                .push(format!("watch with {watchers} watchers: {err:#}")),
        }
    }
    Ok(())
}
