//! A store in another process, over gRPC: [`service`] serves a store, [`RemoteStore`] is the
//! [`crate::Store`] of its caller. The standalone virtual-workspace server (kcp-vw) keeps its
//! watch cache and writes through its shard's store this way, so it sees the shard's revisions:
//! a resourceVersion means the same on both.

mod client;
mod service;
mod wire;

pub use client::{AccessError, RemoteOptions, RemoteStore, RemoteTls};
pub use service::{AcknowledgedWrites, CallBody, StoreCalls, StoreService, service};

/// The largest message either side takes: a page of a range or a batch of watch events, which may
/// hold many values of up to [`crate::MAX_VALUE_BYTES`] each.
const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

/// Whether an HTTP request is a call of this service (the shard serves gRPC and the Kubernetes
/// API on one port, told apart by the path and content type).
pub fn is_store_call<B>(req: &http::Request<B>) -> bool {
    req.uri().path().starts_with("/kcp.store.v1.Storage/")
        && (req.headers().get(http::header::CONTENT_TYPE))
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/grpc"))
}
