//! The wildwest `cowboys` API of kcp's quickstart as the tests publish and bind it: an
//! APIResourceSchema, an APIExport of it, bindings, and the workspaces they live in.

use serde_json::Value;

use crate::{Shard, json_str};

/// APIResourceSchema `today.cowboys.wildwest.dev`: namespaced Cowboys with a status subresource.
pub const SCHEMA: &str = r#"
apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata:
  name: today.cowboys.wildwest.dev
spec:
  group: wildwest.dev
  names:
    kind: Cowboy
    listKind: CowboyList
    plural: cowboys
    singular: cowboy
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Intent
      type: string
      jsonPath: .spec.intent
    schema:
      type: object
      properties:
        spec:
          type: object
          description: What the cowboy is up to.
          properties:
            intent:
              type: string
        status:
          type: object
          properties:
            result:
              type: string
"#;

/// APIExport `cowboys` of that schema.
pub const EXPORT: &str = r#"
apiVersion: apis.kcp.io/v1alpha2
kind: APIExport
metadata:
  name: cowboys
spec:
  resources:
  - name: cowboys
    group: wildwest.dev
    schema: today.cowboys.wildwest.dev
    storage:
      crd: {}
"#;

/// APIBinding `name` of export `export` at workspace path (or cluster) `path`.
pub fn binding(name: &str, path: &str, export: &str) -> String {
    format!(
        "apiVersion: apis.kcp.io/v1alpha2\nkind: APIBinding\nmetadata:\n  name: {name}\nspec:\n  reference:\n    export:\n      path: {path}\n      name: {export}\n"
    )
}

/// Workspace `name` in root, once Ready.
pub fn create_ready_workspace(shard: &Shard, name: &str) {
    let file = shard.write_file(
        &format!("ws-{name}.yaml"),
        &format!(
            "apiVersion: tenancy.kcp.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\n"
        ),
    );
    shard.kubectl_ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    shard.eventually(&format!("workspace {name} Ready"), || {
        let ws = shard.kubectl_json(&["get", "workspace", name, "-o", "json"]);
        (ws["status"]["phase"] == "Ready").then_some(())
    });
}

/// A provider's export of `cowboys` under `schema`, created in `cluster` and given its identity
/// (returned).
pub fn publish(shard: &Shard, cluster: &str, schema: &str) -> String {
    let provider = || shard.kubectl_cmd().cluster(cluster);
    let file = shard.write_file(
        &format!("{schema}.yaml"),
        &SCHEMA.replace("today.cowboys.wildwest.dev", schema),
    );
    provider().ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    let file = shard.write_file(
        &format!("export-{schema}.yaml"),
        &EXPORT.replace("today.cowboys.wildwest.dev", schema),
    );
    provider().ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    shard.eventually("the export's identity hash", || {
        let export = provider().json(&["get", "apiexport", "cowboys", "-o", "json"]);
        let hash = json_str(&export, "/status/identityHash").to_string();
        (!hash.is_empty()).then_some(hash)
    })
}

/// Binds the provider's `cowboys` (at `export_path`) in `cluster` and waits until it is Bound.
pub fn bind_and_wait(shard: &Shard, cluster: &str, export_path: &str) -> Value {
    let file = shard.write_file(
        &format!("bind-{}.yaml", cluster.replace(':', "-")),
        &binding("cowboys", export_path, "cowboys"),
    );
    let consumer = || shard.kubectl_cmd().cluster(cluster);
    consumer().ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    shard.eventually("the binding Bound", || {
        let b = consumer().json(&["get", "apibinding", "cowboys", "-o", "json"]);
        (b["status"]["phase"] == "Bound").then_some(b)
    })
}
