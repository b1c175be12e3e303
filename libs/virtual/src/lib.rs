//! kcp-virtual: kcp's virtual workspaces on the generic API server.
//!
//! A virtual workspace is a `/services/<family>/<params>/clusters/<*|lc>/...` URL that serves a
//! view across logical clusters rather than one of them. Each family here implements
//! [`kcp_apiserver::hooks::VirtualWorkspace`]: it authorizes a request of its family by its own
//! rules and tells the generic server what to serve for it (which logical cluster, which APIs),
//! so that lists, watches, writes, discovery and OpenAPI go through the same registry as every
//! other request.
//!
//! - [`apiexport`]: `/services/apiexport/<export cluster>/<export>/...`, a provider's view of
//!   every instance of its exported resources across the logical clusters that bind them.
//! - [`apiexportslice`]: `/services/apiexportslice/<slice cluster>/<slice>/...`, the part of an
//!   export's endpoint an object-partitioned endpoint slice names (beyond kcp).
//! - [`lifecycle`]: `/services/initializingworkspaces/<initializer>/...` and
//!   `/services/terminatingworkspaces/<terminator>/...`, where outside controllers run the
//!   initializers and terminators of WorkspaceTypes.
//! - [`endpoint_slices`]: publishes this server's URL in the APIExportEndpointSlices of exports
//!   it hosts bindings of.

pub mod apiexport;
pub mod apiexportslice;
pub mod endpoint_slices;
pub mod lifecycle;

use std::sync::Arc;

use kcp_apiserver::hooks::ClusterResolver;
use kcp_apiserver::{ApiServer, ApiServerBuilder};

/// The virtual workspaces of one server, and the URL their endpoint slices publish.
pub struct VirtualWorkspaces {
    /// Where clients reach this server's `/services/...`.
    pub base_url: String,
    /// This server's Shard object's name (endpoint slices' partitions select shards by labels).
    pub shard: String,
    /// Serve `/services/...` in this process; without, only the URLs are published (a `kcp-vw`
    /// process at `base_url` serves them).
    pub serve: bool,
    /// Workspace paths, for endpoint slices naming their export by path.
    pub resolver: Option<Arc<dyn ClusterResolver>>,
}

impl VirtualWorkspaces {
    pub fn install(&self, builder: ApiServerBuilder) -> ApiServerBuilder {
        if !self.serve {
            return builder;
        }
        let Some(exports) = apiexport::ApiExportWorkspace::new().map(Arc::new) else {
            tracing::error!("APIExport virtual workspace: kcp's kinds are missing; not served");
            return builder;
        };
        let mut builder = builder.virtual_workspace(exports.clone());
        if let Some(partitions) =
            apiexportslice::ObjectPartitionWorkspace::new(exports, self.resolver.clone())
        {
            builder = builder.virtual_workspace(Arc::new(partitions));
        }
        for lifecycle in [
            lifecycle::Lifecycle::Initializing,
            lifecycle::Lifecycle::Terminating,
        ] {
            if let Some(workspace) = lifecycle::LifecycleWorkspace::new(lifecycle) {
                builder = builder.virtual_workspace(Arc::new(workspace));
            }
        }
        builder
    }

    pub fn start_controllers(&self, server: &Arc<ApiServer>) {
        endpoint_slices::spawn(
            server.clone(),
            self.resolver.clone(),
            self.base_url.clone(),
            self.shard.clone(),
        );
    }
}
