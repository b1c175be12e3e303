//! The APIExport virtual workspace, as kcp serves it:
//!
//! ```text
//! /services/apiexport/<export cluster>/<export>/clusters/<* | cluster>/{api,apis,openapi}/...
//! ```
//!
//! - `<export cluster>` is the logical cluster the export lives in, by name (kcp keys exports so:
//!   a workspace path addresses nothing, which is why clients take the URL from the export's
//!   endpoint slice).
//! - `clusters/*` lists and watches every object of the exported resources across the logical
//!   clusters of this server that bind the export; each object carries its cluster in the
//!   `kcp.io/cluster` annotation, and a resourceVersion of such a list resumes a watch.
//! - `clusters/<cluster>` works inside one binding cluster: get, create, update, patch and
//!   delete, and the `status` subresource.
//!
//! Discovery and OpenAPI list exactly the exported resources and the export's APIBindings
//! ([`served`]); [`authorize`] decides who may use it.

pub mod authorize;
pub mod served;

use std::sync::Arc;

use async_trait::async_trait;
use kcp_api_types::ResourceDef;
use kcp_api_types::apis::{EXPORT_LABEL, GROUP, export_label_value};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::hooks::{Routed, VirtualRequest, VirtualWorkspace};
use kcp_apiserver::registry::keyspace;
use kcp_controllers::builtin;
use kcp_http::request_info::{ClusterTarget, ServiceFamily, Target};

use served::ServedApis;

/// The family's name in `/services/<name>/...`.
pub const FAMILY: &str = "apiexport";

/// Where a request of the family is: the export, and the logical cluster inside it (`None`: all).
pub struct Scope<'a> {
    pub export_cluster: &'a LogicalClusterName,
    pub export_name: &'a str,
    pub cluster: Option<&'a LogicalClusterName>,
}

pub struct ApiExportWorkspace {
    served: ServedApis,
    bindings: Arc<ResourceDef>,
}

impl ApiExportWorkspace {
    /// `None` when kcp's kinds are missing from the catalogue (a server without kcp-apis).
    pub fn new() -> Option<ApiExportWorkspace> {
        let exports = builtin(GROUP, "apiexports").filter(|d| d.version == "v1alpha2")?;
        let schemas = builtin(GROUP, "apiresourceschemas")?;
        let bindings = builtin(GROUP, "apibindings").filter(|d| d.version == "v1alpha2")?;
        Some(ApiExportWorkspace {
            served: ServedApis::new(exports, schemas),
            bindings,
        })
    }
}

#[async_trait]
impl VirtualWorkspace for ApiExportWorkspace {
    fn family(&self) -> ServiceFamily {
        ServiceFamily {
            name: FAMILY,
            params: 2,
        }
    }

    async fn route(
        &self,
        server: &ApiServer,
        request: &VirtualRequest<'_>,
    ) -> Result<Routed, ApiError> {
        let info = request.info;
        let [export_cluster, export_name] = request.params() else {
            return Err(ApiError::path_not_found());
        };
        let export_cluster =
            LogicalClusterName::parse(export_cluster).map_err(|_| ApiError::path_not_found())?;
        let cluster = match &info.cluster {
            ClusterTarget::Wildcard => None,
            ClusterTarget::Name(name) => Some(name),
            // One logical cluster by its name, or all of them; nothing else is addressed here.
            _ => return Err(ApiError::path_not_found()),
        };
        let scope = Scope {
            export_cluster: &export_cluster,
            export_name,
            cluster,
        };
        let attrs = request.attributes();
        authorize::authorize(
            server,
            &self.bindings,
            &scope,
            request.user,
            &info.target,
            &attrs,
        )?;
        let apis = match self.served.export(server, &export_cluster, export_name) {
            Some(apis) => apis,
            None => Arc::new(kcp_apiserver::discovery::ApiSet::new(Vec::new())),
        };
        let mut required_labels = Vec::new();
        if let Target::Resource(r) = &info.target
            && r.group == GROUP
            && r.resource == "apibindings"
        {
            // Only this export's bindings, which admission labels with it.
            let value = export_label_value(&export_cluster, export_name);
            if let (Some(name), Some(cluster)) = (&r.name, cluster) {
                let key = keyspace(&self.bindings).object(cluster, None, name);
                let cached = server.registry().cache().get(&key);
                if cached.is_none_or(|b| b.labels.get(EXPORT_LABEL) != Some(value.as_str())) {
                    return Err(ApiError::not_found(GROUP, "apibindings", name));
                }
            }
            required_labels.push((EXPORT_LABEL.to_string(), value));
        }
        Ok(Routed {
            info: info.clone(),
            apis,
            required_labels,
        })
    }
}
