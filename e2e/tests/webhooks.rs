//! Admission webhooks per logical cluster, against a real HTTPS webhook server run by the test (its
//! certificate from a throwaway CA, passed as `caBundle`), on both stores: mutation by JSONPatch,
//! denials, namespace and object selectors, deletes, the `kcp.io/cluster` annotation, isolation
//! between logical clusters, failurePolicy with the server down, dry runs, matchConditions,
//! reinvocation, warnings and configuration validation.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use kcp_e2e::{Shard, StoreKind, json_str, on_both_stores};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};

on_both_stores!(
    webhooks_mutate_validate_and_stay_in_their_cluster,
    failure_policy_and_dry_run,
    mutating_webhooks_are_reinvoked_if_needed,
    webhooks_choose_no_workspace_cluster_or_creator,
);

/// The name of the logical cluster the `/hijack` webhook asks a new Workspace to get.
const HIJACKED: &str = "hijackedcluster0";

/// Every AdmissionReview request received: (path, request).
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// An HTTPS admission webhook server on loopback, on its own thread and runtime (the test's kubectl
/// calls block). Paths: `/label` adds a label by JSONPatch, `/annotate` sets an annotation,
/// `/deny` refuses objects carrying `data.forbidden` and deletes of objects labelled
/// `protect=true`, `/allow` allows everything with a warning, `/move` changes the namespace,
/// `/hijack` changes a Workspace's LC name and creator annotations.
struct WebhookServer {
    addr: SocketAddr,
    ca_pem: String,
    seen: Seen,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

fn respond(path: &str, req: &Value) -> Value {
    let uid = req.get("uid").cloned().unwrap_or(Value::Null);
    let mut response = json!({"uid": uid, "allowed": true});
    let has = |obj: &str, pointer: &str| req.get(obj).and_then(|o| o.pointer(pointer)).is_some();
    match path {
        "/label" => {
            let patch = if has("object", "/metadata/labels") {
                json!([{"op": "add", "path": "/metadata/labels/webhook.example.com~1seen", "value": "true"}])
            } else {
                json!([{"op": "add", "path": "/metadata/labels", "value": {"webhook.example.com/seen": "true"}}])
            };
            let bytes = serde_json::to_vec(&patch).unwrap_or_default();
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(bytes));
        }
        "/annotate" => {
            // Objects always carry the kcp.io/cluster annotation, so the map exists.
            let patch = json!([{"op": "add", "path": "/metadata/annotations/webhook.example.com~1annotated", "value": "true"}]);
            let bytes = serde_json::to_vec(&patch).unwrap_or_default();
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(bytes));
        }
        "/deny" => {
            let protected = req.get("operation") == Some(&json!("DELETE"))
                && req.pointer("/oldObject/metadata/labels/protect") == Some(&json!("true"));
            if has("object", "/data/forbidden") {
                response["allowed"] = json!(false);
                response["status"] = json!({"code": 403, "message": "forbidden key present"});
            } else if protected {
                response["allowed"] = json!(false);
                response["status"] = json!({"code": 403, "message": "protected"});
            }
        }
        "/allow" => response["warnings"] = json!(["allowed by the test webhook"]),
        "/hijack" => {
            // Another LC for a new Workspace, and another creator (who would be its admin).
            let patch = json!([
                {"op": "add", "path": "/metadata/annotations/internal.tenancy.kcp.io~1cluster", "value": HIJACKED},
                {"op": "add", "path": "/metadata/annotations/experimental.tenancy.kcp.io~1owner", "value": r#"{"username":"mallory"}"#},
            ]);
            let bytes = serde_json::to_vec(&patch).unwrap_or_default();
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(bytes));
        }
        "/move" => {
            let patch =
                json!([{"op": "replace", "path": "/metadata/namespace", "value": "elsewhere"}]);
            let bytes = serde_json::to_vec(&patch).unwrap_or_default();
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(bytes));
        }
        _ => {}
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

