//! What the API-server tests share: a server over a given store, and built-in resource definitions.

use std::sync::Arc;

use kcp_api_types::ResourceDef;
use kcp_apiserver::{ApiServer, ApiServerConfig};
use kcp_store::Store;

/// An API server over `store`, with no authentication (the tests call the registry directly).
pub async fn server(store: Arc<dyn Store>) -> Arc<ApiServer> {
    ApiServer::new(ApiServerConfig {
        store,
        shard_name: "root".into(),
        external_url: "https://localhost:6443".into(),
        authenticators: vec![],
        authorizers: vec![],
    })
    .await
    .expect("the API server starts")
}

/// The built-in resource `group`/`plural`.
pub fn builtin(group: &str, plural: &str) -> ResourceDef {
    kcp_api_types::builtin::catalogue()
        .into_iter()
        .find(|d| d.group == group && d.plural == plural)
        .unwrap_or_else(|| panic!("no built-in resource {group}/{plural}"))
}
