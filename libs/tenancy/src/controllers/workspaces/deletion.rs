//! A deleted workspace's writes, each joined with the one that would otherwise follow it: its LC
//! marked deleting together with the Workspace's status showing so, and the LC and the Workspace
//! removed together with the last of the LC's content. Deleting a tree is bound by the CPU of
//! the store and the shard (etcd's above all): an empty workspace took seven store writes, and
//! these make it four.
//!
//! Each joined write is a compare-and-swap on every object in it as the cache has it. When it is
//! refused (one of them changed, or the cache was behind), the steps go one at a time, as they
//! would without it.

use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::registry::{
    Batch, BatchWritten, DeleteOptions, ObjectDeletion, ObjectRef, Release, keyspace,
    marked_deleting,
};
use kcp_store::Revision;
use serde_json::Value;

use super::state::{LcState, WorkspaceState};
use super::{Controller, WORKSPACE_FINALIZER, desired_workspace, lc_at};

/// Whether a joined write landed; a refused one (409, 404) is `false`.
fn landed(written: Result<BatchWritten, ApiError>) -> Result<bool, ApiError> {
    match written {
        Ok(_) => Ok(true),
        Err(e) if e.is_conflict_or_exists() || e.is_not_found() => Ok(false),
        Err(e) => Err(e),
    }
}

/// Where [`Controller::delete_content_and_release`] left a deleting LC.
pub(super) enum Content {
    /// Gone, with its content (and its owner, if it had one that goes with it).
    Released,
    /// Emptied, still there: it may go (alone).
    Empty,
    /// Objects wait for something (finalizers of their own, child workspaces going): what, in
    /// kcp's words.
    Left(String),
}

impl Controller {
    /// Marks LogicalCluster `lc` deleting and writes the status this gives the deleting workspace
    /// `ws` (at `at`, read at `revision`), in one write. `false` when refused or `lc` is not in
    /// the cache.
    pub(super) async fn mark_lc_with_workspace(
        &self,
        server: &ApiServer,
        at: ObjectRef<'_>,
        ws: &Value,
        revision: Revision,
        lc: &LogicalClusterName,
    ) -> Result<bool, ApiError> {
        let registry = server.registry();
        let Some(cached) = registry.cache().get(&self.lc_key(lc)) else {
            return Ok(false);
        };
        let old = cached.value().map_err(ApiError::internal)?;
        let def = &self.defs.logical_clusters;
        let marked = marked_deleting(def, old.clone(), &DeleteOptions::default());
        let status = LcState::of(&marked).mirrored_status();
        let updates = desired_workspace(ws, None, &status)
            .map(|desired| self.workspace_update(at, ws, revision, desired))
            .into_iter()
            .collect();
        let batch = Batch {
            updates,
            deletes: vec![ObjectDeletion {
                def,
                at: lc_at(lc),
                old: &old,
                revision: cached.revision,
            }],
            ..Batch::default()
        };
        landed(registry.write_batch(batch).await)
    }

    /// The owning Workspace of deleting LC `lc` when it goes with it: a deleting Workspace of
    /// this shard (its parent LC is here) holding the workspace finalizer. (Its LC, its name.)
    pub(super) fn going_owner(
        &self,
        server: &ApiServer,
        lc: &LcState,
    ) -> Option<(LogicalClusterName, String)> {
        let (parent, name) = lc.owner()?;
        let key = keyspace(&self.defs.workspaces).object(&parent, None, &name);
        let ws: WorkspaceState = server.registry().cache().get(&key)?.json.parse().ok()?;
        let goes = ws.is_deleting()
            && !lc.owner_uid().is_empty()
            && ws.uid() == lc.owner_uid()
            && ws.has_finalizer(WORKSPACE_FINALIZER);
        goes.then_some((parent, name))
    }

    /// Deletes what deleting LC `lc` holds, then the LC (released from `finalizer`, the content
    /// finalizer it has) and its `owner` (see [`Controller::going_owner`]) together: in the write
    /// of the last of the content when nothing holds any of it, else in one of their own once it
    /// is gone.
    pub(super) async fn delete_content_and_release(
        &self,
        server: &ApiServer,
        lc: &LogicalClusterName,
        finalizer: &str,
        owner: Option<&(LogicalClusterName, String)>,
    ) -> Result<Content, ApiError> {
        let mut releases = vec![Release {
            def: &self.defs.logical_clusters,
            at: lc_at(lc),
            finalizer,
        }];
        if let Some((parent, name)) = owner {
            releases.push(Release {
                def: &self.defs.workspaces,
                at: ObjectRef {
                    cluster: parent,
                    namespace: None,
                    name,
                },
                finalizer: WORKSPACE_FINALIZER,
            });
        }
        let content = server
            .delete_cluster_content_releasing(lc, &releases)
            .await?;
        if content.released {
            return Ok(Content::Released);
        }
        if content.left > 0 {
            return Ok(Content::Left(content.remaining));
        }
        match owner.is_some() && server.registry().release_all(&releases).await? {
            true => Ok(Content::Released),
            false => Ok(Content::Empty),
        }
    }
}
