//! The one generic registry: create, read, update, delete of any resource described by a
//! [`ResourceDef`], over the store and the watch cache. No code here knows a particular kind; kinds add
//! their rules through their [`kcp_api_types::Strategy`].

mod companions;
mod delete;
pub mod keyspaces;
mod list;
pub(crate) mod metadata;
pub mod required_labels;
pub(crate) mod resource_version;
mod watch;
mod write;

use std::sync::Arc;

use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::{ApiError, Cause};
use kcp_store::keys::ResourceKeyspace;
use kcp_store::{Store, StoreError};

use crate::watch_cache::{CacheError, CachedObject, WatchCache};

pub use companions::{Companion, CompanionSource};
pub use delete::{
    DeleteOptions, DeleteOutcome, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Release, marked_deleting,
    propagation_finalizers,
};
pub use list::{ListOptions, ListResult, ListScope, Selectors};
pub use metadata::{now_rfc3339, str_at};
pub use watch::{Watch, WatchFilter, WatchStart};
pub(crate) use write::decoded;
pub use write::{
    Batch, BatchWritten, NewObject, ObjectDeletion, ObjectUpdate, UpdateKind, WriteOptions, Written,
};

/// A create whose object may already be there (bootstrap, controllers): AlreadyExists is success.
pub fn created_or_existed<T>(result: Result<T, ApiError>) -> Result<(), ApiError> {
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.is_conflict_or_exists() => Ok(()),
        Err(e) => Err(e),
    }
}

/// The annotation kcp puts on every object: the logical cluster it lives in.
pub const CLUSTER_ANNOTATION: &str = "kcp.io/cluster";

/// Where an object lives.
#[derive(Clone, Copy, Debug)]
pub struct ObjectRef<'a> {
    pub cluster: &'a LogicalClusterName,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

pub struct Registry {
    store: Arc<dyn Store>,
    cache: Arc<WatchCache>,
    external_url: String,
    /// Admission of requests' writes (webhooks); none until the server sets it.
    admission: parking_lot::RwLock<Option<Arc<dyn crate::admission::Admission>>>,
    /// What creates bring along; none until controllers add theirs.
    companions: parking_lot::RwLock<companions::Sources>,
    /// Quota admission's reservations not yet written.
    quota_reservations: crate::admission::quota::CreatesInFlight,
}

pub fn keyspace(def: &ResourceDef) -> ResourceKeyspace {
    let (group, plural) = def.storage_resource();
    ResourceKeyspace::new(
        group,
        plural,
        def.storage_identity.as_deref(),
        def.namespaced,
    )
}

/// A stored object in the form `def` serves (they differ only for views of another resource's storage).
pub fn to_api(def: &ResourceDef, stored: serde_json::Value) -> serde_json::Value {
    match &def.shared_storage {
        Some(s) => s.conversion.to_api(stored),
        None => stored,
    }
}

/// An object in the form `def` serves, in the form the store keeps.
pub fn to_storage(def: &ResourceDef, api: serde_json::Value) -> serde_json::Value {
    match &def.shared_storage {
        Some(s) => s.conversion.to_storage(api),
        None => api,
    }
}

/// A cached (stored-form) object as `def` serves it; the same object when no conversion applies.
pub fn present(def: &ResourceDef, obj: Arc<CachedObject>) -> Result<Arc<CachedObject>, ApiError> {
    if def.shared_storage.is_none() {
        return Ok(obj);
    }
    let value = to_api(def, obj.value().map_err(ApiError::internal)?);
    let json = serde_json::to_vec(&value).map_err(ApiError::internal)?;
    Ok(Arc::new(CachedObject {
        key: obj.key.clone(),
        cluster: obj.cluster.clone(),
        namespace: obj.namespace.clone(),
        name: obj.name.clone(),
        revision: obj.revision,
        labels: obj.labels.clone(),
        json: json.into(),
    }))
}

/// The one place store errors become API errors.
pub fn store_error(def: &ResourceDef, name: &str, err: StoreError) -> ApiError {
    match err {
        StoreError::AlreadyExists { .. } => ApiError::already_exists(&def.group, &def.plural, name),
        StoreError::NotFound { .. } => ApiError::not_found(&def.group, &def.plural, name),
        StoreError::Conflict { .. } => ApiError::stale_object(&def.group, &def.plural, name),
        StoreError::Compacted {
            requested,
            compacted,
        } => ApiError::expired(format!(
            "too old resource version: {requested} ({compacted})"
        )),
        StoreError::FutureRevision { requested, current } => too_large_resource_version(format!(
            "Too large resource version: {requested}, current: {current}"
        )),
        StoreError::TooLarge { .. } => ApiError::too_large(crate::codec::MAX_BODY_BYTES),
        other => ApiError::internal(other),
    }
}

