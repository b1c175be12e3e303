//! Test support (feature `test-util`): an API server over the embedded store or a throwaway etcd,
//! without authentication (tests call the registry directly), and [`on_both_stores!`](crate::on_both_stores)
//! to run one scenario on both stores. Used by this crate's and the controllers' tests.

use std::sync::Arc;

use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_store::testing::EtcdProcess;
use kcp_store::{Store, StoreConfig};

use crate::{ApiServer, ApiServerBuilder, ApiServerConfig};

/// Which store a test runs on.
#[derive(Clone, Copy, Debug)]
pub enum Engine {
    Embedded,
    Etcd,
}

/// An API server and what keeps its store alive; the server shuts down on drop.
pub struct Harness {
    pub server: Arc<ApiServer>,
    _dir: tempfile::TempDir,
    _etcd: Option<EtcdProcess>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.server.shutdown();
    }
}

/// An API server over `store`.
pub async fn server(store: Arc<dyn Store>) -> Arc<ApiServer> {
    server_with(store, |builder| builder).await
}

/// An API server over `store`, with what `install` plugs into it.
pub async fn server_with(
    store: Arc<dyn Store>,
    install: impl FnOnce(ApiServerBuilder) -> ApiServerBuilder,
) -> Arc<ApiServer> {
    let builder = ApiServer::builder(ApiServerConfig {
        store,
        role: crate::ServerRole::Shard,
        shard_name: "root".into(),
        external_url: "https://localhost:6443".into(),
        authenticators: vec![],
        authorizers: vec![],
        service_account_tokens: None,
        rbac: Default::default(),
        identity_headers: Default::default(),
        cache_snapshot: None,
    });
    (install(builder).build().await).expect("the API server starts")
}

/// A fresh store of the given kind (etcd: a throwaway process and a unique key prefix).
pub async fn harness(engine: Engine) -> Harness {
    harness_with(engine, |builder| builder).await
}

/// [`harness`], with what `install` plugs into the server.
pub async fn harness_with(
    engine: Engine,
    install: impl FnOnce(ApiServerBuilder) -> ApiServerBuilder,
) -> Harness {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, etcd) = open_store(engine, dir.path()).await;
    Harness {
        server: server_with(store, install).await,
        _dir: dir,
        _etcd: etcd,
    }
}

/// A fresh store of the given kind, kept in `dir` (embedded) or in a throwaway etcd under a
/// unique key prefix; the etcd process must outlive the store.
pub async fn open_store(
    engine: Engine,
    dir: &std::path::Path,
) -> (Arc<dyn Store>, Option<EtcdProcess>) {
    let (config, etcd) = match engine {
        Engine::Embedded => (
            StoreConfig::Embedded {
                path: dir.join("store.redb"),
            },
            None,
        ),
        Engine::Etcd => {
            let etcd = EtcdProcess::start();
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0);
            (
                StoreConfig::Etcd {
                    endpoints: etcd.endpoints(),
                    prefix: format!("/test-{nanos:x}"),
                },
                Some(etcd),
            )
        }
    };
    let store = kcp_store::open(&config).await.expect("store opens");
    (store, etcd)
}

/// The built-in resource `group`/`plural`.
/// A logical-cluster name written in a test, for as long as the test runs (leaked: a few bytes,
/// so `ObjectRef`s can be built anywhere).
pub fn lc(name: &str) -> &'static LogicalClusterName {
    Box::leak(Box::new(
        LogicalClusterName::parse(name).expect("a test's cluster name"),
    ))
}

pub fn builtin(group: &str, plural: &str) -> ResourceDef {
    kcp_api_types::builtin::catalogue()
        .into_iter()
        .find(|d| d.is(group, plural))
        .unwrap_or_else(|| panic!("no built-in resource {group}/{plural}"))
}

/// Runs each `async fn name(&H)` as two tests, `name::embedded` and `name::etcd`. `H` comes from
/// `harness` (an `async fn(Engine) -> H`; by default [`harness`]).
#[macro_export]
macro_rules! on_both_stores {
    (with $harness:path; $($name:ident),+ $(,)?) => {
        $(
            mod $name {
                use super::*;

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn embedded() {
                    let h = $harness($crate::testing::Engine::Embedded).await;
                    super::$name(&h).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn etcd() {
                    let h = $harness($crate::testing::Engine::Etcd).await;
                    super::$name(&h).await;
                }
            }
        )+
    };
    ($($name:ident),+ $(,)?) => {
        $crate::on_both_stores!(with $crate::testing::harness; $($name),+);
    };
}
