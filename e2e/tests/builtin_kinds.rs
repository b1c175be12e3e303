//! Kind-specific rules of built-in kinds that bad or hostile input meets, on both stores: a
//! CertificateSigningRequest records its real requester and keeps its spec, and is approved through
//! `/approval` (`kubectl certificate approve`) by those allowed to approve for its signer; ConfigMap
//! `binaryData` must be base64 and data at most 1 MiB; namespaces carry their name as a label and
//! a phase that follows their lifecycle, and are never deleted as a collection; owner references and finalizers are validated; Leases
//! and custom resources need a resourceVersion to be replaced, Leases and Events may be created by
//! PUT, and a uid in a replacement is a precondition; RBAC objects are validated, and aggregated ClusterRoles show the rules they aggregate;
//! invalid write options are Kubernetes' 422s.

use kcp_e2e::{Shard, StoreKind, on_both_stores};
use serde_json::Value;

on_both_stores!(
    certificate_signing_requests,
    certificate_approval,
    configmap_data_rules,
    namespaces_carry_their_name,
    metadata_rules,
    update_policies,
    rbac_objects_are_validated,
    write_options,
    aggregated_cluster_roles_show_their_rules,
    resource_quotas_are_validated,
    kind_rules_of_limits_secrets_leases_events,
);

/// `(code, body)` of a JSON write.
fn send(shard: &Shard, method: &str, path: &str, body: &str) -> (u16, String) {
    let ct = match method {
        "PATCH" => "application/merge-patch+json",
        _ => "application/json",
    };
    shard.curl(method, path, Some((ct, body)))
}

