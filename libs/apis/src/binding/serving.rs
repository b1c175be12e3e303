//! Serving what a logical cluster's bindings bind. Each bound resource becomes a bound CRD, as
//! kcp makes one in `system:bound-crds`, but never stored: the APIResourceSchema's spec in a CRD's
//! shape, annotated with the export's identity so its objects are stored under it
//! (`/<group>/<resource>/<identity>/<cluster>/...`). The cluster's bound CRDs are handed to the
//! server as its [`ApiSource::Bindings`] part, through the same interning as its own CRDs: every
//! binding of one schema and identity shares one compiled schema and, across clusters binding the
//! same exports, one part.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kcp_api_types::custom::IDENTITY_ANNOTATION;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apiserver::ApiServer;
use kcp_apiserver::apis::ApiSource;
use kcp_apiserver::crd::ServedCrd;
use kcp_apiserver::registry::keyspace;
use kcp_apiserver::watch_cache::CachedObject;
use serde_json::{Map, Value, json};

use super::{Defs, text};

/// The annotation kcp's bound CRDs carry.
const BOUND_CRD_ANNOTATION: &str = "apis.kcp.io/bound-crd";

/// The APIResourceSchemas bindings were last served from, by UID: a schema deleted while bound
/// keeps serving from here, as kcp keeps serving its bound CRD (until a restart: then the
/// resource comes back with the schema).
#[derive(Default)]
pub struct SchemaMemory {
    by_uid: parking_lot::Mutex<HashMap<String, Arc<CachedObject>>>,
}

impl SchemaMemory {
    fn remember(&self, uid: &str, schema: &Arc<CachedObject>) {
        let mut by_uid = self.by_uid.lock();
        if !by_uid.get(uid).is_some_and(|s| Arc::ptr_eq(s, schema)) {
            by_uid.insert(uid.to_string(), schema.clone());
        }
    }

    fn recall(&self, uid: &str) -> Option<Arc<CachedObject>> {
        self.by_uid.lock().get(uid).cloned()
    }

    /// Keeps only the schemas of `in_use` (the UIDs some binding still names).
    pub fn retain(&self, in_use: &HashSet<String>) {
        self.by_uid.lock().retain(|uid, _| in_use.contains(uid));
    }
}

/// Recomputes what `cluster` serves from its bindings.
pub fn refresh(
    server: &ApiServer,
    defs: &Defs,
    memory: &SchemaMemory,
    cluster: &LogicalClusterName,
) {
    let cache = server.registry().cache();
    let mut crds = Vec::new();
    for cached in cache.list(&keyspace(&defs.bindings).cluster(cluster), None) {
        let Ok(binding) = cached.value() else {
            continue;
        };
        let terminating = binding.pointer("/metadata/deletionTimestamp").is_some();
        let export_cluster = text(&binding, "/status/apiExportClusterName");
        let Ok(export_cluster) = LogicalClusterName::parse(export_cluster) else {
            continue;
        };
        for bound in (binding
            .pointer("/status/boundResources")
            .and_then(Value::as_array))
        .into_iter()
        .flatten()
        {
            let key =
                keyspace(&defs.schemas).object(&export_cluster, None, text(bound, "/schema/name"));
            let uid = text(bound, "/schema/UID");
            let stored = cache.get(&key).and_then(|cached| {
                let schema = cached.value().ok()?;
                (text(&schema, "/metadata/uid") == uid).then_some((cached, schema))
            });
            let schema = match stored {
                Some((cached, schema)) => {
                    memory.remember(uid, &cached);
                    schema
                }
                None => match memory.recall(uid).and_then(|s| s.value().ok()) {
                    Some(schema) => schema,
                    None => continue,
                },
            };
            crds.push(bound_crd(&schema, bound, terminating));
        }
    }
    crds.sort_by(|a, b| {
        let key = |c: &Value| {
            (
                text(c, "/spec/group").to_string(),
                text(c, "/spec/names/plural").to_string(),
            )
        };
        key(a).cmp(&key(b))
    });
    let served: Vec<ServedCrd<'_>> = crds.iter().map(|crd| ServedCrd { crd }).collect();
    server
        .crd_apis()
        .set_part(server.cluster_apis(), ApiSource::Bindings, cluster, &served);
}

/// The CRD an APIResourceSchema bound with `bound` (an entry of `status.boundResources`) serves
/// as; `terminating` while its binding is being deleted (no new objects).
pub fn bound_crd(schema: &Value, bound: &Value, terminating: bool) -> Value {
    let spec = schema.get("spec").cloned().unwrap_or_else(|| json!({}));
    let versions: Vec<Value> = (spec.get("versions").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .map(|v| {
            let mut version: Map<String, Value> = v.as_object().cloned().unwrap_or_default();
            if let Some(schema) = version.remove("schema") {
                version.insert("schema".into(), json!({"openAPIV3Schema": schema}));
            }
            Value::Object(version)
        })
        .collect();
    let stored = bound
        .get("storageVersions")
        .cloned()
        .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        .unwrap_or_else(|| json!([]));
    let mut metadata = json!({
        "name": text(schema, "/metadata/uid"),
        "annotations": {
            BOUND_CRD_ANNOTATION: "",
            IDENTITY_ANNOTATION: text(bound, "/schema/identityHash"),
        },
    });
    if terminating {
        metadata["deletionTimestamp"] = json!("1970-01-01T00:00:00Z");
    }
    let mut crd_spec = json!({
        "group": spec.get("group").cloned().unwrap_or_else(|| json!("")),
        "names": spec.get("names").cloned().unwrap_or_else(|| json!({})),
        "scope": spec.get("scope").cloned().unwrap_or_else(|| json!("Namespaced")),
        "versions": versions,
    });
    if let Some(conversion) = spec.get("conversion") {
        crd_spec["conversion"] = conversion.clone();
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": crd_spec,
        "status": {
            "acceptedNames": spec.get("names").cloned().unwrap_or_else(|| json!({})),
            "storedVersions": stored,
        },
    })
}
