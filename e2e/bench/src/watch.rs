//! Watch event latency: W watchers on one collection; a writer creates objects one at a time; each
//! event's latency is from the start of its create request to its arrival at a watcher.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::BodyExt as _;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::client::{Conn, Connector, WatchLine, WatchLines, watch_body, watch_error};
use crate::config::Plan;
use crate::objects;
use crate::phase::{CpuUse, Probe, Summary};

/// Watch streams per HTTP/2 connection (the shard allows 1,000).
const STREAMS_PER_CONNECTION: usize = 100;
/// How long the watchers may take to open and see a warm-up event.
const SETTLE: Duration = Duration::from_secs(30);
/// How long after the last create the watchers may take to receive everything.
const DRAIN: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Default)]
pub struct WatchResult {
    pub watchers: usize,
    pub events: usize,
    /// events × watchers.
    pub expected: u64,
    pub delivered: u64,
    /// Create start → event received, over every (watcher, event).
    pub latency: Summary,
    /// Latency of the create requests themselves.
    pub create: Summary,
    /// CPU used while the measured events were created and delivered.
    pub cpu: CpuUse,
    /// Watch streams that ended with an error (first one quoted).
    pub stream_errors: usize,
    pub first_error: Option<String>,
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    object: EventObject,
}

#[derive(Deserialize)]
struct EventObject {
    #[serde(default)]
    metadata: Option<EventMeta>,
}

#[derive(Deserialize)]
struct EventMeta {
    #[serde(default)]
    name: Option<String>,
}

struct Shared {
    opened: AtomicUsize,
    warmed: AtomicUsize,
    complete: AtomicUsize,
}

/// What one watcher saw: (event index, arrival).
type Arrivals = Vec<(usize, Instant)>;

async fn watcher(
    mut conn: Conn,
    path: String,
    events: usize,
    shared: Arc<Shared>,
    stop: CancellationToken,
) -> anyhow::Result<Arrivals> {
    let response = tokio::select! {
        _ = stop.cancelled() => return Ok(Vec::new()),
        r = conn.send(Method::GET, &path, None) => r?,
    };
    let mut body = watch_body(response, &path).await?;
    shared.opened.fetch_add(1, Ordering::Relaxed);
    let mut lines = WatchLines::default();
    let mut arrivals = Vec::with_capacity(events);
    let mut warmed = false;
    loop {
        let frame = tokio::select! {
            _ = stop.cancelled() => return Ok(arrivals),
            f = body.frame() => f,
        };
        let Some(frame) = frame else {
            bail!(
                "GET {path}: the watch ended after {} events",
                arrivals.len()
            );
        };
        let frame = frame.with_context(|| format!("GET {path}: reading the watch"))?;
        let at = Instant::now();
        let Ok(data) = frame.into_data() else {
            continue;
        };
        lines.push(&data);
        while let Some(WatchLine { event, line }) = lines.next::<Event>(&path)? {
            if event.kind == "ERROR" {
                bail!("{}", watch_error(&path, &line));
            }
            let name = event
                .object
                .metadata
                .and_then(|m| m.name)
                .unwrap_or_default();
            if name.starts_with("warm-") {
                if !warmed {
                    warmed = true;
                    shared.warmed.fetch_add(1, Ordering::Relaxed);
                }
            } else if let Some(index) = name.strip_prefix("ev-").and_then(|i| i.parse().ok())
                && event.kind == "ADDED"
            {
                arrivals.push((index, at));
                if arrivals.len() >= events {
                    shared.complete.fetch_add(1, Ordering::Relaxed);
                    return Ok(arrivals);
                }
            }
        }
    }
}

/// The collection's current resourceVersion.
pub async fn current_rv(conn: &mut Conn, collection: &str) -> anyhow::Result<String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct ListMeta {
        resource_version: String,
    }
    #[derive(Deserialize)]
    struct List {
        metadata: ListMeta,
    }
    let path = format!("{collection}?limit=1");
    let body = conn.ok(Method::GET, &path, None).await?;
    let list: List = serde_json::from_slice(&body)
        .with_context(|| format!("GET {path}: no metadata.resourceVersion"))?;
    Ok(list.metadata.resource_version)
}

/// What a latency measurement watches, and where and what it creates for the watchers to see.
pub struct Target<'a> {
    /// The collection watched (any path a list and a watch answer on).
    pub watched: &'a str,
    /// The collection the objects are created in.
    pub written: &'a str,
    /// The object named so, as created.
    pub body: &'a (dyn Fn(&str) -> Bytes + Sync),
    /// Where the watchers watch, when not where the objects are written (a kcp-vw).
    pub watched_at: Option<&'a Connector>,
}

/// Measures watch latency with `watchers` watchers on `collection` (a ConfigMap collection path).
pub async fn measure(
    plan: &Plan,
    connector: &Connector,
    collection: &str,
    watchers: usize,
    probe: Probe,
) -> anyhow::Result<WatchResult> {
    let body = |name: &str| objects::configmap(name, plan.payload_bytes, 0);
    let target = Target {
        watched: collection,
        written: collection,
        body: &body,
        watched_at: None,
    };
    measure_target(plan, connector, &target, watchers, probe).await
}