impl WebhookServer {
    fn start() -> WebhookServer {
        kcp_e2e::install_crypto_provider();
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().expect("serving key");
        let params = CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
        let cert = params
            .signed_by(&key, &issuer)
            .expect("serving certificate");
        let tls = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(cert.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .expect("server TLS config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let seen: Seen = Arc::default();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
        let recorded = seen.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("webhook runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind webhook server");
                let _ = addr_tx.send(listener.local_addr().expect("local address"));
                loop {
                    let (tcp, _) = tokio::select! {
                        accepted = listener.accept() => match accepted { Ok(a) => a, Err(_) => continue },
                        _ = &mut stop_rx => return,
                    };
                    let acceptor = acceptor.clone();
                    let recorded = recorded.clone();
                    tokio::spawn(async move {
                        let Ok(tls) = acceptor.accept(tcp).await else { return };
                        let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                            let recorded = recorded.clone();
                            async move {
                                let path = req.uri().path().to_string();
                                let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                                let review: Value = serde_json::from_slice(&body).unwrap_or_default();
                                let request = review.get("request").cloned().unwrap_or_default();
                                let answer = respond(&path, &request);
                                recorded.lock().expect("lock").push((path, request));
                                let bytes = serde_json::to_vec(&answer).unwrap_or_default();
                                Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::from(bytes))))
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(tls), service)
                            .await;
                    });
                }
            });
        });
        let addr = addr_rx.recv().expect("webhook server address");
        WebhookServer {
            addr,
            ca_pem: ca_cert.pem(),
            seen,
            stop: Some(stop_tx),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// The requests received on `path`.
    fn requests(&self, path: &str) -> Vec<Value> {
        self.seen
            .lock()
            .expect("lock")
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, r)| r.clone())
            .collect()
    }
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// One webhook configuration of `kind` (Mutating/Validating) with a single webhook.
fn configuration(kind: &str, name: &str, url: &str, ca_bundle: &str, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "rules": [{"operations": ["CREATE", "UPDATE", "DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(h), Some(e)) = (hook.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            h.insert(k.clone(), v.clone());
        }
    }
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": format!("{kind}WebhookConfiguration"),
        "metadata": {"name": name},
        "webhooks": [hook],
    })
}

fn apply(shard: &Shard, cluster: &str, file: &str, obj: &Value) {
    let path = shard.write_file(file, &obj.to_string());
    shard
        .kubectl_cmd()
        .cluster(cluster)
        .ok(&["apply", "-f", path.to_str().expect("utf-8")]);
}

fn configmap(name: &str, namespace: &str, labels: Value, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": namespace, "labels": labels}, "data": data})
}

