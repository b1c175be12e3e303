//! CustomResourceDefinitions through the real binary with kubectl, on both stores: apply a CRD
//! then custom resources, printer columns, explain, validation errors, field selectors, per-LC
//! schemas, core-group CRDs, kcp's reserved groups, and deletion.

use kcp_e2e::{Shard, StoreKind, json_str, on_both_stores};

on_both_stores!(
    crd_then_custom_resources_with_kubectl,
    same_crd_name_differs_per_logical_cluster,
    core_group_crds_and_reserved_groups,
    deprecated_versions_warn,
    openapi_shows_int_or_string_embedded_and_selectable_fields,
);

const CRONTAB_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    selectableFields:
    - jsonPath: .spec.image
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the cron job runs.
            properties:
              cronSpec:
                type: string
                description: The schedule in cron format.
              image:
                type: string
              replicas:
                type: integer
          status:
            type: object
            properties:
              lastRun:
                type: string
              replicas:
                type: integer
"#;

fn crontab(name: &str, image: &str, replicas: &str) -> String {
    format!(
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: {name}\nspec:\n  cronSpec: '* * * * */5'\n  image: {image}\n  replicas: {replicas}\n"
    )
}

fn install_crontabs(shard: &Shard, cluster: &str) {
    let crd = shard.write_file("crontab-crd.yaml", CRONTAB_CRD);
    let kubectl = || shard.kubectl_cmd().cluster(cluster);
    let out = kubectl().ok(&["apply", "-f", crd.to_str().expect("utf-8")]);
    assert!(out.contains("crontabs.stable.example.com created"), "{out}");
    kubectl().ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        "crd/crontabs.stable.example.com",
    ]);
}

