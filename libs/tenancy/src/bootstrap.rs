//! What kcp's tenancy needs on a fresh shard: `root` typed as the top of the workspace tree, kcp's
//! bootstrap WorkspaceTypes and this shard's Shard object, created once (an operator's later
//! changes to them are kept).

use async_trait::async_trait;
use kcp_api_types::tenancy::ROOT;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::hooks::Bootstrap;
use serde_json::{Map, Value, json};

use crate::paths::PATH_ANNOTATION;
use crate::workspace_types::TYPE_ANNOTATION;

pub struct TenancyBootstrap;

#[async_trait]
impl Bootstrap for TenancyBootstrap {
    /// The top of the workspace tree: its children default their type from root's.
    fn root_annotations(&self) -> Map<String, Value> {
        let annotations = json!({TYPE_ANNOTATION: "root:root", PATH_ANNOTATION: ROOT});
        annotations.as_object().cloned().unwrap_or_default()
    }

    async fn bootstrap(&self, server: &ApiServer) -> Result<(), ApiError> {
        let shard = kcp_api_types::tenancy::shard(
            server.shard_name(),
            server.external_url(),
            server.external_url(),
        );
        let objects = kcp_api_types::tenancy::bootstrap_workspace_types()
            .into_iter()
            .map(|o| (("tenancy.kcp.io", "workspacetypes"), o))
            .chain([(("core.kcp.io", "shards"), shard)]);
        let root = LogicalClusterName::root();
        for ((group, plural), object) in objects {
            let def = server
                .builtin(group, plural)
                .ok_or_else(|| ApiError::internal(format!("{plural} kind missing")))?;
            server.create_missing(&def, &root, object).await?;
        }
        Ok(())
    }
}
