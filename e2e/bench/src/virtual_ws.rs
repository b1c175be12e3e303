//! The APIExport virtual workspace next to the shard's own wildcard endpoint, on the bindings
//! part's shard once every consumer workspace binds the export: Widgets are created in each of
//! them, then
//!
//! - the initial wildcard list of every Widget, through the virtual workspace
//!   (`/services/apiexport/<provider>/widgets/clusters/*/...`) and direct
//!   (`/clusters/*/.../widgets:<identity>`), alternated, each the median of [`LIST_ROUNDS`], with
//!   the shard's RSS while it serves them (the virtual workspace runs in the shard);
//! - watch event latency through the virtual workspace, through an object-partitioned endpoint
//!   slice (partition `app=kcp-bench`, which every Widget carries, so it sees the same events) and
//!   direct, each with [`WATCHERS`] watchers;
//! - the same list and watch through a `kcp-vw` process started beside the shard (following its
//!   store over gRPC), with that process's RSS.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::client::Conn;
use crate::config::Plan;
use crate::custom;
use crate::phase::{self, Limits, Probe, Summary, TimedWorker};
use crate::procfs;
use crate::shard::{ShardProcess, VwProcess};
use crate::watch::{self, Target, WatchResult};

/// Each list is timed this many times, alternating direct and through the virtual workspace.
const LIST_ROUNDS: usize = 3;
/// Watchers of each latency measurement.
const WATCHERS: usize = 10;
/// The object-partitioned slice's name.
const SLICE: &str = "widgets-app";
const GROUP_VERSION: &str = "bench.example.com/v1";

/// What the virtual-workspace measurement saw.
#[derive(Debug, Clone)]
pub struct Virtual {
    /// Widgets created across the bound workspaces, and how that went.
    pub objects: u64,
    pub fill: Summary,
    /// Items and bytes of the wildcard list through the virtual workspace.
    pub listed: usize,
    pub list_bytes: usize,
    /// Median time of the whole list, direct and through the virtual workspace.
    pub direct_list: Duration,
    pub vw_list: Duration,
    /// The shard's RSS before the lists, and the most seen while it served them.
    pub rss_idle: u64,
    pub rss_serving: u64,
    /// (endpoint, latency), in the order direct, virtual workspace, partition.
    pub watches: Vec<(&'static str, Result<WatchResult, String>)>,
    /// Through a kcp-vw beside the shard.
    pub standalone: Result<Standalone, String>,
}

/// The list and a watch through a kcp-vw process.
#[derive(Debug, Clone)]
pub struct Standalone {
    /// Median time of the whole list.
    pub list: Duration,
    /// kcp-vw's RSS once it has loaded its cache, and the most seen while it served the lists.
    pub rss_idle: u64,
    pub rss_serving: u64,
    pub watch: Result<WatchResult, String>,
}

impl Virtual {
    /// Throughput through the virtual workspace ÷ direct (list time direct ÷ through it).
    pub fn list_ratio(&self) -> Option<f64> {
        (!self.vw_list.is_zero())
            .then(|| self.direct_list.as_secs_f64() / self.vw_list.as_secs_f64())
    }
}

/// Creates `per` Widgets in the namespace `default` of each workspace `workspaces(i)`.
struct Fill {
    conn: Conn,
    per: u64,
    payload: usize,
    workspaces: Arc<dyn Fn(u64) -> String + Send + Sync>,
}

impl TimedWorker for Fill {
    async fn op(&mut self, seq: u64) -> anyhow::Result<Duration> {
        let collection = custom::collection(&(self.workspaces)(seq / self.per), "default");
        let name = format!("vw-{}", seq % self.per);
        let start = Instant::now();
        self.conn
            .expect(
                Method::POST,
                &collection,
                Some(custom::widget(&name, self.payload, 0)),
                |s| s == StatusCode::CREATED,
            )
            .await?;
        Ok(start.elapsed())
    }
}

/// Where the measurement runs: the export's provider and its bound workspaces.
pub struct Setup<'a> {
    pub shard: &'a ShardProcess,
    pub conns: &'a [Conn],
    /// The provider's logical cluster and workspace path.
    pub provider_cluster: &'a str,
    pub provider_path: &'a str,
    /// How many bound workspaces, and the path of each.
    pub workspaces: u64,
    pub workspace: Arc<dyn Fn(u64) -> String + Send + Sync>,
    pub probe: Probe,
}

