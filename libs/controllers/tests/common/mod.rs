//! What the garbage-collector tests share: the API server test harness
//! (`kcp_apiserver::testing`) with the collector running.
#![allow(dead_code, unused_imports)]

use std::sync::Arc;

use kcp_apiserver::ApiServer;
pub use kcp_apiserver::testing::{Engine, builtin, server};

pub struct Harness {
    pub server: Arc<ApiServer>,
    /// The running collector, when the harness started one.
    pub gc: Option<Arc<kcp_controllers::gc::Collector>>,
    _inner: kcp_apiserver::testing::Harness,
}

pub async fn harness(engine: Engine) -> Harness {
    harness_with(engine, Some(kcp_controllers::gc::GcOptions::default())).await
}

/// A harness whose garbage collector runs with `gc`, or is not started (`None`).
pub async fn harness_with(engine: Engine, gc: Option<kcp_controllers::gc::GcOptions>) -> Harness {
    let inner = kcp_apiserver::testing::harness(engine).await;
    let server = inner.server.clone();
    let gc = gc.map(|options| kcp_controllers::gc::spawn_with(server.clone(), options));
    Harness {
        server,
        gc,
        _inner: inner,
    }
}
