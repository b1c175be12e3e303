//! Widgets as an API a provider exports: the same schema as the CRD of [`crate::custom`] published
//! as an APIResourceSchema in an APIExport, and APIBindings of it, so a bound resource is measured
//! next to the same schema as a local CRD.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::client::Conn;
use crate::custom;

/// The export's (and the schema's) name.
pub const EXPORT: &str = "widgets";
/// How long an export may take to get its identity, and a binding to be Bound and served.
const DEADLINE: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(10);

/// The APIResourceSchema `v1.widgets.bench.example.com`: the CRD's spec, each version's
/// `schema.openAPIV3Schema` as the version's `schema`.
pub fn resource_schema() -> anyhow::Result<Bytes> {
    let crd: Value = serde_json::from_slice(&custom::crd()).context("the Widget CRD")?;
    let mut spec = crd["spec"].clone();
    if let Some(versions) = spec["versions"].as_array_mut() {
        for version in versions {
            let schema = version["schema"]["openAPIV3Schema"].take();
            version["schema"] = schema;
        }
    }
    let name = format!("v1.{}", custom::CRD_NAME);
    let body = json!({
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIResourceSchema",
        "metadata": {"name": name},
        "spec": spec,
    });
    Ok(Bytes::from(body.to_string()))
}

fn export() -> Bytes {
    let body = json!({
        "apiVersion": "apis.kcp.io/v1alpha2",
        "kind": "APIExport",
        "metadata": {"name": EXPORT},
        "spec": {"resources": [{
            "name": "widgets",
            "group": "bench.example.com",
            "schema": format!("v1.{}", custom::CRD_NAME),
            "storage": {"crd": {}},
        }]},
    });
    Bytes::from(body.to_string())
}

/// An APIBinding `name` of the export in logical cluster (or workspace path) `provider`.
pub fn binding(name: &str, provider: &str) -> Bytes {
    let body = json!({
        "apiVersion": "apis.kcp.io/v1alpha2",
        "kind": "APIBinding",
        "metadata": {"name": name},
        "spec": {"reference": {"export": {"path": provider, "name": EXPORT}}},
    });
    Bytes::from(body.to_string())
}

/// Where APIBindings of `cluster` are created.
pub fn bindings(cluster: &str) -> String {
    format!("/clusters/{cluster}/apis/apis.kcp.io/v1alpha2/apibindings")
}

/// Publishes the schema and the export in `provider` (a logical cluster or a workspace path; an
/// existing one is fine) and waits until the export has its identity.
pub async fn publish(conn: &mut Conn, provider: &str) -> anyhow::Result<()> {
    let exists = |s: StatusCode| s == StatusCode::CREATED || s == StatusCode::CONFLICT;
    let base = format!("/clusters/{provider}/apis/apis.kcp.io");
    conn.expect(
        Method::POST,
        &format!("{base}/v1alpha1/apiresourceschemas"),
        Some(resource_schema()?),
        exists,
    )
    .await
    .context("creating the APIResourceSchema")?;
    let exports = format!("{base}/v1alpha2/apiexports");
    conn.expect(Method::POST, &exports, Some(export()), exists)
        .await
        .context("creating the APIExport")?;
    let path = format!("{exports}/{EXPORT}");
    poll(&format!("GET {path}: no identity hash"), || {
        let mut conn = conn.clone();
        let path = path.clone();
        async move {
            let body = conn.ok(Method::GET, &path, None).await?;
            let export: Value = serde_json::from_slice(&body)?;
            Ok(export["status"]["identityHash"]
                .as_str()
                .is_some_and(|h| !h.is_empty()))
        }
    })
    .await
}

/// Binds the export of `provider` in `consumer` (an existing binding is fine) and waits until the
/// binding is Bound and Widgets are served in namespace `ns` there.
pub async fn bind(conn: &mut Conn, provider: &str, consumer: &str, ns: &str) -> anyhow::Result<()> {
    conn.expect(
        Method::POST,
        &bindings(consumer),
        Some(binding(EXPORT, provider)),
        |s| s == StatusCode::CREATED || s == StatusCode::CONFLICT,
    )
    .await
    .context("creating the APIBinding")?;
    let widgets = custom::collection(consumer, ns);
    poll(&format!("GET {widgets}: not served"), || {
        let mut conn = conn.clone();
        let widgets = widgets.clone();
        async move {
            let (status, _) = conn.call(Method::GET, &widgets, None).await?;
            Ok(status == StatusCode::OK)
        }
    })
    .await
}

/// Calls `check` until it is true, failing with `what` after [`DEADLINE`].
async fn poll<F, Fut>(what: &str, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let start = Instant::now();
    loop {
        if check().await? {
            return Ok(());
        }
        if start.elapsed() > DEADLINE {
            bail!("{what} after {DEADLINE:?}");
        }
        tokio::time::sleep(POLL).await;
    }
}
