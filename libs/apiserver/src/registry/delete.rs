//! Delete: preconditions, finalizers (deletion waits, marked by `deletionTimestamp`), and the
//! compare-and-swap removal.

use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::{ApiError, Cause};
use kcp_store::{Revision, StoreError};
use serde_json::{Value, json};

use super::metadata::{self, meta_mut, meta_str};
use super::write::{UpdateKind, WriteOptions, Written};
use super::{ObjectRef, Registry, keyspace, store_error};
use crate::admission::{Operation, Target};

/// `DeleteOptions` as clients send them (body or query).
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    pub dry_run: bool,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
    /// `Orphan`, `Background` or `Foreground` (the legacy `orphanDependents` maps onto it). `None`
    /// keeps what the object's finalizers already ask for, else Background.
    pub propagation_policy: Option<String>,
    /// The requesting user, for admission; `None` for the shard's own deletes, which are not admitted.
    pub user: Option<kcp_auth::UserInfo>,
    /// Labels the object must carry to be deleted (a virtual workspace's view:
    /// [`super::required_labels`]); without them it is not found.
    pub required_labels: Vec<(String, String)>,
}

/// Finalizer asking the garbage collector to strip the owner's references from its dependents first.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// Finalizer asking the garbage collector to delete the owner's blocking dependents first.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// The finalizers `obj` carries after a delete with `opts`, when the propagation policy changes them
/// (`None`: unchanged). An explicit policy replaces whichever of the two garbage-collection finalizers
/// the object had; without one, the object's own finalizers decide, as in Kubernetes.
pub fn propagation_finalizers(obj: &Value, opts: &DeleteOptions) -> Option<Vec<String>> {
    let current = metadata::finalizers(obj);
    let (orphan, foreground) = match opts.propagation_policy.as_deref() {
        Some("Orphan") => (true, false),
        Some("Foreground") => (false, true),
        Some(_) => (false, false),
        None => return None,
    };
    let mut next: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN_FINALIZER && *f != FOREGROUND_FINALIZER)
        .cloned()
        .collect();
    if orphan {
        next.push(ORPHAN_FINALIZER.to_string());
    }
    if foreground {
        next.push(FOREGROUND_FINALIZER.to_string());
    }
    let same = next.len() == current.len() && next.iter().all(|f| current.contains(f));
    (!same).then_some(next)
}