fn crd_then_custom_resources_with_kubectl(store: StoreKind) {
    let shard = Shard::start(store);
    install_crontabs(&shard, "root");

    let crd = shard.kubectl_json(&["get", "crd", "crontabs.stable.example.com", "-o", "json"]);
    assert_eq!(json_str(&crd, "/status/acceptedNames/kind"), "CronTab");
    assert_eq!(crd["status"]["storedVersions"], serde_json::json!(["v1"]));

    let resources = shard.kubectl_ok(&["api-resources", "--api-group=stable.example.com"]);
    assert!(
        resources
            .lines()
            .any(|l| l.starts_with("crontabs") && l.contains(" ct ") && l.contains("CronTab")),
        "{resources}"
    );

    let a = shard.write_file("a.yaml", &crontab("a", "img-a", "3"));
    let b = shard.write_file("b.yaml", &crontab("b", "img-b", "1"));
    for file in [&a, &b] {
        shard.kubectl_ok(&["apply", "-f", file.to_str().expect("utf-8")]);
    }

    // Printer columns, short name, category.
    let table = shard.kubectl_ok(&["get", "ct"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "SPEC", "REPLICAS", "AGE"], "{table}");
    let row_a = table.lines().find(|l| l.starts_with("a ")).expect("row a");
    assert!(
        row_a.contains("* * * * */5") && row_a.contains(" 3 "),
        "{table}"
    );
    let all = shard.kubectl_ok(&["get", "all", "-o", "name"]);
    assert!(all.contains("crontab.stable.example.com/a"), "{all}");

    // Selectable field.
    let selected = shard.kubectl_ok(&[
        "get",
        "ct",
        "--field-selector",
        "spec.image=img-b",
        "-o",
        "name",
    ]);
    assert_eq!(selected.trim(), "crontab.stable.example.com/b");

    // The CRD is in this LC's /openapi/v2 (JSON) too.
    let v2 = shard.kubectl_json(&["get", "--raw", "/clusters/root/openapi/v2"]);
    assert_eq!(v2["swagger"], "2.0");
    assert!(
        v2["definitions"]["com.example.stable.v1.CronTab"]["properties"]["spec"].is_object(),
        "no CronTab definition in /openapi/v2"
    );

    // explain reads the CRD's schema from this LC's OpenAPI v3.
    let explain = shard.kubectl_ok(&["explain", "crontab.spec"]);
    assert!(explain.contains("What the cron job runs."), "{explain}");
    // As kube-apiserver publishes every custom resource: its type fields and described metadata.
    let whole = shard.kubectl_ok(&["explain", "crontab"]);
    for field in [
        "apiVersion\t<string>",
        "kind\t<string>",
        "metadata\t<ObjectMeta>",
    ] {
        assert!(whole.contains(field), "{field}: {whole}");
    }
    assert!(whole.contains("Standard object's metadata."), "{whole}");
    // metadata is not required of a built-in kind (only of a core Event).
    let configmap = shard.kubectl_ok(&["explain", "configmap"]);
    assert!(
        configmap.contains("metadata\t<ObjectMeta>")
            && !configmap.contains("metadata\t<ObjectMeta> -required-"),
        "{configmap}"
    );
    assert!(
        explain.contains("cronSpec") && explain.contains("<string>"),
        "{explain}"
    );

    // Unknown fields: kubectl's default is Strict; the object is not written.
    let bad = shard.write_file(
        "bad.yaml",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: bad\nspec:\n  bogus: 1\n",
    );
    let err = shard.kubectl_fails(&["apply", "-f", bad.to_str().expect("utf-8")]);
    assert!(err.contains(r#"unknown field "spec.bogus""#), "{err}");
    // A value of the wrong type is a 422 with the field's path.
    let err = shard.kubectl_fails(&[
        "patch",
        "ct",
        "a",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":"many"}}"#,
    ]);
    assert!(
        err.contains(r#"The CronTab "a" is invalid"#) && err.contains("spec.replicas"),
        "{err}"
    );
    shard.kubectl_fails(&["get", "ct", "bad"]);
    // Warn: written without the unknown field, with the warning kubectl prints.
    let warned = shard.kubectl(&[
        "apply",
        "--validate=warn",
        "-f",
        bad.to_str().expect("utf-8"),
    ]);
    let stderr = String::from_utf8_lossy(&warned.stderr);
    assert!(warned.status.success(), "{stderr}");
    assert!(stderr.contains(r#"unknown field "spec.bogus""#), "{stderr}");
    let stored = shard.kubectl_json(&["get", "ct", "bad", "-o", "json"]);
    assert!(stored["spec"].get("bogus").is_none(), "{stored}");
    shard.kubectl_ok(&["delete", "ct", "bad"]);

    // Status is a subresource: the main resource ignores it, /status writes it.
    shard.kubectl_ok(&[
        "patch",
        "ct",
        "a",
        "--type=merge",
        "-p",
        r#"{"status":{"lastRun":"never"}}"#,
    ]);
    let a_obj = shard.kubectl_json(&["get", "ct", "a", "-o", "json"]);
    assert!(a_obj.pointer("/status/lastRun").is_none(), "{a_obj}");
    shard.kubectl_ok(&[
        "patch",
        "ct",
        "a",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"lastRun":"now"}}"#,
    ]);
    let a_obj = shard.kubectl_json(&["get", "ct", "a", "-o", "json"]);
    assert_eq!(json_str(&a_obj, "/status/lastRun"), "now");
    assert_eq!(a_obj["metadata"]["generation"], 1);
    shard.kubectl_ok(&[
        "patch",
        "ct",
        "a",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":4}}"#,
    ]);
    let a_obj = shard.kubectl_json(&["get", "ct", "a", "-o", "json"]);
    assert_eq!(a_obj["metadata"]["generation"], 2);

    // The scale subresource reads and writes the CRD's replica paths (kubectl scale uses it).
    let out = shard.kubectl_ok(&["scale", "ct", "a", "--replicas=7"]);
    assert!(out.contains("crontab.stable.example.com/a scaled"), "{out}");
    let a_obj = shard.kubectl_json(&["get", "ct", "a", "-o", "json"]);
    assert_eq!(a_obj["spec"]["replicas"], 7);
    let scale = shard.kubectl_json(&[
        "get",
        "--raw",
        "/clusters/root/apis/stable.example.com/v1/namespaces/default/crontabs/a/scale",
    ]);
    assert_eq!(json_str(&scale, "/kind"), "Scale");
    assert_eq!(scale["spec"]["replicas"], 7);
    // Kubernetes' Scale carries the object's identity, not its labels or annotations.
    assert!(scale["metadata"].get("annotations").is_none(), "{scale}");
    assert_eq!(scale["status"]["replicas"], 0);

    // Deleting the CRD deletes its objects and the API. While an object's finalizer holds the
    // CRD in Terminating, its objects stay readable but no new one may be created.
    shard.kubectl_ok(&[
        "patch",
        "ct",
        "a",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
    ]);
    shard.kubectl_ok(&[
        "delete",
        "crd",
        "crontabs.stable.example.com",
        "--wait=false",
    ]);
    shard.eventually("the CRD reports Terminating", || {
        let crd = shard.kubectl_json(&["get", "crd", "crontabs.stable.example.com", "-o", "json"]);
        crd["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Terminating" && c["status"] == "True")
            .then_some(())
    });
    let c = shard.write_file("c.yaml", &crontab("c", "img-c", "1"));
    let err = shard.kubectl_fails(&["create", "-f", c.to_str().expect("utf-8")]);
    assert!(
        err.contains("create not allowed while custom resource definition is terminating"),
        "{err}"
    );
    shard.kubectl_ok(&["get", "ct", "a"]);
    shard.kubectl_ok(&[
        "patch",
        "ct",
        "a",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    shard.kubectl_ok(&[
        "wait",
        "--for=delete",
        "--timeout=30s",
        "crd/crontabs.stable.example.com",
    ]);
    let err = shard.kubectl_fails(&["get", "crontabs.stable.example.com"]);
    assert!(
        err.contains("the server doesn't have a resource type")
            || err.contains("NotFound")
            || err.contains("not find"),
        "{err}"
    );
    install_crontabs(&shard, "root");
    let left = shard.kubectl_ok(&["get", "ct", "-o", "name"]);
    assert!(left.trim().is_empty(), "objects outlived their CRD: {left}");
}

fn same_crd_name_differs_per_logical_cluster(store: StoreKind) {
    let shard = Shard::start(store);
    let lc = shard.write_file(
        "lc.json",
        r#"{"apiVersion":"core.kcp.io/v1alpha1","kind":"LogicalCluster","metadata":{"name":"cluster"}}"#,
    );
    shard
        .kubectl_cmd()
        .context("system:admin")
        .cluster("second")
        .ok(&["create", "-f", lc.to_str().expect("utf-8")]);
    let second = || shard.kubectl_cmd().cluster("second");
    shard.eventually("namespace default in second", || {
        second()
            .run(&["get", "ns", "default"])
            .status
            .success()
            .then_some(())
    });

    install_crontabs(&shard, "root");
    // In `second`, the same CRD name with replicas as a string.
    let other = CRONTAB_CRD.replace(
        "replicas:\n                type: integer",
        "replicas:\n                type: string",
    );
    assert_ne!(other, CRONTAB_CRD);
    let file = shard.write_file("other-crd.yaml", &other);
    second().ok(&["apply", "-f", file.to_str().expect("utf-8")]);
    second().ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        "crd/crontabs.stable.example.com",
    ]);

    let int_cr = shard.write_file("int.yaml", &crontab("num", "x", "3"));
    let str_cr = shard.write_file("str.yaml", &crontab("str", "x", "'three'"));
    shard.kubectl_ok(&["apply", "-f", int_cr.to_str().expect("utf-8")]);
    shard.kubectl_fails(&["apply", "-f", str_cr.to_str().expect("utf-8")]);
    second().ok(&["apply", "-f", str_cr.to_str().expect("utf-8")]);
    second().fails(&["apply", "-f", int_cr.to_str().expect("utf-8")]);

    assert_eq!(
        shard.kubectl_ok(&["get", "ct", "-o", "name"]).trim(),
        "crontab.stable.example.com/num"
    );
    assert_eq!(
        second().ok(&["get", "ct", "-o", "name"]).trim(),
        "crontab.stable.example.com/str"
    );

    // Each LC's OpenAPI describes its own schema.
    let explain_root = shard.kubectl_ok(&["explain", "crontab.spec.replicas"]);
    let explain_second = second().ok(&["explain", "crontab.spec.replicas"]);
    assert!(explain_root.contains("<integer>"), "{explain_root}");
    assert!(explain_second.contains("<string>"), "{explain_second}");
}

fn core_group_crds_and_reserved_groups(store: StoreKind) {
    let shard = Shard::start(store);
    // kcp serves CRDs in the core group, merged into /api/v1 (its fixtures add pods this way).
    let pods = shard.write_file(
        "pods.yaml",
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: pods.core
spec:
  group: ""
  scope: Namespaced
  names: {plural: pods, singular: pod, kind: Pod, shortNames: [po]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#,
    );
    shard.kubectl_ok(&["apply", "-f", pods.to_str().expect("utf-8")]);
    shard.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        "crd/pods.core",
    ]);
    let pod = shard.write_file(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers: [{name: c, image: busybox}]\n",
    );
    shard.kubectl_ok(&["apply", "-f", pod.to_str().expect("utf-8")]);
    let got = shard.kubectl_json(&["get", "po", "p", "-o", "json"]);
    assert_eq!(json_str(&got, "/spec/containers/0/image"), "busybox");
    let v1 = shard.kubectl_json(&["get", "--raw", "/clusters/root/api/v1"]);
    assert!(
        v1["resources"]
            .as_array()
            .is_some_and(|r| r.iter().any(|x| x["name"] == "pods")),
        "pods not in /api/v1: {v1}"
    );

    // CRDs in kcp's own groups are refused outside system logical clusters.
    let reserved = shard.write_file(
        "reserved.yaml",
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.tenancy.kcp.io
spec:
  group: tenancy.kcp.io
  scope: Cluster
  names: {plural: things, kind: Thing}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
"#,
    );
    let err = shard.kubectl_fails(&["apply", "-f", reserved.to_str().expect("utf-8")]);
    assert!(
        err.contains("tenancy.kcp.io is a reserved group") && err.contains("forbidden"),
        "{err}"
    );
}

/// Applies a CRD to `root` and waits until it is established.
fn install_crd(shard: &Shard, name: &str, yaml: &str) {
    let file = shard.write_file(&format!("{name}.yaml"), yaml);
    shard.kubectl_ok(&["apply", "-f", file.to_str().expect("utf-8")]);
    shard.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        &format!("crd/{name}"),
    ]);
}

