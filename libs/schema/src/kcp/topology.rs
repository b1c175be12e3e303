//! `topology.kcp.io/v1alpha1` Partition and PartitionSet: groups of shards by their labels, which
//! an APIExportEndpointSlice's `spec.partition` names to list only those shards' URLs.

use serde_json::{Value, json};

use super::{api_version, conditions, kind, label_selector, object_meta, string_list};

/// The Partition component schema (OpenAPI v3 JSON).
pub fn partition_schema() -> Value {
    json!({
        "description": "Partition is a set of shards, chosen by their labels: an endpoint slice \
                        naming it lists the URLs of those shards only.",
        "type": "object",
        "properties": {
            "apiVersion": api_version("topology.kcp.io/v1alpha1"),
            "kind": kind("Partition"),
            "metadata": object_meta(),
            "spec": {
                "type": "object",
                "description": "Which shards are in the partition.",
                "properties": {
                    "selector": label_selector(
                        "Labels of the shards in the partition; none selects every shard."),
                },
            },
        },
    })
}

/// The PartitionSet component schema (OpenAPI v3 JSON).
pub fn partition_set_schema() -> Value {
    json!({
        "description": "PartitionSet makes a Partition for each combination of values its \
                        dimensions (shard label keys) take on the shards it selects.",
        "type": "object",
        "properties": {
            "apiVersion": api_version("topology.kcp.io/v1alpha1"),
            "kind": kind("PartitionSet"),
            "metadata": object_meta(),
            "spec": {
                "type": "object",
                "description": "How shards are grouped.",
                "properties": {
                    "dimensions": string_list(
                        "Shard label keys; each combination of their values found on a shard \
                         makes one Partition."),
                    "shardSelector": label_selector(
                        "Which shards take part; none selects every shard."),
                },
            },
            "status": {
                "type": "object",
                "description": "Observed state of the set.",
                "properties": {
                    "count": {
                        "type": "integer",
                        "format": "int64",
                        "minimum": 0,
                        "description": "How many Partitions the set has.",
                    },
                    "conditions": conditions("partition set"),
                },
            },
        },
    })
}
