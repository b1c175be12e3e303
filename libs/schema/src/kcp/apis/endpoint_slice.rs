//! `apis.kcp.io/v1alpha1` APIExportEndpointSlice: where an APIExport's virtual workspace is
//! served, one URL per shard holding bindings, optionally narrowed to a Partition's shards.

use serde_json::{Value, json};

use super::{export_reference, map_list, non_empty_string, rule, with};
use crate::kcp::{api_version, boolean, conditions, kind, label_selector, object_meta, string};

/// kcp's EndpointSelector: which shards an endpoint URL serves.
fn shards() -> Value {
    json!({
        "type": "object",
        "description": "The shards the URL serves: every one (matchAll) or those a selector picks; \
                        unset when the URL was made for one shard, as kcp's controllers publish it.",
        "properties": {
            "matchAll": boolean("The URL serves every shard."),
            "selector": with(
                label_selector("The URL serves the shards whose labels match."),
                json!({"x-kubernetes-map-type": "atomic"}),
            ),
        },
        "x-kubernetes-validations": [
            rule(
                "!(has(self.matchAll) && self.matchAll && has(self.selector))",
                "matchAll and selector are mutually exclusive",
            ),
        ],
    })
}

/// An object partition (beyond kcp, kcp-dev/kcp#3497): the slice's URLs serve only the export's
/// objects carrying one label value.
fn object_partition() -> Value {
    json!({
        "type": "object",
        "description": "Restricts the slice's endpoints to the export's objects labelled \
                        labelKey=value: lists and watches see only those, writes are kept in \
                        the partition, and access is granted by the apiexportendpointslices/content \
                        subresource of this slice. Creating it needs content access to the \
                        export. Immutable.",
        "required": ["labelKey", "value"],
        "properties": {
            "labelKey": non_empty_string("The label that partitions the objects."),
            "value": non_empty_string("The label's value in this partition."),
        },
        "x-kubernetes-validations": [
            rule("self == oldSelf", "objectPartition is immutable"),
        ],
    })
}

fn endpoint() -> Value {
    json!({
        "type": "object",
        "description": "One URL of the export's virtual workspace.",
        "required": ["url"],
        "properties": {
            "url": non_empty_string("The virtual workspace URL."),
            "shards": shards(),
        },
    })
}

/// The APIExportEndpointSlice component schema (OpenAPI v3 JSON).
pub fn api_export_endpoint_slice_schema() -> Value {
    json!({
        "description": "APIExportEndpointSlice lists the URLs an APIExport's virtual workspace is \
                        served at, for the provider's controllers to watch. Each shard holding \
                        bindings to the export adds its own URL; a Partition limits the slice \
                        to some shards.",
        "type": "object",
        "properties": {
            "apiVersion": api_version("apis.kcp.io/v1alpha1"),
            "kind": kind("APIExportEndpointSlice"),
            "metadata": object_meta(),
            "spec": {
                "type": "object",
                "description": "Desired state of the slice.",
                "required": ["export"],
                "properties": {
                    "export": with(
                        export_reference(
                            "The APIExport whose endpoints are listed; creating the slice \
                             needs the bind verb on it. Immutable."),
                        json!({
                            "x-kubernetes-validations": [
                                rule("self == oldSelf", "APIExport reference must not be changed"),
                            ],
                        }),
                    ),
                    "partition": string(
                        "Name of a Partition in the slice's workspace; only shards it selects \
                         contribute endpoints."),
                    "objectPartition": object_partition(),
                },
                "x-kubernetes-validations": [
                    rule(
                        "has(self.objectPartition) == has(oldSelf.objectPartition)",
                        "objectPartition must not be added or removed",
                    ),
                ],
            },
            "status": {
                "type": "object",
                "description": "Observed state of the slice.",
                "properties": {
                    "conditions": conditions("endpoint slice"),
                    "endpoints": map_list(
                        "The URLs of the export's virtual workspace, one per contributing shard.",
                        endpoint(),
                        &["url"],
                    ),
                    "shardSelector": string(
                        "The label selector, as a string, shards must match to contribute \
                         (from the partition); empty matches every shard."),
                },
            },
        },
    })
}
