//! Write requests' options and bodies judged as kube-apiserver judges them, on both stores: a
//! collection DELETE with `limit` deletes one page, delete options that cannot be read or that
//! contradict each other are refused (nothing is deleted), a PUT names its object, an apply names
//! the endpoint's version, and a Namespace's finalize endpoint only takes valid finalizers by PUT.
//! Numbers as Go decodes them: `15.0` is no integer for a built-in kind (400), and a custom
//! resource stores an integral number as an integer, so typed clients can read it.

use kcp_e2e::{Shard, StoreKind, json_str, on_both_stores};
use serde_json::Value;

on_both_stores!(write_options_and_bodies, integral_numbers);

const CMS: &str = "/clusters/root/api/v1/namespaces/default/configmaps";

fn status(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or(Value::Null)
}

fn write_options_and_bodies(store: StoreKind) {
    let shard = Shard::start(store);
    for i in 1..=5 {
        shard.kubectl_ok(&["create", "configmap", &format!("d{i}")]);
        shard.kubectl_ok(&["label", "configmap", &format!("d{i}"), "t=x"]);
    }
    let names = || -> Vec<String> {
        let (_, body) = shard.curl("GET", &format!("{CMS}?labelSelector=t%3Dx"), None);
        status(&body)["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|i| json_str(i, "/metadata/name").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };

    // One page of two goes, and the answer says how to go on.
    let (code, body) = shard.curl(
        "DELETE",
        &format!("{CMS}?limit=2&labelSelector=t%3Dx"),
        None,
    );
    assert_eq!(code, 200, "{body}");
    let page = status(&body);
    assert_eq!(page["items"].as_array().map(Vec::len), Some(2), "{body}");
    assert!(!json_str(&page, "/metadata/continue").is_empty(), "{body}");
    assert_eq!(names(), ["d3", "d4", "d5"]);

    // Options Kubernetes cannot read, or that contradict each other: nothing is deleted.
    let (code, body) = shard.curl("DELETE", &format!("{CMS}/d3?gracePeriodSeconds=abc"), None);
    assert_eq!(code, 400, "{body}");
    let (code, body) = shard.curl(
        "DELETE",
        &format!("{CMS}/d3?orphanDependents=true&propagationPolicy=Foreground"),
        None,
    );
    assert_eq!(code, 422, "{body}");
    assert!(
        body.contains("orphanDependents and deletionPropagation cannot be both set"),
        "{body}"
    );
    let (code, body) = shard.curl("DELETE", &format!("{CMS}/d3?propagationPolicy=Later"), None);
    assert_eq!(code, 422, "{body}");
    assert!(body.contains(r#"\"Orphan\", \"nil\""#), "{body}");
    assert_eq!(names(), ["d3", "d4", "d5"]);

    // A PUT whose body names no object is not taken for the URL's.
    let (code, body) = shard.curl(
        "PUT",
        &format!("{CMS}/d3"),
        Some((
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{},"data":{"a":"e"}}"#,
        )),
    );
    assert_eq!(code, 400, "{body}");
    assert!(
        body.contains(
            "the name of the object (d3 based on URL) was undeterminable: name must be provided"
        ),
        "{body}"
    );

    // An apply must name the endpoint's version; without one nothing is applied.
    let (code, body) = shard.curl(
        "PATCH",
        &format!("{CMS}/d3?fieldManager=m"),
        Some((
            "application/apply-patch+yaml",
            r#"{"kind":"ConfigMap","metadata":{"name":"d3"}}"#,
        )),
    );
    assert_eq!(code, 400, "{body}");
    assert!(
        body.contains(
            "Incorrect version specified in apply patch. Specified patch version: , expected: v1"
        ),
        "{body}"
    );

    // `force` is read as Kubernetes reads query booleans: anything but false or 0 forces.
    let apply = |manager: &str, value: &str, force: &str| {
        shard.curl(
            "PATCH",
            &format!("{CMS}/applied?fieldManager={manager}{force}"),
            Some((
                "application/apply-patch+yaml",
                &format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"applied"}},"data":{{"k":"{value}"}}}}"#),
            )),
        )
    };
    assert_eq!(apply("a", "1", "").0, 201);
    assert_eq!(apply("b", "2", "&force=false").0, 409);
    let (code, body) = apply("b", "2", "&force=abc");
    assert_eq!(code, 200, "{body}");

    // A Namespace's finalizers by PUT only, each a valid one.
    shard.kubectl_ok(&["create", "namespace", "fz"]);
    let finalize = "/clusters/root/api/v1/namespaces/fz/finalize";
    let ns = |finalizer: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"fz"}},"spec":{{"finalizers":["{finalizer}"]}}}}"#
        )
    };
    let (code, body) = shard.curl(
        "PUT",
        finalize,
        Some(("application/json", &ns("Bad Name!"))),
    );
    assert_eq!(code, 422, "{body}");
    assert!(body.contains("spec.finalizers[0]"), "{body}");
    let (code, body) = shard.curl(
        "PUT",
        finalize,
        Some(("application/json", &ns("example.com/x"))),
    );
    assert_eq!(code, 200, "{body}");
    let (code, body) = shard.curl(
        "PATCH",
        finalize,
        Some((
            "application/merge-patch+json",
            r#"{"spec":{"finalizers":[]}}"#,
        )),
    );
    assert_eq!(code, 405, "{body}");
    let ns = shard.kubectl_json(&["get", "namespace", "fz", "-o", "json"]);
    assert_eq!(
        ns["spec"]["finalizers"],
        serde_json::json!(["example.com/x"]),
        "{ns}"
    );
}

fn integral_numbers(store: StoreKind) {
    let shard = Shard::start(store);
    let (code, body) = shard.curl(
        "POST",
        "/clusters/root/apis/coordination.k8s.io/v1/namespaces/default/leases",
        Some((
            "application/json",
            r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l"},"spec":{"leaseDurationSeconds":15.0}}"#,
        )),
    );
    assert_eq!(code, 400, "{body}");
    assert!(
        body.contains("cannot unmarshal number 15.0 into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32"),
        "{body}"
    );
    let crd = shard.write_file(
        "crd.yaml",
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: counts.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: counts, kind: Count}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
            properties:
              n: {type: integer}
              ratio: {type: number}
"#,
    );
    shard.kubectl_ok(&["apply", "-f", crd.to_str().expect("utf-8")]);
    shard.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        "crd/counts.example.com",
    ]);
    let (code, body) = shard.curl(
        "POST",
        "/clusters/root/apis/example.com/v1/namespaces/default/counts",
        Some((
            "application/json",
            r#"{"apiVersion":"example.com/v1","kind":"Count","metadata":{"name":"c"},"spec":{"n":2.0,"ratio":0.5,"extra":[1e3]}}"#,
        )),
    );
    assert_eq!(code, 201, "{body}");
    let (_, body) = shard.curl(
        "GET",
        "/clusters/root/apis/example.com/v1/namespaces/default/counts/c",
        None,
    );
    assert!(
        body.contains(r#""n":2,"#) && body.contains(r#""extra":[1000]"#),
        "{body}"
    );
    assert_eq!(status(&body)["spec"]["ratio"], 0.5, "{body}");
}
