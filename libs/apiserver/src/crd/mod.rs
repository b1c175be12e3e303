//! CustomResourceDefinitions per logical cluster: the CRDs' part of each cluster's APIs.
//!
//! An LC without CRDs serves the shared built-in API set. An LC with CRDs has a part interned by
//! the content of its CRDs ([`crate::apis`] composes it with the built-ins into an interned set),
//! so ten thousand LCs holding the same CRD share one part, one compiled schema per version, one
//! API set and one set of OpenAPI documents: the per-LC cost is a map entry. [`controller`] keeps
//! these parts and the CRDs' conditions up to date from the watch cache, and deletes the custom
//! resources of a deleted CRD.

pub mod controller;
mod openapi;

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use kcp_api_types::custom::{self, CompiledVersion};
use kcp_api_types::{ResourceDef, builtin::crd::CLEANUP_FINALIZER};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use parking_lot::Mutex;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::apis::{ApiPart, ApiSource, ClusterApis, Fingerprint};

fn fingerprint(parts: &[&Value]) -> Fingerprint {
    let mut hasher = Sha256::new();
    for part in parts {
        // serde_json keeps insertion order; identical CRDs written by the same tool hash alike,
        // and a miss only costs a second copy.
        hasher.update(serde_json::to_vec(part).unwrap_or_default());
        hasher.update([0]);
    }
    hasher.finalize().into()
}

/// The CRDs' part of each logical cluster's APIs ([`ApiSource::Crds`]): equal CRDs in many
/// clusters share one part (one ResourceDef per version) and one compiled schema per version.
#[derive(Default)]
pub struct CrdApis {
    interned_parts: Mutex<HashMap<Fingerprint, Weak<ApiPart>>>,
    interned_versions: Mutex<HashMap<Fingerprint, Weak<CompiledVersion>>>,
}

/// A CRD whose names were accepted, as the controller hands it over.
pub struct ServedCrd<'a> {
    pub crd: &'a Value,
}

