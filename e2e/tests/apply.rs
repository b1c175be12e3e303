//! Server-side apply through the real binary, on both stores: `kubectl apply --server-side` with a
//! conflict and `--force-conflicts` on a built-in kind and on a custom resource, managedFields of
//! ordinary writes, dry runs, and kube-rs `Patch::Apply`.

use k8s_openapi::api::core::v1::ConfigMap;
use kcp_e2e::{Shard, StoreKind, json_str, on_both_stores};
use kube::api::{Api, Patch, PatchParams};
use serde_json::{Value, json};

on_both_stores!(
    kubectl_server_side_apply_conflicts_and_force,
    server_side_apply_on_custom_resources,
    dry_run_writes_nothing,
    concurrent_patches_all_land,
    status_and_scale_writes_are_tracked,
);
on_both_stores!(async kube_rs_patch_apply);

fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        json_str(e, "/manager").to_string(),
                        json_str(e, "/operation").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn kubectl_server_side_apply_conflicts_and_force(store: StoreKind) {
    let shard = Shard::start(store);
    let manifest = |value: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  labels:\n    team: a\ndata:\n  key: {value}\n  keep: x\n"
        )
    };
    let file = shard.write_file("cm.yaml", &manifest("one"));
    let path = file.to_str().expect("utf-8");
    let out = shard.kubectl_ok(&["apply", "--server-side", "-f", path]);
    assert!(out.contains("configmap/ssa serverside-applied"), "{out}");
    let cm = shard.kubectl_json(&["get", "cm", "ssa", "-o", "json", "--show-managed-fields"]);
    assert_eq!(managers(&cm), vec![("kubectl".into(), "Apply".into())]);
    assert_eq!(
        cm["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:data": {"f:keep": {}, "f:key": {}}, "f:metadata": {"f:labels": {"f:team": {}}}})
    );

    // Another manager changes a field the applier owns...
    shard.kubectl_ok(&[
        "patch",
        "cm",
        "ssa",
        "--type=merge",
        "-p",
        r#"{"data":{"key":"two"}}"#,
        "--field-manager=other",
    ]);
    let cm = shard.kubectl_json(&["get", "cm", "ssa", "-o", "json", "--show-managed-fields"]);
    assert!(
        managers(&cm).contains(&("other".into(), "Update".into())),
        "{cm}"
    );

    // ...so a re-apply with a different value conflicts, naming the manager and field.
    shard.write_file("cm.yaml", &manifest("three"));
    let err = shard.kubectl_fails(&["apply", "--server-side", "-f", path]);
    assert!(
        err.contains(r#"Apply failed with 1 conflict: conflict with "other" using v1: .data.key"#),
        "{err}"
    );
    assert_eq!(
        json_str(
            &shard.kubectl_json(&["get", "cm", "ssa", "-o", "json"]),
            "/data/key"
        ),
        "two"
    );

    // Forcing takes the field over; the other manager is left with nothing and disappears.
    shard.kubectl_ok(&["apply", "--server-side", "--force-conflicts", "-f", path]);
    let cm = shard.kubectl_json(&["get", "cm", "ssa", "-o", "json", "--show-managed-fields"]);
    assert_eq!(json_str(&cm, "/data/key"), "three");
    assert_eq!(managers(&cm), vec![("kubectl".into(), "Apply".into())]);

    // Dropping a field from the configuration removes it from the object.
    shard.write_file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  key: three\n",
    );
    shard.kubectl_ok(&["apply", "--server-side", "-f", path]);
    let cm = shard.kubectl_json(&["get", "cm", "ssa", "-o", "json"]);
    assert_eq!(cm["data"], json!({"key": "three"}));
    assert!(cm["metadata"].get("labels").is_none(), "{cm}");

    // Without a field manager an apply is refused, as kube-apiserver refuses it.
    let (code, body) = shard.curl(
        "PATCH",
        "/clusters/root/api/v1/namespaces/default/configmaps/ssa",
        Some(("application/apply-patch+yaml", "{}")),
    );
    assert_eq!(code, 422, "{body}");
    assert!(body.contains("fieldManager: Required value"), "{body}");
}

