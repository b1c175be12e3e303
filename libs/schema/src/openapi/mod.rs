//! OpenAPI v3 documents as kube-apiserver serves them under `/openapi/v3`.
//!
//! What clients rely on (checked against kubectl's sources):
//!
//! * `kubectl apply` (client-go's query-param verifier) looks, in the group-version document,
//!   for a PATCH operation whose `x-kubernetes-group-version-kind` *object* equals the kind and
//!   that has an *operation-level* `in: query` parameter named `fieldValidation`. The first
//!   matching PATCH decides, so every PATCH (also `/status`) carries it. For custom resources
//!   missing from the documents it checks core/v1 Namespace instead.
//! * `kubectl explain` finds the GVK on the operations of `/api[s]/<gv>/[namespaces/{namespace}/]
//!   <plural>[/{name}]` and then the component schema whose `x-kubernetes-group-version-kind`
//!   *list* contains an identical `{group, version, kind}` object; fields are followed through
//!   `properties`, `items`, `additionalProperties` and `allOf: [{$ref}]`.
//! * The root document's `serverRelativeURL` is fetched as is (clients re-add a base path).

mod components;
mod operations;
pub mod v2;
pub mod v2_protobuf;

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

/// Title and version in every document's `info`; the version of the k8s-openapi schemas.
pub const INFO_TITLE: &str = "Kubernetes";
pub const INFO_VERSION: &str = "v1.33.0";

/// One resource of a group-version document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenApiResource {
    /// API group; empty for core.
    pub group: String,
    pub version: String,
    pub kind: String,
    /// Plural resource name, the URL segment.
    pub plural: String,
    pub namespaced: bool,
    /// Kubernetes verbs: get, list, watch, create, update, patch, delete, deletecollection.
    pub verbs: Vec<String>,
    /// Subresource names, e.g. `status`, `scale`.
    pub subresources: Vec<String>,
    /// Component name of the kind's schema, e.g. `io.k8s.api.core.v1.ConfigMap`.
    pub schema_name: String,
    /// A custom resource's `selectableFields` (`spec.color`), published on the kind and its list
    /// as `x-kubernetes-selectable-fields`.
    pub selectable_fields: Vec<String>,
}

impl OpenApiResource {
    pub(crate) fn has_verb(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }
}

/// `api/v1` for the core group, `apis/<group>/<version>` otherwise: the keys of the root
/// document and the URL suffix under `/openapi/v3/`.
pub fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The `/openapi/v3` root: one entry per group-version path (`api/v1`, `apis/g/v`) with the
/// hash of that group-version's document.
pub fn v3_root(group_versions: &[(String, String)]) -> Value {
    // Sorted, so equal inputs serialize identically.
    let sorted: BTreeMap<&str, &str> = group_versions
        .iter()
        .map(|(path, hash)| (path.as_str(), hash.as_str()))
        .collect();
    let mut paths = Map::new();
    for (path, hash) in sorted {
        paths.insert(
            path.to_owned(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
        );
    }
    json!({"paths": paths})
}

/// The document of one group-version, with built-in component schemas.
pub fn v3_group_version(resources: &[OpenApiResource]) -> Value {
    v3_group_version_with(resources, &Map::new())
}

/// Like [`v3_group_version`], with extra component schemas (e.g. a CRD's, named
/// `<reversed group>.<version>.<Kind>`) that take precedence over the built-in ones.
pub fn v3_group_version_with(
    resources: &[OpenApiResource],
    extra_components: &Map<String, Value>,
) -> Value {
    let lookup = components::Lookup::new(extra_components);
    let paths = operations::paths(resources, &lookup);
    let schemas = components::schemas(resources, &paths, &lookup);
    json!({
        "openapi": "3.0.0",
        "info": {"title": INFO_TITLE, "version": INFO_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

/// A stable digest of a document: upper-case hex SHA-512 of its JSON serialization, as
/// kube-apiserver computes its `hash=` values.
pub fn hash(doc: &Value) -> String {
    let bytes = serde_json::to_vec(doc).unwrap_or_default();
    let digest = Sha512::digest(&bytes);
    let mut out = String::with_capacity(digest.len() * 2);
    for byte in digest {
        // Writing to a String cannot fail.
        let _ = write!(out, "{byte:02X}");
    }
    out
}

#[cfg(test)]
mod tests;
