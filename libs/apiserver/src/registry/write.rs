//! Create and update: every write is a compare-and-swap on the object's revision.

use std::collections::HashSet;

use bytes::Bytes;
use kcp_api_types::{Requester, ResourceDef, StrategyContext};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::{ApiError, Cause};
use kcp_auth::UserInfo;
use kcp_store::{Revision, StoreError};
use serde_json::{Value, json};

use super::companions::{namespaces_created, resource_of};
use super::metadata::{self, meta_mut, meta_str};
use super::{ObjectRef, Registry, keyspace, required_labels, store_error};
use crate::admission::{Operation, Target};
use crate::watch_cache::decorate;

/// One object of a [`Registry::create_all`].
pub struct NewObject<'a> {
    pub def: &'a ResourceDef,
    pub cluster: &'a LogicalClusterName,
    /// For namespaced kinds.
    pub namespace: Option<&'a str>,
    pub object: Value,
}

/// One update of a [`Registry::write_batch`].
pub struct ObjectUpdate<'a> {
    pub def: &'a ResourceDef,
    pub at: ObjectRef<'a>,
    pub kind: UpdateKind,
    /// The object as the caller read it, at `revision`.
    pub old: &'a Value,
    pub revision: Revision,
    /// What the caller wants it to be (merged with `old` as `kind` allows).
    pub desired: Value,
}

/// One deletion of a [`Registry::write_batch`], as a DELETE without options makes it: an object
/// something holds (finalizers, its kind) is marked deleting ([`super::marked_deleting`]), any
/// other is removed.
pub struct ObjectDeletion<'a> {
    pub def: &'a ResourceDef,
    pub at: ObjectRef<'a>,
    /// The object as the caller read it, at `revision`.
    pub old: &'a Value,
    pub revision: Revision,
}

/// Writes that belong together: see [`Registry::write_batch`].
#[derive(Default)]
pub struct Batch<'a> {
    pub creates: Vec<NewObject<'a>>,
    pub updates: Vec<ObjectUpdate<'a>>,
    pub deletes: Vec<ObjectDeletion<'a>>,
    /// Objects that must exist for anything to be written (`NotFound` otherwise), left as they
    /// are: for writes that may only land after something written beside them.
    pub requires: Vec<(&'a ResourceDef, ObjectRef<'a>)>,
}

/// A batch ready to be written.
pub(super) struct Prepared<'b> {
    pub(super) writes: Vec<kcp_store::Write>,
    /// Per write, what it is about: for errors.
    about: Vec<(&'b ResourceDef, String)>,
    created: Vec<Value>,
    updated: Vec<Value>,
    deleted: Vec<Value>,
    /// Quota reservations, held until the write is acknowledged.
    pub(super) reservations: Vec<crate::admission::quota::Reservation>,
}

/// What a [`Registry::write_batch`] wrote, as served, in the batch's order.
pub struct BatchWritten {
    pub created: Vec<Written>,
    pub updated: Vec<Written>,
    /// Each deleted object as marked, or (removed) in its last state.
    pub deleted: Vec<Written>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions<'a> {
    /// `dryRun=All`: run every step but the store write.
    pub dry_run: bool,
    /// The requesting user, for admission; `None` for the shard's own writes, which are not admitted.
    pub user: Option<&'a kcp_auth::UserInfo>,
    /// A create keeps the object's status even for a kind with a status subresource. Only for the
    /// shard's own writes (`user` None), e.g. a LogicalCluster created already initialized.
    pub with_status: bool,
    /// Labels the write must leave the object with, and an updated object must already carry
    /// (a virtual workspace's view: [`super::required_labels`]).
    pub required_labels: &'a super::required_labels::RequiredLabels,
}

/// Which part of an object an update may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateKind {
    /// The object; its status is kept when the kind has a status subresource.
    Main,
    /// Only `status` (the `/status` subresource).
    Status,
    /// Only `spec.finalizers` (a Namespace's `/finalize` subresource).
    Finalize,
    /// A CertificateSigningRequest's `/approval`: its kind's strategy keeps all but the conditions
    /// (and metadata) as they were.
    Approval,
    /// The object and its status in one write. Never reached by a request: for the shard's own
    /// controllers, which would otherwise write a kind with a status subresource twice.
    Whole,
}