/// Measures watch latency with `watchers` watchers as `target` says.
pub async fn measure_target(
    plan: &Plan,
    connector: &Connector,
    target: &Target<'_>,
    watchers: usize,
    probe: Probe,
) -> anyhow::Result<WatchResult> {
    let events = plan.watch_events;
    let mut writer = connector.connect().await?;
    let watched_at = target.watched_at.unwrap_or(connector);
    let rv = current_rv(&mut watched_at.connect().await?, target.watched).await?;
    let path = format!(
        "{}?watch=true&resourceVersion={rv}&timeoutSeconds=300",
        target.watched
    );
    let conns = watched_at
        .pool(watchers.div_ceil(STREAMS_PER_CONNECTION))
        .await?;
    let shared = Arc::new(Shared {
        opened: AtomicUsize::new(0),
        warmed: AtomicUsize::new(0),
        complete: AtomicUsize::new(0),
    });
    let stop = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..watchers {
        tasks.spawn(watcher(
            conns[i % conns.len()].clone(),
            path.clone(),
            events,
            shared.clone(),
            stop.clone(),
        ));
    }
    let result = drive(
        plan,
        &mut writer,
        target,
        watchers,
        &shared,
        &mut tasks,
        probe,
    )
    .await;
    stop.cancel();
    let (create, cpu, starts) = match result {
        Ok(r) => r,
        Err(err) => {
            // A watcher's own error explains more than "did not settle".
            tasks.abort_all();
            return Err(err);
        }
    };

    let mut latencies = Vec::with_capacity(events * watchers);
    let mut stream_errors = 0;
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(arrivals)) => {
                for (index, at) in arrivals {
                    if let Some(Some(start)) = starts.get(index) {
                        latencies.push(at.saturating_duration_since(*start));
                    }
                }
            }
            Ok(Err(err)) => {
                stream_errors += 1;
                first_error.get_or_insert_with(|| format!("{err:#}"));
            }
            Err(err) => {
                stream_errors += 1;
                first_error.get_or_insert_with(|| format!("watcher task: {err}"));
            }
        }
    }
    let delivered = latencies.len() as u64;
    Ok(WatchResult {
        watchers,
        events,
        expected: (events * watchers) as u64,
        delivered,
        latency: Summary::from_latencies(latencies),
        create,
        cpu,
        stream_errors,
        first_error,
    })
}

type Driven = (Summary, CpuUse, Vec<Option<Instant>>);

async fn drive(
    plan: &Plan,
    writer: &mut Conn,
    target: &Target<'_>,
    watchers: usize,
    shared: &Shared,
    tasks: &mut tokio::task::JoinSet<anyhow::Result<Arrivals>>,
    probe: Probe,
) -> anyhow::Result<Driven> {
    // Warm up: create objects until every watcher has seen one (a watch may answer its headers only
    // with the first event, so "opened" alone is not enough).
    let deadline = Instant::now() + SETTLE;
    let mut warm = 0;
    while shared.warmed.load(Ordering::Relaxed) < watchers {
        if let Some(Ok(Err(err))) = tasks.try_join_next() {
            return Err(err.context("a watcher failed before the measurement"));
        }
        if Instant::now() > deadline {
            bail!(
                "after {SETTLE:?}: {} of {watchers} watches opened, {} saw a warm-up event",
                shared.opened.load(Ordering::Relaxed),
                shared.warmed.load(Ordering::Relaxed)
            );
        }
        let name = format!("warm-{warm}");
        warm += 1;
        writer
            .expect(
                Method::POST,
                target.written,
                Some((target.body)(&name)),
                |s| s == StatusCode::CREATED,
            )
            .await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let events = plan.watch_events;
    let mut starts: Vec<Option<Instant>> = vec![None; events];
    let mut create_latencies = Vec::with_capacity(events);
    let before = probe.snapshot();
    let t0 = Instant::now();
    for (i, start_slot) in starts.iter_mut().enumerate() {
        let name = format!("ev-{i:06}");
        let body = (target.body)(&name);
        let start = Instant::now();
        *start_slot = Some(start);
        writer
            .expect(Method::POST, target.written, Some(body), |s| {
                s == StatusCode::CREATED
            })
            .await?;
        create_latencies.push(start.elapsed());
        let next = t0 + plan.watch_interval * (i as u32 + 1);
        tokio::time::sleep_until(next.into()).await;
    }
    // Let the watchers drain: each ends by itself once it has every event.
    let drain = Instant::now() + DRAIN;
    while shared.complete.load(Ordering::Relaxed) < watchers && Instant::now() < drain {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cpu = before.until(&probe.snapshot());
    Ok((Summary::from_latencies(create_latencies), cpu, starts))
}
