//! Kind-specific rules of built-in kinds that bad or hostile input meets, on both stores: a
//! CertificateSigningRequest records its real requester and keeps its spec; ConfigMap
//! `binaryData` must be base64 and data at most 1 MiB.

use kcp_e2e::{Shard, StoreKind, on_both_stores};
use serde_json::Value;

on_both_stores!(certificate_signing_requests, configmap_data_rules);

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
