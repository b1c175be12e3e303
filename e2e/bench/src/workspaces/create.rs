//! Creating workspaces and waiting for them to be Ready: one at a time per creator (closed loop),
//! flat (every workspace a child of one parent) or as a two-level tree (a child's children are
//! creatable once it is Ready).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use serde_json::json;
use tokio::sync::Notify;

use crate::board::{Board, Ready};
use crate::client::Conn;
use crate::phase::TimedWorker;

/// A Workspace of type `root:universal` (no limits on parents or children).
fn workspace(name: &str) -> Bytes {
    let body = json!({
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": name},
        "spec": {"type": {"name": "universal", "path": "root"}},
    });
    Bytes::from(body.to_string())
}

/// Creates workspace `name` in logical cluster `parent` and waits (at most `timeout`) until `board`
/// sees it Ready. The latency runs from the POST to the Ready event.
pub async fn create_ready(
    conn: &mut Conn,
    board: &Board,
    parent: &str,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<(Duration, Ready)> {
    let path = format!("/clusters/{parent}/apis/tenancy.kcp.io/v1alpha1/workspaces");
    board
        .create_and_wait(conn, &path, name, workspace(name), timeout)
        .await
}

/// Creates children `<prefix>-<seq + offset>` of one parent; records the names that got Ready.
pub struct Flat {
    pub conn: Conn,
    pub board: Arc<Board>,
    /// The parent's logical cluster.
    pub parent: Arc<str>,
    pub prefix: &'static str,
    pub offset: u64,
    pub timeout: Duration,
    pub ready: Arc<Mutex<Vec<String>>>,
}

/// The name of the `seq`-th workspace of a flat set.
pub fn flat_name(prefix: &str, seq: u64) -> String {
    format!("{prefix}-{seq:07}")
}

impl TimedWorker for Flat {
    async fn op(&mut self, seq: u64) -> anyhow::Result<Duration> {
        let name = flat_name(self.prefix, seq + self.offset);
        let (took, _) = create_ready(
            &mut self.conn,
            &self.board,
            &self.parent,
            &name,
            self.timeout,
        )
        .await?;
        self.ready
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(name);
        Ok(took)
    }
}

/// A workspace of the tree that can be created now (its parent is Ready).
struct Job {
    parent: String,
    name: String,
    /// Its own children, creatable once it is Ready.
    children: usize,
}

/// The creatable workspaces of a tree, shared by its creators.
pub struct TreeJobs {
    queue: Mutex<VecDeque<Job>>,
    added: Notify,
}

impl TreeJobs {
    /// `children` children of `root_cluster` (the tree's top workspace), each with `grandchildren`.
    pub fn new(root_cluster: &str, children: usize, grandchildren: usize) -> Arc<TreeJobs> {
        let queue = (0..children)
            .map(|c| Job {
                parent: root_cluster.to_string(),
                name: format!("c-{c:03}"),
                children: grandchildren,
            })
            .collect();
        Arc::new(TreeJobs {
            queue: Mutex::new(queue),
            added: Notify::new(),
        })
    }

    fn pop(&self) -> Option<Job> {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }

    fn push_children(&self, parent: &Job, cluster: &str) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        for g in 0..parent.children {
            queue.push_back(Job {
                parent: cluster.to_string(),
                name: format!("{}-g-{g:03}", parent.name),
                children: 0,
            });
        }
        drop(queue);
        self.added.notify_waiters();
    }

    /// The next creatable workspace; waits (at most `timeout`) while every remaining one still
    /// waits for its parent.
    async fn next(&self, timeout: Duration) -> anyhow::Result<Job> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let added = self.added.notified();
            if let Some(job) = self.pop() {
                return Ok(job);
            }
            tokio::time::timeout_at(deadline, added).await.context(
                "no tree workspace to create: the remaining ones wait for a parent that is not Ready",
            )?;
        }
    }
}

/// Creates the workspaces of a tree, parents first.
pub struct Tree {
    pub conn: Conn,
    pub board: Arc<Board>,
    pub jobs: Arc<TreeJobs>,
    pub timeout: Duration,
}

impl TimedWorker for Tree {
    async fn op(&mut self, _seq: u64) -> anyhow::Result<Duration> {
        let job = self.jobs.next(self.timeout).await?;
        let (took, ready) = create_ready(
            &mut self.conn,
            &self.board,
            &job.parent,
            &job.name,
            self.timeout,
        )
        .await?;
        self.jobs.push_children(&job, &ready.cluster);
        Ok(took)
    }
}
