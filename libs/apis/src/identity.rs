//! APIExport identities, as kcp's `kcp-apiexport` controller keeps them: an export without an
//! identity Secret gets `kcp-system/<export>` holding a random key and `spec.identity.secretRef`
//! pointing at it; once it has one, `status.identityHash` is the SHA-256 (lower-case hex) of the
//! key, set once and verified on every pass (condition `IdentityValid`). Unless annotated
//! `apiexports.apis.kcp.io/skip-endpointslice`, an export also gets an APIExportEndpointSlice of
//! its name, owned by it (its URLs are filled by the virtual-workspace server).

use std::sync::{Arc, Weak};

use base64::Engine;
use kcp_api_types::ResourceDef;
use kcp_api_types::apis::{GROUP, IDENTITY_NAMESPACE, IDENTITY_SECRET_KEY};
use kcp_api_types::conditions::{same_status, with_transition_times};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::hooks::ClusterResolver;
use kcp_apiserver::registry::{
    ObjectRef, UpdateKind, WriteOptions, created_or_existed, keyspace, now_rfc3339,
};
use kcp_controllers::builtin;
use kcp_controllers::feed::{Change, Feed, Feeds};
use kcp_controllers::objects::{self, ObjectQueue};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The annotation that spares an export its default endpoint slice.
pub const SKIP_ENDPOINT_SLICE_ANNOTATION: &str = "apiexports.apis.kcp.io/skip-endpointslice";

struct Defs {
    exports: Arc<ResourceDef>,
    slices: Arc<ResourceDef>,
    secrets: Arc<ResourceDef>,
    namespaces: Arc<ResourceDef>,
}

struct Controller {
    server: Weak<ApiServer>,
    resolver: Option<Arc<dyn ClusterResolver>>,
    defs: Defs,
}

