//! kcp-apis: kcp's APIs as a service on the generic API server.
//!
//! A provider publishes an API in its workspace as APIResourceSchemas (a CRD's spec, versioned by
//! name) listed in an APIExport, which gets an identity; consumers bind the export with an
//! APIBinding and are served the API as if it were their own CRD, their objects stored under the
//! export's identity. This crate holds:
//!
//! - [`admission`]: kcp's admission of APIResourceSchemas, APIExports, APIBindings and
//!   APIExportEndpointSlices (`bind`).
//! - [`identity`]: the identity Secret and hash of every APIExport, and its default endpoint slice.
//! - [`locks`]: which binding or CRD holds each group/resource of a logical cluster.
//! - [`claims`]: the permission claims bindings accepted, and the labels they stamp.
//! - [`policy`]: which exports' maximal permission policies bound which bound resources.
//! - [`binding`]: the APIBinding controller, and serving what bindings bind
//!   ([`binding::serving`]).
//!
//! [`Apis::install`] plugs the admission and the start-up serving into an [`ApiServerBuilder`];
//! once the server is built, [`Apis::start_controllers`] runs the controllers.

pub mod admission;
pub mod binding;
mod by_cluster;
pub mod claims;
pub mod identity;
pub mod locks;
pub mod policy;

use std::sync::Arc;

use async_trait::async_trait;
use kcp_apimachinery::logical_cluster::{LogicalClusterName, WorkspacePath};
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::hooks::{AdmissionPlugins, Bootstrap, ClusterResolver};
use kcp_apiserver::registry::keyspace;
use kcp_apiserver::{ApiServer, ApiServerBuilder};

/// kcp's APIs as a service for one server.
#[derive(Clone, Default)]
pub struct Apis {
    /// Workspace paths, for references by path (bindings and endpoint slices name exports so).
    resolver: Option<Arc<dyn ClusterResolver>>,
    shared: Arc<Shared>,
}

/// What admission, start-up, the authorizer and the controllers of one server share.
#[derive(Default)]
pub struct Shared {
    /// Who holds each resource of a logical cluster (CRD admission and the bindings).
    pub locks: locks::ResourceLocks,
    /// The schemas bound resources are served from, kept when a schema is deleted while bound.
    pub schemas: binding::serving::SchemaMemory,
    /// The maximal permission policies bounding bound resources (the authorizer asks).
    pub policies: Arc<policy::BoundPolicies>,
    /// The permission claims each binding accepted (claim labels on every write).
    pub claims: claims::ClaimIndex,
}

impl Apis {
    /// `resolver` turns workspace paths into logical clusters and back (kcp-tenancy's index).
    pub fn new(resolver: Option<Arc<dyn ClusterResolver>>) -> Apis {
        Apis {
            resolver,
            shared: Default::default(),
        }
    }

    /// Plugs the admission of the `apis.kcp.io` kinds into `builder`, and the serving of what
    /// the stored bindings bind before the server is handed out.
    pub fn install(&self, builder: ApiServerBuilder) -> ApiServerBuilder {
        let resolver = self.resolver.clone();
        let shared = self.shared.clone();
        builder
            .permission_policies(self.shared.policies.clone())
            .bootstrap(Arc::new(ServeBound(self.shared.clone())))
            .admission(move |ctx| {
                let mut early: Vec<Arc<dyn kcp_apiserver::admission::Admission>> = vec![
                    Arc::new(admission::ResourceSchemaAdmission),
                    Arc::new(admission::ExportAdmission),
                ];
                match admission::BindingAdmission::new(
                    ctx.cache.clone(),
                    resolver.clone(),
                    ctx.authorizers.clone(),
                ) {
                    Some(binding) => early.push(Arc::new(binding)),
                    None => tracing::error!("APIBinding admission: a kind is missing"),
                }
                match admission::EndpointSliceAdmission::new(
                    ctx.cache.clone(),
                    resolver,
                    ctx.authorizers.clone(),
                ) {
                    Some(slices) => early.push(Arc::new(slices)),
                    None => tracing::error!("APIExportEndpointSlice admission: a kind is missing"),
                }
                // After the binding's: an APIBinding's claim label follows its export label.
                early.push(Arc::new(admission::ClaimAdmission::new(shared.clone())));
                match admission::CrdAdmission::new(ctx.cache.clone(), shared) {
                    Some(crd) => early.push(Arc::new(crd)),
                    None => tracing::error!("CRD admission: a kind is missing"),
                }
                AdmissionPlugins {
                    early,
                    last: Vec::new(),
                }
            })
    }

    /// Starts the controllers on the server `install` went into; they stop when it shuts down.
    pub fn start_controllers(&self, server: &Arc<ApiServer>) {
        identity::spawn(server.clone(), self.resolver.clone());
        binding::spawn(server.clone(), self.resolver.clone(), self.shared.clone());
    }

    /// What a server following another's store (kcp-vw) runs: the binding controller keeping
    /// bound APIs served and their indexes current, writing nothing (see
    /// [`kcp_apiserver::ServerRole`]).
    pub fn start_followers(&self, server: &Arc<ApiServer>) {
        binding::spawn(server.clone(), self.resolver.clone(), self.shared.clone());
    }
}

/// The logical cluster an export reference's `path` leads to, seen from `cluster` (where the
/// binding or endpoint slice naming it lives): that cluster itself without a path. `None` when no
/// workspace has that path. Whether the export is there is the caller's to check.
pub fn export_cluster(
    resolver: Option<&dyn ClusterResolver>,
    cluster: &LogicalClusterName,
    path: &str,
) -> Option<LogicalClusterName> {
    if path.is_empty() {
        return Some(cluster.clone());
    }
    let path = WorkspacePath::parse(path).ok()?;
    if let Some(found) = resolver.and_then(|r| r.cluster_of(&path)) {
        return Some(found);
    }
    // A logical cluster's own name reaches it too, as kcp's index by path and name keys exports.
    path.as_cluster_name()
}

/// At start-up, every logical cluster with bindings serves what they bind before the first
/// request (a restart must not make bound resources 404 until the controller comes round).
struct ServeBound(Arc<Shared>);

#[async_trait]
impl Bootstrap for ServeBound {
    fn writes(&self) -> bool {
        false
    }

    async fn bootstrap(&self, server: &ApiServer) -> Result<(), ApiError> {
        let Some(defs) = binding::Defs::new() else {
            return Ok(());
        };
        let cache = server.registry().cache();
        // Before the first request: a bound resource must never go unbounded by its policy.
        self.0.policies.rebuild(cache, &defs);
        self.0.claims.rebuild(cache, &defs);
        let mut clusters: Vec<_> = (cache.list(keyspace(&defs.bindings).all_clusters(), None))
            .iter()
            .map(|b| b.cluster.clone())
            .collect();
        clusters.dedup();
        for cluster in clusters {
            binding::serving::refresh(server, &defs, &self.0.schemas, &cluster);
        }
        Ok(())
    }
}
