//! CRD admission over bound resources (kcp's `apis.kcp.io/CRDNoOverlappingGVR`): creating a CRD
//! of a group/resource an APIBinding of the logical cluster holds is refused, and an admitted
//! create takes the resource in the cluster's [`ResourceLocks`] so that a binding racing it
//! skips the resource instead of both serving it.

use std::sync::Arc;

use async_trait::async_trait;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::admission::{Admission, Attributes, Operation};
use kcp_apiserver::registry::{keyspace, now_rfc3339};
use kcp_apiserver::watch_cache::WatchCache;
use kcp_store::keys::ResourceKeyspace;
use serde_json::Value;

use crate::Shared;
use crate::locks::resource_key;

const CRD_GROUP: &str = "apiextensions.k8s.io";

pub struct CrdAdmission {
    cache: Arc<WatchCache>,
    shared: Arc<Shared>,
    bindings: ResourceKeyspace,
}

impl CrdAdmission {
    pub fn new(cache: Arc<WatchCache>, shared: Arc<Shared>) -> Option<CrdAdmission> {
        let bindings = kcp_controllers::builtin(kcp_api_types::apis::GROUP, "apibindings")?;
        Some(CrdAdmission {
            cache,
            shared,
            bindings: keyspace(&bindings),
        })
    }

    /// A stored binding of `cluster` whose `boundResources` has `group`/`plural`: after a
    /// restart the lock table is empty, but what the bindings say they bind still holds.
    fn bound_by(&self, cluster: &LogicalClusterName, group: &str, plural: &str) -> Option<String> {
        (self.cache.list(&self.bindings.cluster(cluster), None))
            .into_iter()
            .find(|b| {
                b.value().is_ok_and(|binding| {
                    (binding.pointer("/status/boundResources"))
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .any(|r| {
                            r.get("group").and_then(Value::as_str) == Some(group)
                                && r.get("resource").and_then(Value::as_str) == Some(plural)
                        })
                })
            })
            .map(|b| b.name.clone())
    }
}

#[async_trait]
impl Admission for CrdAdmission {
    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        if attrs.def.group != CRD_GROUP
            || attrs.def.plural != "customresourcedefinitions"
            || attrs.operation != Operation::Create
            || attrs.subresource.is_some()
        {
            return Ok(());
        }
        let (Some(crd), Ok(cluster)) = (object, LogicalClusterName::parse(attrs.cluster)) else {
            return Ok(());
        };
        let text = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or_default();
        let (group, plural) = (text("/spec/group"), text("/spec/names/plural"));
        let resource = resource_key(group, plural);
        let binding_exists = |name: &str| {
            let key = self.bindings.object(&cluster, None, name);
            self.cache.get(&key).is_some()
        };
        let bound = self.bound_by(&cluster, group, plural);
        let held = if attrs.dry_run {
            // A dry run decides as a create would, but takes nothing.
            (self.shared.locks).check_for_crd(&cluster, &resource, binding_exists, bound)
        } else {
            let stamp = now_rfc3339();
            (self.shared.locks).claim_for_crd(&cluster, &resource, &stamp, binding_exists, bound)
        };
        held.map_err(|binding| {
            ApiError::forbidden(
                CRD_GROUP,
                "customresourcedefinitions",
                attrs.name,
                &format!("cannot create because resource is bound by APIBinding {binding:?}"),
            )
        })
    }
}
