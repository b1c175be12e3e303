//! The `/openapi/v3` documents of an API set, built once and served by hash.

use std::collections::HashMap;

use bytes::Bytes;
use kcp_schema::OpenApiResource;
use serde_json::Value;

use crate::discovery::ApiSet;

/// The Swagger 2.0 document in both of its forms.
pub struct OpenApiV2 {
    pub json: Bytes,
    /// gnostic's `openapi.v2.Document`.
    pub protobuf: Bytes,
}

pub struct OpenApiDocs {
    root: Value,
    /// `/openapi/v2` in JSON and in protobuf, derived from the v3 documents on first request.
    v2: std::sync::OnceLock<OpenApiV2>,
    /// `(group, version)` → the serialized group-version document and its hash (the `hash` of
    /// its URL in the root document, and its ETag).
    docs: HashMap<(String, String), (Bytes, String)>,
}

impl OpenApiDocs {
    pub fn build(set: &ApiSet) -> OpenApiDocs {
        let mut by_gv: HashMap<(String, String), Vec<OpenApiResource>> = HashMap::new();
        let mut extra = serde_json::Map::new();
        for d in set
            .resources()
            .iter()
            .filter(|d| d.is_stored() || !d.schema_name.is_empty())
        {
            if let Some(component) = &d.openapi_component {
                extra.insert(d.schema_name.clone(), component.as_ref().clone());
            }
            let mut subresources = Vec::new();
            if d.status_subresource {
                subresources.push("status".to_string());
            }
            if d.scale.is_some() {
                subresources.push("scale".to_string());
            }
            by_gv
                .entry((d.group.clone(), d.version.clone()))
                .or_default()
                .push(OpenApiResource {
                    group: d.group.clone(),
                    version: d.version.clone(),
                    kind: d.kind.clone(),
                    plural: d.plural.clone(),
                    namespaced: d.namespaced,
                    verbs: d.verbs.clone(),
                    subresources,
                    schema_name: d.schema_name.clone(),
                    selectable_fields: match d.custom_schema {
                        Some(_) => d
                            .field_selectors
                            .iter()
                            .map(|f| f.field.to_string())
                            .collect(),
                        None => Vec::new(),
                    },
                });
        }
        let mut docs = HashMap::new();
        let mut index = Vec::new();
        for ((group, version), resources) in by_gv {
            let doc = kcp_schema::openapi::v3_group_version_with(&resources, &extra);
            let hash = kcp_schema::hash(&doc);
            index.push((
                kcp_schema::openapi::group_version_path(&group, &version),
                hash.clone(),
            ));
            if let Ok(bytes) = serde_json::to_vec(&doc) {
                docs.insert((group, version), (Bytes::from(bytes), hash));
            }
        }
        index.sort();
        OpenApiDocs {
            root: kcp_schema::v3_root(&index),
            v2: std::sync::OnceLock::new(),
            docs,
        }
    }

    /// The Swagger 2.0 document of the whole set.
    pub fn v2(&self) -> &OpenApiV2 {
        self.v2.get_or_init(|| {
            let mut keys: Vec<&(String, String)> = self.docs.keys().collect();
            keys.sort();
            let parsed: Vec<Value> = keys
                .iter()
                .filter_map(|k| self.docs.get(*k))
                .filter_map(|(bytes, _)| serde_json::from_slice(bytes).ok())
                .collect();
            let doc = kcp_schema::openapi::v2::v2_from_v3(&parsed);
            OpenApiV2 {
                json: Bytes::from(serde_json::to_vec(&doc).unwrap_or_default()),
                protobuf: Bytes::from(kcp_schema::openapi::v2_protobuf::document(&doc)),
            }
        })
    }

    pub fn root(&self) -> Value {
        self.root.clone()
    }

    /// A group-version document and its hash.
    pub fn group_version(&self, group: &str, version: &str) -> Option<(Bytes, String)> {
        self.docs
            .get(&(group.to_string(), version.to_string()))
            .cloned()
    }
}