/// `kubectl create -f` of `obj` in `cluster`; the output, and whether it succeeded.
fn create(shard: &Shard, cluster: &str, file: &str, obj: &Value, extra: &[&str]) -> (bool, String) {
    let path = shard.write_file(file, &obj.to_string());
    let mut args = vec!["create", "-f", path.to_str().expect("utf-8")];
    args.extend_from_slice(extra);
    let out = shard.kubectl_cmd().cluster(cluster).run(&args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn new_cluster(shard: &Shard, name: &str) {
    let lc = shard.write_file(
        "lc.json",
        r#"{"apiVersion":"core.kcp.io/v1alpha1","kind":"LogicalCluster","metadata":{"name":"cluster"}}"#,
    );
    shard
        .kubectl_cmd()
        .context("system:admin")
        .cluster(name)
        .ok(&["create", "-f", lc.to_str().expect("utf-8")]);
    shard.eventually("namespace default in the new cluster", || {
        shard
            .kubectl_cmd()
            .cluster(name)
            .run(&["get", "ns", "default"])
            .status
            .success()
            .then_some(())
    });
}

fn webhooks_mutate_validate_and_stay_in_their_cluster(store: StoreKind) {
    let hooks = WebhookServer::start();
    let shard = Shard::start(store);
    new_cluster(&shard, "second");
    for cluster in ["root", "second"] {
        let k = || shard.kubectl_cmd().cluster(cluster);
        k().ok(&["create", "namespace", "labelled"]);
        k().ok(&["label", "namespace", "labelled", "env=prod"]);
        k().ok(&["create", "namespace", "other"]);
    }

    // Mutating: a label added by JSONPatch, for configmaps in namespaces labelled env=prod.
    let label = configuration(
        "Mutating",
        "label.example.com",
        &hooks.url("/label"),
        &hooks.ca_bundle(),
        json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}),
    );
    apply(&shard, "root", "label.json", &label);
    // Stored with Kubernetes' defaults, so JSON patches can address them.
    let stored = shard.kubectl_cmd().cluster("root").json(&[
        "get",
        "mutatingwebhookconfiguration",
        "label.example.com",
        "-o",
        "json",
    ]);
    let hook = &stored["webhooks"][0];
    assert_eq!(
        (
            &hook["timeoutSeconds"],
            &hook["failurePolicy"],
            &hook["reinvocationPolicy"],
            &hook["matchPolicy"],
            &hook["objectSelector"]
        ),
        (
            &json!(10),
            &json!("Fail"),
            &json!("Never"),
            &json!("Equivalent"),
            &json!({})
        ),
        "{stored}"
    );
    let probe = configmap("probe", "labelled", json!({}), json!({}));
    shard.eventually("the mutating webhook is in effect", || {
        let (ok, out) = create(
            &shard,
            "root",
            "probe.json",
            &probe,
            &["--dry-run=server", "-o", "json"],
        );
        (ok && out.contains("webhook.example.com/seen")).then_some(())
    });
    let k = || shard.kubectl_cmd().cluster("root");
    k().ok(&["create", "configmap", "a", "-n", "labelled"]);
    k().ok(&["create", "configmap", "b", "-n", "other"]);
    let a = k().json(&["get", "configmap", "a", "-n", "labelled", "-o", "json"]);
    assert_eq!(
        json_str(&a, "/metadata/labels/webhook.example.com~1seen"),
        "true",
        "{a}"
    );
    let b = k().json(&["get", "configmap", "b", "-n", "other", "-o", "json"]);
    assert!(
        b.pointer("/metadata/labels/webhook.example.com~1seen")
            .is_none(),
        "{b}"
    );

    let seen = hooks.requests("/label");
    assert!(
        seen.iter().all(|r| r["namespace"] == "labelled"),
        "{seen:?}"
    );
    let review = seen
        .iter()
        .find(|r| r.pointer("/object/metadata/name") == Some(&json!("a")))
        .expect("the webhook saw configmap a");
    assert_eq!(review["operation"], "CREATE");
    assert_eq!(
        review["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        review["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(review["dryRun"], false);
    assert_eq!(
        json_str(review, "/object/metadata/annotations/kcp.io~1cluster"),
        "root"
    );
    assert!(
        !json_str(review, "/userInfo/username").is_empty(),
        "{review}"
    );
    assert!(review["oldObject"].is_null());

    // Validating: objects labelled guarded=true may not carry data.forbidden nor be deleted when
    // labelled protect=true.
    let deny = configuration(
        "Validating",
        "deny.example.com",
        &hooks.url("/deny"),
        &hooks.ca_bundle(),
        json!({"objectSelector": {"matchLabels": {"guarded": "true"}}}),
    );
    apply(&shard, "root", "deny.json", &deny);
    let bad = configmap(
        "bad",
        "other",
        json!({"guarded": "true"}),
        json!({"forbidden": "x"}),
    );
    let denied = shard.eventually("the validating webhook is in effect", || {
        let (ok, out) = create(&shard, "root", "bad.json", &bad, &["--dry-run=server"]);
        (!ok).then_some(out)
    });
    assert!(
        denied.contains(
            r#"admission webhook "deny.example.com" denied the request: forbidden key present"#
        ),
        "{denied}"
    );
    // The webhook gave code 403 and no reason: the client sees none, as Kubernetes passes the
    // webhook's Status on.
    let (ok, out) = create(&shard, "root", "bad.json", &bad, &[]);
    assert!(!ok && out.starts_with("Error from server: "), "{out}");
    k().fails(&["get", "configmap", "bad", "-n", "other"]);
    // Not selected by objectSelector: allowed.
    let unguarded = configmap("unguarded", "other", json!({}), json!({"forbidden": "x"}));
    assert!(create(&shard, "root", "unguarded.json", &unguarded, &[]).0);

    let kept = configmap(
        "kept",
        "other",
        json!({"guarded": "true", "protect": "true"}),
        json!({"a": "1"}),
    );
    assert!(create(&shard, "root", "kept.json", &kept, &[]).0);
    let out = k().fails(&[
        "patch",
        "configmap",
        "kept",
        "-n",
        "other",
        "--type=merge",
        "-p",
        r#"{"data":{"forbidden":"y"}}"#,
    ]);
    assert!(out.contains("forbidden key present"), "{out}");
    let out = k().fails(&["delete", "configmap", "kept", "-n", "other"]);
    assert!(
        out.contains(r#"admission webhook "deny.example.com" denied the request: protected"#),
        "{out}"
    );
    k().ok(&["get", "configmap", "kept", "-n", "other"]);
    let deletes: Vec<Value> = hooks
        .requests("/deny")
        .into_iter()
        .filter(|r| r["operation"] == "DELETE")
        .collect();
    assert!(
        deletes.iter().any(|r| r["object"].is_null()
            && r.pointer("/oldObject/metadata/name") == Some(&json!("kept"))),
        "{deletes:?}"
    );
    // Lifting the protection lets the delete through the same webhook.
    k().ok(&["label", "configmap", "kept", "-n", "other", "protect-"]);
    k().ok(&["delete", "configmap", "kept", "-n", "other"]);

    // The second logical cluster has no configurations: nothing applies there.
    let calls_before = hooks.seen.lock().expect("lock").len();
    let second = || shard.kubectl_cmd().cluster("second");
    second().ok(&["create", "configmap", "a", "-n", "labelled"]);
    assert!(create(&shard, "second", "bad.json", &bad, &[]).0);
    let a2 = second().json(&["get", "configmap", "a", "-n", "labelled", "-o", "json"]);
    assert!(a2.pointer("/metadata/labels").is_none(), "{a2}");
    assert_eq!(hooks.seen.lock().expect("lock").len(), calls_before);
}

fn failure_policy_and_dry_run(store: StoreKind) {
    let hooks = WebhookServer::start();
    let shard = Shard::start(store);
    let k = || shard.kubectl_cmd().cluster("root");
    // A port nobody listens on.
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    let dead_url = format!("https://{dead}/validate");
    let down = |policy: &str| {
        configuration(
            "Validating",
            "down.example.com",
            &dead_url,
            &hooks.ca_bundle(),
            json!({"failurePolicy": policy, "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]}),
        )
    };
    apply(&shard, "root", "down.json", &down("Fail"));
    let cm = configmap("c", "default", json!({}), json!({}));
    let out = shard.eventually("the failing webhook is in effect", || {
        let (ok, out) = create(&shard, "root", "c.json", &cm, &["--dry-run=server"]);
        (!ok).then_some(out)
    });
    assert!(
        out.contains(&format!(
            r#"Internal error occurred: failed calling webhook "down.example.com": failed to call webhook: Post "{dead_url}""#
        )),
        "{out}"
    );
    let (ok, out) = create(&shard, "root", "c.json", &cm, &[]);
    assert!(!ok && out.contains("(InternalError)"), "{out}");
    k().fails(&["get", "configmap", "c"]);

    apply(&shard, "root", "down.json", &down("Ignore"));
    shard.eventually("failurePolicy Ignore lets writes through", || {
        create(&shard, "root", "c.json", &cm, &[]).0.then_some(())
    });
    k().ok(&["get", "configmap", "c"]);
    // A webhook that fails everything does not lock its own configuration in.
    let mut everything = down("Fail");
    everything["webhooks"][0]["rules"] = json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}]);
    apply(&shard, "root", "down.json", &everything);
    shard.eventually("the failing catch-all webhook is in effect", || {
        (!k()
            .run(&["create", "namespace", "blocked"])
            .status
            .success())
        .then_some(())
    });
    k().ok(&[
        "delete",
        "validatingwebhookconfiguration",
        "down.example.com",
    ]);

    // A service reference cannot be called in kcp: a call failure under failurePolicy Fail.
    let mut service = configuration("Validating", "service.example.com", "", "", json!({}));
    service["webhooks"][0]["clientConfig"] =
        json!({"service": {"namespace": "default", "name": "svc"}});
    apply(&shard, "root", "service.json", &service);
    let d = configmap("d", "default", json!({}), json!({}));
    let out = shard.eventually("the service webhook is in effect", || {
        let (ok, out) = create(&shard, "root", "d.json", &d, &[]);
        (!ok).then_some(out)
    });
    assert!(
        out.contains(r#"failed calling webhook "service.example.com""#),
        "{out}"
    );
    k().ok(&[
        "delete",
        "validatingwebhookconfiguration",
        "service.example.com",
    ]);

    // admissionregistration/v1 accepts only webhooks without side effects (None, NoneOnDryRun),
    // so dry runs always reach them, marked dryRun.
    let effects = |side_effects: &str| {
        configuration(
            "Validating",
            "effects.example.com",
            &hooks.url("/allow"),
            &hooks.ca_bundle(),
            json!({"sideEffects": side_effects}),
        )
    };
    let some = shard.write_file("some.json", &effects("Some").to_string());
    let out = k().fails(&["create", "-f", some.to_str().expect("utf-8")]);
    assert!(
        out.contains(r#"webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun""#),
        "{out}"
    );
    apply(&shard, "root", "effects.json", &effects("NoneOnDryRun"));
    let f = configmap("f", "default", json!({}), json!({}));
    shard.eventually("the dry run reaches the webhook", || {
        let (ok, _) = create(&shard, "root", "f.json", &f, &["--dry-run=server"]);
        let seen = hooks.requests("/allow").into_iter().any(|r| {
            r["dryRun"] == true && r.pointer("/object/metadata/name") == Some(&json!("f"))
        });
        (ok && seen).then_some(())
    });
    k().fails(&["get", "configmap", "f"]);
    let e = configmap("e", "default", json!({}), json!({}));
    let (ok, out) = create(&shard, "root", "e.json", &e, &[]);
    assert!(ok, "{out}");
    assert!(
        out.contains("Warning: allowed by the test webhook"),
        "{out}"
    );
    let real = hooks.requests("/allow");
    assert!(
        real.iter().any(|r| r["dryRun"] == false
            && r["operation"] == "CREATE"
            && r.pointer("/object/metadata/name") == Some(&json!("e"))),
        "{real:?}"
    );
    // Deletes reach validating webhooks too, with the object being deleted as oldObject.
    k().ok(&["delete", "configmap", "e"]);
    let deletes: Vec<Value> = hooks
        .requests("/allow")
        .into_iter()
        .filter(|r| r["operation"] == "DELETE")
        .collect();
    assert!(
        deletes.iter().any(
            |r| r.pointer("/oldObject/metadata/name") == Some(&json!("e")) && r["name"] == "e"
        ),
        "{deletes:?}"
    );
    k().ok(&[
        "delete",
        "validatingwebhookconfiguration",
        "effects.example.com",
    ]);

    // matchConditions (CEL over object, oldObject, request) narrow which requests are sent.
    let conditional = configuration(
        "Validating",
        "conditional.example.com",
        &hooks.url("/deny"),
        &hooks.ca_bundle(),
        json!({"matchConditions": [
            {"name": "checked-only", "expression": "object.metadata.name.startsWith('checked')"},
            {"name": "creates", "expression": "request.operation == 'CREATE'"},
        ]}),
    );
    apply(&shard, "root", "conditional.json", &conditional);
    let checked = configmap("checked", "default", json!({}), json!({"forbidden": "x"}));
    let out = shard.eventually("the conditional webhook is in effect", || {
        let (ok, out) = create(&shard, "root", "checked.json", &checked, &[]);
        (!ok).then_some(out)
    });
    assert!(
        out.contains(r#"admission webhook "conditional.example.com" denied the request"#),
        "{out}"
    );
    let unchecked = configmap("unchecked", "default", json!({}), json!({"forbidden": "x"}));
    let (ok, out) = create(&shard, "root", "unchecked.json", &unchecked, &[]);
    assert!(ok, "{out}");
    let sent = hooks.requests("/deny");
    assert!(
        !sent.is_empty()
            && sent
                .iter()
                .all(|r| json_str(r, "/object/metadata/name").starts_with("checked")),
        "{sent:?}"
    );
}

fn mutating_webhooks_are_reinvoked_if_needed(store: StoreKind) {
    let hooks = WebhookServer::start();
    let shard = Shard::start(store);
    let k = || shard.kubectl_cmd().cluster("root");
    // Configurations run in name order: the annotating webhook first, the labelling one after it.
    let annotate = |policy: &str| {
        configuration(
            "Mutating",
            "a-annotate.example.com",
            &hooks.url("/annotate"),
            &hooks.ca_bundle(),
            json!({"reinvocationPolicy": policy}),
        )
    };
    apply(&shard, "root", "annotate.json", &annotate("IfNeeded"));
    let label = configuration(
        "Mutating",
        "b-label.example.com",
        &hooks.url("/label"),
        &hooks.ca_bundle(),
        json!({}),
    );
    apply(&shard, "root", "label.json", &label);
    let probe = configmap("probe", "default", json!({}), json!({}));
    shard.eventually("both mutating webhooks are in effect", || {
        let (ok, out) = create(
            &shard,
            "root",
            "probe.json",
            &probe,
            &["--dry-run=server", "-o", "json"],
        );
        (ok && out.contains("webhook.example.com/seen")
            && out.contains("webhook.example.com/annotated"))
        .then_some(())
    });
    let calls_for = |name: &str| -> Vec<Value> {
        hooks
            .requests("/annotate")
            .into_iter()
            .filter(|r| r.pointer("/object/metadata/name") == Some(&json!(name)))
            .collect()
    };

    k().ok(&["create", "configmap", "r"]);
    let calls = calls_for("r");
    assert_eq!(
        calls.len(),
        2,
        "called, then reinvoked after the label was added: {calls:?}"
    );
    assert!(
        calls[0]
            .pointer("/object/metadata/labels/webhook.example.com~1seen")
            .is_none()
    );
    assert_eq!(
        json_str(
            &calls[1],
            "/object/metadata/labels/webhook.example.com~1seen"
        ),
        "true"
    );
    let r = k().json(&["get", "configmap", "r", "-o", "json"]);
    assert_eq!(
        json_str(&r, "/metadata/annotations/webhook.example.com~1annotated"),
        "true"
    );
    assert_eq!(
        json_str(&r, "/metadata/labels/webhook.example.com~1seen"),
        "true"
    );

    // With reinvocationPolicy Never, one call per write.
    apply(&shard, "root", "annotate.json", &annotate("Never"));
    let mut attempt = 0;
    shard.eventually("reinvocationPolicy Never is in effect", || {
        attempt += 1;
        let name = format!("n{attempt}");
        k().ok(&["create", "configmap", &name]);
        (calls_for(&name).len() == 1).then_some(())
    });

    // A mutation may not move an object to another namespace.
    let mover = configuration(
        "Mutating",
        "c-move.example.com",
        &hooks.url("/move"),
        &hooks.ca_bundle(),
        json!({"objectSelector": {"matchLabels": {"move": "true"}}}),
    );
    apply(&shard, "root", "move.json", &mover);
    let moved = configmap("moved", "default", json!({"move": "true"}), json!({}));
    let out = shard.eventually("the moving webhook is in effect", || {
        let (ok, out) = create(&shard, "root", "moved.json", &moved, &[]);
        (!ok).then_some(out)
    });
    assert!(
        out.contains(
            "the namespace of the provided object does not match the namespace sent on the request"
        ),
        "{out}"
    );
}

/// A mutating webhook runs before the shard names a new Workspace's logical cluster, so it cannot
/// point the workspace at an LC of its choosing; and it may not record another creator than the
/// requester (who is not in `system:masters`), as kcp refuses it.
fn webhooks_choose_no_workspace_cluster_or_creator(store: StoreKind) {
    let hooks = WebhookServer::start();
    let shard = Shard::start(store);
    let rules = json!({"rules": [{"operations": ["CREATE"], "apiGroups": ["tenancy.kcp.io"],
        "apiVersions": ["v1alpha1"], "resources": ["workspaces"]}]});
    let hijack = configuration(
        "Mutating",
        "hijack.example.com",
        &hooks.url("/hijack"),
        &hooks.ca_bundle(),
        rules,
    );
    apply(&shard, "root", "hijack.json", &hijack);
    let k = || shard.kubectl_cmd().cluster("root");
    k().ok(&[
        "create",
        "clusterrolebinding",
        "alice-admin",
        "--clusterrole=cluster-admin",
        "--user=alice",
    ]);
    let workspace = |name: &str| json!({"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": name}});
    let out = shard.eventually("the hijacking webhook is in effect", || {
        let (ok, out) = create(
            &shard,
            "root",
            "alices.json",
            &workspace("alices"),
            &["--as=alice", "--dry-run=server"],
        );
        (!ok).then_some(out)
    });
    assert!(out.contains("expected user annotation"), "{out}");
    assert!(
        out.contains("Forbidden") || out.contains("forbidden"),
        "{out}"
    );

    // Nor may the shard's admin (kcp-admin), but system:masters may record another creator (as in
    // kcp); the LC name stays the shard's.
    let (ok, out) = create(&shard, "root", "mine.json", &workspace("mine"), &[]);
    assert!(!ok && out.contains("expected user annotation"), "{out}");
    let path = shard.write_file("mine.json", &workspace("mine").to_string());
    shard
        .kubectl_cmd()
        .context("system:admin")
        .cluster("root")
        .ok(&["create", "-f", path.to_str().expect("utf-8")]);
    let ws = shard.eventually("workspace mine Ready", || {
        let ws = k().json(&["get", "workspace", "mine", "-o", "json"]);
        (ws["status"]["phase"] == "Ready").then_some(ws)
    });
    let cluster = json_str(&ws, "/spec/cluster");
    assert_ne!(cluster, HIJACKED, "{ws}");
    assert_eq!(
        json_str(
            &ws,
            "/metadata/annotations/internal.tenancy.kcp.io~1cluster"
        ),
        cluster
    );
    assert_eq!(
        json_str(
            &ws,
            "/metadata/annotations/experimental.tenancy.kcp.io~1owner"
        ),
        r#"{"username":"mallory"}"#
    );
    let hijacked = shard
        .kubectl_cmd()
        .cluster(HIJACKED)
        .run(&["get", "namespaces", "-o", "name"]);
    let listed = String::from_utf8_lossy(&hijacked.stdout);
    assert!(
        listed.trim().is_empty(),
        "nothing was written there: {listed}"
    );
    let calls = hooks.requests("/hijack");
    assert!(
        calls
            .iter()
            .any(|r| r.pointer("/object/metadata/name") == Some(&json!("mine"))),
        "the webhook saw the workspace"
    );
}