/// Runs kubectl in `root`; returns whether it succeeded and its stderr (where warnings go).
fn kubectl_stderr(shard: &Shard, args: &[&str]) -> (bool, String) {
    let out = shard.kubectl(args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const DEPRECATED_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1beta1
    served: true
    storage: true
    deprecated: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
  - name: v1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
  - name: v1alpha1
    served: true
    storage: false
    deprecated: true
    deprecationWarning: "v1alpha1 goes away soon"
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true}}}}
"#;

/// Every request through a deprecated version carries kube-apiserver's `Warning` (kubectl prints
/// it): the default text naming the newest served version, or the CRD's own; reads, watches and
/// errors included.
fn deprecated_versions_warn(store: StoreKind) {
    let shard = Shard::start(store);
    install_crd(&shard, "widgets.example.com", DEPRECATED_CRD);
    let default = "Warning: example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget";
    let w = shard.write_file(
        "w.yaml",
        "apiVersion: example.com/v1beta1\nkind: Widget\nmetadata:\n  name: w\nspec: {}\n",
    );
    let (ok, stderr) = kubectl_stderr(&shard, &["create", "-f", w.to_str().expect("utf-8")]);
    assert!(ok && stderr.contains(default), "{stderr}");
    for args in [
        &["get", "widgets.v1beta1.example.com", "w"][..],
        &["get", "widgets.v1beta1.example.com"],
    ] {
        let (ok, stderr) = kubectl_stderr(&shard, args);
        assert!(ok && stderr.contains(default), "{args:?}: {stderr}");
    }
    let (ok, stderr) = kubectl_stderr(&shard, &["get", "widgets.v1beta1.example.com", "missing"]);
    assert!(!ok && stderr.contains(default), "{stderr}");
    let (ok, stderr) = kubectl_stderr(&shard, &["get", "widgets.v1alpha1.example.com", "w"]);
    assert!(
        ok && stderr.contains("Warning: v1alpha1 goes away soon"),
        "{stderr}"
    );
    let (ok, stderr) = kubectl_stderr(&shard, &["get", "widgets.v1.example.com", "w"]);
    assert!(ok && !stderr.contains("Warning"), "{stderr}");
    let (_, headers) = shard.head(
        "/clusters/root/apis/example.com/v1beta1/namespaces/default/widgets?watch=1&timeoutSeconds=1",
        &[],
    );
    assert!(
        headers.iter().any(|(k, v)| k == "warning"
            && v == "299 - \"example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget\""),
        "{headers:?}"
    );
}

