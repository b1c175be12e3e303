//! What the controller tests share: an API server over the embedded store or a throwaway etcd (no
//! controllers started, each test starts the ones it exercises), registry shortcuts, and polling.
#![allow(dead_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kcp_api_types::ResourceDef;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::registry::{DeleteOptions, ObjectRef, UpdateKind, WriteOptions};
use kcp_apiserver::{ApiServer, ApiServerConfig};
use kcp_store::StoreConfig;
use kcp_store::testing::EtcdProcess;
use serde_json::{Value, json};

/// Bound for "eventually": only turns a hang into a failure, never a timing assertion.
pub const EVENTUALLY: Duration = Duration::from_secs(30);

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

#[derive(Clone, Copy, Debug)]
pub enum Engine {
    Embedded,
    Etcd,
}

pub async fn harness(engine: Engine) -> Harness {
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
    let server = ApiServer::new(ApiServerConfig {
        store,
        shard_name: "root".into(),
        external_url: "https://localhost:6443".into(),
        authenticators: vec![],
        authorizers: vec![],
    })
    .await
    .expect("the API server starts");
    Harness {
        server,
        _dir: dir,
        _etcd: etcd,
    }
}

/// Runs `async fn name(&Harness)` as two tests: on the embedded store and on etcd.
#[macro_export]
macro_rules! on_both_stores {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                use super::*;

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn embedded() {
                    let h = common_ctrl::harness(common_ctrl::Engine::Embedded).await;
                    super::$name(&h).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn etcd() {
                    let h = common_ctrl::harness(common_ctrl::Engine::Etcd).await;
                    super::$name(&h).await;
                }
            }
        )+
    };
}

/// The definition `group`/`plural` as `cluster` serves it (built-ins and established CRDs).
pub fn def(h: &Harness, cluster: &str, group: &str, plural: &str) -> Arc<ResourceDef> {
    h.server
        .apis_of(cluster)
        .resources()
        .iter()
        .find(|d| d.group == group && d.plural == plural)
        .cloned()
        .unwrap_or_else(|| panic!("{cluster} does not serve {group}/{plural}"))
}

pub async fn create(
    h: &Harness,
    cluster: &str,
    namespace: Option<&str>,
    group: &str,
    plural: &str,
    obj: Value,
) -> Result<Value, ApiError> {
    h.server
        .registry()
        .create(
            &def(h, cluster, group, plural),
            cluster,
            namespace,
            obj,
            WriteOptions::default(),
        )
        .await
        .map(|w| w.object)
}

pub async fn get(
    h: &Harness,
    cluster: &str,
    namespace: Option<&str>,
    group: &str,
    plural: &str,
    name: &str,
) -> Option<Value> {
    let at = ObjectRef {
        cluster,
        namespace,
        name,
    };
    h.server
        .registry()
        .get(&def(h, cluster, group, plural), at)
        .await
        .ok()?
        .value()
        .ok()
}

pub async fn delete(
    h: &Harness,
    cluster: &str,
    namespace: Option<&str>,
    group: &str,
    plural: &str,
    name: &str,
) {
    let at = ObjectRef {
        cluster,
        namespace,
        name,
    };
    h.server
        .registry()
        .delete(
            &def(h, cluster, group, plural),
            at,
            &DeleteOptions::default(),
        )
        .await
        .unwrap_or_else(|e| panic!("deleting {plural} {name}: {e:?}"));
}

/// Replaces an object through `edit` (a main-resource update).
pub async fn edit(
    h: &Harness,
    cluster: &str,
    namespace: Option<&str>,
    group: &str,
    plural: &str,
    name: &str,
    edit: impl Fn(&mut Value),
) -> Value {
    let at = ObjectRef {
        cluster,
        namespace,
        name,
    };
    h.server
        .registry()
        .update(
            &def(h, cluster, group, plural),
            at,
            UpdateKind::Main,
            WriteOptions::default(),
            |old| {
                let mut new = old.clone();
                edit(&mut new);
                Ok(new)
            },
        )
        .await
        .unwrap_or_else(|e| panic!("updating {plural} {name}: {e:?}"))
        .object
}

pub async fn create_namespace(h: &Harness, cluster: &str, name: &str) {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    create(h, cluster, None, "", "namespaces", ns)
        .await
        .unwrap_or_else(|e| panic!("creating namespace {name}: {e:?}"));
}

/// A new logical cluster with its `default` namespace.
pub async fn create_cluster(h: &Harness, cluster: &str) {
    let lc = json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster", "metadata": {"name": "cluster"}});
    create(h, cluster, None, "core.kcp.io", "logicalclusters", lc)
        .await
        .unwrap_or_else(|e| panic!("creating cluster {cluster}: {e:?}"));
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
    match create(h, cluster, None, "", "namespaces", ns).await {
        Ok(_) => {}
        Err(e) if e.code == 409 => {}
        Err(e) => panic!("creating the default namespace of {cluster}: {e:?}"),
    }
}

/// Polls `check` until it returns `Some`; fails with `what` after [`EVENTUALLY`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + EVENTUALLY;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
