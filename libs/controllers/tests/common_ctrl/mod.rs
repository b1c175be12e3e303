//! What the controller tests share: an API server over the embedded store or a throwaway etcd (no
//! controllers started, each test starts the ones it exercises), registry shortcuts, and polling.
#![allow(dead_code)]

use kcp_apiserver::testing::lc;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kcp_api_types::ResourceDef;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::registry::{DeleteOptions, ObjectRef, UpdateKind, WriteOptions};
use serde_json::{Value, json};

/// Bound for "eventually": only turns a hang into a failure, never a timing assertion.
pub const EVENTUALLY: Duration = Duration::from_secs(30);

pub use kcp_apiserver::testing::Harness;

/// The definition `group`/`plural` as `cluster` serves it (built-ins and established CRDs).
pub fn def(h: &Harness, cluster: &str, group: &str, plural: &str) -> Arc<ResourceDef> {
    let cluster = lc(cluster);
    h.server
        .apis_of(cluster)
        .resources()
        .iter()
        .find(|d| d.is(group, plural))
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
    let cluster = lc(cluster);
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
    let cluster = lc(cluster);
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
    let cluster = lc(cluster);
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
    let cluster = lc(cluster);
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
    let cluster = lc(cluster);
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    create(h, cluster, None, "", "namespaces", ns)
        .await
        .unwrap_or_else(|e| panic!("creating namespace {name}: {e:?}"));
}

/// A new logical cluster with its `default` namespace.
pub async fn create_cluster(h: &Harness, cluster: &str) {
    let cluster = lc(cluster);
    let lc = json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster", "metadata": {"name": "cluster"}});
    create(h, cluster, None, "core.kcp.io", "logicalclusters", lc)
        .await
        .unwrap_or_else(|e| panic!("creating cluster {cluster}: {e:?}"));
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
    match create(h, cluster, None, "", "namespaces", ns).await {
        Ok(_) => {}
        Err(e) if e.is_conflict_or_exists() => {}
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