impl UpdateKind {
    /// The subresource the update writes through (`None` for the object itself).
    pub fn subresource(self) -> Option<&'static str> {
        match self {
            UpdateKind::Main | UpdateKind::Whole => None,
            UpdateKind::Status => Some("status"),
            UpdateKind::Finalize => Some("finalize"),
            UpdateKind::Approval => Some("approval"),
        }
    }
}

/// The result of a write: the object as served (with resourceVersion). Its JSON is encoded only
/// when asked for: most writes are the shard's own, whose callers never send the object anywhere.
pub struct Written {
    pub object: Value,
    /// The object's JSON, when the write had it at hand.
    encoded: Option<Bytes>,
}

impl Written {
    pub(crate) fn new(object: Value) -> Written {
        Written {
            object,
            encoded: None,
        }
    }

    pub(crate) fn with_json(object: Value, json: Bytes) -> Written {
        Written {
            object,
            encoded: Some(json),
        }
    }

    /// The object as JSON, for a response.
    pub fn json(&self) -> Result<Bytes, ApiError> {
        match &self.encoded {
            Some(json) => Ok(json.clone()),
            None => serde_json::to_vec(&self.object)
                .map(Bytes::from)
                .map_err(ApiError::internal),
        }
    }
}

const MAX_ATTEMPTS: usize = 16;
/// An update meeting newer objects tries again on each (Kubernetes' GuaranteedUpdate has no
/// bound): one of the racing writers wins every round, so as many rounds as racing writers are
/// needed. The bound only stops a livelock.
const UPDATE_ATTEMPTS: usize = 1024;

fn served(object: Value, revision: Option<Revision>) -> Result<Written, ApiError> {
    let mut object = object;
    if let (Some(rev), Some(m)) = (revision, meta_mut(&mut object)) {
        m.insert("resourceVersion".into(), json!(rev.to_string()));
    }
    Ok(Written::new(object))
}

/// The bytes the store keeps: the stored form, without resourceVersion (the revision is the version).
fn stored_bytes(def: &ResourceDef, obj: &Value) -> Result<Bytes, ApiError> {
    let mut out = Vec::with_capacity(512);
    let written = if def.shared_storage.is_some() {
        let stored = super::to_storage(def, obj.clone());
        serde_json::to_writer(&mut out, &WithoutResourceVersion(&stored))
    } else {
        // No conversion: serialized straight from the request's object, not from a copy.
        serde_json::to_writer(&mut out, &WithoutResourceVersion(obj))
    };
    written.map_err(ApiError::internal)?;
    Ok(Bytes::from(out))
}

/// An object serialized without `metadata.resourceVersion` (the store's revision is the version).
struct WithoutResourceVersion<'a>(&'a Value);

impl serde::Serialize for WithoutResourceVersion<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(fields) = self.0 else {
            return self.0.serialize(serializer);
        };
        let mut map = serializer.serialize_map(Some(fields.len()))?;
        for (k, v) in fields {
            match v {
                Value::Object(meta) if k == "metadata" => {
                    map.serialize_entry(k, &WithoutKey(meta, "resourceVersion"))?
                }
                _ => map.serialize_entry(k, v)?,
            }
        }
        map.end()
    }
}

/// A JSON object serialized without one of its keys.
struct WithoutKey<'a>(&'a serde_json::Map<String, Value>, &'static str);

impl serde::Serialize for WithoutKey<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (k, v) in self.0 {
            if k != self.1 {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

/// Fields the kind's schema requires, absent from `obj`: 422 causes, as Kubernetes' validation reports them.
fn required_fields(def: &ResourceDef, obj: &Value) -> Vec<Cause> {
    // A custom resource's strategy validates its whole schema, required fields included.
    if def.custom_schema.is_some() {
        return Vec::new();
    }
    match def.schema() {
        Some(schema) => kcp_schema::missing_required(&schema, obj)
            .iter()
            .map(|path| Cause::required(path, ""))
            .collect(),
        None => Vec::new(),
    }
}

fn invalid(def: &ResourceDef, name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid(&def.group, &def.kind, name, causes)
}

/// What kube-apiserver makes of every object it is about to write, before mutating admission and
/// again after it (a webhook's patch is decoded too): the kind's decoding, so no preparation
/// repeats it (server-side apply's result and the shard's own writes included), and duplicate
/// owner references dropped with a warning. A request's write is decoded so before its fields
/// are tracked too (see `apply::track_write`).
pub(crate) fn decoded(def: &ResourceDef, obj: &mut Value, after_mutation: bool) {
    def.strategy.decode(obj);
    let dropped = metadata::dedup_owner_references(obj);
    if !dropped.is_empty() {
        let when = if after_mutation {
            " after mutating admission happens"
        } else {
            ""
        };
        crate::admission::warnings::add(format!(
            ".metadata.ownerReferences contains duplicate entries{when}; API server dedups owner references in 1.20+, and may reject such requests as early as 1.24; please fix your requests; duplicate UID(s) observed: {}",
            dropped.join(", ")
        ));
    }
}

impl Registry {
    fn ctx<'a>(&'a self, cluster: &'a str, user: Option<&'a UserInfo>) -> StrategyContext<'a> {
        StrategyContext {
            cluster,
            external_url: &self.external_url,
            requester: user.map(|u| Requester {
                name: &u.name,
                uid: &u.uid,
                groups: &u.groups,
                extra: &u.extra,
            }),
        }
    }

