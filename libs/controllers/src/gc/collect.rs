//! What a worker does with one queued object: Kubernetes' rules for dependents (delete when no owner
//! is left, drop references to owners that are gone) and for owners being deleted in the foreground
//! or with orphaning.

use std::collections::HashSet;
use std::sync::Arc;

use kcp_api_types::ResourceDef;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::registry::{
    DeleteOptions, FOREGROUND_FINALIZER, ORPHAN_FINALIZER, ObjectRef, UpdateKind, WriteOptions,
    keyspace,
};
use kcp_apiserver::watch_cache::CachedObject;
use serde_json::Value;

use super::Collector;
use super::meta::{Meta, OwnerRef};

#[derive(Debug, thiserror::Error)]
pub enum GcError {
    #[error("{0}")]
    Api(#[from] ApiError),
}

/// How a dependent sees one of its owners.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// Present with the referenced uid, not waiting for its dependents; also a reference the
    /// collector cannot resolve (unknown kind, namespaced owner of a cluster-scoped object), which
    /// Kubernetes never collects either.
    Solid,
    /// Absent, or present under another uid.
    Dangling,
    /// Being deleted in the foreground: waiting for its dependents to go.
    Waiting,
}

/// The resource a cached object belongs to, in its logical cluster.
fn resource_of(server: &ApiServer, obj: &CachedObject) -> Option<Arc<ResourceDef>> {
    server
        .apis_of(&obj.cluster)
        .resources()
        .iter()
        .find(|d| obj.key.starts_with(keyspace(d).all_clusters()))
        .cloned()
}

fn at(obj: &CachedObject) -> ObjectRef<'_> {
    ObjectRef {
        cluster: &obj.cluster,
        namespace: obj.namespace.as_deref(),
        name: &obj.name,
    }
}

/// 404 means someone else finished the job.
fn gone_is_fine<T>(result: Result<T, ApiError>) -> Result<(), GcError> {
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A mutation of the stored object, refused when the name now holds another object (another uid).
fn same_object(
    uid: String,
    change: impl Fn(&mut serde_json::Map<String, Value>),
) -> impl FnMut(&Value) -> Result<Value, ApiError> {
    move |old| {
        let mut new = old.clone();
        let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) else {
            return Err(ApiError::internal("object without metadata"));
        };
        if m.get("uid").and_then(Value::as_str) != Some(uid.as_str()) {
            return Err(ApiError::not_found("", "", "replaced object"));
        }
        // Retried on conflicts rather than pinned to the version read.
        m.remove("resourceVersion");
        change(m);
        Ok(new)
    }
}

impl Collector {
    pub(super) async fn process(&self, key: &str) -> Result<(), GcError> {
        let Some(server) = self.server.upgrade() else {
            return Ok(());
        };
        // Decide on a state that includes the collector's own earlier writes.
        let _ = self.cache.wait_fresh().await;
        let Some(obj) = self.cache.get(key) else {
            return Ok(());
        };
        let Some(meta) = Meta::parse(&obj.json.to_bytes()) else {
            return Ok(());
        };
        let Some(def) = resource_of(&server, &obj) else {
            return Ok(());
        };
        if meta.is_deleting() {
            if meta.has_finalizer(ORPHAN_FINALIZER) {
                return self.orphan(&server, &def, &obj, &meta).await;
            }
            if meta.has_finalizer(FOREGROUND_FINALIZER) {
                return self.foreground(&server, &def, &obj, &meta).await;
            }
            return Ok(());
        }
        if meta.owners().is_empty() {
            return Ok(());
        }
        self.collect(&server, &def, &obj, &meta).await
    }

    fn owner(&self, server: &ApiServer, dependent: &CachedObject, r: &OwnerRef) -> Owner {
        let (group, version) = r.group_version();
        let apis = server.apis_of(&dependent.cluster);
        let Some(def) = apis.find_kind(group, version, &r.kind) else {
            return Owner::Solid;
        };
        let namespace = match (def.namespaced, dependent.namespace.as_deref()) {
            (false, _) => None,
            (true, Some(ns)) => Some(ns),
            (true, None) => return Owner::Solid,
        };
        let key = keyspace(def).object(&dependent.cluster, namespace, &r.name);
        match self
            .cache
            .get(&key)
            .and_then(|o| Meta::parse(&o.json.to_bytes()))
        {
            Some(m) if m.uid == r.uid => {
                if m.is_deleting() && m.has_finalizer(FOREGROUND_FINALIZER) {
                    Owner::Waiting
                } else {
                    Owner::Solid
                }
            }
            _ => Owner::Dangling,
        }
    }

    /// A dependent: delete it when no solid owner remains; otherwise drop its references to owners
    /// that are gone or waiting for it.
    async fn collect(
        &self,
        server: &ApiServer,
        def: &ResourceDef,
        obj: &CachedObject,
        meta: &Meta,
    ) -> Result<(), GcError> {
        let mut solid = false;
        let mut waiting = false;
        let mut release = HashSet::new();
        for r in meta.owners() {
            match self.owner(server, obj, r) {
                Owner::Solid => solid = true,
                Owner::Dangling => {
                    release.insert(r.uid.clone());
                }
                Owner::Waiting => {
                    waiting = true;
                    release.insert(r.uid.clone());
                }
            }
        }
        if solid {
            if release.is_empty() {
                return Ok(());
            }
            return self.drop_references(server, def, obj, meta, release).await;
        }
        let dependents = self.graph.lock().dependents_of(&obj.cluster, &meta.uid);
        let policy = if waiting && !dependents.is_empty() {
            // A dependent already waiting for its own dependents may be waiting for this object
            // (an ownership cycle): stop blocking owners, or neither could ever go.
            let cycle = dependents.iter().any(|(key, _)| {
                self.cache
                    .get(key)
                    .and_then(|d| Meta::parse(&d.json.to_bytes()))
                    .is_some_and(|m| m.is_deleting() && m.has_finalizer(FOREGROUND_FINALIZER))
            });
            if cycle {
                self.unblock_owners(server, def, obj, meta).await?;
            }
            // Its own dependents must go before it, so its waiting owner goes last.
            "Foreground"
        } else if meta.has_finalizer(ORPHAN_FINALIZER) {
            "Orphan"
        } else if meta.has_finalizer(FOREGROUND_FINALIZER) {
            "Foreground"
        } else {
            "Background"
        };
        let opts = DeleteOptions {
            precondition_uid: Some(meta.uid.clone()),
            propagation_policy: Some(policy.to_string()),
            ..Default::default()
        };
        tracing::debug!(key = %obj.key, policy, "deleting an object whose owners are gone");
        gone_is_fine(server.registry().delete(def, at(obj), &opts).await)
    }

