//! What the controller tests share: an API server over a given store (embedded or etcd) with the
//! garbage collector running, and built-in resource definitions. A copy of the API server's test
//! harness, plus the controllers it starts.
#![allow(dead_code)]

use std::sync::Arc;

use kcp_api_types::ResourceDef;
use kcp_apiserver::{ApiServer, ApiServerConfig};
use kcp_store::testing::EtcdProcess;
use kcp_store::{Store, StoreConfig};

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

pub struct Harness {
    pub server: Arc<ApiServer>,
    /// The running collector, when the harness started one.
    pub gc: Option<Arc<kcp_controllers::gc::Collector>>,
    _dir: tempfile::TempDir,
    _etcd: Option<EtcdProcess>,
}

#[derive(Clone, Copy, Debug)]
pub enum Engine {
    Embedded,
    Etcd,
}

pub async fn harness(engine: Engine) -> Harness {
    harness_with(engine, Some(kcp_controllers::gc::GcOptions::default())).await
}

/// A harness whose garbage collector runs with `gc`, or is not started (`None`).
pub async fn harness_with(engine: Engine, gc: Option<kcp_controllers::gc::GcOptions>) -> Harness {
    let dir = tempfile::tempdir().expect("tempdir");
    let (config, etcd) = match engine {
        Engine::Embedded => (
            StoreConfig::Embedded {
                path: dir.path().join("store.redb"),
            },
            None,
        ),
        Engine::Etcd => {
            let etcd = EtcdProcess::start();
            let prefix = format!("/test-{}", uuid_like());
            (
                StoreConfig::Etcd {
                    endpoints: etcd.endpoints(),
                    prefix,
                },
                Some(etcd),
            )
        }
    };
    let store = kcp_store::open(&config).await.expect("store opens");
    let server = server(store).await;
    let gc = gc.map(|options| kcp_controllers::gc::spawn_with(server.clone(), options));
    Harness {
        server,
        gc,
        _dir: dir,
        _etcd: etcd,
    }
}

fn uuid_like() -> String {
    format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    )
}

/// Runs `async fn name(&Harness)` as two tests: on the embedded store and on etcd.
#[macro_export]
macro_rules! on_both_stores {
    ($name:ident) => {
        mod $name {
            use super::*;

            #[tokio::test]
            async fn embedded() {
                let h = common::harness(common::Engine::Embedded).await;
                super::$name(&h).await;
            }

            #[tokio::test]
            async fn etcd() {
                let h = common::harness(common::Engine::Etcd).await;
                super::$name(&h).await;
            }
        }
    };
}