    /// Creates an object in `cluster` (and `namespace` for namespaced kinds).
    pub async fn create(
        &self,
        def: &ResourceDef,
        cluster: &LogicalClusterName,
        namespace: Option<&str>,
        mut obj: Value,
        opts: WriteOptions<'_>,
    ) -> Result<Written, ApiError> {
        let name = meta_str(&obj, "name").to_string();
        required_labels::force(def, &name, opts.required_labels, &mut obj)?;
        let generate = self
            .admit_new(def, cluster, namespace, &mut obj, opts, true)
            .await?;
        let mut attempt = 0u64;
        // Held until the write is acknowledged, so the quota controller does not recount meanwhile.
        let mut quota_reservation = None;
        loop {
            if generate && let Some(m) = meta_mut(&mut obj) {
                let prefix = m
                    .get("generateName")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let seed = uuid::Uuid::new_v4().as_u64_pair().0 ^ attempt;
                m.insert(
                    "name".into(),
                    json!(kcp_apimachinery::names::generate_name(&prefix, seed)),
                );
            }
            if generate {
                def.strategy.canonicalize(&mut obj);
            }
            let name = meta_str(&obj, "name").to_string();
            self.admit_named(def, cluster, namespace, &obj, opts)
                .await?;
            if quota_reservation.is_none() {
                let admitted = crate::admission::quota::admit(
                    self,
                    def,
                    cluster,
                    namespace,
                    &name,
                    opts.dry_run,
                );
                quota_reservation = Some(admitted.await?);
            }
            let key = keyspace(def).object(cluster, namespace, &name);
            if opts.dry_run {
                // As a real create would find it (Kubernetes' dry-run storage asks the same).
                if self.cache.get(&key).is_some() {
                    let err = StoreError::AlreadyExists { key };
                    return Err(store_error(def, &name, err));
                }
                return served(obj, None);
            }
            let value = stored_bytes(def, &obj)?;
            let mut taken = HashSet::from([resource_of(def)]);
            let companions = self.companions_of(def, cluster, &obj, &mut taken);
            let created = match companions.is_empty() {
                true => self.store.create(&key, value).await,
                false => {
                    let beside = match def.is("", "namespaces") {
                        true => vec![(cluster.to_string(), name.clone())],
                        false => Vec::new(),
                    };
                    let companions = self.prepare_companions(&companions, &beside).await;
                    let write = kcp_store::Write::Create { key, value };
                    self.write_beside(companions, std::slice::from_ref(&write))
                        .await
                        .and_then(|revisions| {
                            revisions.first().copied().ok_or_else(|| {
                                StoreError::Backend("write_all answered no revision".into())
                            })
                        })
                }
            };
            match created {
                Ok(rev) => {
                    self.cache.note_write(rev);
                    return served(obj, Some(rev));
                }
                // A generated name may clash: try a fresh suffix a few times, as kube-apiserver does.
                Err(StoreError::AlreadyExists { .. }) if generate && attempt < 8 => attempt += 1,
                Err(err) => return Err(store_error(def, &name, err)),
            }
        }
    }

    /// Creates objects that belong together in one store write: [`Registry::write_batch`] of
    /// creations alone. Answers the objects as written, in order.
    pub async fn create_all(&self, objects: Vec<NewObject<'_>>) -> Result<Vec<Written>, ApiError> {
        let batch = Batch {
            creates: objects,
            ..Batch::default()
        };
        Ok(self.write_batch(batch).await?.created)
    }

