//! The conformance suite against every engine, plus engine-specific checks.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kcp_store::testing::EtcdProcess;
use kcp_store::testing::conformance::{self, Watcher};
use kcp_store::{
    EtcdOptions, EtcdStore, MemoryStore, RangeRequest, RedbOptions, RedbStore, Store, StoreConfig,
    WatchConfig,
};
use parking_lot::Mutex;

fn small_queue() -> WatchConfig {
    WatchConfig {
        queue_len: 4,
        ..WatchConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_conformance() {
    conformance::run_all(|| async { Arc::new(MemoryStore::new()) as Arc<dyn Store> }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_watch_lag() {
    conformance::watch_lag(Arc::new(MemoryStore::with_watch_config(small_queue()))).await;
}

/// A case waiting for events that never come fails after its wait, although the idle watch keeps
/// sending progress notifications (each of which used to restart the wait).
#[tokio::test(start_paused = true)]
#[should_panic(expected = "timed out waiting for the watch")]
async fn a_wait_for_events_ends_despite_progress() {
    let store = MemoryStore::new();
    let mut watcher = Watcher::new(&store, "/idle/", 0).await;
    watcher.events(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redb_conformance() {
    // The directories live as long as the test.
    let dirs = Arc::new(Mutex::new(Vec::new()));
    conformance::run_all(|| {
        let dirs = dirs.clone();
        async move {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = RedbStore::open(dir.path().join("store.redb")).expect("open redb");
            dirs.lock().push(dir);
            Arc::new(store) as Arc<dyn Store>
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redb_watch_lag() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = RedbOptions {
        watch: small_queue(),
        ..RedbOptions::default()
    };
    let store = RedbStore::open_with(dir.path().join("store.redb"), options).expect("open redb");
    conformance::watch_lag(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redb_reopen_keeps_history() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("store.redb");
    let (r1, r2) = {
        let store = RedbStore::open(&path).expect("open");
        let r1 = store.create("/k/a", "1".into()).await.expect("create");
        let r2 = store.update("/k/a", "2".into(), r1).await.expect("update");
        store.create("/k/b", "b".into()).await.expect("create");
        store.compact(r2).await.expect("compact");
        (r1, r2)
    };
    let store = kcp_store::open(&StoreConfig::Embedded { path: path.clone() })
        .await
        .expect("reopen");
    assert_eq!(store.current_revision().await.expect("revision"), r2 + 1);
    assert_eq!(store.compacted_revision().await.expect("compacted"), r2);
    let a = store.get("/k/a").await.expect("get").expect("present");
    assert_eq!(
        (a.create_revision, a.mod_revision, a.value.as_ref()),
        (r1, r2, b"2".as_ref())
    );
    let at = store
        .range(RangeRequest {
            prefix: "/k/".into(),
            revision: Some(r2),
            ..Default::default()
        })
        .await
        .expect("range at r2");
    assert_eq!(at.kvs.len(), 1);
    // Watches replay across the restart, and revisions continue.
    let mut watcher = Watcher::new(&*store, "/k/", r2).await;
    assert_eq!(watcher.events(1).await[0].kv.key, "/k/b");
    let r4 = store.create("/k/c", "c".into()).await.expect("create");
    assert_eq!(r4, r2 + 2);
    assert_eq!(watcher.events(1).await[0].kv.mod_revision, r4);
}

/// Concurrent writers share commits (group commit). Prints the measured rate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redb_group_commit() {
    const TASKS: usize = 64;
    const WRITES: usize = 50;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(RedbStore::open(dir.path().join("store.redb")).expect("open"));
    let started = Instant::now();
    for i in 0..100 {
        store
            .create(&format!("/seq/{i}"), vec![b'x'; 1024].into())
            .await
            .expect("create");
    }
    eprintln!(
        "redb: 100 sequential durable 1 KiB writes in {:?}",
        started.elapsed()
    );
    let before = store.stats();
    let started = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..WRITES {
                    store
                        .create(&format!("/gc/{t}/{i}"), vec![b'x'; 1024].into())
                        .await
                        .expect("create");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("task");
    }
    let elapsed = started.elapsed();
    let after = store.stats();
    let stats = kcp_store::RedbStats {
        commits: after.commits - before.commits,
        writes: after.writes - before.writes,
    };
    let total = (TASKS * WRITES) as u64;
    assert_eq!(stats.writes, total);
    eprintln!(
        "redb group commit: {total} durable 1 KiB writes from {TASKS} tasks in {elapsed:?} ({:.0} writes/s), {} commits ({:.1} writes/commit)",
        total as f64 / elapsed.as_secs_f64(),
        stats.commits,
        total as f64 / stats.commits as f64
    );
    assert!(
        stats.commits < total / 4,
        "writes were not batched: {stats:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_conformance() {
    let etcd = EtcdProcess::start();
    let endpoints = etcd.endpoints();
    let counter = AtomicUsize::new(0);
    let run = std::process::id();
    conformance::run_all(|| {
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let endpoints = endpoints.clone();
        async move {
            let mut options = EtcdOptions::new(endpoints, format!("/kcp-conformance-{run}-{n}"));
            // Keep the progress case short without relying on the server's interval.
            options.progress_interval = Duration::from_secs(2);
            Arc::new(EtcdStore::connect(options).await.expect("connect to etcd")) as Arc<dyn Store>
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_prefixes_are_isolated() {
    let etcd = EtcdProcess::start();
    let config = |prefix: &str| StoreConfig::Etcd {
        endpoints: etcd.endpoints(),
        prefix: prefix.into(),
    };
    let a = kcp_store::open(&config("/tenant-a"))
        .await
        .expect("connect");
    let b = kcp_store::open(&config("/tenant-b"))
        .await
        .expect("connect");
    a.create("/x", "from a".into()).await.expect("create");
    assert_eq!(b.get("/x").await.expect("get"), None);
    b.create("/x", "from b".into()).await.expect("create in b");
    let listed = a.range(RangeRequest::default()).await.expect("range");
    assert_eq!(listed.kvs.len(), 1);
    assert_eq!(
        (listed.kvs[0].key.as_str(), listed.kvs[0].value.as_ref()),
        ("/x", b"from a".as_ref())
    );
}

#[tokio::test]
async fn etcd_unreachable_fails_fast() {
    let mut options = EtcdOptions::new(vec!["http://127.0.0.1:1".into()], "/x");
    options.connect_timeout = Duration::from_millis(500);
    let started = Instant::now();
    assert!(EtcdStore::connect(options).await.is_err());
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Serves `store` over gRPC on a loopback port (plaintext HTTP/2, as the tests need no TLS) and
/// answers the remote store that calls it.
async fn served(store: Arc<dyn Store>) -> Arc<dyn Store> {
    Arc::new(served_noting(store, None).await)
}

/// [`served`], the service telling `writes` of the writes it makes.
async fn served_noting(
    store: Arc<dyn Store>,
    writes: Option<Arc<dyn kcp_store::remote::AcknowledgedWrites>>,
) -> kcp_store::remote::RemoteStore {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::service::TowerToHyperService;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let service = kcp_store::remote::service(store, writes, Default::default());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let service = TowerToHyperService::new(service.clone());
            tokio::spawn(async move {
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    let options = kcp_store::remote::RemoteOptions { url, tls: None };
    kcp_store::remote::RemoteStore::connect(&options).expect("remote store")
}

/// The serving process hears of every write made through the service, and its callers ask it
/// for the newest it acknowledged (which a store's current revision need not be).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
async fn remote_writes_are_acknowledged_by_the_serving_process() {
    #[derive(Default)]
    struct Newest(std::sync::atomic::AtomicI64);
    impl kcp_store::remote::AcknowledgedWrites for Newest {
        fn note(&self, revision: i64) {
            self.0.fetch_max(revision, Ordering::SeqCst);
        }
        fn newest(&self) -> i64 {
            self.0.load(Ordering::SeqCst)
        }
    }
    let newest = Arc::new(Newest::default());
    let local: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let remote = served_noting(local.clone(), Some(newest.clone())).await;
    assert_eq!(remote.acknowledged().await.unwrap(), 0);
    let created = remote.create("/a", "1".into()).await.unwrap();
    assert_eq!(newest.0.load(Ordering::SeqCst), created);
    // A write the serving process made itself is its own to note, not the service's.
    local.create("/b", "1".into()).await.unwrap();
    assert_eq!(remote.acknowledged().await.unwrap(), created);
    let updated = remote.update("/a", "2".into(), created).await.unwrap();
    let (deleted, _) = remote.delete("/a", Some(updated)).await.unwrap();
    assert_eq!(remote.acknowledged().await.unwrap(), deleted);
    let all = remote
        .write_all(&[kcp_store::Write::Create {
            key: "/c".into(),
            value: "1".into(),
        }])
        .await
        .unwrap();
    assert_eq!(remote.acknowledged().await.unwrap(), all[0]);
    // A refused write notes nothing.
    assert!(remote.create("/c", "2".into()).await.is_err());
    assert_eq!(remote.acknowledged().await.unwrap(), all[0]);
}

/// The remote store answers as the store behind it: the whole suite through gRPC. (Not the lag
/// case: the transport drains the store's queue into HTTP/2's flow-control windows, so a remote
/// watcher is cut off only once those and the store's queue are full, far beyond that case's 64
/// events.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_conformance() {
    conformance::run_all(|| served(Arc::new(MemoryStore::new()))).await;
}
