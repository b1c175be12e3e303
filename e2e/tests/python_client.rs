//! The official Kubernetes Python client against the real shard, on both stores: create, every
//! patch type (JSON, merge, strategic, apply with a conflict), a watch that sees every change,
//! custom objects, and delete (`e2e/python/client_walk.py`).

use std::process::Command;

use kcp_e2e::python::{python_with_kubernetes, script};
use kcp_e2e::{Shard, StoreKind, on_both_stores};
use serde_json::{Value, json};

on_both_stores!(python_client_walk);

fn python_client_walk(store: StoreKind) {
    let shard = Shard::start(store);
    let crd = shard.write_file(
        "crd.yaml",
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
"#,
    );
    shard.kubectl_ok(&["apply", "-f", crd.to_str().expect("utf-8")]);
    shard.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        "crd/widgets.example.com",
    ]);
    let widget = shard.write_file(
        "w1.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 1}\n",
    );
    shard.kubectl_ok(&["apply", "-f", widget.to_str().expect("utf-8")]);

    let python = python_with_kubernetes();
    let output = Command::new(python)
        .arg(script("client_walk.py"))
        .arg(shard.kubeconfig())
        .arg("root")
        .arg("default")
        .output()
        .expect("running the Python client");
    assert!(
        output.status.success(),
        "client_walk.py failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let out: Value = serde_json::from_slice(&output.stdout).expect("the script prints JSON");

    assert_eq!(
        out["after_patches"],
        json!({"a": "1", "json": "j", "merge": "m", "strategic": "s", "apply": "a"}),
        "{out}"
    );
    let managers: Vec<&str> = out["managers"]
        .as_array()
        .expect("managers")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(managers.contains(&"python-apply"), "{out}");
    assert_eq!(out["conflict_status"], 409, "{out}");
    assert_eq!(out["missing"], json!({"status": 404, "reason": "NotFound"}));
    assert_eq!(out["widgets"], json!(["w1"]));
    assert_eq!(out["widget_size"], 9);

    // The watch saw the create, each of the four patches, and the delete, in order.
    let events = out["events"].as_array().expect("events");
    let types: Vec<&str> = events.iter().filter_map(|e| e[0].as_str()).collect();
    assert_eq!(
        types,
        [
            "ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED"
        ],
        "{out}"
    );
    assert_eq!(events[4][1]["apply"], "a");
}