    /// Makes writes that belong together in one store write ([`kcp_store::Store::write_all`]):
    /// all of them or none. For the shard's own writes (not admitted for a user, status kept as
    /// given). Each creation is prepared and validated as [`Registry::create`] does, by name (no
    /// `generateName`), and may live in a namespace created in the same batch; each update as
    /// [`Registry::update`] does, once, from the object as the caller read it (`Conflict` when it
    /// has changed since); an update that leaves a deleting object nothing to wait for removes it,
    /// as there. Each deletion as an [`ObjectDeletion`] says, from the object as read (`Conflict`
    /// likewise). The caller keeps to the store's rule: at most one written object of a resource
    /// (and [`kcp_store::MAX_WRITE_ALL`]) per batch.
    ///
    /// Creations bring their companions ([`Registry::add_companions`]) of resources the batch
    /// does not write.
    pub async fn write_batch(&self, batch: Batch<'_>) -> Result<BatchWritten, ApiError> {
        let mut taken: HashSet<_> = (batch.creates.iter().map(|o| resource_of(o.def)))
            .chain(batch.updates.iter().map(|u| resource_of(u.def)))
            .collect();
        let companions: Vec<_> = batch
            .creates
            .iter()
            .flat_map(|o| self.companions_of(o.def, o.cluster, &o.object, &mut taken))
            .collect();
        let beside = namespaces_created(&batch.creates);
        let Prepared {
            writes,
            about,
            created,
            updated,
            deleted,
            reservations,
        } = self.prepare_batch(batch, &[]).await?;
        let companions = self.prepare_companions(&companions, &beside).await;
        let written = self.write_beside(companions, &writes).await;
        drop(reservations);
        match written {
            Ok(revisions) => {
                let mut revisions = revisions.into_iter();
                let mut answer = |objects: Vec<Value>| -> Result<Vec<Written>, ApiError> {
                    objects
                        .into_iter()
                        .map(|obj| served(obj, revisions.next()))
                        .collect()
                };
                let created = answer(created)?;
                let updated = answer(updated)?;
                let deleted = answer(deleted)?;
                Ok(BatchWritten {
                    created,
                    updated,
                    deleted,
                })
            }
            Err(err) => {
                let refused = match &err {
                    StoreError::AlreadyExists { key }
                    | StoreError::NotFound { key }
                    | StoreError::Conflict { key, .. } => {
                        writes.iter().position(|w| w.key() == key)
                    }
                    _ => None,
                };
                match refused.and_then(|i| about.get(i)).or(about.first()) {
                    Some((def, name)) => Err(store_error(def, name, err)),
                    None => Err(ApiError::internal(err)),
                }
            }
        }
    }

