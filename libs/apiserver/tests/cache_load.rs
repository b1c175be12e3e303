//! Loading the watch cache from the store at start: every object of every resource arrives, a
//! resource of several pages among them; a store that fails while the cache reads it ends the
//! start with that error instead of hanging.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kcp_apiserver::on_both_stores;
use kcp_apiserver::testing::Engine;
use kcp_apiserver::watch_cache::WatchCache;
use kcp_store::keys::ResourceKeyspace;
use kcp_store::testing::EtcdProcess;
use kcp_store::{
    KeyValue, MAX_WRITE_ALL, RangeRequest, RangeResult, Revision, Store, StoreError, WatchStream,
    Write,
};

/// More than a page of the cache's load (5,000), so one resource takes several pages.
const CONFIG_MAPS: usize = 12_000;

/// A store whose ranges under `failing` fail; everything else goes to `inner`.
struct FailingRanges {
    inner: Arc<dyn Store>,
    failing: String,
}

#[async_trait::async_trait]
impl Store for FailingRanges {
    async fn current_revision(&self) -> Result<Revision, StoreError> {
        self.inner.current_revision().await
    }
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StoreError> {
        self.inner.get(key).await
    }
    async fn range(&self, req: RangeRequest) -> Result<RangeResult, StoreError> {
        if req.prefix.starts_with(&self.failing) {
            return Err(StoreError::Backend("this range fails".into()));
        }
        self.inner.range(req).await
    }
    async fn create(&self, key: &str, value: Bytes) -> Result<Revision, StoreError> {
        self.inner.create(key, value).await
    }
    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
    ) -> Result<Revision, StoreError> {
        self.inner.update(key, value, expected).await
    }
    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<(Revision, KeyValue), StoreError> {
        self.inner.delete(key, expected).await
    }
    async fn write_all(&self, writes: &[Write]) -> Result<Vec<Revision>, StoreError> {
        self.inner.write_all(writes).await
    }
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StoreError> {
        self.inner.watch(prefix, after).await
    }
    async fn compact(&self, revision: Revision) -> Result<(), StoreError> {
        self.inner.compact(revision).await
    }
    async fn compacted_revision(&self) -> Result<Revision, StoreError> {
        self.inner.compacted_revision().await
    }
}

fn config_maps() -> ResourceKeyspace {
    ResourceKeyspace::new("", "configmaps", None, true)
}

/// A store of `engine` holding `CONFIG_MAPS` ConfigMaps, a namespace and a LogicalCluster in
/// LC `c`, and what keeps it alive.
struct Filled {
    store: Arc<dyn Store>,
    _dir: tempfile::TempDir,
    _etcd: Option<EtcdProcess>,
}

async fn filled(engine: Engine) -> Filled {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, etcd) = kcp_apiserver::testing::open_store(engine, dir.path()).await;
    let object = |name: &str| Bytes::from(format!(r#"{{"metadata":{{"name":"{name}"}}}}"#));
    let mut writes: Vec<Write> = (0..CONFIG_MAPS)
        .map(|i| {
            let name = format!("cm-{i:05}");
            Write::Create {
                key: config_maps().object("c", Some("default"), &name),
                value: object(&name),
            }
        })
        .collect();
    let namespace = ResourceKeyspace::new("", "namespaces", None, false);
    let lc = kcp_apiserver::registry::keyspaces::logical_clusters().clone();
    for key in [
        namespace.object("c", None, "default"),
        lc.object("c", None, "cluster"),
    ] {
        let name = key.rsplit('/').next().unwrap_or_default().to_string();
        writes.push(Write::Create {
            key,
            value: object(&name),
        });
    }
    for batch in writes.chunks(MAX_WRITE_ALL) {
        store.write_all(batch).await.expect("write");
    }
    Filled {
        store,
        _dir: dir,
        _etcd: etcd,
    }
}

on_both_stores!(with filled; every_object_of_every_resource_is_loaded, a_failing_read_ends_the_start_with_its_error);

async fn every_object_of_every_resource_is_loaded(filled: &Filled) {
    let cache = WatchCache::start(filled.store.clone())
        .await
        .expect("cache");
    assert_eq!(cache.object_count(), CONFIG_MAPS + 2);
    let listed = cache.list(config_maps().all_clusters(), None);
    assert_eq!(listed.len(), CONFIG_MAPS);
    assert!(
        listed.windows(2).all(|w| w[0].key < w[1].key),
        "listed in key order"
    );
    for name in ["cm-00000", "cm-05000", "cm-11999"] {
        let key = config_maps().object("c", Some("default"), name);
        assert_eq!(
            cache.get(&key).map(|o| o.name.clone()).as_deref(),
            Some(name)
        );
    }
    let lc = kcp_apiserver::registry::keyspaces::logical_clusters().clone();
    assert!(cache.get(&lc.object("c", None, "cluster")).is_some());
}

async fn a_failing_read_ends_the_start_with_its_error(filled: &Filled) {
    let store = FailingRanges {
        inner: filled.store.clone(),
        failing: config_maps().all_clusters().to_string(),
    };
    let started = tokio::time::timeout(Duration::from_secs(30), WatchCache::start(Arc::new(store)))
        .await
        .expect("the start ends instead of hanging");
    match started {
        Err(StoreError::Backend(message)) => assert!(message.contains("this range fails")),
        Err(other) => panic!("another error: {other}"),
        Ok(_) => panic!("the cache started without the ConfigMaps"),
    }
}
