//! Authentication on a running shard: static tokens, client certificates that try to forge proxy
//! headers, a front proxy's certificate from the request-header CA, ServiceAccount tokens, and the
//! anonymous 401. A plain user holds no binding that grants what these tests ask, so a 403 for one
//! proves authentication passed, and the Forbidden message names who the shard thinks the
//! caller is.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on unexpected input

mod common;

use std::time::{Duration, Instant};

use common::{Identity, Request};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair,
};
use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject;

const NAMESPACES: &str = "/clusters/root/api/v1/namespaces";

type Shard = common::Running;

trait ShardFiles {
    fn file(&self, name: &str) -> String;
    fn user_certificate(&self, cn: &str, org: Option<&str>) -> Identity;
}

impl ShardFiles for Shard {
    fn file(&self, name: &str) -> String {
        std::fs::read_to_string(self.root.join(name)).unwrap()
    }

    /// A client certificate signed by the shard's own CA: an ordinary user.
    fn user_certificate(&self, cn: &str, org: Option<&str>) -> Identity {
        let ca_key = KeyPair::from_pem(&self.file("ca.key")).unwrap();
        let issuer = Issuer::from_ca_cert_pem(&self.file("ca.crt"), ca_key).unwrap();
        leaf(&issuer, cn, org)
    }
}

