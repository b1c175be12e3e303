//! Companions: objects the shard creates in the same store write as a create, before it, so that
//! what a controller would add a moment later (a new namespace's `default` ServiceAccount, a new
//! Workspace's `kube-system` namespace) costs no write of its own. Optional by nature: a companion
//! that cannot be prepared, whose name is taken, or that makes the write too large is left out,
//! and the controller that owns it creates it later as before.

use std::collections::HashSet;
use std::sync::Arc;

use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_store::{MAX_WRITE_ALL, Revision, StoreError, Write};
use serde_json::Value;

use super::Registry;
use super::metadata::meta_str;
use super::write::{Batch, NewObject, Prepared};

/// An object the shard creates beside a create: see [`Registry::add_companions`].
pub struct Companion {
    pub def: Arc<ResourceDef>,
    pub cluster: LogicalClusterName,
    /// For namespaced kinds.
    pub namespace: Option<String>,
    pub object: Value,
}

/// What a created object brings along: (its kind, its LC, the object as admitted) → companions.
pub type CompanionSource =
    dyn Fn(&ResourceDef, &LogicalClusterName, &Value) -> Vec<Companion> + Send + Sync;

/// The installed sources, cloned out of their lock as one `Arc` on every create.
pub(super) type Sources = Arc<Vec<Arc<CompanionSource>>>;

/// How deep companions of companions go: a Workspace brings a namespace, which brings its
/// ServiceAccount and root-CA ConfigMap.
const DEPTH: usize = 3;

/// A resource as its watchers see it: objects sharing storage are one resource.
pub(super) fn resource_of(def: &ResourceDef) -> (String, String) {
    let (group, plural) = def.storage_resource();
    (group.to_string(), plural.to_string())
}

/// Namespaces created by `objects`, as (cluster, name).
pub(super) fn namespaces_created(objects: &[NewObject<'_>]) -> Vec<(String, String)> {
    objects
        .iter()
        .filter(|o| o.def.is("", "namespaces"))
        .map(|o| {
            (
                o.cluster.to_string(),
                meta_str(&o.object, "name").to_string(),
            )
        })
        .collect()
}

impl Registry {
    /// Adds a source of what creates bring along (see [`Companion`]); none until one is added.
    /// Companions are prepared and validated as the shard's own creates and written before the
    /// object, companions of companions first.
    pub fn add_companions(&self, source: Arc<CompanionSource>) {
        let mut sources = self.companions.write();
        let mut all = sources.as_ref().clone();
        all.push(source);
        *sources = Arc::new(all);
    }

    /// What creating `obj` brings along, in writing order. A write holds at most one object of
    /// a resource (its watchers resume after a revision, which etcd gives the whole write), so
    /// companions of a resource in `taken` are left out, and the ones kept are added to it.
    pub(super) fn companions_of(
        &self,
        def: &ResourceDef,
        cluster: &LogicalClusterName,
        obj: &Value,
        taken: &mut HashSet<(String, String)>,
    ) -> Vec<Companion> {
        let sources = self.companions.read().clone();
        let mut out = Vec::new();
        if !sources.is_empty() {
            collect(&sources, def, cluster, obj, taken, DEPTH, &mut out);
        }
        out
    }

    /// Companions prepared for writing beside objects that create the namespaces `beside`;
    /// `None` (and left out) when one of them cannot be.
    pub(super) async fn prepare_companions<'c>(
        &self,
        companions: &'c [Companion],
        beside: &[(String, String)],
    ) -> Option<Prepared<'c>> {
        if companions.is_empty() {
            return None;
        }
        let creates = companions
            .iter()
            .map(|c| NewObject {
                def: &c.def,
                cluster: &c.cluster,
                namespace: c.namespace.as_deref(),
                object: c.object.clone(),
            })
            .collect();
        let batch = Batch {
            creates,
            ..Batch::default()
        };
        match self.prepare_batch(batch, beside).await {
            Ok(prepared) => Some(prepared),
            Err(e) => {
                tracing::debug!(error = %e, "companions left out");
                None
            }
        }
    }

    /// `writes` in one store write after the companions' writes; without them when they are in
    /// the way (a name taken, too large or too many together). Answers the revisions of `writes`.
    pub(super) async fn write_beside(
        &self,
        companions: Option<Prepared<'_>>,
        writes: &[Write],
    ) -> Result<Vec<Revision>, StoreError> {
        let Some(companions) =
            companions.filter(|c| c.writes.len() + writes.len() <= MAX_WRITE_ALL)
        else {
            return self.write_all(writes).await;
        };
        // The companions' quota reservations are held until the write is acknowledged.
        let Prepared {
            writes: mut all,
            reservations: _held,
            ..
        } = companions;
        let first = all.len();
        all.extend_from_slice(writes);
        match self.write_all(&all).await {
            Ok(mut revisions) => Ok(revisions.split_off(first.min(revisions.len()))),
            Err(StoreError::AlreadyExists { key })
                if all[..first].iter().any(|w| w.key() == key) =>
            {
                tracing::debug!(key, "a companion's name is taken; left out");
                self.write_all(writes).await
            }
            Err(StoreError::TooLarge { .. }) => self.write_all(writes).await,
            Err(err) => Err(err),
        }
    }
}

fn collect(
    sources: &Sources,
    def: &ResourceDef,
    cluster: &LogicalClusterName,
    obj: &Value,
    taken: &mut HashSet<(String, String)>,
    depth: usize,
    out: &mut Vec<Companion>,
) {
    if depth == 0 {
        return;
    }
    for source in sources.iter() {
        for companion in source(def, cluster, obj) {
            if !taken.insert(resource_of(&companion.def)) {
                continue;
            }
            collect(
                sources,
                &companion.def,
                &companion.cluster,
                &companion.object,
                taken,
                depth - 1,
                out,
            );
            out.push(companion);
        }
    }
}