    /// Sets `blockOwnerDeletion: false` on every reference of `obj`.
    async fn unblock_owners(
        &self,
        server: &ApiServer,
        def: &ResourceDef,
        obj: &CachedObject,
        meta: &Meta,
    ) -> Result<(), GcError> {
        let change = same_object(meta.uid.clone(), |m| {
            if let Some(list) = m.get_mut("ownerReferences").and_then(Value::as_array_mut) {
                for r in list.iter_mut().filter_map(Value::as_object_mut) {
                    if r.contains_key("blockOwnerDeletion") {
                        r.insert("blockOwnerDeletion".into(), Value::Bool(false));
                    }
                }
            }
        });
        gone_is_fine(
            server
                .registry()
                .update(
                    def,
                    at(obj),
                    UpdateKind::Main,
                    WriteOptions::default(),
                    change,
                )
                .await,
        )
    }

    async fn drop_references(
        &self,
        server: &ApiServer,
        def: &ResourceDef,
        obj: &CachedObject,
        meta: &Meta,
        uids: HashSet<String>,
    ) -> Result<(), GcError> {
        let change = same_object(meta.uid.clone(), move |m| {
            let now_empty = match m.get_mut("ownerReferences").and_then(Value::as_array_mut) {
                Some(list) => {
                    list.retain(|r| {
                        !r.get("uid")
                            .and_then(Value::as_str)
                            .is_some_and(|u| uids.contains(u))
                    });
                    list.is_empty()
                }
                None => false,
            };
            if now_empty {
                m.remove("ownerReferences");
            }
        });
        gone_is_fine(
            server
                .registry()
                .update(
                    def,
                    at(obj),
                    UpdateKind::Main,
                    WriteOptions::default(),
                    change,
                )
                .await,
        )
    }

    async fn remove_finalizer(
        &self,
        server: &ApiServer,
        def: &ResourceDef,
        obj: &CachedObject,
        meta: &Meta,
        finalizer: &'static str,
    ) -> Result<(), GcError> {
        let change = same_object(meta.uid.clone(), move |m| {
            if let Some(list) = m.get_mut("finalizers").and_then(Value::as_array_mut) {
                list.retain(|f| f.as_str() != Some(finalizer));
            }
        });
        let written = match server
            .registry()
            .update(
                def,
                at(obj),
                UpdateKind::Main,
                WriteOptions::default(),
                change,
            )
            .await
        {
            Ok(written) => written,
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        // Releasing the last finalizer deletes the object in the same update, unless a concurrent
        // write made that deletion lose its compare-and-swap: then finish it here.
        let released = written
            .object
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if !released {
            return Ok(());
        }
        let opts = DeleteOptions {
            precondition_uid: Some(meta.uid.clone()),
            ..Default::default()
        };
        gone_is_fine(server.registry().delete(def, at(obj), &opts).await)
    }

    /// An owner deleted with `orphan`: its dependents forget it, then it goes.
    async fn orphan(
        &self,
        server: &ApiServer,
        def: &ResourceDef,
        obj: &CachedObject,
        meta: &Meta,
    ) -> Result<(), GcError> {
        let dependents = self.graph.lock().dependents_of(&obj.cluster, &meta.uid);
        for (key, _) in dependents {
            let Some(dep) = self.cache.get(&key) else {
                continue;
            };
            let (Some(dep_meta), Some(dep_def)) =
                (Meta::parse(&dep.json.to_bytes()), resource_of(server, &dep))
            else {
                continue;
            };
            let uids = HashSet::from([meta.uid.clone()]);
            self.drop_references(server, &dep_def, &dep, &dep_meta, uids)
                .await?;
        }
        self.remove_finalizer(server, def, obj, meta, ORPHAN_FINALIZER)
            .await
    }

    /// An owner deleted in the foreground: its dependents are deleted; it goes once none that blocks
    /// it is left.
    async fn foreground(
        &self,
        server: &ApiServer,
        def: &ResourceDef,
        obj: &CachedObject,
        meta: &Meta,
    ) -> Result<(), GcError> {
        let dependents = self.graph.lock().dependents_of(&obj.cluster, &meta.uid);
        let mut blocked = false;
        for (key, blocks) in dependents {
            let Some(dep) = self.cache.get(&key) else {
                continue;
            };
            blocked |= blocks;
            // Each dependent finds this owner waiting and is deleted unless another owner keeps it.
            if !Meta::parse(&dep.json.to_bytes()).is_some_and(|m| m.is_deleting()) {
                self.queue.add(key);
            }
        }
        if blocked {
            return Ok(());
        }
        self.remove_finalizer(server, def, obj, meta, FOREGROUND_FINALIZER)
            .await
    }
}