fn server_side_apply_on_custom_resources(store: StoreKind) {
    let shard = Shard::start(store);
    let crd = shard.write_file(
        "crd.yaml",
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, kind: Gadget}
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
            properties:
              size: {type: integer}
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
"#,
    );
    shard.kubectl_ok(&["apply", "-f", crd.to_str().expect("utf-8")]);
    shard.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        "crd/gadgets.example.com",
    ]);

    let gadget = |ports: &str| {
        format!(
            "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  size: 1\n  ports:\n{ports}"
        )
    };
    let a = shard.write_file("a.yaml", &gadget("  - {name: http, port: 80}\n"));
    shard.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=team-a",
        "-f",
        a.to_str().expect("utf-8"),
    ]);
    // A second manager adds its own item to the map list; both items stay.
    let b = shard.write_file(
        "b.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  ports:\n  - {name: metrics, port: 9090}\n",
    );
    shard.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=team-b",
        "-f",
        b.to_str().expect("utf-8"),
    ]);
    let g = shard.kubectl_json(&["get", "gadgets", "g", "-o", "json"]);
    let names: Vec<&str> = g["spec"]["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| p["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["http", "metrics"], "{g}");

    // team-b changing team-a's item conflicts on exactly that field.
    let b2 = shard.write_file(
        "b2.yaml",
        "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  ports:\n  - {name: http, port: 8080}\n",
    );
    let err = shard.kubectl_fails(&[
        "apply",
        "--server-side",
        "--field-manager=team-b",
        "-f",
        b2.to_str().expect("utf-8"),
    ]);
    assert!(
        err.contains(r#"conflict with "team-a""#)
            && err.contains(r#".spec.ports[name="http"].port"#),
        "{err}"
    );
    shard.kubectl_ok(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=team-b",
        "-f",
        b2.to_str().expect("utf-8"),
    ]);
    let g = shard.kubectl_json(&["get", "gadgets", "g", "-o", "json"]);
    // team-b no longer applies `metrics`, which it alone owned: it is gone.
    assert_eq!(
        g["spec"]["ports"],
        json!([{"name": "http", "port": 8080}]),
        "{g}"
    );
}

fn dry_run_writes_nothing(store: StoreKind) {
    let shard = Shard::start(store);
    shard.kubectl_ok(&["create", "configmap", "real", "--from-literal=a=1"]);
    let before = shard.kubectl_json(&["get", "cm", "real", "-o", "json"]);
    let rv = json_str(&before, "/metadata/resourceVersion").to_string();

    shard.kubectl_ok(&[
        "create",
        "configmap",
        "ghost",
        "--from-literal=a=1",
        "--dry-run=server",
    ]);
    // A dry run meets what a real create would: the name is taken.
    let taken = shard.kubectl_fails(&[
        "create",
        "configmap",
        "real",
        "--from-literal=a=1",
        "--dry-run=server",
    ]);
    assert!(
        taken.contains(r#"configmaps "real" already exists"#),
        "{taken}"
    );
    shard.kubectl_ok(&["label", "cm", "real", "x=y", "--dry-run=server"]);
    shard.kubectl_ok(&[
        "patch",
        "cm",
        "real",
        "--type=merge",
        "-p",
        r#"{"data":{"a":"2"}}"#,
        "--dry-run=server",
    ]);
    let file = shard.write_file(
        "ssa.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: real\ndata:\n  a: '3'\n",
    );
    shard.kubectl_ok(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "--dry-run=server",
        "-f",
        file.to_str().expect("utf-8"),
    ]);
    shard.kubectl_ok(&["delete", "cm", "real", "--dry-run=server"]);
    shard.kubectl_ok(&["delete", "cm", "--all", "--dry-run=server"]);

    shard.kubectl_fails(&["get", "cm", "ghost"]);
    let after = shard.kubectl_json(&["get", "cm", "real", "-o", "json"]);
    assert_eq!(json_str(&after, "/metadata/resourceVersion"), rv);
    assert_eq!(after["data"], json!({"a": "1"}));
    assert!(after["metadata"].get("labels").is_none());
}

