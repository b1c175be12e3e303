//! Load phases against one shard: create, get, update, list (whole and paged) of ConfigMaps, each
//! but update followed by the same phase on custom resources of the same size, first of a local CRD,
//! then of the same schema bound from an APIExport; server-side apply; then watch latency.

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
use crate::{apply, bound, custom};

/// The logical cluster the load phases use.
pub const LC: &str = "bench";
/// The logical cluster that exports Widgets, and the one that binds them.
const PROVIDER_LC: &str = "bench-provider";
const BOUND_LC: &str = "bench-bound";

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
    /// The same phases on Widgets (custom resources) of the ConfigMaps' size.
    pub custom: CustomResults,
    pub apply: Option<apply::ApplyResults>,
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
            custom: CustomResults::default(),
            apply: None,
            failures: Vec::new(),
        }
    }
}

/// Widget phases, one entry per concurrency level, and the sizes next to the ConfigMaps'.
#[derive(Debug, Clone, Default)]
pub struct CustomResults {
    pub create: Vec<Summary>,
    pub get: Vec<Summary>,
    pub list_full: Vec<Summary>,
    pub list_page: Vec<Summary>,
    pub list_bytes: usize,
    /// JSON bytes sent to create one ConfigMap / one Widget.
    pub sent_bytes: (usize, usize),
    /// Bytes of one GET response (as stored: with managedFields) of a ConfigMap / a Widget.
    pub stored_bytes: (usize, usize),
    /// The lists are compared with ConfigMaps padded to a Widget's stored size (list cost follows
    /// bytes, and a Widget's managedFields are longer): their payload, GET size and phases.
    pub padded_payload: usize,
    pub padded_stored_bytes: usize,
    pub padded_list_full: Vec<Summary>,
    pub padded_list_page: Vec<Summary>,
    /// The same phases on Widgets bound from an APIExport (same schema, same sizes).
    pub bound: BoundResults,
}

/// Phases on bound Widgets, one entry per concurrency level.
#[derive(Debug, Clone, Default)]
pub struct BoundResults {
    pub create: Vec<Summary>,
    pub get: Vec<Summary>,
    pub list_full: Vec<Summary>,
    pub list_page: Vec<Summary>,
    pub list_bytes: usize,
}

/// What a phase reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ConfigMap,
    Widget,
    /// A Widget served through an APIBinding.
    BoundWidget,
}

impl Kind {
    pub fn collection(self, ns: &str) -> String {
        match self {
            Kind::ConfigMap => collection(ns),
            Kind::Widget => custom::collection(LC, ns),
            Kind::BoundWidget => custom::collection(BOUND_LC, ns),
        }
    }

    /// Objects of this kind the shard itself keeps in every namespace: the root CA publisher's
    /// `kube-root-ca.crt` ConfigMap.
    fn per_namespace_extras(self) -> usize {
        match self {
            Kind::ConfigMap => 1,
            Kind::Widget | Kind::BoundWidget => 0,
        }
    }

    /// The object `name`, the same size for both kinds.
    pub fn object(self, name: &str, payload_bytes: usize, generation: u64) -> bytes::Bytes {
        match self {
            Kind::ConfigMap => objects::configmap(name, payload_bytes, generation),
            Kind::Widget | Kind::BoundWidget => custom::widget(name, payload_bytes, generation),
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
    kind: Kind,
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
                let body = self.kind.object(&name, self.payload_bytes, 0);
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
        self.workers_of(Kind::ConfigMap, clients, ns, make).await
    }

    async fn workers_of(
        &self,
        kind: Kind,
        clients: usize,
        ns: &str,
        make: impl Fn(usize) -> Op,
    ) -> anyhow::Result<Vec<ShardWorker>> {
        self.workers_sized(kind, clients, ns, self.plan.payload_bytes, make)
            .await
    }

    /// One phase for each of `kinds`, with the workers `workers(kind, round)` makes; each kind's
    /// summary, in the order of `kinds`. Local and bound Widgets, whose ratio is a target, run in
    /// two halves each, local, bound, bound, local, and each kind's halves are merged: run once
    /// each, one after the other, the shard's drift between them (a store growing with the
    /// creates, caches warming, the garbage of the phase before) moved their ratio by more than
    /// the 5 % the target allows, and the mirrored order cancels a steady drift.
    async fn each_kind(
        &self,
        kinds: &[Kind],
        what: &str,
        workers: impl AsyncFn(Kind, usize) -> anyhow::Result<Vec<ShardWorker>>,
    ) -> anyhow::Result<Vec<(Kind, Summary)>> {
        let paired = kinds.contains(&Kind::Widget) && kinds.contains(&Kind::BoundWidget);
        let halved = |kind: Kind| paired && kind != Kind::ConfigMap;
        let mut schedule: Vec<(Kind, usize)> = (kinds.iter())
            .filter(|k| !halved(**k))
            .map(|k| (*k, 0))
            .collect();
        if paired {
            schedule.extend([
                (Kind::Widget, 0),
                (Kind::BoundWidget, 0),
                (Kind::BoundWidget, 1),
                (Kind::Widget, 1),
            ]);
        }
        let half = Limits {
            duration: self.limits.duration / 2,
            max_ops: self.limits.max_ops / 2,
        };
        let mut runs: Vec<(Kind, Vec<_>)> = kinds.iter().map(|k| (*k, Vec::new())).collect();
        for (kind, round) in schedule {
            eprintln!(
                "kcp-bench: {}: {what}, {kind:?}",
                self.shard.backend.label()
            );
            let limits = if halved(kind) { half } else { self.limits };
            let run = phase::run_sampled(workers(kind, round).await?, limits, self.probe).await;
            if let Some((_, of_kind)) = runs.iter_mut().find(|(k, _)| *k == kind) {
                of_kind.push(run);
            }
        }
        Ok((runs.into_iter())
            .map(|(kind, of_kind)| (kind, Summary::merged(of_kind)))
            .collect())
    }

    /// [`Ctx::workers_of`] with objects of `payload_bytes`.
    async fn workers_sized(
        &self,
        kind: Kind,
        clients: usize,
        ns: &str,
        payload_bytes: usize,
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
                kind,
                collection: kind.collection(ns),
                payload_bytes,
                page_size: self.plan.page_size,
                op: make(id),
            })
            .collect())
    }
}