impl DeleteOptions {
    /// The deletion's propagation from `propagationPolicy` and the older `orphanDependents`, as
    /// Kubernetes' `ValidateDeleteOptions` allows them: not both, and a known policy (422 for the
    /// options otherwise, every cause listed).
    pub fn with_propagation(
        policy: Option<&str>,
        orphan_dependents: Option<bool>,
    ) -> Result<DeleteOptions, ApiError> {
        let mut causes = Vec::new();
        if let (Some(policy), Some(_)) = (policy, orphan_dependents) {
            causes.push(Cause::invalid(
                "propagationPolicy",
                &Value::from(policy),
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        if let Some(policy) = policy
            && !matches!(policy, "Orphan" | "Background" | "Foreground")
        {
            causes.push(Cause::not_supported(
                "propagationPolicy",
                &Value::from(policy),
                &["Foreground", "Background", "Orphan", "nil"],
            ));
        }
        if !causes.is_empty() {
            return Err(kcp_http::query::invalid_options("delete", causes));
        }
        let orphan = orphan_dependents.map(|o| if o { "Orphan" } else { "Background" });
        Ok(DeleteOptions {
            propagation_policy: policy.or(orphan).map(str::to_string),
            ..DeleteOptions::default()
        })
    }

    /// Reads a `DeleteOptions` JSON body (kubectl sends one with `propagationPolicy`).
    pub fn from_body(body: &Value) -> Result<DeleteOptions, ApiError> {
        let mut opts = DeleteOptions::with_propagation(
            body.get("propagationPolicy").and_then(Value::as_str),
            body.get("orphanDependents").and_then(Value::as_bool),
        )?;
        if let Some(pre) = body.get("preconditions") {
            opts.precondition_uid = pre.get("uid").and_then(Value::as_str).map(str::to_string);
            opts.precondition_resource_version = pre
                .get("resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        if let Some(dry) = body.get("dryRun").and_then(Value::as_array) {
            opts.dry_run = dry.iter().any(|d| d == "All");
        }
        Ok(opts)
    }
}

pub enum DeleteOutcome {
    /// Gone now; the last state of the object.
    Deleted(Value),
    /// Waiting for finalizers; the object with its `deletionTimestamp`.
    Pending(Written),
}

const MAX_ATTEMPTS: usize = 16;

/// `obj` as a deletion that waits for finalizers leaves it: `deletionTimestamp` set (kept if set
/// already), finalizers as `opts` asks, the kind's own preparation done. Without
/// `resourceVersion`: the write gives it.
pub fn marked_deleting(def: &ResourceDef, mut obj: Value, opts: &DeleteOptions) -> Value {
    // Deletion fields are system-owned, so they go around the update path that protects them.
    let finalizers = propagation_finalizers(&obj, opts);
    let deleting = metadata::is_deleting(&obj);
    if let Some(m) = meta_mut(&mut obj) {
        // A deletion already under way keeps its timestamp; only its finalizers may change.
        if !deleting {
            m.insert("deletionTimestamp".into(), json!(metadata::now_rfc3339()));
            m.insert("deletionGracePeriodSeconds".into(), json!(0));
        }
        if let Some(list) = finalizers {
            m.insert("finalizers".into(), json!(list));
        }
        m.remove("resourceVersion");
    }
    def.strategy.prepare_for_delete(&mut obj);
    def.strategy.follow_status(&mut obj);
    obj
}

/// An object whose deletion ends once `finalizer` is removed from it.
#[derive(Clone, Copy)]
pub struct Release<'a> {
    pub def: &'a ResourceDef,
    pub at: ObjectRef<'a>,
    pub finalizer: &'a str,
}

impl Registry {
    /// The store writes that end the deletions of `releases` together, from the objects as the
    /// cache has them: each must be deleting and held by its `finalizer` alone (no other
    /// finalizer, nothing of its kind). `None` when one is not so. Each write is a removal at the
    /// revision read, refused if the object has changed since; as when a finalizer's removal
    /// ends a deletion, watchers see the object DELETED in its last stored state. The caller
    /// keeps to the store's rule: at most one object of a resource in a write.
    pub fn release_writes(
        &self,
        releases: &[Release<'_>],
    ) -> Result<Option<Vec<kcp_store::Write>>, ApiError> {
        let mut writes = Vec::with_capacity(releases.len());
        for r in releases {
            let key = keyspace(r.def).object(r.at.cluster, r.at.namespace, r.at.name);
            let Some(cached) = self.cache.get(&key).filter(|o| o.is_deleting()) else {
                return Ok(None);
            };
            let obj = cached.value().map_err(ApiError::internal)?;
            let finalizers = metadata::finalizers(&obj);
            if finalizers != [r.finalizer] || r.def.strategy.blocks_deletion(&obj) {
                return Ok(None);
            }
            writes.push(kcp_store::Write::Delete {
                key,
                expected: cached.revision,
            });
        }
        Ok(Some(writes))
    }

    /// Ends the deletions of `releases` in one store write ([`Registry::release_writes`]).
    /// `false` when one is not held by its finalizer alone, or has changed meanwhile.
    pub async fn release_all(&self, releases: &[Release<'_>]) -> Result<bool, ApiError> {
        let Some(writes) = self.release_writes(releases)? else {
            return Ok(false);
        };
        match self.write_all(&writes).await {
            Ok(_) => Ok(true),
            Err(StoreError::Conflict { .. } | StoreError::NotFound { .. }) => Ok(false),
            Err(err) => Err(ApiError::internal(err)),
        }
    }

    pub async fn delete(
        &self,
        def: &ResourceDef,
        at: ObjectRef<'_>,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        let key = keyspace(def).object(at.cluster, at.namespace, at.name);
        let target = Target {
            cluster: at.cluster,
            namespace: at.namespace,
            name: at.name,
            subresource: None,
        };
        let user = opts.user.as_ref();
        self.admit_mutate(
            def,
            target,
            Operation::Delete,
            user,
            opts.dry_run,
            None,
            None,
        )
        .await?;
        for _ in 0..MAX_ATTEMPTS {
            let current = self.get(def, at).await?;
            let obj = current.value().map_err(ApiError::internal)?;
            if !super::required_labels::carried_by(&opts.required_labels, &obj) {
                return Err(super::required_labels::not_found(def, at.name));
            }
            if let Some(uid) = &opts.precondition_uid
                && uid != meta_str(&obj, "uid")
            {
                return Err(ApiError::conflict(
                    &def.group,
                    &def.plural,
                    at.name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        meta_str(&obj, "uid")
                    ),
                ));
            }
            if let Some(rv) = &opts.precondition_resource_version
                && *rv != current.revision.to_string()
            {
                return Err(ApiError::conflict(
                    &def.group,
                    &def.plural,
                    at.name,
                    &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                        current.revision
                    ),
                ));
            }
            self.admit_validate(
                def,
                target,
                Operation::Delete,
                user,
                opts.dry_run,
                None,
                Some(&obj),
            )
            .await?;
            let finalizers_change = propagation_finalizers(&obj, opts);
            let finalizers = finalizers_change
                .clone()
                .unwrap_or_else(|| metadata::finalizers(&obj));
            let pending = !finalizers.is_empty() || def.strategy.blocks_deletion(&obj);
            if pending {
                if metadata::is_deleting(&obj) && finalizers_change.is_none() {
                    let json = current.json.to_bytes();
                    return Ok(DeleteOutcome::Pending(Written::with_json(obj, json)));
                }
                match self
                    .mark_deleting(def, &key, at.name, opts, obj, current.revision)
                    .await?
                {
                    Some(written) => return Ok(DeleteOutcome::Pending(written)),
                    // Changed meanwhile (perhaps its last finalizer went): decide again.
                    None => continue,
                }
            }
            if opts.dry_run {
                return Ok(DeleteOutcome::Deleted(obj));
            }
            match self.store.delete_version(&key, current.revision).await {
                Ok(rev) => {
                    self.cache.note_write(rev);
                    return Ok(DeleteOutcome::Deleted(obj));
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(StoreError::NotFound { .. }) => {
                    return Err(ApiError::not_found(&def.group, &def.plural, at.name));
                }
                Err(err) => return Err(store_error(def, at.name, err)),
            }
        }
        Err(super::retries_exhausted(def, at.name))
    }

    /// Sets `deletionTimestamp` on `obj`, read at `revision` (graceful deletion has no grace
    /// period for these kinds). `None` when the object changed since: the caller reads it again
    /// and decides anew, so an object whose finalizers went meanwhile is deleted, not marked.
    async fn mark_deleting(
        &self,
        def: &ResourceDef,
        key: &str,
        name: &str,
        opts: &DeleteOptions,
        obj: Value,
        revision: Revision,
    ) -> Result<Option<Written>, ApiError> {
        let mut obj = marked_deleting(def, obj, opts);
        if opts.dry_run {
            return Ok(Some(Written::new(obj)));
        }
        let bytes =
            serde_json::to_vec(&super::to_storage(def, obj.clone())).map_err(ApiError::internal)?;
        match self.store.update(key, bytes.into(), revision).await {
            Ok(rev) => {
                self.cache.note_write(rev);
                if let Some(m) = meta_mut(&mut obj) {
                    m.insert("resourceVersion".into(), json!(rev.to_string()));
                }
                Ok(Some(Written::new(obj)))
            }
            Err(StoreError::Conflict { .. }) => Ok(None),
            Err(err) => Err(store_error(def, name, err)),
        }
    }

    /// [`Registry::delete`] for whoever cleans up: an object already gone counts as deleted.
    pub async fn delete_if_present(
        &self,
        def: &ResourceDef,
        at: ObjectRef<'_>,
    ) -> Result<(), ApiError> {
        match self.delete(def, at, &DeleteOptions::default()).await {
            Err(e) if !e.is_not_found() => Err(e),
            _ => Ok(()),
        }
    }

    /// Deletes every object of `def` in `cluster` the cache holds (one already gone counts as
    /// deleted; the first other failure stops). `true` once none is left when the deletions are
    /// visible: objects held by finalizers stay until those are released.
    pub async fn delete_all_in_cluster(
        &self,
        def: &ResourceDef,
        cluster: &LogicalClusterName,
    ) -> Result<bool, ApiError> {
        let prefix = keyspace(def).cluster(cluster);
        let objects = self.cache().list(&prefix, None);
        if objects.is_empty() {
            return Ok(true);
        }
        for obj in &objects {
            let at = ObjectRef {
                cluster,
                namespace: obj.namespace.as_deref(),
                name: &obj.name,
            };
            self.delete_if_present(def, at).await?;
        }
        let _ = self.cache().wait_fresh().await;
        Ok(self.cache().list(&prefix, None).is_empty())
    }

    /// Removes one kind-specific finalizer through the `/finalize` path (the namespace controller).
    pub async fn finalize(
        &self,
        def: &ResourceDef,
        at: ObjectRef<'_>,
        finalizer: &str,
    ) -> Result<Written, ApiError> {
        let finalizer = finalizer.to_string();
        self.update(
            def,
            at,
            UpdateKind::Finalize,
            WriteOptions::default(),
            move |old| {
                let mut new = old.clone();
                if let Some(list) = new
                    .pointer_mut("/spec/finalizers")
                    .and_then(Value::as_array_mut)
                {
                    list.retain(|f| f.as_str() != Some(finalizer.as_str()));
                }
                if let Some(m) = meta_mut(&mut new) {
                    m.remove("resourceVersion");
                }
                Ok(new)
            },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_policy(policy: Option<&str>) -> DeleteOptions {
        DeleteOptions {
            propagation_policy: policy.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn policies_set_the_garbage_collection_finalizers() {
        let plain = json!({"metadata": {"finalizers": ["example.com/x"]}});
        assert_eq!(
            propagation_finalizers(&plain, &with_policy(Some("Orphan"))),
            Some(vec!["example.com/x".to_string(), "orphan".to_string()])
        );
        assert_eq!(
            propagation_finalizers(&plain, &with_policy(Some("Foreground"))),
            Some(vec![
                "example.com/x".to_string(),
                "foregroundDeletion".to_string()
            ])
        );
        assert_eq!(
            propagation_finalizers(&plain, &with_policy(Some("Background"))),
            None
        );
        assert_eq!(propagation_finalizers(&plain, &with_policy(None)), None);
    }

    #[test]
    fn a_new_policy_replaces_the_other_finalizer() {
        let orphaning = json!({"metadata": {"finalizers": ["orphan"]}});
        assert_eq!(
            propagation_finalizers(&orphaning, &with_policy(Some("Foreground"))),
            Some(vec!["foregroundDeletion".to_string()])
        );
        // Background drops both: the deletion can complete at once.
        assert_eq!(
            propagation_finalizers(&orphaning, &with_policy(Some("Background"))),
            Some(vec![])
        );
        // No policy keeps what the object asks for.
        assert_eq!(propagation_finalizers(&orphaning, &with_policy(None)), None);
    }

    #[test]
    fn orphan_dependents_maps_onto_the_policy() {
        let opts = DeleteOptions::from_body(&json!({"orphanDependents": true})).expect("valid");
        assert_eq!(opts.propagation_policy.as_deref(), Some("Orphan"));
        let both = json!({"orphanDependents": false, "propagationPolicy": "Orphan"});
        assert!(DeleteOptions::from_body(&both).is_err());
    }
}
