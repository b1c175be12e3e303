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
use kcp_api_types::apis::claims::claim_label_key;
use kcp_api_types::apis::{EXPORT_LABEL, GROUP, export_label_value};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::hooks::{Routed, VirtualRequest, VirtualWorkspace};
use kcp_controllers::builtin;
use kcp_http::request_info::{ClusterTarget, ServiceFamily, Target};

use authorize::Content;
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

    /// What to serve for `request` into `scope`, once `content` grants it; `partition`: the
    /// label every exported object served must carry (an object-partitioned endpoint).
    pub(crate) async fn serve(
        &self,
        server: &ApiServer,
        request: &VirtualRequest<'_>,
        scope: &Scope<'_>,
        content: &Content<'_>,
        partition: Option<(String, String)>,
    ) -> Result<Routed, ApiError> {
        let info = request.info;
        let attrs = request.attributes();
        let served = self
            .served
            .export(server, scope.export_cluster, scope.export_name);
        let claim_labels = authorize::authorize(
            server,
            &self.bindings,
            scope,
            content,
            served.as_deref(),
            request.user,
            &info.target,
            &attrs,
        )
        .await?;
        let empty = || Arc::new(kcp_apiserver::discovery::ApiSet::new(Vec::new()));
        // Claimed resources stay on the export's own endpoint: an object partition holds the
        // export's resources only.
        let apis = match (&served, &partition) {
            (Some(served), None) => served.apis.clone(),
            (Some(served), Some(_)) => served.exported.clone(),
            (None, _) => empty(),
        };
        let claim = match &info.target {
            Target::Resource(r) => served.as_ref().and_then(|s| s.claim(&r.group, &r.resource)),
            _ => None,
        };
        let required_labels = match &info.target {
            // Only this export's bindings, which admission labels with it.
            Target::Resource(r) if r.group == GROUP && r.resource == "apibindings" => vec![(
                EXPORT_LABEL.to_string(),
                export_label_value(scope.export_cluster, scope.export_name),
            )],
            // Only the objects the consumer's accepted claim labels, and writes keep its
            // selector's labels.
            _ if partition.is_none() && claim.is_some() => {
                let key = claim_label_key(scope.export_cluster.as_str(), scope.export_name);
                let value = claim.map(|c| c.label_value.clone()).unwrap_or_default();
                let mut labels = vec![(key, value)];
                labels.extend(claim_labels);
                labels
            }
            _ => partition.into_iter().collect(),
        };
        Ok(Routed {
            required_labels,
            ..Routed::view(info.clone(), apis)
        })
    }
}

/// The logical cluster a request of a family addresses: one by name, or all (`None`).
pub(crate) fn target_cluster<'a>(
    request: &VirtualRequest<'a>,
) -> Result<Option<&'a LogicalClusterName>, ApiError> {
    match &request.info.cluster {
        ClusterTarget::Wildcard => Ok(None),
        ClusterTarget::Name(name) => Ok(Some(name)),
        // One logical cluster by its name, or all of them; nothing else is addressed here.
        _ => Err(ApiError::path_not_found()),
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
        let [export_cluster, export_name] = request.params() else {
            return Err(ApiError::path_not_found());
        };
        let export_cluster =
            LogicalClusterName::parse(export_cluster).map_err(|_| ApiError::path_not_found())?;
        let scope = Scope {
            export_cluster: &export_cluster,
            export_name,
            cluster: target_cluster(request)?,
        };
        let content = Content {
            resource: "apiexports",
            name: export_name,
            cluster: export_cluster.as_str(),
        };
        self.serve(server, request, &scope, &content, None).await
    }
}