fn assert_invalid(code: u16, body: &str, field: &str) {
    assert_eq!(code, 422, "{body}");
    assert!(
        body.contains(&format!(r#""field":"{field}""#)),
        "{field}: {body}"
    );
}

/// A CSR (CN=test, P-256) made with openssl, base64 as the API carries it.
const REQUEST: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlISk1IRUNBUUF3RHpFTk1Bc0dBMVVFQXd3RWRHVnpkREJaTUJNR0J5cUdTTTQ5QWdFR0NDcUdTTTQ5QXdFSApBMElBQlBXT3k5ZU4vN0Yrd1piSkd6TU03VTNCU2lKK2NYTjEyNi9UcFZYZUI3c0pLeEZuMjlFN2dtR2pUTU5zCkh4OElmTFAybFNNOU84TC8vWEF0MWRkelVLR2dBREFLQmdncWhrak9QUVFEQWdOSUFEQkZBaUVBdkNIYTkyR1oKdUFnZkRKcy9DWFcrR2FIcTA1b2FxTTlwZEJNakFsVU5zaTBDSUdGSHBWMUpvNEptZU4rVTlCZTh1VFNTMit1agpTeE5ZMUNUU3IwazFNSDd4Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=";
const CSRS: &str = "/clusters/root/apis/certificates.k8s.io/v1/certificatesigningrequests";

fn certificate_signing_requests(store: StoreKind) {
    let shard = Shard::start(store);
    let csr = |name: &str, request: &str| {
        format!(
            r#"{{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{{"name":"{name}"}},"spec":{{"request":"{request}","signerName":"example.com/signer","usages":["client auth"],"username":"system:admin","groups":["system:masters"]}}}}"#
        )
    };
    // The body's identity is replaced by the caller's (kcp-admin, not system:masters).
    let (code, body) = shard.curl(
        "POST",
        CSRS,
        Some(("application/json", &csr("forged", REQUEST))),
    );
    assert_eq!(code, 201, "{body}");
    let stored: Value = serde_json::from_str(&body).expect("a CSR");
    assert_eq!(stored["spec"]["username"], "kcp-admin", "{body}");
    let groups = stored["spec"]["groups"].to_string();
    assert!(!groups.contains("system:masters"), "{groups}");
    // The spec stays as created.
    let (code, body) = shard.curl(
        "PATCH",
        &format!("{CSRS}/forged"),
        Some((
            "application/merge-patch+json",
            r#"{"spec":{"signerName":"example.com/other"}}"#,
        )),
    );
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains(r#""signerName":"example.com/signer""#),
        "{body}"
    );
    // Not a certificate request: 422 at spec.request.
    for bad in ["aGVsbG8=", "!!notb64"] {
        let (code, body) = shard.curl("POST", CSRS, Some(("application/json", &csr("bad", bad))));
        assert_eq!(code, 422, "{body}");
        assert!(body.contains(r#""field":"spec.request""#), "{body}");
    }
}

/// `openssl` in `dir`, failing the test when it fails.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let output = std::process::Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("running openssl (scripts/setup.sh installs it)");
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A PEM file made by openssl in `dir`, base64 as the API carries bytes.
fn pem_base64(dir: &std::path::Path, file: &str) -> String {
    use base64::Engine;
    let pem = std::fs::read(dir.join(file)).expect("reading what openssl wrote");
    base64::engine::general_purpose::STANDARD.encode(pem)
}

fn certificate_approval(store: StoreKind) {
    let shard = Shard::start(store);
    let dir = shard.dir().to_path_buf();
    let key = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let csr_of = |name: &str, subject: &str| {
        let (keyfile, csrfile) = (format!("{name}.key"), format!("{name}.csr"));
        let mut args = vec!["req", "-new"];
        args.extend(key);
        args.extend(["-keyout", &keyfile, "-out", &csrfile, "-subj", subject]);
        openssl(&dir, &args);
        pem_base64(&dir, &csrfile)
    };
    let body = |name: &str, signer: &str, request: &str| {
        format!(
            r#"{{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{{"name":"{name}"}},"spec":{{"request":"{request}","signerName":"{signer}","usages":["client auth"]}}}}"#
        )
    };
    let request = csr_of("dave", "/CN=dave");
    let (code, out) = send(
        &shard,
        "POST",
        CSRS,
        &body("dave", "example.com/signer", &request),
    );
    assert_eq!(code, 201, "{out}");

    // /status may not approve.
    let approved =
        r#"{"status":{"conditions":[{"type":"Approved","status":"True","reason":"R"}]}}"#;
    let (code, out) = send(&shard, "PATCH", &format!("{CSRS}/dave/status"), approved);
    assert_eq!(code, 422, "{out}");
    assert!(
        out.contains(r#"updates may not add a condition of type \"Approved\""#),
        "{out}"
    );

    // Approving takes `approve` on the signer, beside the right to update the approval.
    shard.kubectl_cmd().stdin(
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: csr-approval}
rules:
- {apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests], verbs: [get, list]}
- {apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests/approval], verbs: [update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: csr-approval}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: csr-approval}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]
"#,
    ).ok(&["apply", "-f", "-"]);
    let err = shard.kubectl_fails(&["certificate", "approve", "dave", "--as", "carol"]);
    assert!(
        err.contains(
            r#"user not permitted to approve requests with signerName "example.com/signer""#
        ),
        "{err}"
    );
    shard.kubectl_cmd().stdin(
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: example-approver}
rules:
- {apiGroups: [certificates.k8s.io], resources: [signers], resourceNames: ["example.com/*"], verbs: [approve]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: example-approver}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: example-approver}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: carol}]
"#,
    ).ok(&["apply", "-f", "-"]);
    let out = shard.kubectl_ok(&["certificate", "approve", "dave", "--as", "carol"]);
    assert!(out.contains("approved"), "{out}");
    let table = shard.kubectl_ok(&["get", "csr", "dave"]);
    assert!(table.contains("Approved"), "{table}");
    let stored: Value =
        serde_json::from_str(&shard.kubectl_ok(&["get", "csr", "dave", "-o", "json"]))
            .expect("JSON");
    let condition = &stored["status"]["conditions"][0];
    assert_eq!(condition["reason"], "KubectlApprove", "{stored}");
    assert!(condition["lastTransitionTime"].is_string(), "{stored}");

    // Approved and Denied together, or an approval taken back: 422.
    let mut both = stored.clone();
    both["status"]["conditions"]
        .as_array_mut()
        .expect("conditions")
        .push(serde_json::json!({"type": "Denied", "status": "True"}));
    let (code, out) = send(
        &shard,
        "PUT",
        &format!("{CSRS}/dave/approval"),
        &both.to_string(),
    );
    assert_eq!(code, 422, "{out}");
    assert!(
        out.contains("Approved and Denied conditions are mutually exclusive"),
        "{out}"
    );
    let mut none = stored.clone();
    none["status"]["conditions"] = serde_json::json!([]);
    let (code, out) = send(
        &shard,
        "PUT",
        &format!("{CSRS}/dave/approval"),
        &none.to_string(),
    );
    assert_eq!(code, 422, "{out}");
    assert!(
        out.contains(r#"updates may not remove a condition of type \"Approved\""#),
        "{out}"
    );

    // A signer sets the certificate once, through /status; the object itself cannot.
    let mut args = vec!["req", "-x509"];
    args.extend(key);
    args.extend([
        "-keyout",
        "issued.key",
        "-out",
        "issued.crt",
        "-subj",
        "/CN=dave",
        "-days",
        "1",
    ]);
    openssl(&dir, &args);
    let certificate = pem_base64(&dir, "issued.crt");
    let set = |cert: &str| format!(r#"{{"status":{{"certificate":"{cert}"}}}}"#);
    let (code, out) = send(&shard, "PATCH", &format!("{CSRS}/dave"), &set(&certificate));
    assert_eq!(code, 200, "{out}");
    assert!(
        !out.contains(r#""certificate""#),
        "the main resource ignores status: {out}"
    );
    let (code, out) = send(
        &shard,
        "PATCH",
        &format!("{CSRS}/dave/status"),
        &set("aGVsbG8="),
    );
    assert_eq!(code, 422, "{out}");
    assert!(out.contains(r#""field":"status.certificate""#), "{out}");
    let (code, out) = send(
        &shard,
        "PATCH",
        &format!("{CSRS}/dave/status"),
        &set(&certificate),
    );
    assert_eq!(code, 200, "{out}");
    assert!(out.contains(&certificate), "{out}");
    assert!(
        out.contains(r#""type":"Approved""#),
        "the approval stays: {out}"
    );
    let (code, out) = send(
        &shard,
        "PATCH",
        &format!("{CSRS}/dave/status"),
        &set(&request),
    );
    assert_eq!(code, 422, "{out}");
    assert!(
        out.contains("updates may not modify existing certificate content"),
        "{out}"
    );

    // Nobody may ask the API server's client signer for system:masters.
    let masters = csr_of("masters", "/CN=eve/O=system:masters");
    let (code, out) = send(
        &shard,
        "POST",
        CSRS,
        &body("masters", "kubernetes.io/kube-apiserver-client", &masters),
    );
    assert_eq!(code, 403, "{out}");
    assert!(
        out.contains("use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"),
        "{out}"
    );
}

fn configmap_data_rules(store: StoreKind) {
    let shard = Shard::start(store);
    const CMS: &str = "/clusters/root/api/v1/namespaces/default/configmaps";
    let (code, body) = shard.curl(
        "POST",
        CMS,
        Some((
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"badbin"},"binaryData":{"a":"!!!"}}"#,
        )),
    );
    assert_eq!(code, 422, "{body}");
    assert!(body.contains(r#""field":"binaryData[a]""#), "{body}");
    shard.kubectl_ok(&["create", "configmap", "ok", "--from-literal=k=v"]);
    let (code, body) = shard.curl(
        "PATCH",
        &format!("{CMS}/ok"),
        Some((
            "application/merge-patch+json",
            r#"{"binaryData":{"z":"@@"}}"#,
        )),
    );
    assert_eq!(code, 422, "{body}");
    // Typed clients still read every ConfigMap.
    shard.kubectl_ok(&["describe", "configmaps"]);
    // A Secret's stringData is owned where it lands: in data.
    let (code, body) = shard.curl(
        "POST",
        "/clusters/root/api/v1/namespaces/default/secrets",
        Some((
            "application/json",
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"a":"hello"}}"#,
        )),
    );
    assert_eq!(code, 201, "{body}");
    let secret: Value = serde_json::from_str(&body).expect("a Secret");
    let fields = secret["metadata"]["managedFields"][0]["fieldsV1"].to_string();
    assert!(fields.contains(r#""f:data":{".":{},"f:a":{}}"#), "{fields}");
    assert!(!fields.contains("stringData"), "{fields}");
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"a":"{}"}}}}"#,
        "a".repeat((1 << 20) + 100)
    );
    let file = shard.write_file("big.json", &big);
    let (code, body) = shard.curl(
        "POST",
        CMS,
        Some(("application/json", &format!("@{}", file.display()))),
    );
    assert_eq!(code, 422, "{}", &body[..body.len().min(400)]);
    assert!(
        body.contains("Too long: may not be more than 1048576 bytes"),
        "{body}"
    );
}

