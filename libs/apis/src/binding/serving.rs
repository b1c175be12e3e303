//! Serving what a logical cluster's bindings bind. Each bound resource becomes a bound CRD, as
//! kcp makes one in `system:bound-crds`, but never stored: the APIResourceSchema's spec in a CRD's
//! shape, annotated with the export's identity so its objects are stored under it
//! (`/<group>/<resource>/<identity>/<cluster>/...`). The cluster's bound CRDs are handed to the
//! server as its [`ApiSource::Bindings`] part, through the same interning as its own CRDs: every
//! binding of one schema and identity shares one compiled schema and, across clusters binding the
//! same exports, one part.

use kcp_api_types::custom::IDENTITY_ANNOTATION;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apiserver::ApiServer;
use kcp_apiserver::apis::ApiSource;
use kcp_apiserver::crd::ServedCrd;
use kcp_apiserver::registry::keyspace;
use serde_json::{Map, Value, json};

use super::{Defs, text};

/// The annotation kcp's bound CRDs carry.
const BOUND_CRD_ANNOTATION: &str = "apis.kcp.io/bound-crd";

/// Recomputes what `cluster` serves from its bindings.
pub fn refresh(server: &ApiServer, defs: &Defs, cluster: &LogicalClusterName) {
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
            let Some(schema) = cache.get(&key).and_then(|s| s.value().ok()) else {
                // kcp keeps serving a deleted schema's bound CRD; here the bound CRD is made
                // from the schema, so its resource is served again when the schema is back.
                continue;
            };
            if text(&schema, "/metadata/uid") != text(bound, "/schema/UID") {
                continue;
            }
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
