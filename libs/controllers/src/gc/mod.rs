//! Garbage collection from `ownerReferences`, as Kubernetes' garbage collector does it, for every
//! logical cluster of the shard with one graph and one set of workers.
//!
//! The graph ([`graph::Graph`]) follows every event of every resource from the watch cache
//! ([`kcp_apiserver::watch_cache::WatchCache::subscribe_all`]) and queues the objects whose situation
//! changed; workers ([`collect`]) then decide from the cache's current state and act through the
//! registry:
//! - an object whose owners are all gone (absent, or present with another uid) is deleted, in the
//!   background so chains cascade;
//! - an owner deleted in the foreground (`foregroundDeletion`) has its dependents deleted and keeps
//!   its finalizer until no dependent with `blockOwnerDeletion` remains;
//! - an owner deleted with `orphan` loses its references from every dependent, then the finalizer.
//!
//! Owners are always looked up in the dependent's own logical cluster (and namespace, for namespaced
//! owners), so references never reach across logical clusters.

mod collect;
mod graph;
mod meta;

use std::sync::{Arc, Weak};
use std::time::Duration;

use kcp_apiserver::ApiServer;
use kcp_apiserver::watch_cache::WatchCache;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::workqueue::{Outcome, WorkQueue};
use graph::Graph;
use meta::Meta;

/// Backoff of an object whose collection failed.
const GC_FIRST_RETRY: Duration = Duration::from_millis(20);
const GC_LONGEST_RETRY: Duration = Duration::from_secs(60);

/// How the collector runs.
#[derive(Clone, Copy, Debug)]
pub struct GcOptions {
    /// Workers deciding and acting on queued objects.
    pub workers: usize,
    /// Cache events buffered for the graph; beyond that the collector is cut off and rebuilds its
    /// graph from a full listing.
    pub event_queue: usize,
}

impl Default for GcOptions {
    fn default() -> GcOptions {
        GcOptions {
            workers: 2,
            // A rebuild lists every object of the shard, so falling behind is much cheaper than
            // being cut off: a burst of writes (thousands of workspaces at once) may queue this
            // many events (a pointer each) before the graph catches up.
            event_queue: 1 << 20,
        }
    }
}

/// The running collector.
pub struct Collector {
    server: Weak<ApiServer>,
    cache: Arc<WatchCache>,
    graph: Mutex<Graph>,
    queue: Arc<WorkQueue<String>>,
    event_queue: usize,
    /// How many times the graph was built from a full listing (the first start included).
    resyncs: std::sync::atomic::AtomicU64,
}

impl Collector {
    /// Objects with ownerReferences the collector tracks (for metrics and tests).
    pub fn tracked(&self) -> usize {
        self.graph.lock().tracked()
    }

    /// How many times the graph was built from a full listing, the first start included.
    pub fn resyncs(&self) -> u64 {
        self.resyncs.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Rebuilds the graph from a full listing of the cache and queues what needs a look.
    fn resync(&self) {
        self.resyncs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut graph = Graph::default();
        let mut work = Vec::new();
        for obj in self.cache.all_objects() {
            if let Some(meta) = Meta::parse(&obj.json.to_bytes()) {
                work.extend(graph.upsert(&obj, &meta));
            }
        }
        *self.graph.lock() = graph;
        self.queue.clear();
        for key in work {
            self.queue.add(key);
        }
    }

    /// Keeps the graph up to date until shutdown; starts over from a full listing whenever the
    /// subscription is cut off (the collector fell behind, or the cache reloaded).
    async fn follow(self: Arc<Self>, shutdown: CancellationToken) {
        loop {
            let mut events = self.cache.subscribe_all(self.event_queue);
            // A full listing parses every object of the shard (seconds with a million): on a
            // blocking thread, so requests arriving meanwhile (a restarted shard's first ones)
            // still find an async worker.
            let this = self.clone();
            if tokio::task::spawn_blocking(move || this.resync())
                .await
                .is_err()
            {
                return;
            }
            loop {
                let event = tokio::select! {
                    event = events.rx.recv() => event,
                    _ = shutdown.cancelled() => return,
                };
                let Some(event) = event else { break };
                let work = self.graph.lock().apply(&event);
                for key in work {
                    self.queue.add(key);
                }
            }
            if shutdown.is_cancelled() {
                // The cache closes every subscription when the server stops: not a cut-off.
                return;
            }
            tracing::warn!("the garbage collector was cut off from the watch cache; rebuilding");
        }
    }
}

/// Starts the shard's garbage collector; it stops when the API server shuts down.
pub fn spawn(server: Arc<ApiServer>) -> Arc<Collector> {
    spawn_with(server, GcOptions::default())
}

/// [`spawn`] with explicit options.
pub fn spawn_with(server: Arc<ApiServer>, options: GcOptions) -> Arc<Collector> {
    let shutdown = server.shutdown_token();
    let collector = Arc::new(Collector {
        server: Arc::downgrade(&server),
        cache: server.registry().cache().clone(),
        graph: Mutex::new(Graph::default()),
        queue: WorkQueue::new(GC_FIRST_RETRY, GC_LONGEST_RETRY),
        event_queue: options.event_queue,
        resyncs: std::sync::atomic::AtomicU64::new(0),
    });
    tokio::spawn(collector.clone().follow(shutdown.clone()));
    let worker = collector.clone();
    collector
        .queue
        .spawn_workers(options.workers, shutdown.clone(), move |key: String| {
            let collector = worker.clone();
            async move {
                Outcome::of(collector.process(&key).await, |err| {
                    tracing::warn!(%key, error = %err, "garbage collection failed; retrying");
                })
            }
        });
    collector
}