async fn kube_rs_patch_apply(store: StoreKind) {
    let shard = Shard::start(store);
    let client = shard.kube_client().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let config = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "from-kube"},
        "data": {"a": "1"}
    });
    let params = PatchParams::apply("kube-rs-test");
    let created = cms
        .patch("from-kube", &params, &Patch::Apply(&config))
        .await
        .expect("apply creates");
    assert_eq!(
        created
            .data
            .as_ref()
            .and_then(|d| d.get("a"))
            .map(String::as_str),
        Some("1")
    );
    let entries = created.metadata.managed_fields.unwrap_or_default();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].manager.as_deref(), Some("kube-rs-test"));
    assert_eq!(entries[0].operation.as_deref(), Some("Apply"));

    // A conflicting apply by another manager fails with 409 until forced.
    let other = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-kube"}, "data": {"a": "2"}});
    let err = cms
        .patch(
            "from-kube",
            &PatchParams::apply("intruder"),
            &Patch::Apply(&other),
        )
        .await
        .expect_err("conflict");
    match err {
        kube::Error::Api(status) => {
            assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"))
        }
        other => panic!("unexpected error {other:?}"),
    }
    let forced = cms
        .patch(
            "from-kube",
            &PatchParams::apply("intruder").force(),
            &Patch::Apply(&other),
        )
        .await
        .expect("forced apply");
    assert_eq!(
        forced
            .data
            .as_ref()
            .and_then(|d| d.get("a"))
            .map(String::as_str),
        Some("2")
    );
}

/// Patches and applies without a resourceVersion, racing on one object, all land: a write that
/// meets a newer object is patched again onto it (Kubernetes' GuaranteedUpdate), never a 409.
fn concurrent_patches_all_land(store: StoreKind) {
    let shard = Shard::start(store);
    const CM: &str = "/clusters/root/api/v1/namespaces/default/configmaps";
    let (code, body) = shard.curl(
        "POST",
        CM,
        Some(("application/json", r#"{"metadata":{"name":"raced"}}"#)),
    );
    assert_eq!(code, 201, "{body}");
    let codes: Vec<(u16, String)> = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..24)
            .map(|i| {
                let shard = &shard;
                scope.spawn(move || {
                    if i % 2 == 0 {
                        shard.curl(
                            "PATCH",
                            &format!("{CM}/raced"),
                            Some((
                                "application/merge-patch+json",
                                &format!(r#"{{"data":{{"k{i}":"v"}}}}"#),
                            )),
                        )
                    } else {
                        shard.curl(
                            "PATCH",
                            &format!("{CM}/raced?fieldManager=m{i}"),
                            Some((
                                "application/apply-patch+yaml",
                                &format!(
                                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"raced"}},"data":{{"k{i}":"v"}}}}"#
                                ),
                            )),
                        )
                    }
                })
            })
            .collect();
        writers
            .into_iter()
            .map(|w| w.join().expect("a writer thread"))
            .collect()
    });
    for (i, (code, body)) in codes.iter().enumerate() {
        assert_eq!(*code, 200, "writer {i}: {body}");
    }
    let (code, body) = shard.curl("GET", &format!("{CM}/raced"), None);
    assert_eq!(code, 200, "{body}");
    let cm: Value = serde_json::from_str(&body).expect("a ConfigMap");
    for i in 0..24 {
        assert_eq!(cm["data"][format!("k{i}")], "v", "k{i} lost: {cm}");
    }
}

