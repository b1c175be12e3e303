//! Deleting a workspace tree: DELETE its top workspace, then time until it is gone (404), until the
//! watch has seen every Workspace of the tree deleted, and until the shard's LogicalCluster count is
//! back to what it was before the tree.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use http::{Method, StatusCode};
use serde::Deserialize;

use crate::board::Board;
use crate::client::Conn;

const POLL: Duration = Duration::from_millis(50);
/// The LogicalCluster count is a list request: polled less often.
const COUNT_POLL: Duration = Duration::from_millis(250);

#[derive(Debug, Clone)]
pub struct Deletion {
    /// Workspaces of the tree, its top one included.
    pub workspaces: u64,
    pub cap: Duration,
    /// DELETE → GET of the top workspace answers 404.
    pub gone: Option<Duration>,
    /// Workspace deletions the watch saw, and when the last one arrived (from the DELETE).
    pub deleted_events: u64,
    pub last_deleted: Option<Duration>,
    /// LogicalClusters on the shard before the DELETE, at the end, and when the count was back to
    /// (before − workspaces).
    pub lcs_before: Option<u64>,
    pub lcs_after: Option<u64>,
    pub lcs_back: Option<Duration>,
}

/// Workspaces are counted through their LogicalClusters: one list with `limit=1`, the rest is in
/// `remainingItemCount`.
pub async fn lc_count(conn: &mut Conn) -> anyhow::Result<u64> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct ListMeta {
        remaining_item_count: Option<u64>,
    }
    #[derive(Deserialize)]
    struct List {
        metadata: ListMeta,
        items: Vec<serde::de::IgnoredAny>,
    }
    let path = "/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters?limit=1";
    let body = conn.ok(Method::GET, path, None).await?;
    let list: List =
        serde_json::from_slice(&body).with_context(|| format!("GET {path}: not a list"))?;
    Ok(list.items.len() as u64 + list.metadata.remaining_item_count.unwrap_or(0))
}

/// Deletes workspace `name` of `root`, the top of a tree of `workspaces`, and follows it for `cap`.
pub async fn measure(
    conn: &mut Conn,
    board: &Board,
    name: &str,
    workspaces: u64,
    cap: Duration,
) -> anyhow::Result<Deletion> {
    let lcs_before = lc_count(conn).await.ok();
    let deleted_before = board.deletions().count;
    let path = format!("/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/{name}");
    let t0 = Instant::now();
    conn.expect(Method::DELETE, &path, None, |s| {
        s == StatusCode::OK || s == StatusCode::ACCEPTED
    })
    .await?;
    let mut gone = None;
    while gone.is_none() && t0.elapsed() < cap {
        let (status, _) = conn.call(Method::GET, &path, None).await?;
        if status == StatusCode::NOT_FOUND {
            gone = Some(t0.elapsed());
        } else {
            tokio::time::sleep(POLL).await;
        }
    }
    let target = lcs_before.map(|n| n.saturating_sub(workspaces));
    let mut lcs_after = None;
    let mut lcs_back = None;
    loop {
        lcs_after = lc_count(conn).await.ok().or(lcs_after);
        if let (Some(now), Some(target)) = (lcs_after, target)
            && now <= target
        {
            lcs_back = Some(t0.elapsed());
            break;
        }
        if t0.elapsed() >= cap || target.is_none() {
            break;
        }
        tokio::time::sleep(COUNT_POLL).await;
    }
    let deletions = board.deletions();
    Ok(Deletion {
        workspaces,
        cap,
        gone,
        deleted_events: deletions.count.saturating_sub(deleted_before),
        last_deleted: deletions.last.map(|at| at.saturating_duration_since(t0)),
        lcs_before,
        lcs_after,
        lcs_back,
    })
}
