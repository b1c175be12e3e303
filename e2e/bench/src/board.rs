//! The Ready board: one watch on every object of a collection of the shard (`/clusters/*`: the
//! Workspaces, the APIBindings) tells each creator when its object reaches the phase it waits for.
//! Cheaper than polling each object, and the arrival of that event is what the latency is measured
//! to. Objects are told apart by name, so the names of one run are unique across clusters.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::BodyExt as _;
use serde::Deserialize;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::client::{Conn, Connector, WatchLine, WatchLines, watch_body, watch_error};
use crate::watch::current_rv;

/// What a board watches: a collection across all logical clusters, and the phase a creator waits
/// for.
#[derive(Debug, Clone, Copy)]
pub struct Watched {
    pub collection: &'static str,
    pub done: &'static str,
}

/// Workspaces, to Ready.
pub const WORKSPACES: Watched = Watched {
    collection: "/clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces",
    done: "Ready",
};

/// APIBindings, to Bound.
pub const API_BINDINGS: Watched = Watched {
    collection: "/clusters/*/apis/apis.kcp.io/v1alpha2/apibindings",
    done: "Bound",
};

/// Pause before re-opening a failed watch.
const REOPEN_DELAY: Duration = Duration::from_millis(200);

/// An object seen in the phase waited for.
#[derive(Debug, Clone)]
pub struct Ready {
    /// When that event arrived.
    pub at: Instant,
    /// A workspace's logical cluster (`spec.cluster`), where its children are created; empty for
    /// other kinds.
    pub cluster: String,
}

struct Waiter {
    tx: oneshot::Sender<Ready>,
    /// The last phase seen, for the error when it never gets Ready.
    phase: String,
}

#[derive(Default)]
struct State {
    done: &'static str,
    waiting: HashMap<String, Waiter>,
    deleted: u64,
    last_deleted: Option<Instant>,
    /// Watch failures (the watch is re-opened from its last resourceVersion), and the first one.
    failures: u64,
    first_failure: Option<String>,
}

/// What the watch saw of deletions.
#[derive(Debug, Clone, Copy, Default)]
pub struct Deletions {
    pub count: u64,
    pub last: Option<Instant>,
}

/// The watch and the creators waiting on it; the watch stops on drop.
pub struct Board {
    state: Arc<Mutex<State>>,
    stop: CancellationToken,
}

