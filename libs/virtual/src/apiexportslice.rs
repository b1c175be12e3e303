//! Object-partitioned endpoints (beyond kcp: kcp-dev/kcp#3497; the design is
//! docs/design/partitions.md):
//!
//! ```text
//! /services/apiexportslice/<slice cluster>/<slice>/clusters/<* | cluster>/{api,apis,openapi}/...
//! ```
//!
//! An APIExportEndpointSlice with `spec.objectPartition: {labelKey, value}` publishes this URL
//! instead of its export's. It serves what the export's own endpoint serves ([`crate::apiexport`]),
//! but only the exported objects labelled `labelKey=value`: lists and watches select them (an
//! object relabelled out is DELETED for the watcher, one relabelled in ADDED), a single object
//! without the label is not found, and writes keep it (another value is 403). The generic server
//! enforces that from [`Routed::required_labels`].
//!
//! Who may use it: the bound-API check of the export's endpoint (consumers decide what providers
//! see), then the request's verb on `apiexportendpointslices/content` of the slice, in the slice's
//! workspace. `apiexports/content` is not needed, so a grant of one partition gives nothing else.

use std::sync::Arc;

use async_trait::async_trait;
use kcp_api_types::ResourceDef;
use kcp_api_types::apis::{GROUP, SLICE_EXPORT_CLUSTER_ANNOTATION};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::hooks::{ClusterResolver, Routed, VirtualRequest, VirtualWorkspace};
use kcp_apiserver::registry::{keyspace, str_at as text};
use kcp_controllers::builtin;
use kcp_http::request_info::ServiceFamily;
use serde_json::Value;

use crate::apiexport::authorize::{self, Content};
use crate::apiexport::{ApiExportWorkspace, Scope, target_cluster};

/// The family's name in `/services/<name>/...`.
pub const FAMILY: &str = "apiexportslice";

pub struct ObjectPartitionWorkspace {
    exports: Arc<ApiExportWorkspace>,
    slices: Arc<ResourceDef>,
    bindings: Arc<ResourceDef>,
    /// Workspace paths, for slices naming their export by path.
    resolver: Option<Arc<dyn ClusterResolver>>,
}

impl ObjectPartitionWorkspace {
    /// `None` when kcp's kinds are missing from the catalogue.
    pub fn new(
        exports: Arc<ApiExportWorkspace>,
        resolver: Option<Arc<dyn ClusterResolver>>,
    ) -> Option<ObjectPartitionWorkspace> {
        Some(ObjectPartitionWorkspace {
            exports,
            slices: builtin(GROUP, "apiexportendpointslices")?,
            bindings: builtin(GROUP, "apibindings").filter(|d| d.version == "v1alpha2")?,
            resolver,
        })
    }
}

/// The slice's export (its logical cluster, when known, and name) and partition.
struct Partitioned {
    export_cluster: Option<LogicalClusterName>,
    export_name: String,
    label: (String, String),
}

impl ObjectPartitionWorkspace {
    fn partitioned(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
    ) -> Option<Partitioned> {
        let key = keyspace(&self.slices).object(cluster, None, name);
        let slice = server.registry().cache().get(&key)?.value().ok()?;
        let partition = slice.pointer("/spec/objectPartition")?;
        let path = text(&slice, "/spec/export/path");
        // Only the export the slice was made for: a path now leading elsewhere serves nothing.
        let recorded = (slice.pointer("/metadata/annotations"))
            .and_then(|a| a.get(SLICE_EXPORT_CLUSTER_ANNOTATION))
            .and_then(Value::as_str);
        let export_cluster = kcp_apis::export_cluster(self.resolver.as_deref(), cluster, path)
            .filter(|c| Some(c.as_str()) == recorded);
        Some(Partitioned {
            export_cluster,
            export_name: text(&slice, "/spec/export/name").to_string(),
            label: (
                text(partition, "/labelKey").to_string(),
                text(partition, "/value").to_string(),
            ),
        })
    }
}

#[async_trait]
impl VirtualWorkspace for ObjectPartitionWorkspace {
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
        let [slice_cluster, slice_name] = request.params() else {
            return Err(ApiError::path_not_found());
        };
        let slice_cluster =
            LogicalClusterName::parse(slice_cluster).map_err(|_| ApiError::path_not_found())?;
        let content = Content {
            resource: "apiexportendpointslices",
            name: slice_name,
            cluster: slice_cluster.as_str(),
        };
        let partitioned = self.partitioned(server, &slice_cluster, slice_name);
        let Some(Partitioned {
            export_cluster: Some(export_cluster),
            export_name,
            label,
        }) = partitioned
        else {
            // Nothing is served here; only who may use the slice learns that it is not there.
            let nowhere = Scope {
                export_cluster: &slice_cluster,
                export_name: "",
                cluster: None,
            };
            let attrs = request.attributes();
            authorize::authorize(
                server,
                &self.bindings,
                &nowhere,
                &content,
                None,
                request.user,
                &request.info.target,
                &attrs,
            )
            .await?;
            return Err(ApiError::path_not_found());
        };
        let scope = Scope {
            export_cluster: &export_cluster,
            export_name: &export_name,
            cluster: target_cluster(request)?,
        };
        self.exports
            .serve(server, request, &scope, &content, Some(label))
            .await
    }
}
