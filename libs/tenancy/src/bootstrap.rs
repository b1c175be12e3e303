//! What kcp's tenancy needs on a fresh shard: `root` typed as the top of the workspace tree, kcp's
//! bootstrap WorkspaceTypes and this shard's Shard object, created once (an operator's later
//! changes to them are kept), except the Shard's three URLs, which every start sets to what the
//! shard is started with.

use std::sync::Arc;

use async_trait::async_trait;
use kcp_api_types::ResourceDef;
use kcp_api_types::tenancy::ROOT;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::hooks::Bootstrap;
use kcp_apiserver::registry::{ObjectRef, UpdateKind, WriteOptions, keyspace};
use serde_json::{Map, Value, json};

use crate::paths::PATH_ANNOTATION;
use crate::workspace_types::TYPE_ANNOTATION;

pub struct TenancyBootstrap {
    /// The Shard's `virtualWorkspaceURL`; `None`: the shard's own URL.
    pub virtual_workspace_url: Option<String>,
}

#[async_trait]
impl Bootstrap for TenancyBootstrap {
    /// The top of the workspace tree: its children default their type from root's.
    fn root_annotations(&self) -> Map<String, Value> {
        let annotations = json!({TYPE_ANNOTATION: "root:root", PATH_ANNOTATION: ROOT});
        annotations.as_object().cloned().unwrap_or_default()
    }

    async fn bootstrap(&self, server: &ApiServer) -> Result<(), ApiError> {
        let url = server.external_url();
        let shard = kcp_api_types::tenancy::shard(
            server.shard_name(),
            url,
            url,
            self.virtual_workspace_url.as_deref().unwrap_or(url),
        );
        let objects = kcp_api_types::tenancy::bootstrap_workspace_types()
            .into_iter()
            .map(|o| (("tenancy.kcp.io", "workspacetypes"), o))
            .chain([(("core.kcp.io", "shards"), shard.clone())]);
        let root = LogicalClusterName::root();
        for ((group, plural), object) in objects {
            let def = builtin(server, group, plural)?;
            server.create_missing(&def, &root, object).await?;
        }
        refresh_shard_urls(server, &root, &shard).await
    }
}

fn builtin(server: &ApiServer, group: &str, plural: &str) -> Result<Arc<ResourceDef>, ApiError> {
    (server.builtin(group, plural))
        .ok_or_else(|| ApiError::internal(format!("{plural} kind missing")))
}

/// A restart may bring other URLs (another port, a kcp-vw elsewhere): the Shard object tells the
/// current ones, as kcp's shard registration does.
async fn refresh_shard_urls(
    server: &ApiServer,
    root: &LogicalClusterName,
    shard: &Value,
) -> Result<(), ApiError> {
    const URLS: [&str; 3] = ["baseURL", "externalURL", "virtualWorkspaceURL"];
    let def = builtin(server, "core.kcp.io", "shards")?;
    let name = server.shard_name();
    let key = keyspace(&def).object(root, None, name);
    let stored = (server.registry().cache().get(&key)).and_then(|o| o.value().ok());
    let current = |o: &Value| URLS.map(|f| o["spec"][f].clone());
    if stored.is_none_or(|stored| current(&stored) == current(shard)) {
        return Ok(());
    }
    let at = ObjectRef {
        cluster: root,
        namespace: None,
        name,
    };
    let wanted = current(shard);
    server
        .registry()
        .update(&def, at, UpdateKind::Main, WriteOptions::default(), |old| {
            let mut new = old.clone();
            for (field, url) in URLS.iter().zip(&wanted) {
                new["spec"][*field] = url.clone();
            }
            Ok(new)
        })
        .await
        .map(|_| ())
}
