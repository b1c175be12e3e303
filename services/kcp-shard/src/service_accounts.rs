//! ServiceAccount lookups for token authentication, answered from the API server's watch cache.

use std::sync::{Arc, OnceLock};

use kcp_apiserver::watch_cache::WatchCache;
use kcp_auth::ServiceAccountLookup;

/// Answers from the watch cache once [`StoredServiceAccounts::attach`] has given it one. The
/// authenticators are built before the API server (which owns the cache), so the cache arrives late;
/// until then no ServiceAccount exists, and no token authenticates.
#[derive(Default)]
pub struct StoredServiceAccounts {
    cache: OnceLock<Arc<WatchCache>>,
}

impl StoredServiceAccounts {
    pub fn attach(&self, cache: Arc<WatchCache>) {
        let _ = self.cache.set(cache);
    }
}

impl ServiceAccountLookup for StoredServiceAccounts {
    fn uid(&self, cluster: &str, namespace: &str, name: &str) -> Option<String> {
        let cache = self.cache.get()?;
        let key = kcp_apiserver::registry::keyspaces::service_accounts().object(
            cluster,
            Some(namespace),
            name,
        );
        let object = cache.get(&key)?.value().ok()?;
        let metadata = object.get("metadata")?;
        // An account on its way out no longer vouches for its tokens.
        if metadata
            .get("deletionTimestamp")
            .is_some_and(|t| !t.is_null())
        {
            return None;
        }
        metadata.get("uid")?.as_str().map(str::to_string)
    }
}
