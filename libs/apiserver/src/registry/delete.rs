//! Delete: preconditions, finalizers (deletion waits, marked by `deletionTimestamp`), and the
//! compare-and-swap removal.

use kcp_api_types::ResourceDef;
use kcp_apimachinery::status::ApiError;
use kcp_store::StoreError;
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
    /// `Orphan`, `Background` or `Foreground`; accepted (garbage collection arrives later).
    pub propagation_policy: Option<String>,
    /// The requesting user, for admission; `None` for the shard's own deletes, which are not admitted.
    pub user: Option<kcp_auth::UserInfo>,
}

impl DeleteOptions {
    /// `Orphan`, `Background` or `Foreground`; anything else is 400.
    pub fn set_propagation_policy(&mut self, policy: &str) -> Result<(), ApiError> {
        if !matches!(policy, "Orphan" | "Background" | "Foreground") {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: {policy:?}: supported values: \"Foreground\", \"Background\", \"Orphan\""
            )));
        }
        self.propagation_policy = Some(policy.to_string());
        Ok(())
    }

    /// Reads a `DeleteOptions` JSON body (kubectl sends one with `propagationPolicy`).
    pub fn from_body(body: &Value) -> Result<DeleteOptions, ApiError> {
        let mut opts = DeleteOptions::default();
        if let Some(policy) = body.get("propagationPolicy").and_then(Value::as_str) {
            opts.set_propagation_policy(policy)?;
        }
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

impl Registry {
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
            let pending =
                !metadata::finalizers(&obj).is_empty() || def.strategy.blocks_deletion(&obj);
            if pending {
                if metadata::is_deleting(&obj) {
                    let json = current.json.clone();
                    return Ok(DeleteOutcome::Pending(Written { object: obj, json }));
                }
                let written = self.mark_deleting(def, at, opts).await?;
                return Ok(DeleteOutcome::Pending(written));
            }
            if opts.dry_run {
                return Ok(DeleteOutcome::Deleted(obj));
            }
            match self.store.delete(&key, Some(current.revision)).await {
                Ok((rev, _)) => {
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

    /// Sets `deletionTimestamp` (graceful deletion has no grace period for these kinds).
    async fn mark_deleting(
        &self,
        def: &ResourceDef,
        at: ObjectRef<'_>,
        opts: &DeleteOptions,
    ) -> Result<Written, ApiError> {
        let now = metadata::now_rfc3339();
        let key = keyspace(def).object(at.cluster, at.namespace, at.name);
        let strategy = def.strategy.clone();
        // Deletion fields are system-owned, so they go around the update path that protects them.
        for _ in 0..MAX_ATTEMPTS {
            let current = self.get(def, at).await?;
            let mut obj = current.value().map_err(ApiError::internal)?;
            if let Some(m) = meta_mut(&mut obj) {
                m.insert("deletionTimestamp".into(), json!(now));
                m.insert("deletionGracePeriodSeconds".into(), json!(0));
                m.remove("resourceVersion");
            }
            strategy.prepare_for_delete(&mut obj);
            if opts.dry_run {
                let json = serde_json::to_vec(&obj).map_err(ApiError::internal)?;
                return Ok(Written {
                    object: obj,
                    json: json.into(),
                });
            }
            let bytes = serde_json::to_vec(&super::to_storage(def, obj.clone()))
                .map_err(ApiError::internal)?;
            match self
                .store
                .update(&key, bytes.into(), current.revision)
                .await
            {
                Ok(rev) => {
                    self.cache.note_write(rev);
                    if let Some(m) = meta_mut(&mut obj) {
                        m.insert("resourceVersion".into(), json!(rev.to_string()));
                    }
                    let json = serde_json::to_vec(&obj).map_err(ApiError::internal)?;
                    return Ok(Written {
                        object: obj,
                        json: json.into(),
                    });
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(err) => return Err(store_error(def, at.name, err)),
            }
        }
        Err(super::retries_exhausted(def, at.name))
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
