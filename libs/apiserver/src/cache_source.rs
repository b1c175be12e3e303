//! What feeds the watch cache: a history of keys and values by revision, read at a revision and
//! followed from one. A shard's cache is fed by its own store ([`StoreSource`]); a server that
//! holds no store (the virtual-workspace server) feeds its cache from another source.

use std::sync::Arc;

use async_trait::async_trait;
use kcp_store::{RangeRequest, RangeResult, Revision, Store, StoreError, WatchStream};

#[async_trait]
pub trait CacheSource: Send + Sync {
    /// The newest revision of the history.
    async fn current_revision(&self) -> Result<Revision, StoreError>;

    /// A page of keys under a prefix, as of a revision.
    async fn range(&self, req: RangeRequest) -> Result<RangeResult, StoreError>;

    /// Every change under `prefix` after revision `after`, in revision order.
    async fn watch_changes(&self, prefix: &str, after: Revision)
    -> Result<WatchStream, StoreError>;

    /// What a saved cache must match to continue this history; `None`: saved caches are not used.
    async fn identity(&self) -> Result<Option<String>, StoreError>;
}

/// A store as the source of a cache.
pub struct StoreSource(pub Arc<dyn Store>);

#[async_trait]
impl CacheSource for StoreSource {
    async fn current_revision(&self) -> Result<Revision, StoreError> {
        self.0.current_revision().await
    }

    async fn range(&self, req: RangeRequest) -> Result<RangeResult, StoreError> {
        self.0.range(req).await
    }

    async fn watch_changes(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<WatchStream, StoreError> {
        self.0.watch_changes(prefix, after).await
    }

    async fn identity(&self) -> Result<Option<String>, StoreError> {
        self.0.identity().await
    }
}
