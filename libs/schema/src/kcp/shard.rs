//! `core.kcp.io/v1alpha1` Shard: a kcp server that holds logical clusters, registered in `root`.

use serde_json::{Value, json};

use super::{api_version, conditions, kind, object_meta, string};

/// The Shard component schema (OpenAPI v3 JSON).
pub fn shard_schema() -> Value {
    json!({
        "description": "Shard describes one server holding logical clusters: where the front proxy \
                        and other shards reach it, and the URLs users are given. Workspaces are \
                        scheduled onto shards matching their location selector.",
        "type": "object",
        "properties": {
            "apiVersion": api_version("core.kcp.io/v1alpha1"),
            "kind": kind("Shard"),
            "metadata": object_meta(),
            "spec": {
                "type": "object",
                "description": "Desired state of the shard.",
                "required": ["baseURL"],
                "properties": {
                    "baseURL": {
                        "type": "string",
                        "format": "uri",
                        "description": "Address the front proxy and other shards use to reach this shard.",
                    },
                    "externalURL": string(
                        "Address users are given in workspace URLs (normally the front proxy's); \
                         defaults to baseURL."),
                    "virtualWorkspaceURL": string(
                        "Base of the virtual workspace URLs this shard publishes; defaults to baseURL."),
                },
            },
            "status": {
                "type": "object",
                "description": "Observed state of the shard.",
                "properties": {
                    "capacity": {
                        "type": "object",
                        "description": "Informational capacity of the shard.",
                        "additionalProperties": {"x-kubernetes-int-or-string": true},
                    },
                    "conditions": conditions("shard"),
                },
            },
        },
    })
}
