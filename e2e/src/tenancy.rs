//! Workspaces as the tests drive them: the `kube` API of root's Workspaces, a `root:universal`
//! Workspace, and objects listed across every logical cluster.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::{Value, json};

use crate::{Shard, json_str};

/// The Workspaces of the logical cluster `client` points at.
pub fn workspaces(client: kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "tenancy.kcp.io".into(),
        version: "v1alpha1".into(),
        api_version: "tenancy.kcp.io/v1alpha1".into(),
        kind: "Workspace".into(),
        plural: "workspaces".into(),
    };
    Api::all_with(client, &resource)
}

/// A Workspace `name` of type `root:universal`.
pub fn universal_workspace(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": name},
        "spec": {"type": {"name": "universal", "path": "root"}},
    }))
    .expect("a Workspace")
}

/// Every object at `path` (e.g. `/api/v1/namespaces`) in every logical cluster, listed by
/// `shard-admin` (system:masters) through `/clusters/*`, by logical cluster.
pub fn everywhere(shard: &Shard, path: &str) -> BTreeMap<String, Vec<Value>> {
    let url = format!("/clusters/*{path}");
    let (code, body) = shard.curl_as(Some("shard-admin"), "GET", &url, None);
    assert_eq!(code, 200, "GET {url}: {body}");
    let list: Value = serde_json::from_str(&body).expect("a JSON list");
    let mut by_cluster: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for item in list["items"].as_array().into_iter().flatten() {
        let cluster = json_str(item, "/metadata/annotations/kcp.io~1cluster").to_string();
        by_cluster.entry(cluster).or_default().push(item.clone());
    }
    by_cluster
}

/// The logical clusters holding namespaces (from a multi-threaded test runtime).
pub fn clusters_with_namespaces(shard: &Shard) -> BTreeSet<String> {
    tokio::task::block_in_place(|| {
        everywhere(shard, "/api/v1/namespaces")
            .into_keys()
            .collect()
    })
}
