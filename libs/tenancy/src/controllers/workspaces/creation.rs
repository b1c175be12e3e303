//! A scheduled workspace's first writes: its LogicalCluster, the `workspace-admin` binding, the
//! `root:universal` initializer's namespaces and the workspace's placement.
//!
//! Usually one store write ([`Controller::create_placed`]): the LC, the binding, namespace
//! `default` and the placed workspace, which requires namespace `kube-system`. That one came
//! with the Workspace's own POST ([`Controller::companions`]): a write holds at most one object of
//! a resource (see `Store::write_all`), and a second write beside this one landed after it in a
//! quarter of creations on etcd (which starts concurrent requests in no fixed order). On etcd that makes two round
//! trips from the POST to Ready where there were three. When something is in the way (an
//! earlier attempt's content, a changed workspace), the long way ([`Controller::create_lc`], then
//! the placement) creates each object only when missing.
//!
//! The namespaces' `default` ServiceAccount and `kube-root-ca.crt` are left to their controllers.
//! Written here too (4 transactions fewer on etcd), they cost the embedded store 5-12 % of its
//! workspace rate and gained etcd nothing beyond the noise of same-phase runs: etcd's cost follows
//! the keys written more than the transactions.

use crate::workspace_types::{
    REQUIRED_GROUPS_ANNOTATION, ResolvedType, SHARD_ANNOTATION, TypeRef, Types,
    new_logical_cluster, workspace_admin_binding,
};
use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::{ApiError, Reason};
use kcp_apiserver::ApiServer;
use kcp_apiserver::registry::{Batch, Companion, NewObject, ObjectRef, WriteOptions, keyspace};
use kcp_store::Revision;
use serde_json::{Value, json};

use super::{
    CLUSTER_ANNOTATION, CONTENT_FINALIZER, Controller, UNIVERSAL_INITIALIZER, UNIVERSAL_NAMESPACES,
    annotation, initialized_by_universal, string_list, text,
};

/// A create refused because the object is there already.
fn exists(e: &ApiError) -> bool {
    e.reason == Reason::AlreadyExists
}

/// The workspace a [`Controller::create_placed`] places, as read at `revision`, and its creator.
pub(super) struct Placed<'a> {
    pub at: ObjectRef<'a>,
    pub ws: &'a Value,
    pub revision: Revision,
    /// The workspace placed, with the status of its new LC.
    pub desired: Value,
    pub username: &'a str,
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

