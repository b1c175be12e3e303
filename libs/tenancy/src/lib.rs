//! kcp-tenancy: kcp's workspaces on top of the generic API server.
//!
//! The generic server ([`kcp_apiserver`]) serves logical clusters by name. This crate adds what
//! makes them a tree of workspaces, through the server's [`kcp_apiserver::hooks`]:
//!
//! - [`paths`]: workspace paths (`root:org:team`) to logical clusters, the index and its feed from
//!   the watch cache; the server's `ClusterResolver`.
//! - [`workspace_types`]: WorkspaceTypes, their `extend.with` chains and what they give a workspace.
//! - [`admission`]: kcp's Workspace and LogicalCluster admission.
//! - [`home`]: home workspaces (`GET workspaces/~` in `root`).
//! - [`inactive`]: logical clusters marked inactive; the server's `ClusterGate`.
//! - [`bootstrap`]: root's type, the bootstrap WorkspaceTypes and the Shard object.
//! - [`controllers`]: the workspace lifecycle and WorkspaceType URLs, on kcp-controllers' runtime.
//!
//! [`Tenancy::install`] plugs all of it into an [`ApiServerBuilder`]; once the server is built,
//! [`Tenancy::start_controllers`] runs the controllers, which share the same [`PathIndex`].

pub mod admission;
pub mod bootstrap;
pub mod controllers;
pub mod home;
pub mod inactive;
pub mod paths;
pub mod workspace_types;

use std::sync::Arc;

use kcp_apiserver::hooks::AdmissionPlugins;
use kcp_apiserver::{ApiServer, ApiServerBuilder};

pub use paths::PathIndex;

/// kcp's tenancy for one server.
#[derive(Clone, Default)]
pub struct Tenancy {
    paths: Arc<PathIndex>,
    inactive: Arc<inactive::InactiveClusters>,
    /// Where this shard's virtual workspaces are served, when not by the shard itself.
    virtual_workspace_url: Option<String>,
}

impl Tenancy {
    pub fn new() -> Tenancy {
        Tenancy::default()
    }

    /// The URL this shard's Shard object publishes for its virtual workspaces (a kcp-vw's; by
    /// default the shard's own URL), which WorkspaceTypes' lifecycle URLs are made of.
    pub fn with_virtual_workspace_url(mut self, url: String) -> Tenancy {
        self.virtual_workspace_url = Some(url);
        self
    }

    /// The workspace paths of the server's logical clusters.
    pub fn paths(&self) -> &Arc<PathIndex> {
        &self.paths
    }

    /// Starts tenancy's controllers on the server `install` went into; they stop when it shuts
    /// down.
    pub fn start_controllers(&self, server: &Arc<ApiServer>) {
        controllers::type_urls::spawn(server.clone());
        controllers::partition_sets::spawn(server.clone());
        controllers::workspaces::spawn(server.clone(), self.paths.clone());
    }

    /// Plugs tenancy into `builder`.
    pub fn install(&self, builder: ApiServerBuilder) -> ApiServerBuilder {
        let paths = self.paths.clone();
        builder
            .observer(self.paths.clone())
            .observer(self.inactive.clone())
            .resolver(self.paths.clone())
            .gate(self.inactive.clone())
            .request_hook(Arc::new(home::HomeWorkspaces::new(self.paths.clone())))
            .bootstrap(Arc::new(bootstrap::TenancyBootstrap {
                virtual_workspace_url: self.virtual_workspace_url.clone(),
            }))
            .admission(move |ctx| AdmissionPlugins {
                early: vec![
                    Arc::new(admission::WorkspaceAdmission::new(
                        ctx.cache.clone(),
                        paths,
                        ctx.authorizers.clone(),
                    )),
                    Arc::new(admission::LogicalClusterAdmission),
                ],
                // A new Workspace's logical cluster is named after every webhook.
                last: vec![Arc::new(admission::WorkspaceClusterName)],
            })
    }
}