impl Board {
    /// Opens the watch from the current resourceVersion: later objects are all seen.
    pub async fn start(connector: &Connector, watched: Watched) -> anyhow::Result<Board> {
        let mut conn = connector.connect().await?;
        let rv = current_rv(&mut conn, watched.collection).await?;
        let state = Arc::new(Mutex::new(State {
            done: watched.done,
            ..State::default()
        }));
        let stop = CancellationToken::new();
        tokio::spawn(watch_loop(
            connector.clone(),
            conn,
            rv,
            watched.collection,
            state.clone(),
            stop.clone(),
        ));
        Ok(Board { state, stop })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Call before creating object `name` (names are unique in a run): the receiver gets the
    /// event of its phase.
    pub fn expect(&self, name: &str) -> oneshot::Receiver<Ready> {
        let (tx, rx) = oneshot::channel();
        self.state().waiting.insert(
            name.to_string(),
            Waiter {
                tx,
                phase: "none (no event yet)".into(),
            },
        );
        rx
    }

    /// Stops waiting for `name`; the last phase seen of it.
    pub fn forget(&self, name: &str) -> String {
        self.state()
            .waiting
            .remove(name)
            .map(|w| w.phase)
            .unwrap_or_default()
    }

    /// POSTs `body` (an object named `name`) to `collection` and waits, at most `timeout`, until the
    /// board sees it in the phase waited for. The latency runs from the POST to that event.
    pub async fn create_and_wait(
        &self,
        conn: &mut Conn,
        collection: &str,
        name: &str,
        body: Bytes,
        timeout: Duration,
    ) -> anyhow::Result<(Duration, Ready)> {
        let ready = self.expect(name);
        let t0 = Instant::now();
        if let Err(err) = conn
            .expect(Method::POST, collection, Some(body), |s| {
                s == StatusCode::CREATED
            })
            .await
        {
            self.forget(name);
            return Err(err);
        }
        match tokio::time::timeout(timeout.saturating_sub(t0.elapsed()), ready).await {
            Ok(Ok(ready)) => Ok((ready.at.saturating_duration_since(t0), ready)),
            Ok(Err(_)) => bail!("{collection}/{name}: the watch went away"),
            Err(_) => {
                let phase = self.forget(name);
                bail!(
                    "{collection}/{name} not {} {timeout:?} after its POST (last phase seen: {phase})",
                    self.state().done
                )
            }
        }
    }

    pub fn deletions(&self) -> Deletions {
        let state = self.state();
        Deletions {
            count: state.deleted,
            last: state.last_deleted,
        }
    }

    /// How often the watch failed, and the first failure.
    pub fn failures(&self) -> (u64, Option<String>) {
        let state = self.state();
        (state.failures, state.first_failure.clone())
    }
}

impl Drop for Board {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A poisoned lock only means a panicking holder; the map is still usable.
fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

async fn watch_loop(
    connector: Connector,
    mut conn: Conn,
    mut rv: String,
    collection: &'static str,
    state: Arc<Mutex<State>>,
    stop: CancellationToken,
) {
    loop {
        let outcome = tokio::select! {
            _ = stop.cancelled() => return,
            r = follow(&mut conn, collection, &mut rv, &state) => r,
        };
        let (failure, restart_from_now) = match outcome {
            // The server ended the watch (its timeout): re-open it.
            Ok(None) => (None, false),
            // An ERROR event (a resourceVersion too old, say): events since are lost.
            Ok(Some(error)) => (Some(error), true),
            Err(err) => (Some(format!("{err:#}")), false),
        };
        if let Some(failure) = failure {
            let mut s = lock(&state);
            s.failures += 1;
            s.first_failure.get_or_insert(failure);
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(REOPEN_DELAY) => {}
        }
        // The connection may be what failed.
        if let Ok(fresh) = connector.connect().await {
            conn = fresh;
        }
        if restart_from_now && let Ok(now) = current_rv(&mut conn, collection).await {
            rv = now;
        }
    }
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    object: Object,
}

#[derive(Deserialize, Default)]
struct Object {
    #[serde(default)]
    metadata: Meta,
    #[serde(default)]
    spec: Spec,
    #[serde(default)]
    status: Status,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Meta {
    name: Option<String>,
    resource_version: Option<String>,
}

#[derive(Deserialize, Default)]
struct Spec {
    cluster: Option<String>,
}

#[derive(Deserialize, Default)]
struct Status {
    phase: Option<String>,
}

/// Reads one watch until it ends, advancing `rv`; the text of an ERROR event if one ended it.
async fn follow(
    conn: &mut Conn,
    collection: &str,
    rv: &mut String,
    state: &Mutex<State>,
) -> anyhow::Result<Option<String>> {
    let path = format!("{collection}?watch=1&resourceVersion={rv}&timeoutSeconds=3600");
    let response = conn.send(Method::GET, &path, None).await?;
    let mut body = watch_body(response, &path).await?;
    let mut lines = WatchLines::default();
    while let Some(frame) = body.frame().await {
        let frame = frame.with_context(|| format!("GET {path}: reading the watch"))?;
        let at = Instant::now();
        let Ok(data) = frame.into_data() else {
            continue;
        };
        lines.push(&data);
        while let Some(WatchLine { event, line }) = lines.next::<Event>(&path)? {
            if event.kind == "ERROR" {
                return Ok(Some(watch_error(&path, &line)));
            }
            if let Some(v) = &event.object.metadata.resource_version {
                rv.clone_from(v);
            }
            record(state, event, at);
        }
    }
    Ok(None)
}

fn record(state: &Mutex<State>, event: Event, at: Instant) {
    let mut s = lock(state);
    let Some(name) = event.object.metadata.name else {
        return;
    };
    match event.kind.as_str() {
        "DELETED" => {
            s.deleted += 1;
            s.last_deleted = Some(at);
        }
        "ADDED" | "MODIFIED" => {
            let phase = event.object.status.phase.unwrap_or_default();
            if phase == s.done {
                if let Some(waiter) = s.waiting.remove(&name) {
                    let cluster = event.object.spec.cluster.unwrap_or_default();
                    // The creator may have given up; nothing to tell then.
                    let _ = waiter.tx.send(Ready { at, cluster });
                }
            } else if let Some(waiter) = s.waiting.get_mut(&name) {
                waiter.phase = if phase.is_empty() {
                    "none (no status yet)".into()
                } else {
                    phase
                };
            }
        }
        _ => {}
    }
}
