//! kcp-controllers: the reconcilers a shard runs in process, one task each for every logical
//! cluster of the shard (never one per cluster), fed by the API server's watch cache and writing
//! through its registry, so they see the same validation and revisions as requests.
//!
//! Their small runtime is public for the controllers of other crates (kcp-tenancy's workspace
//! controllers): [`feed`] (a resource's changes from the watch cache, with resyncs after a
//! reload), [`workqueue`] (keys deduplicated, retried with backoff, worked by a few tasks) and
//! [`objects`] (a work queue of a resource's objects, the shape most controllers take).

pub mod clusterrole_aggregation;
pub mod feed;
pub mod gc;
pub mod objects;
mod per_namespace;
pub mod quota;
pub mod root_ca;
pub mod serviceaccounts;
pub mod workqueue;

pub use per_namespace::builtin;

use std::sync::Arc;

use kcp_apiserver::ApiServer;

/// What the controllers need from the process beyond the API server.
#[derive(Clone)]
pub struct ControllerConfig {
    /// PEM of the CA clients use to verify the shard, published as `kube-root-ca.crt`.
    pub root_ca_pem: String,
}

/// Starts every controller; they stop when the API server shuts down.
pub fn start(server: Arc<ApiServer>, config: ControllerConfig) {
    gc::spawn(server.clone());
    clusterrole_aggregation::spawn(server.clone());
    serviceaccounts::spawn(server.clone());
    root_ca::spawn(server.clone(), config.root_ca_pem);
    quota::spawn(server);
}