/// Compare-and-swap retries ran out because other writers kept changing the object.
fn retries_exhausted(def: &ResourceDef, name: &str) -> ApiError {
    ApiError::conflict(
        &def.group,
        &def.plural,
        name,
        "too many concurrent updates; please try again",
    )
}

/// Kubernetes' 504 for a resourceVersion the server has not reached: with the cause clients
/// recognise it by and a retry hint.
fn too_large_resource_version(message: String) -> ApiError {
    let mut err = ApiError::timeout(message);
    err.details.causes = vec![Cause::new(
        "ResourceVersionTooLarge",
        "",
        "Too large resource version",
    )];
    err.details.retry_after_seconds = Some(1);
    err
}

pub fn cache_error(err: CacheError) -> ApiError {
    match err {
        CacheError::TooOld { .. } => ApiError::expired(err.to_string()),
        CacheError::TooNew { .. } => too_large_resource_version(err.to_string()),
        CacheError::Stopped => ApiError::internal(err),
        CacheError::WriterUnreachable(_) => ApiError::new(
            kcp_apimachinery::status::Reason::ServiceUnavailable,
            err.to_string(),
        ),
    }
}

impl Registry {
    pub fn new(store: Arc<dyn Store>, cache: Arc<WatchCache>, external_url: String) -> Registry {
        Registry {
            store,
            cache,
            external_url,
            admission: parking_lot::RwLock::new(None),
            companions: parking_lot::RwLock::default(),
            quota_reservations: Default::default(),
        }
    }

    /// The creates of this registry that reserved quota and are on their way to the store.
    pub(crate) fn quota_reservations(&self) -> &crate::admission::quota::CreatesInFlight {
        &self.quota_reservations
    }

    /// Installs the admission chain requests' writes pass through.
    pub fn set_admission(&self, admission: Arc<dyn crate::admission::Admission>) {
        *self.admission.write() = Some(admission);
    }

    pub fn admission(&self) -> Option<Arc<dyn crate::admission::Admission>> {
        self.admission.read().clone()
    }

    pub fn cache(&self) -> &Arc<WatchCache> {
        &self.cache
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// One object, reflecting every write acknowledged before the call.
    pub async fn get(
        &self,
        def: &ResourceDef,
        at: ObjectRef<'_>,
    ) -> Result<Arc<CachedObject>, ApiError> {
        self.cache.wait_fresh().await.map_err(cache_error)?;
        let key = keyspace(def).object(at.cluster, at.namespace, at.name);
        let obj = self
            .cache
            .get(&key)
            .ok_or_else(|| ApiError::not_found(&def.group, &def.plural, at.name))?;
        present(def, obj)
    }

    /// The namespace an object is written into must exist and must not be terminating.
    ///
    /// Like kube-apiserver's namespace lifecycle admission, this trusts the cache when it knows the
    /// namespace and only waits for the cache to catch up when it does not (a namespace created just
    /// before), so writes do not wait on the watch round trip.
    async fn check_namespace(
        &self,
        def: &ResourceDef,
        cluster: &str,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        let key = keyspaces::namespace_key(cluster, namespace);
        let ns = match self.cache.get(&key) {
            Some(ns) => ns,
            None => {
                self.cache.wait_fresh().await.map_err(cache_error)?;
                self.cache
                    .get(&key)
                    .ok_or_else(|| ApiError::not_found("", "namespaces", namespace))?
            }
        };
        // Read the one field into a typed struct: no Value tree for every create.
        #[derive(serde::Deserialize)]
        struct Deletion {
            #[serde(rename = "deletionTimestamp")]
            deletion_timestamp: Option<serde::de::IgnoredAny>,
        }
        #[derive(serde::Deserialize)]
        struct Namespace {
            metadata: Deletion,
        }
        let terminating = ns
            .json
            .parse::<Namespace>()
            .is_ok_and(|n| n.metadata.deletion_timestamp.is_some());
        if terminating {
            // NamespaceLifecycle's words: forbidden for the object, with a cause naming why.
            let mut err = ApiError::forbidden(
                &def.group,
                &def.plural,
                name,
                &format!(
                    "unable to create new content in namespace {namespace} because it is being terminated"
                ),
            );
            err.details
                .causes
                .push(kcp_apimachinery::status::Cause::new(
                    "NamespaceTerminating",
                    "metadata.namespace",
                    format!("namespace {namespace} is being terminated"),
                ));
            return Err(err);
        }
        Ok(())
    }
}
