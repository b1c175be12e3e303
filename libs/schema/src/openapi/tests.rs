use serde_json::{Value, json};

use super::components::collect_refs;
use super::*;
use crate::builtin_kinds;

fn resource(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    verbs: &[&str],
    subresources: &[&str],
) -> OpenApiResource {
    let schema_name = builtin_kinds()
        .iter()
        .find(|k| k.group == group && k.version == version && k.kind == kind)
        .map(|k| k.schema_name.clone())
        .expect("built-in kind");
    OpenApiResource {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced,
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        subresources: subresources.iter().map(|s| (*s).to_owned()).collect(),
        schema_name,
        selectable_fields: Vec::new(),
    }
}

const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn core_v1() -> Value {
    v3_group_version(&[
        resource("", "v1", "ConfigMap", "configmaps", true, &ALL_VERBS, &[]),
        resource(
            "",
            "v1",
            "Namespace",
            "namespaces",
            false,
            &ALL_VERBS,
            &["status"],
        ),
        resource("", "v1", "Secret", "secrets", true, &ALL_VERBS, &[]),
    ])
}

fn param_names(op: &Value) -> Vec<&str> {
    op["parameters"]
        .as_array()
        .map(|params| {
            params
                .iter()
                .filter(|p| p["in"] == "query")
                .filter_map(|p| p["name"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn configmap_patch_has_operation_level_field_validation_and_gvk() {
    let doc = core_v1();
    assert_eq!(doc["openapi"], "3.0.0");
    assert_eq!(doc["info"]["title"], INFO_TITLE);
    let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(patch["x-kubernetes-action"], "patch");
    assert_eq!(patch["operationId"], "patchCoreV1NamespacedConfigMap");
    let names = param_names(patch);
    for expected in ["dryRun", "fieldManager", "fieldValidation", "force"] {
        assert!(
            names.contains(&expected),
            "patch lacks {expected}: {names:?}"
        );
    }
    let patch_types = patch["requestBody"]["content"]
        .as_object()
        .expect("content");
    assert!(patch_types.contains_key("application/strategic-merge-patch+json"));
    assert!(patch_types.contains_key("application/apply-patch+yaml"));

    let collection = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps"];
    assert!(param_names(&collection["post"]).contains(&"fieldValidation"));
    assert!(param_names(&collection["get"]).contains(&"watch"));
    assert_eq!(collection["get"]["x-kubernetes-action"], "list");
    assert_eq!(
        collection["delete"]["x-kubernetes-action"],
        "deletecollection"
    );
    let item = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"];
    assert!(param_names(&item["put"]).contains(&"fieldValidation"));
    assert_eq!(item["get"]["x-kubernetes-action"], "get");
    assert_eq!(item["delete"]["x-kubernetes-action"], "delete");
    // Path-level parameters are the path's own, not the checked ones.
    let path_level: Vec<_> = item["parameters"]
        .as_array()
        .expect("path parameters")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(path_level, vec!["name", "namespace", "pretty"]);
    assert_eq!(
        doc["paths"]["/api/v1/configmaps"]["get"]["operationId"],
        "listCoreV1ConfigMapForAllNamespaces"
    );
}

#[test]
fn every_patch_operation_carries_field_validation() {
    let doc = core_v1();
    let paths = doc["paths"].as_object().expect("paths");
    let mut patches = 0;
    for (path, item) in paths {
        if let Some(patch) = item.get("patch") {
            patches += 1;
            assert!(param_names(patch).contains(&"fieldValidation"), "{path}");
            assert!(
                patch["x-kubernetes-group-version-kind"].is_object(),
                "{path}"
            );
        }
    }
    // configmaps, secrets, namespaces and namespaces/status.
    assert_eq!(patches, 4);
    let status = &paths["/api/v1/namespaces/{name}/status"];
    assert_eq!(status["get"]["operationId"], "readCoreV1NamespaceStatus");
    assert_eq!(status["put"]["x-kubernetes-action"], "put");
    assert!(status.get("delete").is_none());
}

#[test]
fn components_carry_gvk_and_all_refs_resolve() {
    let doc = core_v1();
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    assert_eq!(
        schemas["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "ConfigMap"}])
    );
    assert_eq!(
        schemas["io.k8s.api.core.v1.ConfigMapList"]["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "ConfigMapList"}])
    );
    for name in [
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
        "io.k8s.api.core.v1.NamespaceSpec",
    ] {
        assert!(schemas.contains_key(name), "{name}");
    }
    // Nothing from other groups sneaks in.
    assert!(!schemas.contains_key("io.k8s.api.rbac.v1.Role"));
    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for name in refs {
        assert!(schemas.contains_key(&name), "dangling $ref to {name}");
    }
}

#[test]
fn explain_can_find_the_kind_like_kubectl_does() {
    // kubectl explain configmaps.data: GVK from an operation on the resource's paths, then the
    // component whose GVK list contains exactly that object.
    let doc = core_v1();
    let paths = &doc["paths"];
    let gvk = [
        "/api/v1/configmaps",
        "/api/v1/configmaps/{name}",
        "/api/v1/namespaces/{namespace}/configmaps",
        "/api/v1/namespaces/{namespace}/configmaps/{name}",
    ]
    .iter()
    .filter_map(|p| paths.get(*p))
    .flat_map(|item| ["get", "post", "put", "patch", "delete"].map(|m| item.get(m)))
    .flatten()
    .find_map(|op| op.get("x-kubernetes-group-version-kind"))
    .expect("GVK on an operation");
    let schema = doc["components"]["schemas"]
        .as_object()
        .expect("schemas")
        .values()
        .find(|s| {
            s["x-kubernetes-group-version-kind"]
                .as_array()
                .is_some_and(|list| list.contains(gvk))
        })
        .expect("component with that GVK");
    assert!(schema["properties"]["data"]["description"].is_string());
}

#[test]
fn create_only_and_cluster_scoped_resources() {
    let doc = v3_group_version(&[resource(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        false,
        &["create"],
        &[],
    )]);
    let paths = doc["paths"].as_object().expect("paths");
    assert_eq!(paths.len(), 1);
    let item = &paths["/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"];
    assert_eq!(
        item["post"]["operationId"],
        "createAuthorizationV1SelfSubjectAccessReview"
    );
    assert_eq!(item["post"]["tags"], json!(["authorization_v1"]));
    assert!(item.get("get").is_none());

    let rbac = v3_group_version(&[resource(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
        &ALL_VERBS,
        &[],
    )]);
    let item = &rbac["paths"]["/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}"];
    assert_eq!(
        item["patch"]["operationId"],
        "patchRbacAuthorizationV1ClusterRole"
    );
}

#[test]
fn custom_resources_use_extra_components_without_strategic_merge() {
    let mut extra = serde_json::Map::new();
    extra.insert(
        "com.example.v1.Widget".into(),
        json!({"type": "object", "properties": {
            "metadata": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
            "spec": {"type": "object"}}}),
    );
    let widget = OpenApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
        namespaced: true,
        verbs: ALL_VERBS.iter().map(|v| (*v).to_owned()).collect(),
        subresources: vec!["status".into(), "scale".into()],
        schema_name: "com.example.v1.Widget".into(),
        selectable_fields: vec!["spec.color".into()],
    };
    let doc = v3_group_version_with(&[widget], &extra);
    let patch =
        &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
    assert!(param_names(patch).contains(&"fieldValidation"));
    let types = patch["requestBody"]["content"]
        .as_object()
        .expect("content");
    assert!(!types.contains_key("application/strategic-merge-patch+json"));
    let scale =
        &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale"]["get"];
    assert_eq!(
        scale["x-kubernetes-group-version-kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    assert!(schemas.contains_key("io.k8s.api.autoscaling.v1.Scale"));
    assert!(schemas.contains_key("com.example.v1.WidgetList"));
    assert_eq!(
        schemas["com.example.v1.Widget"]["x-kubernetes-group-version-kind"][0]["kind"],
        "Widget"
    );
    // Selectable fields are published on the kind and its list.
    for name in ["com.example.v1.Widget", "com.example.v1.WidgetList"] {
        assert_eq!(
            schemas[name]["x-kubernetes-selectable-fields"],
            json!([{"fieldPath": "spec.color"}]),
            "{name}"
        );
    }
    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    for name in refs {
        assert!(schemas.contains_key(&name), "dangling $ref to {name}");
    }
}

#[test]
fn root_document_and_hashes() {
    let doc = core_v1();
    let first = hash(&doc);
    assert_eq!(first.len(), 128);
    assert!(
        first
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase())
    );
    assert_eq!(first, hash(&core_v1()), "documents and hashes are stable");
    let other = v3_group_version(&[resource("", "v1", "Secret", "secrets", true, &["get"], &[])]);
    assert_ne!(first, hash(&other));

    let root = v3_root(&[
        (
            group_version_path("rbac.authorization.k8s.io", "v1"),
            "AB".into(),
        ),
        (group_version_path("", "v1"), first.clone()),
    ]);
    assert_eq!(
        root["paths"]["api/v1"]["serverRelativeURL"],
        format!("/openapi/v3/api/v1?hash={first}")
    );
    assert_eq!(
        root["paths"]["apis/rbac.authorization.k8s.io/v1"]["serverRelativeURL"],
        "/openapi/v3/apis/rbac.authorization.k8s.io/v1?hash=AB"
    );
}

#[test]
fn every_builtin_kind_gets_a_consistent_document() {
    for kind in builtin_kinds() {
        let resource = OpenApiResource {
            group: kind.group.into(),
            version: kind.version.into(),
            kind: kind.kind.into(),
            plural: format!("{}s", kind.kind.to_lowercase()),
            namespaced: true,
            verbs: ALL_VERBS.iter().map(|v| (*v).to_owned()).collect(),
            subresources: vec!["status".into()],
            schema_name: kind.schema_name.clone(),
            selectable_fields: Vec::new(),
        };
        let doc = v3_group_version(&[resource]);
        let schemas = doc["components"]["schemas"].as_object().expect("schemas");
        let mut refs = Vec::new();
        collect_refs(&doc, &mut refs);
        for name in refs {
            assert!(
                schemas.contains_key(&name),
                "{}: dangling $ref to {name}",
                kind.kind
            );
        }
    }
}
