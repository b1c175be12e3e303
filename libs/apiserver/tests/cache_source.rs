//! A watch cache fed by something other than a store of its own: here a view of a store that shows
//! one logical cluster only (as a server holding no store would be fed a part of a shard's
//! history). The cache loads what the view shows and follows its changes, and never sees the rest.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use kcp_apiserver::cache_source::CacheSource;
use kcp_apiserver::watch_cache::WatchCache;
use kcp_store::keys::ResourceKeyspace;
use kcp_store::{RangeRequest, RangeResult, Revision, Store, StoreConfig, StoreError, WatchStream};
use serde_json::json;

fn key(cluster: &str, name: &str) -> String {
    ResourceKeyspace::new("", "configmaps", None, true).object(cluster, Some("default"), name)
}

fn value(name: &str) -> Bytes {
    Bytes::from(
        serde_json::to_vec(&json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
        }))
        .unwrap_or_default(),
    )
}

/// The keys of one logical cluster of `store`.
struct OneCluster {
    store: Arc<dyn Store>,
    cluster: String,
}

impl OneCluster {
    fn shows(&self, key: &str) -> bool {
        key.split('/').nth(4) == Some(self.cluster.as_str())
    }
}

#[async_trait]
impl CacheSource for OneCluster {
    async fn current_revision(&self) -> Result<Revision, StoreError> {
        self.store.current_revision().await
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResult, StoreError> {
        let mut page = self.store.range(req).await?;
        page.kvs.retain(|kv| self.shows(&kv.key));
        Ok(page)
    }

    async fn watch_changes(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<WatchStream, StoreError> {
        let cluster = self.cluster.clone();
        let stream = self.store.watch_changes(prefix, after).await?;
        Ok(Box::pin(stream.map(move |response| {
            response.map(|mut r| {
                r.events
                    .retain(|e| e.kv.key.split('/').nth(4) == Some(cluster.as_str()));
                r
            })
        })))
    }

    async fn identity(&self) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_follows_the_source_it_is_given() {
    let store = kcp_store::open(&StoreConfig::Memory)
        .await
        .expect("memory store");
    for (cluster, name) in [("one", "a"), ("other", "b")] {
        store
            .create(&key(cluster, name), value(name))
            .await
            .expect("create");
    }
    let source = Arc::new(OneCluster {
        store: store.clone(),
        cluster: "one".into(),
    });
    let cache = WatchCache::start_from(source, None)
        .await
        .expect("the cache starts");
    assert!(
        cache.get(&key("one", "a")).is_some(),
        "loaded from the view"
    );
    assert!(cache.get(&key("other", "b")).is_none(), "not in the view");

    let later = store
        .create(&key("one", "c"), value("c"))
        .await
        .expect("create");
    store
        .create(&key("other", "d"), value("d"))
        .await
        .expect("create");
    cache.wait_for(later).await.expect("the cache follows");
    assert!(
        cache.get(&key("one", "c")).is_some(),
        "followed from the view"
    );
    assert!(cache.get(&key("other", "d")).is_none(), "not in the view");
}