fn namespaces_carry_their_name(store: StoreKind) {
    let shard = Shard::start(store);
    shard.kubectl_ok(&["create", "namespace", "n3"]);
    // No collection delete of namespaces, as in Kubernetes: 405, and n3 stays.
    let (code, body) = shard.curl(
        "DELETE",
        "/clusters/root/api/v1/namespaces?labelSelector=kubernetes.io/metadata.name=n3",
        None,
    );
    assert_eq!(code, 405, "{body}");
    assert!(body.contains(r#""reason":"MethodNotAllowed""#), "{body}");
    shard.kubectl_ok(&["get", "namespace", "n3"]);
    let verbs = shard.kubectl_ok(&["api-resources", "--api-group=", "-o", "wide"]);
    let line = verbs
        .lines()
        .find(|l| l.starts_with("namespaces "))
        .unwrap_or_default()
        .to_string();
    assert!(!line.contains("deletecollection"), "{line}");
    let ns = shard.kubectl_json(&["get", "namespace", "n3", "-o", "json"]);
    assert_eq!(
        ns["metadata"]["labels"]["kubernetes.io/metadata.name"], "n3",
        "{ns}"
    );
    let (code, body) = send(
        &shard,
        "POST",
        "/clusters/root/api/v1/namespaces",
        r#"{"metadata":{"generateName":"gen-"}}"#,
    );
    assert_eq!(code, 201, "{body}");
    let made: Value = serde_json::from_str(&body).expect("a Namespace");
    assert_eq!(
        made["metadata"]["labels"]["kubernetes.io/metadata.name"], made["metadata"]["name"],
        "{made}"
    );
    // The label follows the name whatever a client writes.
    let (code, body) = send(
        &shard,
        "PATCH",
        "/clusters/root/api/v1/namespaces/n3",
        r#"{"metadata":{"labels":{"kubernetes.io/metadata.name":"other"}}}"#,
    );
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains(r#""kubernetes.io/metadata.name":"n3""#),
        "{body}"
    );
    // The phase is the lifecycle's.
    for phase in ["Bogus", "Terminating"] {
        let (code, body) = send(
            &shard,
            "PATCH",
            "/clusters/root/api/v1/namespaces/n3/status",
            &format!(r#"{{"status":{{"phase":"{phase}"}}}}"#),
        );
        assert_invalid(code, &body, "status.Phase");
    }
}

fn metadata_rules(store: StoreKind) {
    let shard = Shard::start(store);
    const CMS: &str = "/clusters/root/api/v1/namespaces/default/configmaps";
    let cm = |name: &str, meta: &str| {
        format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}",{meta}}}}}"#)
    };
    let owner = |uid: &str, controller: bool| {
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","name":"o-{uid}","uid":"{uid}","controller":{controller}}}"#
        )
    };
    let (code, body) = send(
        &shard,
        "POST",
        CMS,
        &cm("a", &format!(r#""ownerReferences":[{}]"#, owner("", false))),
    );
    assert_invalid(code, &body, "metadata.ownerReferences.uid");
    let two = format!(
        r#""ownerReferences":[{},{}]"#,
        owner("u1", true),
        owner("u2", true)
    );
    let (code, body) = send(&shard, "POST", CMS, &cm("b", &two));
    assert_invalid(code, &body, "metadata.ownerReferences");
    assert!(
        body.contains("Only one reference can have Controller set to true"),
        "{body}"
    );
    let (code, body) = send(&shard, "POST", CMS, &cm("c", r#""finalizers":["plain"]"#));
    assert_invalid(code, &body, "metadata.finalizers[0]");
    let (code, body) = send(
        &shard,
        "POST",
        CMS,
        &cm("d", r#""finalizers":["orphan","foregroundDeletion"]"#),
    );
    assert_invalid(code, &body, "metadata.finalizers");
    let (code, body) = send(
        &shard,
        "POST",
        CMS,
        &cm("e", r#""finalizers":["example.com/hold"]"#),
    );
    assert_eq!(code, 201, "{body}");
    let (code, body) = shard.curl("GET", &format!("{CMS}/c"), None);
    assert_eq!(code, 404, "nothing written: {body}");
}

fn update_policies(store: StoreKind) {
    let shard = Shard::start(store);
    // A uid in a replacement is a precondition: the object made again since is a 409 conflict.
    shard.kubectl_ok(&["create", "configmap", "again", "--from-literal=a=1"]);
    let old = shard.kubectl_json(&["get", "configmap", "again", "-o", "json"]);
    shard.kubectl_ok(&["delete", "configmap", "again"]);
    shard.kubectl_ok(&["create", "configmap", "again", "--from-literal=a=2"]);
    let mut stale = old.clone();
    stale["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("resourceVersion");
    let (code, body) = send(
        &shard,
        "PUT",
        "/clusters/root/api/v1/namespaces/default/configmaps/again",
        &stale.to_string(),
    );
    assert_eq!(code, 409, "{body}");
    assert!(
        body.contains("Precondition failed: UID in precondition:"),
        "{body}"
    );
    // Nor is an object with a uid made again by a PUT once it is gone (a Lease may be created by
    // PUT, but not one a stale holder still names by uid).
    let lease = r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"gone","uid":"0d9d9f32-6b43-4c1c-9f3b-1d2b5c7e8a90"},"spec":{"holderIdentity":"me"}}"#;
    let (code, body) = send(
        &shard,
        "PUT",
        "/clusters/root/apis/coordination.k8s.io/v1/namespaces/default/leases/gone",
        lease,
    );
    assert_eq!(code, 409, "{body}");
    const LEASES: &str = "/clusters/root/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = |holder: &str| {
        format!(
            r#"{{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{{"name":"l1"}},"spec":{{"holderIdentity":"{holder}"}}}}"#
        )
    };
    // A PUT may create a Lease (201), but not replace one without saying which version.
    let (code, body) = send(&shard, "PUT", &format!("{LEASES}/l1"), &lease("me"));
    assert_eq!(code, 201, "{body}");
    let (code, body) = send(&shard, "PUT", &format!("{LEASES}/l1"), &lease("you"));
    assert_eq!(code, 422, "{body}");
    assert!(
        body.contains(
            "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
        ),
        "{body}"
    );
    let (code, body) = shard.curl("GET", &format!("{LEASES}/l1"), None);
    assert_eq!(code, 200, "{body}");
    assert!(body.contains(r#""holderIdentity":"me""#), "{body}");
    // Events too may be created by PUT.
    let event = r#"{"apiVersion":"v1","kind":"Event","metadata":{"name":"ev1"},"involvedObject":{"kind":"ConfigMap","name":"x","namespace":"default"},"reason":"Test","message":"hi","type":"Normal"}"#;
    let (code, body) = send(
        &shard,
        "PUT",
        "/clusters/root/api/v1/namespaces/default/events/ev1",
        event,
    );
    assert_eq!(code, 201, "{body}");
    // kubectl's wide view of events has Kubernetes' extra columns.
    let sourced = r#"{"apiVersion":"v1","kind":"Event","metadata":{"name":"ev2"},"involvedObject":{"kind":"ConfigMap","name":"x","namespace":"default","fieldPath":"data.k"},"reason":"Test","message":"hi","type":"Normal","source":{"component":"tester","host":"node1"},"count":3}"#;
    let (code, body) = send(
        &shard,
        "POST",
        "/clusters/root/api/v1/namespaces/default/events",
        sourced,
    );
    assert_eq!(code, 201, "{body}");
    let wide = shard.kubectl_ok(&[
        "get",
        "events",
        "-o",
        "wide",
        "--field-selector",
        "metadata.name=ev2",
    ]);
    for text in [
        "SUBOBJECT",
        "SOURCE",
        "FIRST SEEN",
        "COUNT",
        "data.k",
        "tester, node1",
    ] {
        assert!(wide.contains(text), "{text}: {wide}");
    }
    // A field a kind cannot select on: in its conversion's words (Secret: "field label not
    // supported"), or apimachinery's default one's for kinds with none (ConfigMap).
    for (resource, expected) in [
        ("secrets", "field label not supported: data.x"),
        (
            "configmaps",
            r#""data.x" is not a known field selector: only "metadata.name", "metadata.namespace""#,
        ),
    ] {
        let err = shard.kubectl_fails(&["get", resource, "--field-selector", "data.x=1"]);
        assert!(err.contains(expected), "{resource}: {err}");
    }
    // Other kinds: a PUT of a missing object is 404.
    let (code, body) = send(
        &shard,
        "PUT",
        "/clusters/root/api/v1/namespaces/default/configmaps/none",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"none"}}"#,
    );
    assert_eq!(code, 404, "{body}");
}

fn rbac_objects_are_validated(store: StoreKind) {
    let shard = Shard::start(store);
    const RBAC: &str = "/clusters/root/apis/rbac.authorization.k8s.io/v1";
    let (code, body) = send(
        &shard,
        "POST",
        &format!("{RBAC}/clusterrolebindings"),
        r#"{"metadata":{"name":"b"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"view"},"subjects":[{"kind":"User","name":"u"}]}"#,
    );
    assert_invalid(code, &body, "roleRef.kind");
    let (code, body) = send(
        &shard,
        "POST",
        &format!("{RBAC}/namespaces/default/roles"),
        r#"{"metadata":{"name":"r"},"rules":[{"verbs":["get"],"nonResourceURLs":["/foo"]}]}"#,
    );
    assert_invalid(code, &body, "rules[0].nonResourceURLs");
    let (code, body) = send(
        &shard,
        "POST",
        &format!("{RBAC}/clusterroles"),
        r#"{"metadata":{"name":"c"},"rules":[{"verbs":["get"],"resources":["pods"]}]}"#,
    );
    assert_invalid(code, &body, "rules[0].apiGroups");
    assert!(
        body.contains("resource rules must supply at least one api group"),
        "{body}"
    );
    // RBAC names may hold a space: the path's %20 is decoded, so the object can be read and
    // deleted by name.
    shard.kubectl_ok(&[
        "create",
        "clusterrole",
        "foo bar",
        "--verb=get",
        "--resource=configmaps",
    ]);
    shard.kubectl_ok(&["get", "clusterrole", "foo bar"]);
    shard.kubectl_ok(&["delete", "clusterrole", "foo bar"]);
}

fn write_options(store: StoreKind) {
    let shard = Shard::start(store);
    const CMS: &str = "/clusters/root/api/v1/namespaces/default/configmaps";
    let (code, body) = send(
        &shard,
        "POST",
        &format!("{CMS}?dryRun=Foo"),
        r#"{"metadata":{"name":"x"}}"#,
    );
    assert_eq!(code, 422, "{body}");
    assert!(
        body.contains(r#"CreateOptions.meta.k8s.io \"\" is invalid"#),
        "{body}"
    );
    let (code, body) = send(
        &shard,
        "POST",
        &format!("{CMS}?fieldValidation=Bogus"),
        r#"{"metadata":{"name":"x"}}"#,
    );
    assert_eq!(code, 422, "{body}");
    // Server-side apply that creates answers 201, as any create; then 200.
    let apply =
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"applied"},"data":{"a":"1"}}"#;
    for expected in [201, 200] {
        let (code, body) = shard.curl(
            "PATCH",
            &format!("{CMS}/applied?fieldManager=me"),
            Some(("application/apply-patch+yaml", apply)),
        );
        assert_eq!(code, expected, "{body}");
    }
    let (code, body) = shard.curl(
        "DELETE",
        &format!("{CMS}/applied?propagationPolicy=Foo"),
        None,
    );
    assert_eq!(code, 422, "{body}");
    assert!(
        body.contains(r#"DeleteOptions.meta.k8s.io \"\" is invalid"#),
        "{body}"
    );
}

fn aggregated_cluster_roles_show_their_rules(store: StoreKind) {
    let shard = Shard::start(store);
    let file = shard.write_file(
        "agg.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: my-agg\n\
         aggregationRule:\n  clusterRoleSelectors:\n  - matchLabels: {myagg: \"yes\"}\nrules: []\n\
         ---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: my-agg-part\n\
         \x20 labels: {myagg: \"yes\"}\nrules:\n- {apiGroups: [\"\"], resources: [secrets], verbs: [list]}\n",
    );
    shard.kubectl_ok(&["create", "-f", file.to_str().expect("utf-8")]);
    let rules_of = |name: &str| {
        shard.kubectl_json(&["get", "clusterrole", name, "-o", "json"])["rules"].clone()
    };
    shard.eventually("my-agg shows the part's rule", || {
        let rules = rules_of("my-agg");
        (rules == serde_json::json!([{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]))
            .then_some(())
    });
    // A change of the part follows; rules written by hand into the aggregate are replaced.
    shard.kubectl_ok(&[
        "patch",
        "clusterrole",
        "my-agg-part",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/rules/0/verbs/-","value":"get"}]"#,
    ]);
    shard.eventually("my-agg follows the part", || {
        let rules = rules_of("my-agg");
        (rules[0]["verbs"] == serde_json::json!(["list", "get"])).then_some(())
    });
    // The bootstrap admin/edit/view chain of system:admin shows what it grants too.
    shard.eventually("admin shows its rules", || {
        let admin = shard.kubectl_cmd().context("system:admin").json(&[
            "get",
            "clusterrole",
            "admin",
            "-o",
            "json",
        ]);
        admin["rules"]
            .as_array()
            .is_some_and(|r| r.len() > 3)
            .then_some(())
    });
}

fn resource_quotas_are_validated(store: StoreKind) {
    let shard = Shard::start(store);
    for (hard, field) in [
        ("configmaps=-1", "spec.hard[configmaps]"),
        ("foo=1", "spec.hard[foo]"),
    ] {
        let out = shard.kubectl_fails(&["create", "quota", "q", &format!("--hard={hard}")]);
        assert!(out.contains(field), "{hard}: {out}");
    }
    shard.kubectl_ok(&[
        "create",
        "quota",
        "q",
        "--hard=configmaps=5,count/secrets=3,requests.cpu=1",
    ]);
}

/// LimitRanges get Kubernetes' defaults and bounds; Secret types, Lease specs, Event namespaces and
/// ResourceQuota scopes are held to its rules (each was stored as sent before).
fn kind_rules_of_limits_secrets_leases_events(store: StoreKind) {
    let shard = Shard::start(store);
    const NS: &str = "/clusters/root/api/v1/namespaces/default";
    let (code, body) = send(
        &shard,
        "POST",
        &format!("{NS}/limitranges"),
        r#"{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"l"},"spec":{"limits":[{"type":"Container","max":{"cpu":"2","memory":"1Gi"},"min":{"cpu":"50m"}}]}}"#,
    );
    assert_eq!(code, 201, "{body}");
    let stored: Value = serde_json::from_str(&body).expect("JSON");
    let item = &stored["spec"]["limits"][0];
    assert_eq!(item["default"]["cpu"], "2", "{stored}");
    assert_eq!(item["defaultRequest"]["memory"], "1Gi", "{stored}");
    let (code, body) = send(
        &shard,
        "POST",
        &format!("{NS}/limitranges"),
        r#"{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"bad"},"spec":{"limits":[{"type":"Container","max":{"cpu":"2"},"default":{"cpu":"3"}}]}}"#,
    );
    assert_eq!(code, 422, "{body}");

    let (code, body) = send(
        &shard,
        "POST",
        &format!("{NS}/secrets"),
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"t"},"type":"kubernetes.io/tls","data":{"tls.crt":"eA=="}}"#,
    );
    assert_invalid(code, &body, "data[tls.key]");

    let (code, body) = send(
        &shard,
        "POST",
        "/clusters/root/apis/coordination.k8s.io/v1/namespaces/default/leases",
        r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"z"},"spec":{"leaseDurationSeconds":0}}"#,
    );
    assert_invalid(code, &body, "spec.leaseDurationSeconds");

    let (code, body) = send(
        &shard,
        "POST",
        &format!("{NS}/events"),
        r#"{"apiVersion":"v1","kind":"Event","metadata":{"name":"e"},"involvedObject":{"kind":"ConfigMap","name":"x","namespace":"other"}}"#,
    );
    assert_invalid(code, &body, "involvedObject.namespace");

    let (code, body) = send(
        &shard,
        "POST",
        &format!("{NS}/resourcequotas"),
        r#"{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},"spec":{"hard":{"configmaps":"10"},"scopes":["Terminating","NotTerminating"]}}"#,
    );
    assert_eq!(code, 422, "{body}");
    assert!(body.contains("conflicting scopes"), "{body}");
}
