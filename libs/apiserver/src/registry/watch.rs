//! Watch: where a watch starts (resourceVersion, sendInitialEvents), its subscription to the watch
//! cache, its initial state, and what each watcher sees of a change. Encoding and streaming are
//! the handler's.

use std::sync::Arc;

use kcp_api_types::ResourceDef;
use kcp_apimachinery::status::ApiError;
use kcp_store::Revision;

use super::resource_version;
use super::{ListOptions, ListScope, Registry, Selectors, cache_error, keyspace};
use crate::watch_cache::{CacheEvent, CacheEventType, CachedObject, Scope, Subscription};

/// Who a watcher is: what it asked to see.
pub struct WatchFilter {
    def: Arc<ResourceDef>,
    selectors: Selectors,
    /// The namespace watched (a namespaced resource's), which a wildcard watch's key range
    /// cannot narrow.
    namespace: Option<String>,
}

impl WatchFilter {
    pub fn matches(&self, o: &CachedObject) -> bool {
        self.namespace
            .as_deref()
            .is_none_or(|n| o.namespace.as_deref() == Some(n))
            && self.selectors.matches(&self.def, o)
    }

    /// What this watcher sees of one change: an object entering the selector is ADDED for it, one
    /// leaving it is DELETED.
    pub fn visible(&self, ev: &CacheEvent) -> Option<CacheEventType> {
        match ev.kind {
            CacheEventType::Added | CacheEventType::Deleted => {
                self.matches(&ev.object).then_some(ev.kind)
            }
            CacheEventType::Modified => {
                let now = self.matches(&ev.object);
                let before = ev.prev.as_deref().is_some_and(|p| self.matches(p));
                match (before, now) {
                    (true, true) => Some(CacheEventType::Modified),
                    (false, true) => Some(CacheEventType::Added),
                    (true, false) => Some(CacheEventType::Deleted),
                    (false, false) => None,
                }
            }
        }
    }
}

/// A watch the registry started.
pub struct Watch {
    pub subscription: Subscription,
    pub filter: WatchFilter,
    /// The initial state, when the watch begins with it: the objects the watcher sees, as of
    /// `initial_at`; what changed after that revision arrives through the subscription.
    pub initial: Vec<Arc<CachedObject>>,
    pub initial_at: Option<Revision>,
    /// Nothing at or before this revision is sent, even when it is ahead of this server
    /// (Kubernetes' watchers send only events newer than the one asked for).
    pub after: Revision,
}

/// A watch, or why it cannot start from where it asked (Kubernetes answers that 200 with one
/// ERROR event).
pub enum WatchStart {
    Started(Watch),
    TooOld(ApiError),
}

impl Registry {
    /// Starts a watch of `def`'s objects in `scope` as `opts` and `send_initial`
    /// (`sendInitialEvents`) ask.
    pub async fn watch(
        &self,
        def: &Arc<ResourceDef>,
        scope: ListScope<'_>,
        opts: &ListOptions,
        send_initial: Option<bool>,
    ) -> Result<WatchStart, ApiError> {
        let from = resource_version::watch_from(opts, send_initial)?;
        let ks = keyspace(def);
        let prefix = ks.all_clusters();
        let cache = self.cache();
        let namespace = scope.namespace.filter(|_| def.namespaced);
        if from.initial {
            match from.after {
                Some(want) => cache.wait_for(want).await,
                None if from.fresh => cache.wait_fresh().await,
                None => Ok(cache.revision()),
            }
            .map_err(cache_error)?;
        }
        let filter = WatchFilter {
            def: def.clone(),
            selectors: opts.selectors.clone(),
            namespace: namespace.map(str::to_string),
        };
        let subscription_scope = Scope {
            cluster: scope.cluster.cloned(),
            namespace: namespace.map(str::to_string),
        };
        // With an initial state, subscribe at the revision read first and list after: whatever
        // happens in between arrives through the replayed history, and duplicates are dropped by
        // revision.
        let initial_at = from.initial.then(|| cache.revision());
        let subscribed = cache.subscribe(
            prefix,
            subscription_scope,
            if from.initial { initial_at } else { from.after },
        );
        let subscription = match subscribed {
            Ok(s) => s,
            Err(err) => return Ok(WatchStart::TooOld(cache_error(err))),
        };
        let initial = match initial_at {
            Some(at) => {
                let list_prefix = match (scope.cluster, namespace) {
                    (Some(c), Some(ns)) => ks.namespace(c, ns),
                    (Some(c), None) => ks.cluster(c),
                    (None, _) => prefix.to_string(),
                };
                // Objects newer than the snapshot revision arrive through the replayed history.
                (cache.list(&list_prefix, None).iter())
                    .filter(|o| o.revision <= at && filter.matches(o))
                    .cloned()
                    .collect()
            }
            None => Vec::new(),
        };
        Ok(WatchStart::Started(Watch {
            subscription,
            filter,
            initial,
            initial_at,
            after: from.after.unwrap_or(0),
        }))
    }
}
