//! APIExportEndpointSlice admission (kcp's `apis.kcp.io/APIExportEndpointSlice`). A slice is
//! created (or re-pointed) only by someone holding `bind` on its export, asked in the export's
//! workspace as a deep SubjectAccessReview; a missing export and a denied one get the same
//! refusal, so a refusal does not tell which. A slice with an object partition (beyond kcp: see
//! docs/design/partitions.md) serves the export's objects through its own URL, so creating one
//! also needs content access to the export (`*` on `apiexports/content`): a tenant who may only
//! bind cannot mint a partition and read through it. Its label key and value must be a label's.

use std::sync::Arc;

use async_trait::async_trait;
use kcp_api_types::apis::{GROUP, SLICE_EXPORT_CLUSTER_ANNOTATION};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::names::{is_qualified_name, is_valid_label_value};
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::admission::{Admission, Attributes, Operation};
use kcp_apiserver::hooks::ClusterResolver;
use kcp_apiserver::registry::{keyspace, str_at as text};
use kcp_apiserver::watch_cache::WatchCache;
use kcp_auth::authz::{Attributes as AuthzAttributes, Authorizer, AuthorizerChain, Decision};
use serde_json::Value;

use super::{forbidden, is};

pub struct EndpointSliceAdmission {
    cache: Arc<WatchCache>,
    resolver: Option<Arc<dyn ClusterResolver>>,
    authorizer: AuthorizerChain,
    /// APIExports' keyspace (v1alpha2, their stored form).
    exports: kcp_store::keys::ResourceKeyspace,
}

impl EndpointSliceAdmission {
    pub fn new(
        cache: Arc<WatchCache>,
        resolver: Option<Arc<dyn ClusterResolver>>,
        authorizer: AuthorizerChain,
    ) -> Option<EndpointSliceAdmission> {
        let exports = kcp_controllers::builtin(GROUP, "apiexports")?;
        Some(EndpointSliceAdmission {
            cache,
            resolver,
            authorizer,
            exports: keyspace(&exports),
        })
    }

    /// The logical cluster of the export `slice` names, when it is there.
    fn export_cluster(&self, cluster: &str, slice: &Value) -> Option<LogicalClusterName> {
        let cluster = LogicalClusterName::parse(cluster).ok()?;
        let path = text(slice, "/spec/export/path");
        let export_cluster = crate::export_cluster(self.resolver.as_deref(), &cluster, path)?;
        let key = self
            .exports
            .object(&export_cluster, None, text(slice, "/spec/export/name"));
        self.cache.get(&key).map(|_| export_cluster)
    }

    fn may(&self, attrs: &Attributes<'_>, cluster: &str, verb: &str, export: &str) -> bool {
        let mut review =
            AuthzAttributes::deep(attrs.user, cluster, verb, GROUP, "apiexports", export);
        if verb != "bind" {
            review.subresource = "content";
        }
        self.authorizer.authorize(&review) == Decision::Allow
    }
}

/// The export as kcp names it in refusals: `path:name`, or the name alone.
fn shown(slice: &Value) -> String {
    match text(slice, "/spec/export/path") {
        "" => text(slice, "/spec/export/name").to_string(),
        path => format!("{path}:{}", text(slice, "/spec/export/name")),
    }
}

/// Field errors of a slice's `spec.export` and `spec.objectPartition`.
pub fn refusals(slice: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if text(slice, "/spec/export/name").is_empty() {
        out.push("spec.export.name: Required value".to_string());
    }
    if let Some(partition) = slice.pointer("/spec/objectPartition") {
        let key = text(partition, "/labelKey");
        for err in is_qualified_name(key) {
            out.push(format!(
                "spec.objectPartition.labelKey: Invalid value: {key:?}: {err}"
            ));
        }
        let value = text(partition, "/value");
        if value.is_empty() {
            out.push("spec.objectPartition.value: Required value".to_string());
        }
        for err in is_valid_label_value(value) {
            out.push(format!(
                "spec.objectPartition.value: Invalid value: {value:?}: {err}"
            ));
        }
    }
    out
}