/// A CA made by the test (the request-header CA).
struct TestCa {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl TestCa {
    fn new(name: &str) -> TestCa {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        TestCa {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }
}

fn leaf(issuer: &Issuer<'_, KeyPair>, cn: &str, org: Option<&str>) -> Identity {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, cn);
    if let Some(org) = org {
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, issuer).unwrap();
    Identity {
        chain: vec![cert.der().clone()],
        key: PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_certificates_and_proxy_headers() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("kcp");
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "alice-token,alice,uid-alice\nroot-token,bob,uid-bob,\"team,system:masters\"\n",
    )
    .unwrap();
    let proxy_ca = TestCa::new("front-proxy-ca");
    let proxy_ca_file = dir.path().join("requestheader-ca.crt");
    std::fs::write(&proxy_ca_file, &proxy_ca.pem).unwrap();
    let shard = Shard::start(
        &root,
        &[
            "--token-auth-file",
            tokens.to_str().unwrap(),
            "--requestheader-client-ca-file",
            proxy_ca_file.to_str().unwrap(),
            "--requestheader-allowed-names",
            "kcp-front-proxy",
        ],
    )
    .await;

    // Anonymous: health only.
    assert_eq!(
        Request::get("/healthz").send(&shard).await.0,
        http::StatusCode::OK
    );
    assert_eq!(
        Request::get(NAMESPACES).send(&shard).await.0,
        http::StatusCode::UNAUTHORIZED
    );

    // Static tokens: a known one authenticates (403: alice is no admin; 200: bob is in system:masters).
    let (status, body) = Request::get(NAMESPACES)
        .bearer("alice-token")
        .send(&shard)
        .await;
    assert_eq!(status, http::StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("alice"), "{body}");
    let (status, body) = Request::get(NAMESPACES)
        .header("Authorization", "bearer root-token")
        .send(&shard)
        .await;
    assert_eq!(status, http::StatusCode::OK, "{body}");
    // An unknown token is nobody's.
    assert_eq!(
        Request::get(NAMESPACES)
            .bearer("guessed")
            .send(&shard)
            .await
            .0,
        http::StatusCode::UNAUTHORIZED
    );

    // An ordinary client certificate forging proxy headers stays itself.
    let eve = shard.user_certificate("eve", None);
    let (status, body) = Request::get(NAMESPACES)
        .cert(&eve)
        .header("X-Remote-User", "mallory")
        .header("X-Remote-Group", "system:masters")
        .send(&shard)
        .await;
    assert_eq!(status, http::StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("eve") && !body.contains("mallory"), "{body}");
    // Even when its CN is the proxy's allowed name: the client CA does not vouch for proxies.
    let fake_proxy = shard.user_certificate("kcp-front-proxy", None);
    let (status, body) = Request::get(NAMESPACES)
        .cert(&fake_proxy)
        .header("X-Remote-User", "mallory")
        .header("X-Remote-Group", "system:masters")
        .send(&shard)
        .await;
    assert_eq!(status, http::StatusCode::FORBIDDEN, "{body}");
    assert!(!body.contains("mallory"), "{body}");

    // The front proxy's certificate (request-header CA, allowed CN) asserts who the caller is.
    let proxy = leaf(&proxy_ca.issuer, "kcp-front-proxy", None);
    let (status, body) = Request::get(NAMESPACES)
        .cert(&proxy)
        .header("X-Remote-User", "carol")
        .header("X-Remote-Group", "system:masters")
        .send(&shard)
        .await;
    assert_eq!(status, http::StatusCode::OK, "{body}");
    let (status, body) = Request::get(NAMESPACES)
        .cert(&proxy)
        .header("X-Remote-User", "carol")
        .send(&shard)
        .await;
    assert_eq!(status, http::StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("carol"), "{body}");
    // The proxy on its own behalf, without a user header: its certificate names no user here.
    assert_eq!(
        Request::get(NAMESPACES).cert(&proxy).send(&shard).await.0,
        http::StatusCode::UNAUTHORIZED
    );
    // A request-header certificate with a CN that is not allowed asserts nothing.
    let other = leaf(&proxy_ca.issuer, "someone-else", None);
    assert_eq!(
        Request::get(NAMESPACES)
            .cert(&other)
            .header("X-Remote-User", "carol")
            .header("X-Remote-Group", "system:masters")
            .send(&shard)
            .await
            .0,
        http::StatusCode::UNAUTHORIZED
    );

    // The shard's own admin certificates still work, over TLS 1.2 as well.
    let admin = shard.user_certificate("admin", Some("system:kcp:admin"));
    let mut request = Request::get(NAMESPACES).cert(&admin);
    request.tls12_only = true;
    assert_eq!(request.send(&shard).await.0, http::StatusCode::OK);

    shard.stop().await;
}

fn post<'a>(identity: &'a Identity, path: &'a str, body: serde_json::Value) -> Request<'a> {
    let mut request = Request::get(path).cert(identity);
    request.method = http::Method::POST;
    request.body = Some(body);
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let shard = Shard::start(dir.path(), &[]).await;
    let admin = shard.user_certificate("admin", Some("system:masters"));

    let (status, body) = post(
        &admin,
        NAMESPACES,
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "robots"}}),
    )
    .send(&shard)
    .await;
    assert!(status.is_success(), "{status}: {body}");
    let accounts = "/clusters/root/api/v1/namespaces/robots/serviceaccounts";
    let (status, body) = post(
        &admin,
        accounts,
        serde_json::json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "r2"}}),
    )
    .send(&shard)
    .await;
    assert!(status.is_success(), "{status}: {body}");
    let sa: serde_json::Value = serde_json::from_str(&body).unwrap();
    let uid = sa["metadata"]["uid"].as_str().unwrap().to_string();

    // Sign as the shard does, with the key it keeps next to its CA.
    let key = KeyPair::from_pem(&shard.file("service-account.key")).unwrap();
    let issuer = kcp_auth::TokenIssuer::new(
        "https://kcp.default.svc",
        key.serialize_pem().as_bytes(),
        key.public_key_pem().as_bytes(),
    )
    .unwrap();
    let audiences = ["https://kcp.default.svc".to_string()];
    let token = issuer
        .issue(
            "root",
            "robots",
            "r2",
            &uid,
            &audiences,
            Duration::from_secs(600),
        )
        .unwrap()
        .token;

    // Authenticated (403: a ServiceAccount is no admin, and the message names it). The account
    // reaches the authenticator through the watch cache, so give it a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (status, body) = loop {
        let (status, body) = Request::get(NAMESPACES).bearer(&token).send(&shard).await;
        if status != http::StatusCode::UNAUTHORIZED || Instant::now() > deadline {
            break (status, body);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status, http::StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("system:serviceaccount:robots:r2"), "{body}");

    // A token naming another uid (an earlier account of the same name) is refused.
    let stale = issuer
        .issue(
            "root",
            "robots",
            "r2",
            "some-old-uid",
            &audiences,
            Duration::from_secs(600),
        )
        .unwrap()
        .token;
    assert_eq!(
        Request::get(NAMESPACES).bearer(&stale).send(&shard).await.0,
        http::StatusCode::UNAUTHORIZED
    );

    // Once the account is gone, so is its token.
    let mut delete =
        Request::get("/clusters/root/api/v1/namespaces/robots/serviceaccounts/r2").cert(&admin);
    delete.method = http::Method::DELETE;
    let (status, body) = delete.send(&shard).await;
    assert!(status.is_success(), "{status}: {body}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, _) = Request::get(NAMESPACES).bearer(&token).send(&shard).await;
        if status == http::StatusCode::UNAUTHORIZED {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the deleted account's token still works"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    shard.stop().await;
}