/// The identity hash of a key: lower-case hex SHA-256 of its bytes.
pub fn identity_hash(key: &[u8]) -> String {
    Sha256::digest(key)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A fresh identity key: 256 random bits, as text.
fn new_key() -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// Starts the controller; it stops with the server.
pub fn spawn(server: Arc<ApiServer>, resolver: Option<Arc<dyn ClusterResolver>>) {
    let (Some(exports), Some(slices), Some(secrets), Some(namespaces)) = (
        builtin(GROUP, "apiexports").filter(|d| d.version == "v1alpha2"),
        builtin(GROUP, "apiexportendpointslices"),
        builtin("", "secrets"),
        builtin("", "namespaces"),
    ) else {
        tracing::error!("APIExport identity controller: a kind is missing; not started");
        return;
    };
    let stop = server.shutdown_token();
    let cache = server.registry().cache().clone();
    let exports_feed = Feed::new(cache.clone(), keyspace(&exports).all_clusters());
    // An identity Secret written or deleted re-checks its export (same name, kcp-system).
    let secrets_feed = Feed::new(cache, keyspace(&secrets).all_clusters());
    let controller = Arc::new(Controller {
        server: Arc::downgrade(&server),
        resolver,
        defs: Defs {
            exports,
            slices,
            secrets,
            namespaces,
        },
    });
    drop(server);
    let worker = controller.clone();
    let queue = objects::reconciling(
        4,
        stop.clone(),
        "APIExport identity failed",
        move |cluster, name| {
            let controller = worker.clone();
            async move { controller.reconcile(&cluster, &name).await }
        },
    );
    let (c, q) = (controller.clone(), queue.clone());
    let exports = Feeds::new().on(exports_feed, move |change| match change {
        Change::Event(e) => q.add((e.object.cluster.clone(), e.object.name.clone())),
        Change::Resync => c.all(&q),
    });
    let (c, q) = (controller.clone(), queue.clone());
    let feeds = exports.on(secrets_feed, move |change| match change {
        Change::Event(e) if e.object.namespace.as_deref() == Some(IDENTITY_NAMESPACE) => {
            q.add((e.object.cluster.clone(), e.object.name.clone()));
        }
        Change::Event(_) => {}
        Change::Resync => c.all(&q),
    });
    feeds.spawn(stop, move || controller.all(&queue));
}

impl Controller {
    fn all(&self, queue: &ObjectQueue) {
        if let Some(server) = self.server.upgrade() {
            objects::enqueue_all(server.registry().cache(), &self.defs.exports, queue);
        }
    }

    async fn reconcile(&self, cluster: &LogicalClusterName, name: &str) -> Result<(), ApiError> {
        let Some(server) = self.server.upgrade() else {
            return Ok(());
        };
        let key = keyspace(&self.defs.exports).object(cluster, None, name);
        let Some(cached) = server.registry().cache().get(&key) else {
            return Ok(());
        };
        let export = cached.value().map_err(ApiError::internal)?;
        if export.pointer("/metadata/deletionTimestamp").is_some() {
            return Ok(());
        }
        let Some(secret_ref) = export.pointer("/spec/identity/secretRef").cloned() else {
            return self.generate(&server, cluster, name).await;
        };
        let verified = self.verify(&server, cluster, &export, &secret_ref);
        self.write_status(&server, cluster, name, &export, verified)
            .await?;
        let skip = export
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(SKIP_ENDPOINT_SLICE_ANNOTATION))
            .is_some();
        if !skip {
            self.default_slice(&server, cluster, name, &export).await?;
        }
        Ok(())
    }

    /// A new identity: the Secret (kept if it is there already), then the export's reference to
    /// it; the hash follows on the next pass.
    async fn generate(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
    ) -> Result<(), ApiError> {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": IDENTITY_NAMESPACE}});
        server
            .create_missing(&self.defs.namespaces, cluster, namespace)
            .await?;
        let secret = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": IDENTITY_NAMESPACE},
            "stringData": {IDENTITY_SECRET_KEY: new_key()},
        });
        created_or_existed(
            server
                .registry()
                .create(
                    &self.defs.secrets,
                    cluster,
                    Some(IDENTITY_NAMESPACE),
                    secret,
                    WriteOptions::default(),
                )
                .await,
        )?;
        let at = ObjectRef {
            cluster,
            namespace: None,
            name,
        };
        server
            .registry()
            .update_if_present(
                &self.defs.exports,
                at,
                UpdateKind::Main,
                WriteOptions::default(),
                |old| {
                    let mut new = old.clone();
                    if new.pointer("/spec/identity/secretRef").is_none() {
                        let identity =
                            (new["spec"]["identity"].as_object().cloned()).unwrap_or_default();
                        let mut identity = Value::Object(identity);
                        identity["secretRef"] =
                            json!({"namespace": IDENTITY_NAMESPACE, "name": name});
                        new["spec"]["identity"] = identity;
                    }
                    Ok(new)
                },
            )
            .await
    }

    /// The hash of the referenced Secret's key, or why there is none (kcp's messages).
    fn verify(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        export: &Value,
        secret_ref: &Value,
    ) -> Result<String, String> {
        let text = |key: &str| {
            secret_ref
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        let (namespace, secret_name) = (text("namespace"), text("name"));
        let key = keyspace(&self.defs.secrets).object(cluster, Some(namespace), secret_name);
        let secret = (server.registry().cache().get(&key))
            .and_then(|s| s.value().ok())
            .ok_or_else(|| format!("secrets \"{secret_name}\" not found"))?;
        let data = secret
            .pointer(&format!("/data/{IDENTITY_SECRET_KEY}"))
            .and_then(Value::as_str)
            .and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok())
            .filter(|d| !d.is_empty())
            .ok_or_else(|| format!("secret is missing data.{IDENTITY_SECRET_KEY}"))?;
        let hash = identity_hash(&data);
        match export
            .pointer("/status/identityHash")
            .and_then(Value::as_str)
        {
            Some(set) if !set.is_empty() && set != hash => Err(format!(
                "hash mismatch: identity secret hash {hash:?} must match status.identityHash {set:?}"
            )),
            _ => Ok(hash),
        }
    }

    async fn write_status(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
        export: &Value,
        verified: Result<String, String>,
    ) -> Result<(), ApiError> {
        let mut status = export.get("status").cloned().unwrap_or_else(|| json!({}));
        let condition = match &verified {
            Ok(hash) => {
                if status
                    .get("identityHash")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    status["identityHash"] = json!(hash);
                }
                json!({"type": "IdentityValid", "status": "True"})
            }
            Err(message) => json!({
                "type": "IdentityValid", "status": "False", "severity": "Error",
                "reason": "IdentityVerificationFailed", "message": message,
            }),
        };
        let mut conditions: Vec<Value> = (status.get("conditions").and_then(Value::as_array))
            .into_iter()
            .flatten()
            .filter(|c| {
                let kind = c.get("type").and_then(Value::as_str);
                // kcp drops the deprecated URL condition unless its feature gate is on.
                kind != Some("IdentityValid") && kind != Some("VirtualWorkspaceURLsReady")
            })
            .cloned()
            .collect();
        conditions.push(condition);
        conditions.sort_by(|a, b| a["type"].as_str().cmp(&b["type"].as_str()));
        status["conditions"] = Value::Array(conditions);
        if let Some(s) = status.as_object_mut() {
            s.remove("virtualWorkspaces");
        }
        if same_status(export.get("status"), &status) {
            return Ok(());
        }
        let now = now_rfc3339();
        let at = ObjectRef {
            cluster,
            namespace: None,
            name,
        };
        server
            .registry()
            .update_if_present(
                &self.defs.exports,
                at,
                UpdateKind::Status,
                WriteOptions::default(),
                |old| {
                    let mut new = old.clone();
                    let mut desired = status.clone();
                    // The hash, once set, is the stored one (another pass may have set it).
                    if let Some(set) = old
                        .pointer("/status/identityHash")
                        .filter(|h| h.as_str().is_some_and(|h| !h.is_empty()))
                    {
                        desired["identityHash"] = set.clone();
                    }
                    new["status"] = with_transition_times(desired, old, &now);
                    Ok(new)
                },
            )
            .await
    }

    async fn default_slice(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
        export: &Value,
    ) -> Result<(), ApiError> {
        let key = keyspace(&self.defs.slices).object(cluster, None, name);
        if server.registry().cache().get(&key).is_some() {
            return Ok(());
        }
        let mut reference = json!({"name": name});
        if let Some(path) = (self.resolver.as_ref()).and_then(|r| r.path_of(cluster)) {
            reference["path"] = json!(path.as_str());
        }
        let uid = export.pointer("/metadata/uid").cloned().unwrap_or_default();
        let slice = json!({
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIExportEndpointSlice",
            "metadata": {
                "name": name,
                "ownerReferences": [{
                    "apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport",
                    "name": name, "uid": uid,
                }],
            },
            "spec": {"export": reference},
        });
        server
            .create_missing(&self.defs.slices, cluster, slice)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_hex_sha256_of_the_key() {
        assert_eq!(
            identity_hash(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let key = new_key();
        assert_eq!(key.len(), 43);
        assert_ne!(key, new_key());
    }
}