#[async_trait]
impl Admission for EndpointSliceAdmission {
    /// A partitioned slice records where its export is: found on create, kept as it was after.
    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&mut Value>,
    ) -> Result<bool, ApiError> {
        if !is(attrs, "apiexportendpointslices") || attrs.subresource.is_some() {
            return Ok(false);
        }
        let Some(slice) = object else {
            return Ok(false);
        };
        if slice.pointer("/spec/objectPartition").is_none() {
            return Ok(false);
        }
        let recorded = match (attrs.operation, attrs.old_object) {
            (Operation::Update, Some(old)) => old
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(SLICE_EXPORT_CLUSTER_ANNOTATION))
                .and_then(Value::as_str)
                .map(str::to_string),
            (Operation::Create, _) => self
                .export_cluster(attrs.cluster, slice)
                .map(|c| c.to_string()),
            _ => return Ok(false),
        };
        let Some(meta) = slice.get_mut("metadata").and_then(Value::as_object_mut) else {
            return Ok(false);
        };
        let annotations = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if !annotations.is_object() {
            *annotations = Value::Object(Default::default());
        }
        if let Some(annotations) = annotations.as_object_mut() {
            match recorded {
                Some(cluster) => {
                    annotations.insert(
                        SLICE_EXPORT_CLUSTER_ANNOTATION.into(),
                        Value::String(cluster),
                    );
                }
                // Not found: validation refuses the create; nothing is forged meanwhile.
                None => {
                    annotations.remove(SLICE_EXPORT_CLUSTER_ANNOTATION);
                }
            }
        }
        Ok(true)
    }

    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        if !is(attrs, "apiexportendpointslices") || attrs.subresource.is_some() {
            return Ok(());
        }
        let (Some(slice), Operation::Create | Operation::Update) = (object, attrs.operation) else {
            return Ok(());
        };
        let errors = refusals(slice);
        if !errors.is_empty() {
            return Err(forbidden(attrs, &errors));
        }
        let old_export = attrs.old_object.and_then(|o| o.pointer("/spec/export"));
        let rebinds = old_export.is_none_or(|old| Some(old) != slice.pointer("/spec/export"));
        let partitions = slice.pointer("/spec/objectPartition").is_some()
            && (attrs.old_object)
                .and_then(|o| o.pointer("/spec/objectPartition"))
                .is_none();
        if !rebinds && !partitions {
            return Ok(());
        }
        let refuse = |detail: String| {
            ApiError::forbidden(&attrs.def.group, &attrs.def.plural, attrs.name, &detail)
        };
        let no_bind = || {
            refuse(format!(
                "unable to create APIExportEndpointSlice: no permission to bind to export {}",
                shown(slice)
            ))
        };
        let export_cluster = self
            .export_cluster(attrs.cluster, slice)
            .ok_or_else(no_bind)?;
        let export = text(slice, "/spec/export/name");
        if !self.may(attrs, &export_cluster, "bind", export) {
            return Err(no_bind());
        }
        if slice.pointer("/spec/objectPartition").is_some()
            && !self.may(attrs, &export_cluster, "*", export)
        {
            return Err(refuse(format!(
                "unable to create APIExportEndpointSlice with an object partition: no content access to export {}",
                shown(slice)
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn slices_name_an_export_and_partition_by_a_label() {
        let slice = |spec: Value| json!({"spec": spec});
        assert!(refusals(&slice(json!({"export": {"name": "e"}}))).is_empty());
        assert_eq!(
            refusals(&slice(json!({"export": {"path": "root"}}))),
            ["spec.export.name: Required value"]
        );
        assert!(
            refusals(&slice(json!({"export": {"name": "e"},
                "objectPartition": {"labelKey": "example.com/region", "value": "east"}})))
            .is_empty()
        );
        let bad = refusals(&slice(json!({"export": {"name": "e"},
            "objectPartition": {"labelKey": "not a key", "value": ""}})));
        assert!(
            bad.iter()
                .any(|e| e.starts_with("spec.objectPartition.labelKey: Invalid value")),
            "{bad:?}"
        );
        assert!(
            bad.contains(&"spec.objectPartition.value: Required value".to_string()),
            "{bad:?}"
        );
    }
}