/// Writes through `/status` and `/scale` are recorded in managedFields with their subresource, so
/// server-side apply of status by a controller drops what it stops applying and conflicts with
/// another manager; without a status subresource, a status change bumps the generation.
fn status_and_scale_writes_are_tracked(store: StoreKind) {
    let shard = Shard::start(store);
    let crd = |plural: &str, kind: &str, subresources: &str| {
        format!(
            r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: {plural}, kind: {kind}}}
  versions:
  - name: v1
    served: true
    storage: true
{subresources}    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {{type: integer}}
          status:
            type: object
            properties:
              replicas: {{type: integer}}
              selector: {{type: string}}
"#
        )
    };
    let scaled = "    subresources:\n      status: {}\n      scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.replicas}\n";
    for (name, text) in [
        ("widgets.yaml", crd("widgets", "Widget", scaled)),
        ("plains.yaml", crd("plains", "Plain", "")),
    ] {
        let file = shard.write_file(name, &text);
        shard.kubectl_ok(&["apply", "-f", file.to_str().expect("utf-8")]);
    }
    shard.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        "crd/widgets.example.com",
        "crd/plains.example.com",
    ]);
    let object = |kind: &str, body: &str| {
        format!("apiVersion: example.com/v1\nkind: {kind}\nmetadata:\n  name: w\n{body}")
    };
    let w = shard.write_file("w.yaml", &object("Widget", "spec:\n  replicas: 1\n"));
    shard.kubectl_ok(&["create", "-f", w.to_str().expect("utf-8")]);

    let apply_status = |manager: &str, status: &str, force: bool| {
        let file = shard.write_file("status.yaml", &object("Widget", status));
        let mut args = vec![
            "apply",
            "--server-side",
            "--subresource=status",
            "-f",
            file.to_str().expect("utf-8"),
        ];
        let flag = format!("--field-manager={manager}");
        args.push(&flag);
        if force {
            args.push("--force-conflicts");
        }
        shard.kubectl(&args)
    };
    let entry = |obj: &Value, manager: &str| -> Value {
        obj["metadata"]["managedFields"]
            .as_array()
            .and_then(|e| e.iter().find(|e| e["manager"] == manager).cloned())
            .unwrap_or(Value::Null)
    };
    let get =
        || shard.kubectl_json(&["get", "widgets", "w", "-o", "json", "--show-managed-fields"]);

    let out = apply_status("ctrl", "status:\n  replicas: 3\n  selector: app=x\n", false);
    assert!(out.status.success(), "{out:?}");
    let obj = get();
    let ctrl = entry(&obj, "ctrl");
    assert_eq!(
        (
            json_str(&ctrl, "/operation"),
            json_str(&ctrl, "/subresource")
        ),
        ("Apply", "status"),
        "{obj}"
    );
    assert_eq!(
        ctrl["fieldsV1"],
        json!({"f:status": {"f:replicas": {}, "f:selector": {}}})
    );
    // The controller stops applying the selector: it is removed.
    let out = apply_status("ctrl", "status:\n  replicas: 3\n", false);
    assert!(out.status.success(), "{out:?}");
    let obj = get();
    assert_eq!(obj["status"], json!({"replicas": 3}), "{obj}");
    assert_eq!(obj["spec"], json!({"replicas": 1}));
    // Another applier of the same field conflicts with the controller's status entry.
    let out = apply_status("other", "status:\n  replicas: 7\n", false);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains(r#"conflict with "ctrl" with subresource "status": .status.replicas"#),
        "{err}"
    );
    assert_eq!(get()["status"]["replicas"], 3);

    // kubectl scale writes through /scale: an entry of subresource scale owning spec.replicas.
    shard.kubectl_ok(&["scale", "widgets/w", "--replicas=4"]);
    let obj = get();
    assert_eq!(obj["spec"]["replicas"], 4);
    let scaler = obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["subresource"] == "scale").cloned())
        .unwrap_or(Value::Null);
    assert_eq!(json_str(&scaler, "/operation"), "Update", "{obj}");
    assert_eq!(scaler["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));

    // Without a status subresource, status is content like any other: generation follows it.
    let p = shard.write_file("p.yaml", &object("Plain", "spec:\n  replicas: 1\n"));
    shard.kubectl_ok(&["create", "-f", p.to_str().expect("utf-8")]);
    shard.kubectl_ok(&[
        "patch",
        "plains",
        "w",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":1}}"#,
    ]);
    let plain = shard.kubectl_json(&["get", "plains", "w", "-o", "json"]);
    assert_eq!(plain["metadata"]["generation"], 2, "{plain}");
}