/// Creates logical cluster `lc` and the namespaces the phases use there.
async fn setup(conn: &mut Conn, lc: &str, namespaces: &[&str]) -> anyhow::Result<()> {
    let exists = |s: StatusCode| s.is_success() || s == StatusCode::CONFLICT;
    conn.expect(
        Method::POST,
        &format!("/clusters/{lc}/apis/core.kcp.io/v1alpha1/logicalclusters"),
        Some(objects::logical_cluster()),
        exists,
    )
    .await
    .context("creating the logical cluster")?;
    for ns in namespaces {
        conn.expect(
            Method::POST,
            &format!("/clusters/{lc}/api/v1/namespaces"),
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
    let mut namespaces = vec!["load", "list", PADDED_NS, "update", "apply"];
    namespaces.extend(watch_namespaces.iter().map(String::as_str));
    setup(&mut conn, LC, &namespaces).await?;
    // Custom resources are measured only when their CRD is served, bound ones only when they are
    // served; the ConfigMap phases run anyway.
    let mut kinds = vec![Kind::ConfigMap];
    match custom::install(&mut conn, LC).await {
        Ok(()) => kinds.push(Kind::Widget),
        Err(err) => results
            .failures
            .push(format!("custom resources not measured: {err:#}")),
    }
    match bind_widgets(&mut conn).await {
        Ok(()) => kinds.push(Kind::BoundWidget),
        Err(err) => results
            .failures
            .push(format!("bound resources not measured: {err:#}")),
    }
    let kinds = kinds.as_slice();
    let widgets = kinds.contains(&Kind::Widget);

    for &c in &plan.concurrency {
        let what = format!("create, {c} clients");
        let measured = ctx
            .each_kind(kinds, &what, async |kind, round| {
                // The second half's objects are new ones too.
                let prefix = format!("c{c}-{round}-");
                ctx.workers_of(kind, c, "load", |_| Op::Create {
                    prefix: prefix.clone(),
                })
                .await
            })
            .await?;
        for (kind, summary) in measured {
            match kind {
                Kind::ConfigMap => results.create.push(summary),
                Kind::Widget => results.custom.create.push(summary),
                Kind::BoundWidget => results.custom.bound.create.push(summary),
            }
        }
    }

    for &kind in kinds {
        let list_bytes = fill_list(&ctx, &mut conn, kind, "list", plan.payload_bytes).await?;
        match kind {
            Kind::ConfigMap => results.list_bytes = list_bytes,
            Kind::Widget => results.custom.list_bytes = list_bytes,
            Kind::BoundWidget => results.custom.bound.list_bytes = list_bytes,
        }
    }
    if widgets {
        let first = format!("l-{:09}", 0);
        let sizes = |kind: Kind| kind.object(&first, plan.payload_bytes, 0).len();
        results.custom.sent_bytes = (sizes(Kind::ConfigMap), sizes(Kind::Widget));
        let stored = |kind: Kind| {
            let path = format!("{}/{first}", kind.collection("list"));
            let mut conn = conn.clone();
            async move {
                conn.expect(Method::GET, &path, None, |s| s == StatusCode::OK)
                    .await
                    .map(|b| b.len())
            }
        };
        results.custom.stored_bytes = (stored(Kind::ConfigMap).await?, stored(Kind::Widget).await?);
        let (cm, widget) = results.custom.stored_bytes;
        results.custom.padded_payload = plan.payload_bytes + widget.saturating_sub(cm);
        fill_list(
            &ctx,
            &mut conn,
            Kind::ConfigMap,
            PADDED_NS,
            results.custom.padded_payload,
        )
        .await?;
        let path = format!("{}/{first}", Kind::ConfigMap.collection(PADDED_NS));
        results.custom.padded_stored_bytes = conn
            .expect(Method::GET, &path, None, |s| s == StatusCode::OK)
            .await?
            .len();
    }

    let names: Arc<Vec<String>> = Arc::new(
        (0..plan.list_objects)
            .map(|i| format!("l-{i:09}"))
            .collect(),
    );
    for &c in &plan.concurrency {
        let what = format!("get, {c} clients");
        let measured = ctx
            .each_kind(kinds, &what, async |kind, _| {
                ctx.workers_of(kind, c, "list", |id| Op::Get {
                    names: names.clone(),
                    rng: objects::Rng::new(id as u64 + 7),
                })
                .await
            })
            .await?;
        for (kind, summary) in measured {
            match kind {
                Kind::ConfigMap => results.get.push(summary),
                Kind::Widget => results.custom.get.push(summary),
                Kind::BoundWidget => results.custom.bound.get.push(summary),
            }
        }
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
        let what = format!("list all {}, {c} clients", plan.list_objects);
        let measured = ctx
            .each_kind(kinds, &what, async |kind, _| {
                ctx.workers_of(kind, c, "list", |_| Op::ListFull).await
            })
            .await?;
        for (kind, summary) in measured {
            match kind {
                Kind::ConfigMap => results.list_full.push(summary),
                Kind::Widget => results.custom.list_full.push(summary),
                Kind::BoundWidget => results.custom.bound.list_full.push(summary),
            }
        }
        if widgets {
            let ws = ctx
                .workers_sized(
                    Kind::ConfigMap,
                    c,
                    PADDED_NS,
                    results.custom.padded_payload,
                    |_| Op::ListFull,
                )
                .await?;
            let summary = phase::run(ws, ctx.limits, ctx.probe).await;
            results.custom.padded_list_full.push(summary);
        }
    }
    for &c in &plan.concurrency {
        let what = format!("list pages of {}, {c} clients", plan.page_size);
        let measured = ctx
            .each_kind(kinds, &what, async |kind, _| {
                ctx.workers_of(kind, c, "list", |_| Op::Page {
                    continue_token: None,
                })
                .await
            })
            .await?;
        for (kind, summary) in measured {
            match kind {
                Kind::ConfigMap => results.list_page.push(summary),
                Kind::Widget => results.custom.list_page.push(summary),
                Kind::BoundWidget => results.custom.bound.list_page.push(summary),
            }
        }
        if widgets {
            let ws = ctx
                .workers_sized(
                    Kind::ConfigMap,
                    c,
                    PADDED_NS,
                    results.custom.padded_payload,
                    |_| Op::Page {
                        continue_token: None,
                    },
                )
                .await?;
            let summary = phase::run(ws, ctx.limits, ctx.probe).await;
            results.custom.padded_list_page.push(summary);
        }
    }

    // Server-side apply is compared between ConfigMaps and local Widgets only.
    let applied: Vec<Kind> = kinds
        .iter()
        .copied()
        .filter(|k| *k != Kind::BoundWidget)
        .collect();
    match apply::run(plan, shard, &applied, ctx.probe).await {
        Ok(a) => results.apply = Some(a),
        Err(err) => results.failures.push(format!("server-side apply: {err:#}")),
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

/// Exports Widgets from [`PROVIDER_LC`] and binds them in [`BOUND_LC`], with the namespaces the
/// bound phases use.
async fn bind_widgets(conn: &mut Conn) -> anyhow::Result<()> {
    setup(conn, PROVIDER_LC, &[]).await?;
    setup(conn, BOUND_LC, &["load", "list"]).await?;
    bound::publish(conn, PROVIDER_LC).await?;
    bound::bind(conn, PROVIDER_LC, BOUND_LC, "load").await
}

/// Where the ConfigMaps padded to a Widget's stored size are listed.
const PADDED_NS: &str = "list-padded";

/// Fills namespace `ns` with `plan.list_objects` objects of `kind` and checks that they list
/// completely; returns the bytes of the whole list.
async fn fill_list(
    ctx: &Ctx<'_>,
    conn: &mut Conn,
    kind: Kind,
    ns: &str,
    payload_bytes: usize,
) -> anyhow::Result<usize> {
    let plan = ctx.plan;
    eprintln!(
        "kcp-bench: {}: filling {} {kind:?}s to list",
        ctx.shard.backend.label(),
        plan.list_objects
    );
    let ws = ctx
        .workers_sized(kind, 64, ns, payload_bytes, |_| Op::Create {
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
            "filling the listed {kind:?}s: {} of {} objects created, {} errors (first: {})",
            fill.ops,
            plan.list_objects,
            fill.errors,
            fill.first_error.unwrap_or_default()
        );
    }
    // The collection must list completely before it is measured.
    let path = kind.collection(ns);
    let (status, body) = conn.call(Method::GET, &path, None).await?;
    if status != StatusCode::OK {
        bail!(
            "{}",
            crate::client::describe_failure(&Method::GET, &path, None, status, &body)
        );
    }
    let listed: ListCount = serde_json::from_slice(&body).context("parsing the list")?;
    let expected = plan.list_objects + kind.per_namespace_extras();
    if listed.items.len() != expected {
        bail!(
            "GET {path} returned {} items, expected {expected}",
            listed.items.len(),
        );
    }
    Ok(body.len())
}
