//! Restarting a shard that holds many workspaces: SIGTERM, start again on the same data, time to
//! ready and to the first GET by workspace path, then a sample of the workspaces checked.

use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use serde_json::Value;

use crate::client::Conn;
use crate::idle::settle;
use crate::procfs;
use crate::shard::ShardProcess;

/// Workspaces checked after the restart.
const SAMPLE: usize = 100;
/// How long after the process start the first GET by path may take.
const FIRST_GET_DEADLINE: Duration = Duration::from_secs(60);
const FIRST_GET_POLL: Duration = Duration::from_millis(10);

#[derive(Debug, Clone)]
pub struct Restart {
    /// Workspaces on the shard when it was stopped.
    pub workspaces: u64,
    /// SIGTERM → exit.
    pub stop: Duration,
    pub clean_exit: bool,
    /// Process start → kubeconfig written and `/readyz` answered.
    pub ready: Duration,
    /// Process start → first successful GET of namespace `default` through a workspace path.
    pub first_get: Result<Duration, String>,
    /// Sampled workspaces; how many were Ready; how many served namespace `default` by path.
    pub sampled: usize,
    pub sample_ready: usize,
    pub sample_served: usize,
    pub first_problem: Option<String>,
    /// RSS of the new process once idle (the controllers have resynced every workspace).
    pub rss_idle: Option<u64>,
}

/// `/clusters/root:flat:<name>/api/v1/namespaces/default`.
fn default_namespace(name: &str) -> String {
    format!("/clusters/root:flat:{name}/api/v1/namespaces/default")
}

/// Restarts `shard`, which holds `workspaces` workspaces, among them the Ready children `names` of
/// workspace `flat`.
pub async fn measure(
    shard: &mut ShardProcess,
    workspaces: u64,
    names: &[String],
) -> anyhow::Result<Restart> {
    let restarted = shard.restart().await?;
    let mut conn = shard.conn().await?;
    let sample: Vec<&String> = if names.is_empty() {
        Vec::new()
    } else {
        (0..SAMPLE.min(names.len()))
            .map(|i| &names[i * names.len() / SAMPLE.min(names.len())])
            .collect()
    };
    let first_get = match sample.first() {
        Some(name) => first_get(&mut conn, name, restarted.spawned).await,
        None => Err("no workspace to GET".into()),
    };
    let mut restart = Restart {
        workspaces,
        stop: restarted.stop,
        clean_exit: restarted.clean_exit,
        ready: restarted.ready,
        first_get,
        sampled: sample.len(),
        sample_ready: 0,
        sample_served: 0,
        first_problem: None,
        rss_idle: None,
    };
    for name in sample {
        match check(&mut conn, name).await {
            Ok((ready, served)) => {
                restart.sample_ready += usize::from(ready);
                restart.sample_served += usize::from(served);
                if !(ready && served) {
                    restart.first_problem.get_or_insert_with(|| {
                        format!("{name}: Ready {ready}, namespace default served by path {served}")
                    });
                }
            }
            Err(err) => {
                restart
                    .first_problem
                    .get_or_insert_with(|| format!("{name}: {err:#}"));
            }
        }
    }
    settle(shard.pid()).await;
    restart.rss_idle = procfs::rss_bytes(shard.pid()).ok();
    Ok(restart)
}

/// Polls the `default` namespace of workspace `name` by path until it answers 200.
async fn first_get(conn: &mut Conn, name: &str, spawned: Instant) -> Result<Duration, String> {
    let path = default_namespace(name);
    let mut last = String::new();
    while spawned.elapsed() < FIRST_GET_DEADLINE {
        match conn.call(Method::GET, &path, None).await {
            Ok((StatusCode::OK, _)) => return Ok(spawned.elapsed()),
            Ok((status, body)) => {
                last = format!(
                    "{status}: {}",
                    String::from_utf8_lossy(&body[..body.len().min(300)])
                );
            }
            Err(err) => last = format!("{err:#}"),
        }
        tokio::time::sleep(FIRST_GET_POLL).await;
    }
    Err(format!(
        "GET {path} not 200 within {FIRST_GET_DEADLINE:?} of the start; last answer {last}"
    ))
}

/// Whether workspace `name` is Ready, and whether its path serves namespace `default`.
async fn check(conn: &mut Conn, name: &str) -> anyhow::Result<(bool, bool)> {
    let body = conn
        .ok(
            Method::GET,
            &format!("/clusters/root:flat/apis/tenancy.kcp.io/v1alpha1/workspaces/{name}"),
            None,
        )
        .await?;
    let ws: Value = serde_json::from_slice(&body)?;
    let ready = ws["status"]["phase"] == "Ready";
    let (status, _) = conn
        .call(Method::GET, &default_namespace(name), None)
        .await?;
    Ok((ready, status == StatusCode::OK))
}