impl Controller {
    /// The LogicalCluster of workspace `name` in `cluster`, born past the universal initializer,
    /// whose work [`Controller::create_lc`] does beside it.
    #[allow(clippy::too_many_arguments)] // one call site; each is a distinct input
    pub(super) fn logical_cluster(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
        ws: &Value,
        created_by: &Value,
        reference: &TypeRef,
        chain: &[ResolvedType],
    ) -> Value {
        let parent_path = Types {
            cache: server.registry().cache(),
            paths: &self.paths,
        }
        .path_of(cluster);
        let mut lc = new_logical_cluster(
            &format!("{parent_path}:{name}"),
            reference,
            chain,
            created_by,
        );
        lc["metadata"]["finalizers"] = json!([CONTENT_FINALIZER]);
        lc["metadata"]["annotations"][SHARD_ANNOTATION] = json!(server.shard_name());
        // The groups admission gave the workspace (its parent's) guard its LC too.
        if let Some(groups) = annotation(ws, REQUIRED_GROUPS_ANNOTATION) {
            lc["metadata"]["annotations"][REQUIRED_GROUPS_ANNOTATION] = json!(groups);
        }
        lc["spec"]["owner"] = json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "resource": "workspaces",
            "name": name,
            "cluster": cluster,
            "uid": text(ws, "/metadata/uid"),
        });
        let remaining: Vec<String> = string_list(&lc, "/spec/initializers")
            .into_iter()
            .filter(|i| i != UNIVERSAL_INITIALIZER)
            .collect();
        let phase = if remaining.is_empty() {
            "Ready"
        } else {
            "Initializing"
        };
        lc["status"] = json!({"phase": phase, "initializers": remaining});
        // kcp's LC takes its terminators into its status as it starts (its Workspace shows them).
        let terminators = string_list(&lc, "/spec/terminators");
        if !terminators.is_empty() {
            lc["status"]["terminators"] = json!(terminators);
        }
        lc
    }

    /// What a new Workspace brings along in its own store write (see
    /// `Registry::add_companions`): namespace `kube-system` of the LC admission named, when the
    /// workspace will be scheduled here with the universal initializer and that LC is not taken.
    /// [`Controller::create_placed`] then finds it there already, and its one write completes the
    /// workspace. A workspace deleted before it is scheduled takes the namespace along
    /// (its LC's content is deleted even without the LC).
    pub(super) fn companions(&self, def: &ResourceDef, ws: &Value) -> Vec<Companion> {
        if !def.is("tenancy.kcp.io", "workspaces") {
            return Vec::new();
        }
        let lc_name =
            annotation(ws, CLUSTER_ANNOTATION).and_then(|c| LogicalClusterName::parse(c).ok());
        let (Some(server), Some(lc_name)) = (self.server.upgrade(), lc_name.as_ref()) else {
            return Vec::new();
        };
        let universal = || {
            let Some(reference) = ws.pointer("/spec/type").and_then(TypeRef::from_value) else {
                return false;
            };
            let types = Types {
                cache: server.registry().cache(),
                paths: &self.paths,
            };
            types
                .chain(&reference)
                .is_ok_and(|chain| initialized_by_universal(&chain))
        };
        let wanted = self.cached_lc(&server, lc_name).is_none()
            && self.fits_here(&server, ws)
            && universal();
        match wanted {
            true => vec![Companion {
                def: self.defs.namespaces.clone(),
                cluster: lc_name.clone(),
                namespace: None,
                object: namespace(UNIVERSAL_NAMESPACES[1]),
            }],
            false => Vec::new(),
        }
    }

    /// The usual first scheduling of a workspace, in one store write: its LC `lc_name` (born as
    /// `lc`), the admin binding of `username` (none without one), the universal initializer's
    /// namespace `default` when `universal`, and the workspace placed with the status the LC
    /// implies. The write requires namespace `kube-system`, which came with the Workspace's POST
    /// ([`Controller::companions`]), so a Ready workspace always has both.
    ///
    /// `Ok(false)` when something is in the way (no `kube-system` yet, the LC exists, the
    /// workspace changed since `revision`): nothing was written, and the caller takes the long
    /// way, which creates only what is missing.
    pub(super) async fn create_placed(
        &self,
        server: &ApiServer,
        lc_name: &LogicalClusterName,
        lc: &Value,
        placed: Placed<'_>,
        universal: bool,
    ) -> Result<bool, ApiError> {
        let registry = server.registry();
        let Placed {
            at,
            ws,
            revision,
            desired,
            username,
        } = placed;
        let [default, kube_system] = UNIVERSAL_NAMESPACES;
        // Written with the Workspace (see `companions`); when it is not, the long way.
        let kube_system_key = keyspace(&self.defs.namespaces).object(lc_name, None, kube_system);
        if universal && registry.cache().get(&kube_system_key).is_none() {
            return Ok(false);
        }
        let namespace_at = ObjectRef {
            cluster: lc_name,
            namespace: None,
            name: kube_system,
        };
        let batch = {
            let mut creates = self.lc_and_binding(lc_name, lc, username);
            let mut requires = Vec::new();
            if universal {
                creates.push(self.new_namespace(lc_name, default));
                requires.push((&*self.defs.namespaces, namespace_at));
            }
            Batch {
                creates,
                updates: vec![self.workspace_update(at, ws, revision, desired)],
                requires,
                ..Batch::default()
            }
        };
        match registry.write_batch(batch).await {
            Ok(_) => Ok(true),
            // The workspace itself is gone: nothing to schedule (the next reconcile finds so).
            Err(e) if e.is_not_found() && e.details.kind.as_deref() == Some("workspaces") => Err(e),
            Err(e) if e.is_conflict_or_exists() || e.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Creates `lc` as LC `lc_name`, the admin binding of `username` (none without one) and, when
    /// `universal`, its namespaces; answers the LC as written. `AlreadyExists` when the LC exists;
    /// content already there is kept.
    ///
    /// The LC is born past the universal initializer, and the workspace waits for these writes
    /// alone. Safe because the LC name is ours: admission chose it at random and keeps it
    /// immutable. Whatever is already written under it (an earlier attempt's) is kept.
    pub(super) async fn create_lc(
        &self,
        server: &ApiServer,
        lc_name: &LogicalClusterName,
        lc: Value,
        username: &str,
        universal: bool,
    ) -> Result<Value, ApiError> {
        let registry = server.registry();
        let mut first = self.lc_and_binding(lc_name, &lc, username);
        let mut second = Vec::new();
        if universal {
            let [a, b] = UNIVERSAL_NAMESPACES;
            first.push(self.new_namespace(lc_name, a));
            second.push(self.new_namespace(lc_name, b));
        }
        let (first, second) = tokio::join!(registry.create_all(first), async {
            match second.is_empty() {
                true => Ok(Vec::new()),
                false => registry.create_all(second).await,
            }
        });
        let first = match first {
            Ok(first) => first,
            // The LC itself exists: whose it is, the caller finds out.
            Err(e) if exists(&e) && e.details.kind.as_deref() == Some("logicalclusters") => {
                return Err(e);
            }
            // Some of its content exists (an earlier attempt): each object on its own.
            Err(e) if exists(&e) => {
                let (created, content) = tokio::join!(
                    registry.create(
                        &self.defs.logical_clusters,
                        lc_name,
                        None,
                        lc,
                        WriteOptions {
                            with_status: true,
                            ..Default::default()
                        },
                    ),
                    self.lc_content(server, lc_name, username, universal),
                );
                let lc = created?.object;
                content?;
                return Ok(lc);
            }
            Err(e) => return Err(e),
        };
        match second {
            Ok(_) => {}
            Err(e) if exists(&e) => self.universal_namespaces(server, lc_name, true).await?,
            Err(e) => return Err(e),
        }
        first
            .into_iter()
            .next()
            .map(|written| written.object)
            .ok_or_else(|| ApiError::internal("create_all answered no LogicalCluster"))
    }

    /// What an LC's creation writes beside it, each object only when missing: the admin binding
    /// of `username` and, when `universal`, the namespaces.
    pub(super) async fn lc_content(
        &self,
        server: &ApiServer,
        lc_name: &LogicalClusterName,
        username: &str,
        universal: bool,
    ) -> Result<(), ApiError> {
        let (admin, namespaces) = tokio::join!(
            self.admin_binding(server, lc_name, username),
            self.universal_namespaces(server, lc_name, universal),
        );
        admin?;
        namespaces
    }

    /// LC `lc_name` as `lc`, and the admin binding of `username` (none without one).
    fn lc_and_binding<'a>(
        &'a self,
        lc_name: &'a LogicalClusterName,
        lc: &Value,
        username: &str,
    ) -> Vec<NewObject<'a>> {
        let mut objects = vec![NewObject {
            def: &self.defs.logical_clusters,
            cluster: lc_name,
            namespace: None,
            object: lc.clone(),
        }];
        if !username.is_empty() {
            objects.push(NewObject {
                def: &self.defs.bindings,
                cluster: lc_name,
                namespace: None,
                object: workspace_admin_binding(username),
            });
        }
        objects
    }

    fn new_namespace<'a>(&'a self, lc_name: &'a LogicalClusterName, name: &str) -> NewObject<'a> {
        NewObject {
            def: &self.defs.namespaces,
            cluster: lc_name,
            namespace: None,
            object: namespace(name),
        }
    }

    /// The `workspace-admin` ClusterRoleBinding making the workspace's creator its admin.
    async fn admin_binding(
        &self,
        server: &ApiServer,
        lc_name: &LogicalClusterName,
        username: &str,
    ) -> Result<(), ApiError> {
        if username.is_empty() {
            return Ok(());
        }
        server
            .create_missing(
                &self.defs.bindings,
                lc_name,
                workspace_admin_binding(username),
            )
            .await
    }

    /// The namespaces the universal initializer gives (when `wanted`).
    pub(super) async fn universal_namespaces(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        wanted: bool,
    ) -> Result<(), ApiError> {
        if !wanted {
            return Ok(());
        }
        let create = |name| server.create_missing(&self.defs.namespaces, cluster, namespace(name));
        let [first, second] = UNIVERSAL_NAMESPACES;
        let (first, second) = tokio::join!(create(first), create(second));
        first?;
        second
    }
}