impl CrdApis {
    /// Makes the given CRDs (in a stable order) a cluster's CRD part of `apis`.
    pub fn set_cluster(
        &self,
        apis: &ClusterApis,
        cluster: &LogicalClusterName,
        crds: &[ServedCrd<'_>],
    ) {
        self.set_part(apis, ApiSource::Crds, cluster, crds);
    }

    /// Makes the given CRDs `source`'s part of `cluster`'s APIs: the cluster's own, or the bound
    /// CRDs kcp-apis makes of the APIResourceSchemas its bindings bind (annotated with their
    /// export's identity, [`kcp_api_types::custom::IDENTITY_ANNOTATION`]). Parts are interned
    /// across sources: equal bound CRDs in many clusters share one part and compiled schemas.
    pub fn set_part(
        &self,
        apis: &ClusterApis,
        source: ApiSource,
        cluster: &LogicalClusterName,
        crds: &[ServedCrd<'_>],
    ) {
        apis.set_part(source, cluster, self.part(crds));
    }

    /// The part the given CRDs (in a stable order) serve, shared with every cluster and virtual
    /// workspace serving equal ones; `None` for no CRDs.
    pub fn part(&self, crds: &[ServedCrd<'_>]) -> Option<Arc<ApiPart>> {
        if crds.is_empty() {
            return None;
        }
        let terminating = Value::Bool(true);
        let parts: Vec<&Value> = crds
            .iter()
            .flat_map(|c| {
                [
                    c.crd.get("spec").unwrap_or(&Value::Null),
                    c.crd
                        .pointer("/status/acceptedNames")
                        .unwrap_or(&Value::Null),
                    // Versions objects may be stored in shape the served conversion.
                    c.crd
                        .pointer("/status/storedVersions")
                        .unwrap_or(&Value::Null),
                    if is_terminating(c.crd) {
                        &terminating
                    } else {
                        &Value::Null
                    },
                    // Bound CRDs of different exports' identities store apart.
                    c.crd
                        .pointer("/metadata/annotations")
                        .and_then(|a| a.get(custom::IDENTITY_ANNOTATION))
                        .unwrap_or(&Value::Null),
                ]
            })
            .collect();
        let key = fingerprint(&parts);
        if let Some(part) = self.interned_parts.lock().get(&key).and_then(Weak::upgrade) {
            return Some(part);
        }
        let part = Arc::new(ApiPart {
            resources: self.build_part(crds),
            fingerprint: key,
        });
        let mut interned = self.interned_parts.lock();
        interned.retain(|_, w| w.strong_count() > 0);
        interned.insert(key, Arc::downgrade(&part));
        Some(part)
    }

    fn build_part(&self, crds: &[ServedCrd<'_>]) -> Vec<Arc<ResourceDef>> {
        let mut resources: Vec<Arc<ResourceDef>> = Vec::new();
        for served in crds {
            let mut versions = custom::served_versions(served.crd);
            versions.sort_by(|a, b| {
                version_priority(b.get("name").and_then(Value::as_str).unwrap_or_default()).cmp(
                    &version_priority(a.get("name").and_then(Value::as_str).unwrap_or_default()),
                )
            });
            // Objects move between each served version and the storage one (pruned to each).
            let storage_name = custom::storage_version(served.crd).unwrap_or_default();
            let storage_version = (served.crd.pointer("/spec/versions"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|v| v.get("name").and_then(Value::as_str) == Some(storage_name));
            let storage_compiled = storage_version.and_then(|v| self.compile(v));
            for version in versions {
                let Some(compiled) = self.compile(version) else {
                    continue;
                };
                let is_storage = version.get("name").and_then(Value::as_str) == Some(storage_name);
                let storage = (!is_storage).then(|| storage_compiled.clone()).flatten();
                let mut def = custom::version_def(served.crd, version, compiled, storage);
                def.deprecation_warning = deprecation_warning(served.crd, version);
                // A CRD being deleted still serves its objects (so they can be listed and
                // deleted) but takes no new ones, as in Kubernetes.
                if is_terminating(served.crd) {
                    def.verbs.retain(|v| v != "create");
                }
                // A built-in of the same group and resource wins, as kcp's system APIs do:
                // the composition keeps the first (ClusterApis).
                resources.push(Arc::new(def));
            }
        }
        resources
    }

    /// The compiled schema of a version definition, shared by every CRD with the same one.
    fn compile(&self, version: &Value) -> Option<Arc<CompiledVersion>> {
        let schema_json = version.pointer("/schema/openAPIV3Schema")?;
        let key = fingerprint(&[schema_json]);
        if let Some(found) = self
            .interned_versions
            .lock()
            .get(&key)
            .and_then(Weak::upgrade)
        {
            return Some(found);
        }
        let compiled = match compile_version(schema_json) {
            Ok(c) => Arc::new(c),
            Err(err) => {
                tracing::warn!(error = %err, "a CRD version schema does not compile");
                return None;
            }
        };
        let mut interned = self.interned_versions.lock();
        interned.retain(|_, w| w.strong_count() > 0);
        interned.insert(key, Arc::downgrade(&compiled));
        Some(compiled)
    }

    /// How many distinct CRD parts and compiled versions are alive (for tests and benchmarks).
    pub fn interned_counts(&self) -> (usize, usize) {
        let sets = self
            .interned_parts
            .lock()
            .values()
            .filter(|w| w.strong_count() > 0)
            .count();
        let versions = self
            .interned_versions
            .lock()
            .values()
            .filter(|w| w.strong_count() > 0)
            .count();
        (sets, versions)
    }
}

/// Compiles a version's `openAPIV3Schema` for serving: the structure with `metadata` linked to the
/// built-in ObjectMeta, and the OpenAPI component published for it.
fn compile_version(schema_json: &Value) -> Result<CompiledVersion, kcp_schema::SchemaError> {
    let schema = kcp_schema::crd::compile_version_schema(schema_json)?;
    let mut openapi = schema_json.clone();
    openapi::unfold(&mut openapi);
    if let Some(props) = openapi.get_mut("properties").and_then(Value::as_object_mut) {
        // What kube-apiserver publishes of every custom resource besides its schema (kubectl
        // explain lists them): the type fields and the object metadata, described.
        props.insert("metadata".into(), object_meta_property());
        props.insert(
            "apiVersion".into(),
            serde_json::json!({
                "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources",
                "type": "string",
            }),
        );
        props.insert(
            "kind".into(),
            serde_json::json!({
                "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "type": "string",
            }),
        );
    }
    // Compile errors were refused when the CRD was written; a schema that fails here anyway
    // (written by an older version) is served without its rules rather than not at all.
    let rules = match kcp_schema::CelRules::compile(schema_json, "spec.validation.openAPIV3Schema")
    {
        Ok(rules) if !rules.is_empty() => Some(Arc::new(rules)),
        Ok(_) => None,
        Err(causes) => {
            tracing::warn!(?causes, "CEL rules of a served CRD do not compile");
            None
        }
    };
    Ok(CompiledVersion {
        schema: Arc::new(schema),
        openapi: Arc::new(openapi),
        rules,
    })
}

/// The warning of a version marked `deprecated`: its own `deprecationWarning`, else Kubernetes'
/// default naming the highest-priority served, non-deprecated version above it
/// (apiextensions-apiserver's defaultDeprecationWarning).
fn deprecation_warning(crd: &Value, version: &Value) -> Option<String> {
    if version.get("deprecated").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    if let Some(custom) = version.get("deprecationWarning").and_then(Value::as_str) {
        return Some(custom.to_string());
    }
    let at = |v: &Value, key: &str| -> String {
        v.pointer(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (group, kind) = (at(crd, "/spec/group"), at(crd, "/spec/names/kind"));
    let name = at(version, "/name");
    let mut msg = format!("{group}/{name} {kind} is deprecated");
    let flag = |v: &Value, key: &str| v.get(key).and_then(Value::as_bool).unwrap_or(false);
    let replacement = (crd.pointer("/spec/versions").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .filter(|v| flag(v, "served") && !flag(v, "deprecated"))
        .map(|v| at(v, "/name"))
        .filter(|v| version_priority(v) > version_priority(&name))
        .max_by_key(|v| version_priority(v));
    if let Some(newer) = replacement {
        msg.push_str(&format!("; use {group}/{newer} {kind}"));
    }
    Some(msg)
}

/// The `metadata` property kube-apiserver publishes of custom resources (and embedded ones).
fn object_meta_property() -> Value {
    serde_json::json!({
        "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
        "allOf": [{"$ref": format!("#/components/schemas/{}", kcp_schema::builtin::OBJECT_META)}],
    })
}

/// Kubernetes' version ordering: GA before beta before alpha, higher numbers first, then
/// non-Kubernetes-looking names alphabetically (lowest priority).
pub fn version_priority(name: &str) -> (u8, u32, u32, std::cmp::Reverse<String>) {
    let parse = |rest: &str| -> Option<(u8, u32, u32)> {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u32 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((3, major, 0));
        }
        for (word, rank) in [("beta", 2u8), ("alpha", 1u8)] {
            if let Some(n) = tail.strip_prefix(word) {
                // `v1beta` is not Kubernetes-looking: alpha and beta need a number.
                return Some((rank, major, n.parse().ok()?));
            }
        }
        None
    };
    match name.strip_prefix('v').and_then(parse) {
        Some((rank, major, minor)) => (rank, major, minor, std::cmp::Reverse(String::new())),
        None => (0, 0, 0, std::cmp::Reverse(name.to_string())),
    }
}

fn is_terminating(crd: &Value) -> bool {
    crd.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

/// Whether a CRD still holds its cleanup finalizer.
pub fn has_cleanup_finalizer(crd: &Value) -> bool {
    crd.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|v| v == CLEANUP_FINALIZER))
}

/// kcp reserves its own API groups: CRDs in them may only live in system logical clusters.
pub fn check_reserved_group(cluster: &LogicalClusterName, crd: &Value) -> Result<(), ApiError> {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let reserved = group == "kcp.io" || group.ends_with(".kcp.io");
    if reserved && !cluster.starts_with("system:") {
        let name = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Err(ApiError::forbidden(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            name,
            &format!("{group} is a reserved group"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_as_kubernetes_sorts_them() {
        let mut names = vec![
            "v1alpha1", "foo", "v2", "v1beta2", "v1", "v10beta1", "bar", "v1beta1",
        ];
        names.sort_by_key(|n| std::cmp::Reverse(version_priority(n)));
        assert_eq!(
            names,
            vec![
                "v2", "v1", "v10beta1", "v1beta2", "v1beta1", "v1alpha1", "bar", "foo"
            ]
        );
        assert!(version_priority("v1beta") < version_priority("v1alpha1"));
    }

    fn crd_with(versions: Value) -> Value {
        serde_json::json!({"spec": {"group": "example.com", "names": {"kind": "Widget"},
                                    "versions": versions}})
    }

    #[test]
    fn deprecated_versions_warn_in_kubernetes_words() {
        let crd = crd_with(serde_json::json!([
            {"name": "v1alpha1", "served": true, "deprecated": true},
            {"name": "v1beta1", "served": true},
            {"name": "v1", "served": true},
            {"name": "v2", "served": false},
            {"name": "v3", "served": true, "deprecated": true},
            {"name": "v1beta2", "served": true, "deprecated": true,
             "deprecationWarning": "use v1, really"},
        ]));
        let versions = crd["spec"]["versions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let warning = |i: usize| deprecation_warning(&crd, &versions[i]);
        assert_eq!(
            warning(0).as_deref(),
            Some("example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget")
        );
        assert_eq!(warning(1), None);
        // Nothing served and not deprecated ranks above v3.
        assert_eq!(
            warning(4).as_deref(),
            Some("example.com/v3 Widget is deprecated")
        );
        assert_eq!(warning(5).as_deref(), Some("use v1, really"));
    }
}