    /// A batch's objects prepared, validated and admitted as [`Registry::write_batch`] says, and
    /// the store writes they make.
    /// Namespaces created `beside` (cluster, name) count as created in the batch.
    pub(super) async fn prepare_batch<'b>(
        &self,
        batch: Batch<'b>,
        beside: &[(String, String)],
    ) -> Result<Prepared<'b>, ApiError> {
        let Batch {
            creates,
            updates,
            deletes,
            requires,
        } = batch;
        let opts = WriteOptions {
            with_status: true,
            ..Default::default()
        };
        let created_namespaces: HashSet<(String, String)> = namespaces_created(&creates)
            .into_iter()
            .chain(beside.iter().cloned())
            .collect();
        let mut writes = Vec::with_capacity(creates.len() + updates.len() + requires.len());
        let mut about: Vec<(&ResourceDef, String)> = Vec::with_capacity(writes.capacity());
        let mut created = Vec::with_capacity(creates.len());
        let mut reservations = Vec::new();
        for NewObject {
            def,
            cluster,
            namespace,
            object: mut obj,
        } in creates
        {
            let check_namespace = namespace
                .is_none_or(|ns| !created_namespaces.contains(&(cluster.to_string(), ns.into())));
            let generate = self
                .admit_new(def, cluster, namespace, &mut obj, opts, check_namespace)
                .await?;
            if generate {
                return Err(ApiError::internal(format!(
                    "create_all of a {} named by generateName",
                    def.kind
                )));
            }
            let name = meta_str(&obj, "name").to_string();
            self.admit_named(def, cluster, namespace, &obj, opts)
                .await?;
            let quota = crate::admission::quota::admit(self, def, cluster, namespace, &name, false);
            reservations.push(quota.await?);
            let key = keyspace(def).object(cluster, namespace, &name);
            writes.push(kcp_store::Write::Create {
                key,
                value: stored_bytes(def, &obj)?,
            });
            about.push((def, name));
            created.push(obj);
        }
        let mut updated = Vec::with_capacity(updates.len());
        for ObjectUpdate {
            def,
            at,
            kind,
            old,
            revision,
            desired,
        } in updates
        {
            let new = self.updated(def, at, kind, opts, desired, old).await?;
            let key = keyspace(def).object(at.cluster, at.namespace, at.name);
            let remove = deletion_may_finish(def, &new);
            writes.push(update_or_removal(def, key, revision, &new, remove)?);
            about.push((def, at.name.to_string()));
            updated.push(new);
        }
        let mut deleted = Vec::with_capacity(deletes.len());
        for ObjectDeletion {
            def,
            at,
            old,
            revision,
        } in deletes
        {
            let key = keyspace(def).object(at.cluster, at.namespace, at.name);
            let held = held_back(def, old);
            let object = match held {
                true => super::marked_deleting(def, old.clone(), &Default::default()),
                false => old.clone(),
            };
            writes.push(update_or_removal(def, key, revision, &object, !held)?);
            about.push((def, at.name.to_string()));
            deleted.push(object);
        }
        for (def, at) in requires {
            writes.push(kcp_store::Write::Exists {
                key: keyspace(def).object(at.cluster, at.namespace, at.name),
            });
            about.push((def, at.name.to_string()));
        }
        Ok(Prepared {
            writes,
            about,
            created,
            updated,
            deleted,
            reservations,
        })
    }

    /// [`kcp_store::Store::write_all`], the write then noted as the shard's (consistent reads
    /// wait for it).
    pub(crate) async fn write_all(
        &self,
        writes: &[kcp_store::Write],
    ) -> Result<Vec<Revision>, StoreError> {
        let revisions = self.store.write_all(writes).await?;
        // The newest: a key that only had to exist answers its own, older revision.
        if let Some(newest) = revisions.iter().max() {
            self.cache.note_write(*newest);
        }
        Ok(revisions)
    }

    /// What [`Registry::create`] does to a new object before it has its final name: type and
    /// namespace checks (the namespace must exist and not be terminating, when `check_namespace`),
    /// mutating admission, system fields and the kind's preparation. Answers whether the name
    /// is still to be generated.
    async fn admit_new(
        &self,
        def: &ResourceDef,
        cluster: &LogicalClusterName,
        namespace: Option<&str>,
        obj: &mut Value,
        opts: WriteOptions<'_>,
        check_namespace: bool,
    ) -> Result<bool, ApiError> {
        decoded(def, obj, false);
        metadata::check_type(def, obj)?;
        metadata::check_namespace(def, obj, namespace)?;
        if let (true, true, Some(ns)) = (check_namespace, def.namespaced, namespace) {
            self.check_namespace(def, cluster, ns, meta_str(obj, "name"))
                .await?;
        }
        let requested_name = meta_str(obj, "name").to_string();
        let at = Target {
            cluster,
            namespace,
            name: &requested_name,
            subresource: None,
        };
        let mutated = self
            .admit_mutate(
                def,
                at,
                Operation::Create,
                opts.user,
                opts.dry_run,
                Some(obj),
                None,
            )
            .await?;
        if mutated {
            decoded(def, obj, true);
        }
        let generate =
            meta_str(obj, "name").is_empty() && !meta_str(obj, "generateName").is_empty();
        if generate {
            let prefix = meta_str(obj, "generateName").to_string();
            let errors = metadata::name_errors(&def.name_rule, &prefix, true);
            if !errors.is_empty() {
                let causes = errors
                    .iter()
                    .map(|m| Cause::invalid("metadata.generateName", &json!(prefix), m))
                    .collect();
                return Err(invalid(def, &prefix, causes));
            }
        }
        metadata::prepare_create(def, obj, cluster);
        if def.status_subresource
            && !(opts.with_status && opts.user.is_none())
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        def.strategy
            .prepare_for_create(&self.ctx(cluster, opts.user), obj);
        if !generate {
            def.strategy.canonicalize(obj);
        }
        def.strategy.follow_status(obj);
        // Admission may have taken a required label away (a claim label it recomputes).
        required_labels::check_kept(def, meta_str(obj, "name"), opts.required_labels, obj)?;
        Ok(generate)
    }

    /// What [`Registry::create`] checks of a new object with its final name: validation and
    /// validating admission.
    async fn admit_named(
        &self,
        def: &ResourceDef,
        cluster: &str,
        namespace: Option<&str>,
        obj: &Value,
        opts: WriteOptions<'_>,
    ) -> Result<(), ApiError> {
        let name = meta_str(obj, "name");
        let wrong_kind = metadata::custom_kind_causes(def, obj);
        if !wrong_kind.is_empty() {
            return Err(invalid(def, name, wrong_kind));
        }
        let mut causes = metadata::validate_metadata(def, obj);
        causes.extend(def.strategy.validate(obj));
        causes.extend(required_fields(def, obj));
        if !causes.is_empty() {
            return Err(invalid(def, name, causes));
        }
        for warning in def.strategy.warnings_on_create(obj) {
            crate::admission::warnings::add(warning);
        }
        let at = Target {
            cluster,
            namespace,
            name,
            subresource: None,
        };
        self.admit_validate(
            def,
            at,
            Operation::Create,
            opts.user,
            opts.dry_run,
            Some(obj),
            None,
        )
        .await
    }

    /// [`Registry::update`] for controllers: an object already gone needs no update.
    pub async fn update_if_present<F>(
        &self,
        def: &ResourceDef,
        at: ObjectRef<'_>,
        kind: UpdateKind,
        opts: WriteOptions<'_>,
        mutate: F,
    ) -> Result<(), ApiError>
    where
        F: FnMut(&Value) -> Result<Value, ApiError>,
    {
        match self.update(def, at, kind, opts, mutate).await {
            Err(e) if !e.is_not_found() => Err(e),
            _ => Ok(()),
        }
    }

    /// Updates an object: `mutate` turns the current object into the desired one (a PUT body, or the
    /// current object with a patch applied). Retried on revision conflicts unless the desired object
    /// names a resourceVersion of its own.
    pub async fn update<F>(
        &self,
        def: &ResourceDef,
        at: ObjectRef<'_>,
        kind: UpdateKind,
        opts: WriteOptions<'_>,
        mut mutate: F,
    ) -> Result<Written, ApiError>
    where
        F: FnMut(&Value) -> Result<Value, ApiError>,
    {
        let key = keyspace(def).object(at.cluster, at.namespace, at.name);
        let cached = self.get(def, at).await?;
        let mut current: (Value, Revision) =
            (cached.value().map_err(ApiError::internal)?, cached.revision);
        for _ in 0..UPDATE_ATTEMPTS {
            let (old, old_rev) = &current;
            if !required_labels::carried_by(opts.required_labels, old) {
                return Err(required_labels::not_found(def, at.name));
            }
            let mut desired = mutate(old)?;
            required_labels::force(def, at.name, opts.required_labels, &mut desired)?;
            let precondition = meta_str(&desired, "resourceVersion").to_string();
            if !precondition.is_empty() {
                match precondition.parse::<Revision>() {
                    Ok(rv) if rv == *old_rev => {}
                    Ok(_) => return Err(ApiError::stale_object(&def.group, &def.plural, at.name)),
                    Err(_) => {
                        return Err(invalid(
                            def,
                            at.name,
                            vec![Cause::invalid(
                                "metadata.resourceVersion",
                                &json!(precondition),
                                "must be a valid resource version",
                            )],
                        ));
                    }
                }
            }
            let new = self.updated(def, at, kind, opts, desired, old).await?;
            if metadata::same_content(&new, old) {
                // Nothing changed: no write, the stored revision stays. A deletion left waiting
                // with no finalizers (marked after its last finalizer went) completes now, as
                // any update completes it in Kubernetes.
                if !opts.dry_run && deletion_may_finish(def, &new) {
                    self.finish_deletion(def, &key, *old_rev, at.name).await?;
                }
                return served(new, Some(*old_rev));
            }
            if opts.dry_run {
                return served(new, Some(*old_rev));
            }
            // An update that leaves a deleting object nothing to wait for (its last finalizer
            // removed) deletes it instead, in one write, as Kubernetes does: watchers see it
            // DELETED in its last stored state.
            let written = if deletion_may_finish(def, &new) {
                self.store.delete_version(&key, *old_rev).await
            } else {
                let bytes = stored_bytes(def, &new)?;
                self.store.update(&key, bytes, *old_rev).await
            };
            match written {
                Ok(rev) => {
                    self.cache.note_write(rev);
                    return served(new, Some(rev));
                }
                // Written meanwhile: `mutate` runs again on what is stored now, as Kubernetes'
                // GuaranteedUpdate does. A caller's own resourceVersion then no longer matches
                // (409 above); a patch or apply without one is applied to the fresh object.
                Err(StoreError::Conflict {
                    current: Some(kv), ..
                }) => {
                    let value = super::to_api(
                        def,
                        serde_json::from_slice(&kv.value).map_err(ApiError::internal)?,
                    );
                    let Some((value, _)) = decorate_value(value, kv.mod_revision) else {
                        return Err(ApiError::internal("unreadable stored object"));
                    };
                    current = (value, kv.mod_revision);
                }
                Err(StoreError::Conflict { current: None, .. } | StoreError::NotFound { .. }) => {
                    return Err(ApiError::not_found(&def.group, &def.plural, at.name));
                }
                Err(err) => return Err(store_error(def, at.name, err)),
            }
        }
        Err(super::retries_exhausted(def, at.name))
    }

    /// What an update makes of `old`, from the `desired` object: merged as `kind` allows,
    /// admitted, prepared and validated, not yet written.
    async fn updated(
        &self,
        def: &ResourceDef,
        at: ObjectRef<'_>,
        kind: UpdateKind,
        opts: WriteOptions<'_>,
        desired: Value,
        old: &Value,
    ) -> Result<Value, ApiError> {
        let mut new = self.merge_for(def, kind, desired, old, at)?;
        decoded(def, &mut new, false);
        let target = Target {
            cluster: at.cluster,
            namespace: at.namespace,
            name: at.name,
            subresource: kind.subresource(),
        };
        let mutated = self
            .admit_mutate(
                def,
                target,
                Operation::Update,
                opts.user,
                opts.dry_run,
                Some(&mut new),
                Some(old),
            )
            .await?;
        // Webhooks may change only what the request may (status, or all but status).
        if mutated {
            new = self.merge_for(def, kind, new, old, at)?;
            decoded(def, &mut new, true);
        }
        let mut causes = metadata::prepare_update(def, &mut new, old, at.cluster);
        match kind.subresource() {
            None => {
                def.strategy
                    .prepare_for_update(&self.ctx(at.cluster, opts.user), &mut new, old);
                def.strategy.canonicalize(&mut new);
            }
            Some(subresource) => {
                def.strategy
                    .prepare_for_subresource_update(subresource, &mut new, old)
            }
        }
        def.strategy.follow_status(&mut new);
        required_labels::check_kept(def, at.name, opts.required_labels, &new)?;
        let wrong_kind = metadata::custom_kind_causes(def, &new);
        if !wrong_kind.is_empty() {
            return Err(invalid(def, at.name, wrong_kind));
        }
        causes.extend(metadata::validate_metadata(def, &new));
        causes.extend(match kind.subresource() {
            None => def.strategy.validate_update(&new, old),
            Some(subresource) => def
                .strategy
                .validate_subresource_update(subresource, &new, old),
        });
        causes.extend(required_fields(def, &new));
        if kind == UpdateKind::Finalize {
            causes.extend(metadata::namespace_finalizer_causes(&new));
        }
        if metadata::is_deleting(old) {
            let before = metadata::finalizers(old);
            if metadata::finalizers(&new)
                .iter()
                .any(|f| !before.contains(f))
            {
                causes.push(Cause::forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted",
                ));
            }
        }
        if !causes.is_empty() {
            return Err(invalid(def, at.name, causes));
        }
        if kind.subresource().is_none() {
            for warning in def.strategy.warnings_on_update(&new, old) {
                crate::admission::warnings::add(warning);
            }
        }
        self.admit_validate(
            def,
            target,
            Operation::Update,
            opts.user,
            opts.dry_run,
            Some(&new),
            Some(old),
        )
        .await?;
        Ok(new)
    }

    /// Removes an object whose deletion no longer waits for anything. A concurrent write may
    /// have changed it meanwhile: then it is removed at that revision if it still may be.
    async fn finish_deletion(
        &self,
        def: &ResourceDef,
        key: &str,
        mut revision: Revision,
        name: &str,
    ) -> Result<(), ApiError> {
        for _ in 0..MAX_ATTEMPTS {
            match self.store.delete_version(key, revision).await {
                Ok(deleted_at) => {
                    self.cache.note_write(deleted_at);
                    return Ok(());
                }
                Err(StoreError::NotFound { .. } | StoreError::Conflict { current: None, .. }) => {
                    return Ok(());
                }
                Err(StoreError::Conflict {
                    current: Some(kv), ..
                }) => {
                    let still = serde_json::from_slice::<Value>(&kv.value)
                        .is_ok_and(|v| deletion_may_finish(def, &v));
                    if !still {
                        return Ok(());
                    }
                    revision = kv.mod_revision;
                }
                Err(err) => return Err(store_error(def, name, err)),
            }
        }
        Err(super::retries_exhausted(def, name))
    }

    /// Combines the desired object with the stored one according to what this update may change.
    fn merge_for(
        &self,
        def: &ResourceDef,
        kind: UpdateKind,
        mut desired: Value,
        old: &Value,
        at: ObjectRef<'_>,
    ) -> Result<Value, ApiError> {
        metadata::check_type(def, &mut desired)?;
        metadata::check_namespace(def, &mut desired, at.namespace)?;
        metadata::check_url_name(&mut desired, at.name)?;
        Ok(match kind {
            UpdateKind::Main => {
                if def.status_subresource
                    && let Some(m) = desired.as_object_mut()
                {
                    match old.get("status") {
                        Some(s) => m.insert("status".into(), s.clone()),
                        None => m.remove("status"),
                    };
                }
                desired
            }
            UpdateKind::Whole | UpdateKind::Approval => desired,
            UpdateKind::Status => {
                let mut new = old.clone();
                if let Some(m) = new.as_object_mut() {
                    match desired.get("status") {
                        Some(s) => m.insert("status".into(), s.clone()),
                        None => m.remove("status"),
                    };
                }
                // The write's own field tracking is kept (its managers' status entries), as
                // Kubernetes' status strategies keep managedFields.
                if let (Some(fields), Some(m)) = (
                    desired.pointer("/metadata/managedFields"),
                    meta_mut(&mut new),
                ) {
                    m.insert("managedFields".into(), fields.clone());
                }
                new
            }
            UpdateKind::Finalize => {
                let mut new = old.clone();
                let finalizers = desired
                    .pointer("/spec/finalizers")
                    .cloned()
                    .unwrap_or_else(|| json!([]));
                if let Some(m) = new.as_object_mut() {
                    let spec = m.entry("spec").or_insert_with(|| json!({}));
                    if let Some(spec) = spec.as_object_mut() {
                        spec.insert("finalizers".into(), finalizers);
                    }
                }
                new
            }
        })
    }
}

