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
                },
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
