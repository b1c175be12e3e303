//! APIs as a service through the real binary with kubectl, on both stores: a provider publishes
//! an APIResourceSchema in an APIExport, which gets its identity; a consumer binds it and is served
//! the API as its own; the binding's deletion takes the objects with it.

use kcp_e2e::{Shard, StoreKind, json_str, on_both_stores};
use serde_json::Value;

on_both_stores!(export_bind_and_serve);

const SCHEMA: &str = r#"
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

const EXPORT: &str = r#"
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

fn binding(name: &str, path: &str, export: &str) -> String {
    format!(
        "apiVersion: apis.kcp.io/v1alpha2\nkind: APIBinding\nmetadata:\n  name: {name}\nspec:\n  reference:\n    export:\n      path: {path}\n      name: {export}\n"
    )
}

fn create_ready_workspace(shard: &Shard, name: &str) {
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

fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

fn export_bind_and_serve(store: StoreKind) {
    let shard = Shard::start(store);
    create_ready_workspace(&shard, "provider");
    create_ready_workspace(&shard, "consumer");
    let provider = || shard.kubectl_cmd().cluster("root:provider");
    let consumer = || shard.kubectl_cmd().cluster("root:consumer");

    // kcp's name rule for schemas: 403 with its words, nothing written.
    let misnamed = shard.write_file(
        "misnamed.yaml",
        &SCHEMA.replace("today.cowboys.wildwest.dev", "today.horses.wildwest.dev"),
    );
    let refused = provider().fails(&["create", "-f", misnamed.to_str().unwrap_or_default()]);
    assert!(
        refused.contains("is forbidden")
            && refused.contains("metadata.name: Invalid value: \"today.horses.wildwest.dev\": must end in .cowboys.wildwest.dev"),
        "{refused}"
    );
    let schema = shard.write_file("schema.yaml", SCHEMA);
    provider().ok(&["create", "-f", schema.to_str().unwrap_or_default()]);
    // The spec never changes.
    let changed = provider().fails(&[
        "patch",
        "apiresourceschema",
        "today.cowboys.wildwest.dev",
        "--type=merge",
        "-p",
        r#"{"spec":{"scope":"Cluster"}}"#,
    ]);
    assert!(
        changed.contains("spec: Invalid value") && changed.contains("is immutable"),
        "{changed}"
    );

    // The export gets an identity: a Secret in kcp-system, its hash in the status, a slice.
    let export = shard.write_file("export.yaml", EXPORT);
    provider().ok(&["create", "-f", export.to_str().unwrap_or_default()]);
    let export = shard.eventually("the export's identity hash", || {
        let export = provider().json(&["get", "apiexport", "cowboys", "-o", "json"]);
        (!json_str(&export, "/status/identityHash").is_empty()).then_some(export)
    });
    let identity = json_str(&export, "/status/identityHash").to_string();
    assert_eq!(identity.len(), 64, "{export}");
    assert_eq!(
        json_str(&export, "/spec/identity/secretRef/namespace"),
        "kcp-system"
    );
    assert_eq!(
        condition(&export, "IdentityValid").map(|c| c["status"].clone()),
        Some("True".into()),
        "{export}"
    );
    let secret = provider().json(&["get", "secret", "-n", "kcp-system", "cowboys", "-o", "json"]);
    assert!(!json_str(&secret, "/data/key").is_empty(), "{secret}");
    let slice = shard.eventually("the default endpoint slice", || {
        let out = provider().run(&["get", "apiexportendpointslice", "cowboys", "-o", "json"]);
        out.status
            .success()
            .then(|| serde_json::from_slice::<Value>(&out.stdout).unwrap_or_default())
    });
    assert_eq!(json_str(&slice, "/spec/export/name"), "cowboys");
    assert_eq!(json_str(&slice, "/spec/export/path"), "root:provider");
    // v1alpha1 is served from the same object.
    let v1 = provider().json(&[
        "get",
        "apiexports.v1alpha1.apis.kcp.io",
        "cowboys",
        "-o",
        "json",
    ]);
    assert_eq!(
        v1["spec"]["latestResourceSchemas"][0], "today.cowboys.wildwest.dev",
        "{v1}"
    );
    assert_eq!(json_str(&v1, "/status/identityHash"), identity);

    // A binding to an export that is not there: kcp's 403, the same as a denied one.
    let missing = shard.write_file("missing.yaml", &binding("nope", "root:provider", "nope"));
    let refused = consumer().fails(&["create", "-f", missing.to_str().unwrap_or_default()]);
    assert!(
        refused.contains(
            "unable to create APIBinding: no permission to bind to export root:provider:nope"
        ),
        "{refused}"
    );

    // Bound: the consumer is served Cowboys as its own, stored under the export's identity.
    let bind = shard.write_file(
        "binding.yaml",
        &binding("cowboys", "root:provider", "cowboys"),
    );
    consumer().ok(&["create", "-f", bind.to_str().unwrap_or_default()]);
    let bound = shard.eventually("the binding Bound", || {
        let b = consumer().json(&["get", "apibinding", "cowboys", "-o", "json"]);
        (b["status"]["phase"] == "Bound").then_some(b)
    });
    assert_eq!(
        bound["status"]["boundResources"][0]["schema"]["identityHash"],
        identity.as_str()
    );
    assert_eq!(bound["status"]["boundResources"][0]["resource"], "cowboys");
    assert!(!json_str(&bound, "/status/apiExportClusterName").is_empty());
    assert_eq!(
        condition(&bound, "Ready").map(|c| c["status"].clone()),
        Some("True".into()),
        "{bound}"
    );
    assert!(
        !json_str(&bound, "/metadata/labels/internal.apis.kcp.io~1export").is_empty(),
        "{bound}"
    );
    let resources = shard.eventually("cowboys in discovery", || {
        let out = consumer().ok(&["api-resources", "--api-group=wildwest.dev"]);
        out.contains("cowboys").then_some(out)
    });
    assert!(resources.contains("Cowboy"), "{resources}");
    let cowboy = shard.write_file(
        "cowboy.yaml",
        "apiVersion: wildwest.dev/v1alpha1\nkind: Cowboy\nmetadata:\n  name: lucky\n  namespace: default\nspec:\n  intent: ride\n",
    );
    consumer().ok(&["create", "-f", cowboy.to_str().unwrap_or_default()]);
    let table = consumer().ok(&["get", "cowboys", "-n", "default"]);
    assert!(
        table.contains("INTENT") && table.contains("lucky") && table.contains("ride"),
        "{table}"
    );
    let explain = consumer().ok(&["explain", "cowboy.spec"]);
    assert!(explain.contains("What the cowboy is up to."), "{explain}");
    // The provider's own workspace does not serve what it exports.
    let theirs = provider().run(&["get", "cowboys", "-n", "default"]);
    assert!(!theirs.status.success());

    // Deleting the binding deletes its objects, then the binding; the resource is gone.
    consumer().ok(&["delete", "apibinding", "cowboys", "--wait=true"]);
    shard.eventually("cowboys gone from discovery", || {
        let out = consumer().ok(&["api-resources", "--api-group=wildwest.dev"]);
        (!out.contains("cowboys")).then_some(())
    });
    // Bound again, the old object is not there: it went with the binding.
    consumer().ok(&["create", "-f", bind.to_str().unwrap_or_default()]);
    shard.eventually("bound again", || {
        let out = consumer().run(&["get", "cowboys", "-n", "default", "-o", "name"]);
        (out.status.success()).then(|| String::from_utf8_lossy(&out.stdout).to_string())
    });
    let listed = consumer().ok(&["get", "cowboys", "-n", "default", "-o", "name"]);
    assert_eq!(listed.trim(), "", "{listed}");
}