pub async fn measure(plan: &Plan, setup: &Setup<'_>) -> anyhow::Result<Virtual> {
    let label = setup.shard.backend.label();
    let per = plan.bindings.objects_per_workspace as u64;
    let objects = per * setup.workspaces;
    eprintln!("kcp-bench: {label}: {objects} Widgets across the bound workspaces");
    let fillers = (0..plan.bindings.clients)
        .map(|i| Fill {
            conn: setup.conns[i % setup.conns.len()].clone(),
            per,
            payload: plan.payload_bytes,
            workspaces: setup.workspace.clone(),
        })
        .collect();
    let fill = phase::run_timed(
        fillers,
        Limits {
            duration: plan.bindings.workspaces_cap,
            max_ops: objects,
        },
        setup.probe,
    )
    .await;
    if fill.errors > 0 || fill.ops < objects {
        bail!(
            "Widgets: {} of {objects} created, {} errors (first: {})",
            fill.ops,
            fill.errors,
            fill.first_error.clone().unwrap_or_default()
        );
    }

    // As `system:admin`: the shard's own wildcard list by identity is for privileged callers, and
    // both lists are asked by the same caller on the same connection.
    let mut conn = setup.shard.connector.connect().await?;
    let export = format!(
        "/clusters/{}/apis/apis.kcp.io/v1alpha2/apiexports/{}",
        setup.provider_path,
        crate::bound::EXPORT
    );
    let export: Value = serde_json::from_slice(&conn.ok(Method::GET, &export, None).await?)?;
    let identity = export["status"]["identityHash"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let direct = format!("/clusters/*/apis/{GROUP_VERSION}/widgets:{identity}");
    let vw_base = format!(
        "/services/apiexport/{}/{}",
        setup.provider_cluster,
        crate::bound::EXPORT
    );
    let through_vw = format!("{vw_base}/clusters/*/apis/{GROUP_VERSION}/widgets");

    // The lists, alternated, with the shard's RSS sampled while it serves them.
    let rss = RssPeak::start(setup.shard.pid())?;
    let mut direct_times = Vec::new();
    let mut vw_times = Vec::new();
    let (mut listed, mut list_bytes) = (0, 0);
    for _ in 0..LIST_ROUNDS {
        let (took, _, _) = timed_list(&mut conn, &direct).await?;
        direct_times.push(took);
        let (took, items, bytes) = timed_list(&mut conn, &through_vw).await?;
        vw_times.push(took);
        (listed, list_bytes) = (items, bytes);
    }
    let (rss_idle, rss_serving) = rss.stop();
    if listed as u64 != objects {
        eprintln!(
            "kcp-bench: {label}: the virtual workspace listed {listed} Widgets, {objects} created"
        );
    }

    // Watch latency: the events are created in three different workspaces, one per endpoint, so
    // their names do not collide.
    let partition_url = partition_slice(&mut conn, setup.provider_path).await?;
    // The URL's path: the shard answers on the address the benchmark already uses.
    let partition_path = match partition_url.find("/services/") {
        Some(at) => format!(
            "{}/clusters/*/apis/{GROUP_VERSION}/widgets",
            &partition_url[at..]
        ),
        None => bail!("the partitioned slice's URL has no /services/ path: {partition_url}"),
    };
    let body = |name: &str| custom::widget(name, plan.payload_bytes, 0);
    let mut watches = Vec::new();
    for (i, (what, watched)) in [
        ("direct", direct.as_str()),
        ("virtual workspace", through_vw.as_str()),
        ("partition", partition_path.as_str()),
    ]
    .into_iter()
    .enumerate()
    {
        let written = custom::collection(&(setup.workspace)(i as u64), "default");
        let target = Target {
            watched,
            written: &written,
            body: &body,
            watched_at: None,
        };
        eprintln!("kcp-bench: {label}: watch latency, {what}");
        let result =
            watch::measure_target(plan, &setup.shard.connector, &target, WATCHERS, setup.probe)
                .await
                .map_err(|e| format!("{e:#}"));
        watches.push((what, result));
    }
    let written = custom::collection(&(setup.workspace)(3), "default");
    let standalone = standalone(plan, setup, &through_vw, &written)
        .await
        .map_err(|e| format!("{e:#}"));
    Ok(Virtual {
        objects,
        fill,
        listed,
        list_bytes,
        direct_list: median(direct_times),
        vw_list: median(vw_times),
        rss_idle,
        rss_serving,
        watches,
        standalone,
    })
}

/// The list and the watch latency through a kcp-vw started beside the shard; objects for the
/// watch are written to `written` on the shard.
async fn standalone(
    plan: &Plan,
    setup: &Setup<'_>,
    through_vw: &str,
    written: &str,
) -> anyhow::Result<Standalone> {
    let binary = crate::shard::vw_binary(setup.shard.binary())?;
    let label = setup.shard.backend.label();
    eprintln!("kcp-bench: {label}: kcp-vw beside the shard");
    let started = Instant::now();
    let vw = VwProcess::start(&binary, setup.shard).await?;
    eprintln!(
        "kcp-bench: {label}: kcp-vw ready in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut conn = vw.connector.connect().await?;
    let rss = RssPeak::start(vw.pid())?;
    let mut times = Vec::new();
    for _ in 0..LIST_ROUNDS {
        times.push(timed_list(&mut conn, through_vw).await?.0);
    }
    let (rss_idle, rss_serving) = rss.stop();
    let body = |name: &str| custom::widget(name, plan.payload_bytes, 0);
    let target = Target {
        watched: through_vw,
        written,
        body: &body,
        watched_at: Some(&vw.connector),
    };
    eprintln!("kcp-bench: {label}: watch latency, kcp-vw");
    let watch = watch::measure_target(plan, &setup.shard.connector, &target, WATCHERS, setup.probe)
        .await
        .map_err(|e| format!("{e:#}"));
    Ok(Standalone {
        list: median(times),
        rss_idle,
        rss_serving,
        watch,
    })
}

/// A process's RSS now, and the most sampled (every 20 ms) until [`RssPeak::stop`].
struct RssPeak {
    idle: u64,
    peak: Arc<AtomicU64>,
    sampler: tokio::task::JoinHandle<()>,
}

impl RssPeak {
    fn start(pid: u32) -> anyhow::Result<RssPeak> {
        let idle = procfs::rss_bytes(pid)?;
        let peak = Arc::new(AtomicU64::new(idle));
        let sampler = {
            let peak = peak.clone();
            tokio::spawn(async move {
                loop {
                    if let Ok(rss) = procfs::rss_bytes(pid) {
                        peak.fetch_max(rss, Ordering::Relaxed);
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        };
        Ok(RssPeak {
            idle,
            peak,
            sampler,
        })
    }

    /// (RSS at the start, the most seen).
    fn stop(self) -> (u64, u64) {
        self.sampler.abort();
        (self.idle, self.peak.load(Ordering::Relaxed))
    }
}

/// One whole list: its time (request to the last byte), items and bytes.
async fn timed_list(conn: &mut Conn, path: &str) -> anyhow::Result<(Duration, usize, usize)> {
    let start = Instant::now();
    let body = conn.ok(Method::GET, path, None).await?;
    let took = start.elapsed();
    let list: Value =
        serde_json::from_slice(&body).with_context(|| format!("GET {path}: not a list"))?;
    let items = list["items"].as_array().map(Vec::len).unwrap_or(0);
    Ok((took, items, body.len()))
}

/// Creates the object-partitioned slice of the export in the provider and waits for its URL.
async fn partition_slice(conn: &mut Conn, provider: &str) -> anyhow::Result<String> {
    let slices = format!("/clusters/{provider}/apis/apis.kcp.io/v1alpha1/apiexportendpointslices");
    let body = json!({
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIExportEndpointSlice",
        "metadata": {"name": SLICE},
        "spec": {
            "export": {"name": crate::bound::EXPORT},
            "objectPartition": {"labelKey": "app", "value": "kcp-bench"},
        },
    });
    conn.expect(
        Method::POST,
        &slices,
        Some(Bytes::from(body.to_string())),
        |s| s == StatusCode::CREATED || s == StatusCode::CONFLICT,
    )
    .await
    .context("creating the partitioned endpoint slice")?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let slice: Value = serde_json::from_slice(
            &conn
                .ok(Method::GET, &format!("{slices}/{SLICE}"), None)
                .await?,
        )?;
        if let Some(url) = slice["status"]["endpoints"][0]["url"].as_str() {
            return Ok(url.to_string());
        }
        if Instant::now() > deadline {
            bail!("the partitioned endpoint slice has no URL after 30 s: {slice}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}