const PUBLISHED_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields:
    - jsonPath: .spec.color
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
              port: {x-kubernetes-int-or-string: true}
              template:
                type: object
                x-kubernetes-embedded-resource: true
                x-kubernetes-preserve-unknown-fields: true
"#;

/// The published schema of a custom resource is kube-apiserver's: int-or-string spelled out as
/// `anyOf` (kubectl 1.32's explain still prints such a field, without `type`, as <Object>),
/// embedded resources with their type and metadata, and the selectable fields marked.
fn openapi_shows_int_or_string_embedded_and_selectable_fields(store: StoreKind) {
    let shard = Shard::start(store);
    install_crd(&shard, "gadgets.example.com", PUBLISHED_CRD);
    let template = shard.kubectl_ok(&["explain", "gadget.spec.template"]);
    for field in [
        "apiVersion\t<string> -required-",
        "kind\t<string> -required-",
        "metadata\t<ObjectMeta>",
    ] {
        assert!(template.contains(field), "{field}: {template}");
    }
    let doc = shard.kubectl_json(&[
        "get",
        "--raw",
        "/clusters/root/openapi/v3/apis/example.com/v1",
    ]);
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["com.example.v1.Gadget"]["properties"]["spec"]["properties"]["port"]["anyOf"],
        serde_json::json!([{"type": "integer"}, {"type": "string"}])
    );
    for name in ["com.example.v1.Gadget", "com.example.v1.GadgetList"] {
        assert_eq!(
            schemas[name]["x-kubernetes-selectable-fields"],
            serde_json::json!([{"fieldPath": "spec.color"}]),
            "{name}"
        );
    }
}