fn decorate_value(value: Value, revision: Revision) -> Option<(Value, Bytes)> {
    let bytes = serde_json::to_vec(&value).ok()?;
    decorate(&bytes, revision)
}

/// Whether something holds back an object's deletion: finalizers, or its kind's own rule.
fn held_back(def: &ResourceDef, obj: &Value) -> bool {
    !metadata::finalizers(obj).is_empty() || def.strategy.blocks_deletion(obj)
}

/// Whether an object's deletion was requested and nothing holds it back any more.
fn deletion_may_finish(def: &ResourceDef, obj: &Value) -> bool {
    metadata::is_deleting(obj) && !held_back(def, obj)
}

/// The batch's write of `obj` at `key`, read at `expected`: stored as it is, or removed.
fn update_or_removal(
    def: &ResourceDef,
    key: String,
    expected: Revision,
    obj: &Value,
    remove: bool,
) -> Result<kcp_store::Write, ApiError> {
    Ok(match remove {
        true => kcp_store::Write::Delete { key, expected },
        false => kcp_store::Write::Update {
            key,
            value: stored_bytes(def, obj)?,
            expected,
        },
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod stored_form_tests {
    use super::*;

    #[test]
    fn stored_form_is_the_object_without_its_resource_version() {
        for obj in [
            json!({"apiVersion": "v1", "metadata": {"name": "a", "resourceVersion": "7", "uid": "u"}, "data": {"k": "v"}}),
            json!({"metadata": {"resourceVersion": "7"}}),
            json!({"kind": "K"}),
        ] {
            let mut expected = obj.clone();
            if let Some(m) = expected.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("resourceVersion");
            }
            let mut out = Vec::new();
            serde_json::to_writer(&mut out, &WithoutResourceVersion(&obj)).unwrap();
            assert_eq!(out, serde_json::to_vec(&expected).unwrap());
        }
    }
}
