//! Authorization cost: GETs of one ConfigMap by an identity that bypasses authorization
//! (`system:masters`, the foundation's always-allow admin path) and by one that goes through kcp's
//! whole chain (`system:kcp:admin`: workspace access, then RBAC of a logical cluster holding 1,000
//! RoleBindings, then the bootstrap policy), on one shard holding 10,000 more logical clusters,
//! side by side at the same concurrency.

use http::{Method, StatusCode};
use serde_json::json;

use crate::client::{Conn, Connector};
use crate::config::Plan;
use crate::lc_memory;
use crate::objects;
use crate::phase::{self, Limits, Probe, Summary, Worker};
use crate::shard::{Backend, ShardProcess};

/// The logical cluster whose ConfigMap is read.
const LC: &str = "authz";
/// RoleBindings in its `default` namespace, none of them for the reader.
pub const ROLE_BINDINGS: usize = 1_000;
/// Other logical clusters on the shard.
pub const OTHER_LCS: usize = 10_000;
/// The kubeconfig context whose user goes through RBAC.
const RBAC_CONTEXT: &str = "root";

#[derive(Debug, Clone)]
pub struct AuthzResults {
    pub clients: Vec<usize>,
    /// Per concurrency: (system:masters, through RBAC).
    pub pairs: Vec<(Summary, Summary)>,
    pub role_bindings: usize,
    pub other_lcs: usize,
}

struct Get {
    conn: Conn,
    path: String,
}

impl Worker for Get {
    async fn op(&mut self, _seq: u64) -> anyhow::Result<()> {
        self.conn
            .expect(Method::GET, &self.path, None, |s| s == StatusCode::OK)
            .await?;
        Ok(())
    }
}

struct CreateLc {
    conn: Conn,
}

impl Worker for CreateLc {
    async fn op(&mut self, seq: u64) -> anyhow::Result<()> {
        lc_memory::create_lc(&mut self.conn, "other-", seq).await?;
        Ok(())
    }
}

struct CreateBinding {
    conn: Conn,
}

impl Worker for CreateBinding {
    async fn op(&mut self, seq: u64) -> anyhow::Result<()> {
        let body = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": format!("rb-{seq:05}")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": format!("user-{seq:05}")}],
        });
        self.conn
            .expect(
                Method::POST,
                &format!(
                    "/clusters/{LC}/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
                ),
                Some(serde_json::to_vec(&body)?.into()),
                |s| s == StatusCode::CREATED,
            )
            .await?;
        Ok(())
    }
}

async fn workers<W>(
    connector: &Connector,
    clients: usize,
    make: impl Fn(Conn) -> W,
) -> anyhow::Result<Vec<W>> {
    let conns = connector.pool(Plan::connections_for(clients)).await?;
    Ok((0..clients)
        .map(|i| make(conns[i % conns.len()].clone()))
        .collect())
}

/// Sets up a fresh shard on the embedded store and measures both identities.
pub async fn measure(plan: &Plan, binary: &std::path::Path) -> anyhow::Result<AuthzResults> {
    let shard = ShardProcess::start(binary, Backend::Embedded).await?;
    let probe = Probe {
        shard: Some(shard.pid()),
        etcd: None,
    };
    let mut admin = shard.conn().await?;
    admin
        .expect(
            Method::POST,
            &format!("/clusters/{LC}/apis/core.kcp.io/v1alpha1/logicalclusters"),
            Some(objects::logical_cluster()),
            |s| s == StatusCode::CREATED,
        )
        .await?;
    admin
        .expect(
            Method::POST,
            &format!("/clusters/{LC}/api/v1/namespaces/default/configmaps"),
            Some(objects::configmap("target", plan.payload_bytes, 0)),
            |s| s == StatusCode::CREATED,
        )
        .await?;
    let setup = |n: usize| Limits {
        duration: plan.setup_cap * 3,
        max_ops: n as u64,
    };
    let bindings = if plan.quick { 200 } else { ROLE_BINDINGS };
    let others = if plan.quick { 1_000 } else { OTHER_LCS };
    let made = phase::run(
        workers(&shard.connector, 16, |conn| CreateBinding { conn }).await?,
        setup(bindings),
        probe,
    )
    .await;
    anyhow::ensure!(
        made.ops == bindings as u64 && made.errors == 0,
        "creating RoleBindings: {} of {bindings}, first error: {}",
        made.ops,
        made.first_error.unwrap_or_default()
    );
    let made = phase::run(
        workers(&shard.connector, 64, |conn| CreateLc { conn }).await?,
        setup(others),
        probe,
    )
    .await;
    anyhow::ensure!(
        made.ops == others as u64 && made.errors == 0,
        "creating logical clusters: {} of {others}, first error: {}",
        made.ops,
        made.first_error.unwrap_or_default()
    );

    let rbac = shard.connector_for(RBAC_CONTEXT)?;
    let path = format!("/clusters/{LC}/api/v1/namespaces/default/configmaps/target");
    let limits = Limits {
        duration: plan.phase,
        max_ops: plan.max_ops,
    };
    let clients = vec![16, 64];
    let mut pairs = Vec::new();
    for &c in &clients {
        eprintln!("kcp-bench: authorization: GET as system:masters and through RBAC, {c} clients");
        let make = |conn| Get {
            conn,
            path: path.clone(),
        };
        let masters = phase::run(workers(&shard.connector, c, make).await?, limits, probe).await;
        let through_rbac = phase::run(workers(&rbac, c, make).await?, limits, probe).await;
        pairs.push((masters, through_rbac));
    }
    Ok(AuthzResults {
        clients,
        pairs,
        role_bindings: bindings,
        other_lcs: others,
    })
}
