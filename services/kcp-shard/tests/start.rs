//! Starts the shard in-process on a random port with the embedded store in a temporary directory, and
//! checks what a client sees: the kubeconfig, TLS with the admin certificates (h2 and HTTP/1.1),
//! anonymous TLS, rejection of foreign certificates, kubectl's view, and reuse of the PKI on restart.
//!
//! The API server's handler is not this crate's concern, so assertions stop at "an HTTP response
//! arrived".
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on unexpected input

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kcp_pki::kubeconfig::Config;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::TlsConnector;

struct Shard {
    running: common::Running,
    kubeconfig_path: PathBuf,
    admin: Admin,
}

impl Shard {
    async fn start(root: &Path) -> Shard {
        let running = common::Running::start(root, &[]).await;
        Shard {
            kubeconfig_path: running.kubeconfig_path.clone(),
            admin: Admin {
                kubeconfig: running.kubeconfig.clone(),
            },
            running,
        }
    }

    async fn stop(self) {
        self.running.stop().await;
    }
}

struct Admin {
    kubeconfig: Config,
}

impl Admin {
    fn base_url(&self) -> &str {
        &self.cluster("base").server
    }

    fn cluster(&self, name: &str) -> &kcp_pki::kubeconfig::Cluster {
        &self
            .kubeconfig
            .clusters
            .iter()
            .find(|c| c.name == name)
            .unwrap()
            .cluster
    }

    fn user(&self, name: &str) -> &kcp_pki::kubeconfig::User {
        &self
            .kubeconfig
            .users
            .iter()
            .find(|u| u.name == name)
            .unwrap()
            .user
    }

    fn ca_pem(&self) -> Vec<u8> {
        STANDARD
            .decode(&self.cluster("base").certificate_authority_data)
            .unwrap()
    }

    fn client_tls(&self, user: Option<&str>, alpn: &[&[u8]]) -> rustls::ClientConfig {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&self.ca_pem()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
        let mut config = match user {
            Some(name) => {
                let user = self.user(name);
                let (chain, key) = client_identity(
                    &STANDARD.decode(&user.client_certificate_data).unwrap(),
                    &STANDARD.decode(&user.client_key_data).unwrap(),
                );
                builder.with_client_auth_cert(chain, key).unwrap()
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        config
    }
}

fn client_identity(
    cert_pem: &[u8],
    key_pem: &[u8],
) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    (chain, PrivateKeyDer::from_pem_slice(key_pem).unwrap())
}

/// `https://host:port[/...]` → (`host`, `host:port`).
fn host_and_authority(url: &str) -> (String, String) {
    let rest = url.strip_prefix("https://").unwrap();
    let authority = rest.split('/').next().unwrap().to_string();
    let host = authority.rsplit_once(':').unwrap().0.to_string();
    (host, authority)
}

/// Opens a TLS connection to the shard, sends `GET path`, and returns the status and negotiated ALPN.
async fn get(
    base_url: &str,
    tls: rustls::ClientConfig,
    path: &str,
) -> Result<(http::StatusCode, Option<Vec<u8>>), String> {
    let (host, authority) = host_and_authority(base_url);
    let tcp = tokio::net::TcpStream::connect(&authority)
        .await
        .map_err(|e| e.to_string())?;
    let server_name = ServerName::try_from(host).unwrap();
    let stream = TlsConnector::from(Arc::new(tls))
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let alpn = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    let request = http::Request::get(format!("{base_url}{path}"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    let io = TokioIo::new(stream);
    let response = if alpn.as_deref() == Some(b"h2") {
        let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .map_err(|e| format!("h2 handshake: {e}"))?;
        tokio::spawn(conn);
        sender.send_request(request).await
    } else {
        let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| format!("h1 handshake: {e}"))?;
        tokio::spawn(conn);
        sender.send_request(request).await
    }
    .map_err(|e| format!("request: {e}"))?;
    let status = response.status();
    // Read the body to the end: a response that cannot be completed is a failure too.
    response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?;
    Ok((status, alpn))
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_tls_with_the_generated_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let shard = Shard::start(dir.path()).await;

    // kubeconfig shape.
    let k = &shard.admin.kubeconfig;
    assert_eq!(k.current_context, "root");
    let contexts: Vec<_> = k
        .contexts
        .iter()
        .map(|c| {
            (
                c.name.as_str(),
                c.context.cluster.as_str(),
                c.context.user.as_str(),
            )
        })
        .collect();
    assert_eq!(
        contexts,
        [
            ("root", "root", "kcp-admin"),
            ("base", "base", "kcp-admin"),
            ("system:admin", "system:admin", "shard-admin"),
            ("shard-base", "base", "shard-admin"),
        ]
    );
    let base = shard.admin.base_url().to_string();
    assert!(base.starts_with("https://127.0.0.1:"), "{base}");
    assert!(
        !base.ends_with(":0"),
        "the real port must be written: {base}"
    );
    assert_eq!(
        shard.admin.cluster("root").server,
        format!("{base}/clusters/root")
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&shard.kubeconfig_path)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // Both admin identities over h2 (what client-go negotiates), and HTTP/1.1.
    for user in ["kcp-admin", "shard-admin"] {
        let (_, alpn) = get(
            &base,
            shard.admin.client_tls(Some(user), &[b"h2", b"http/1.1"]),
            "/healthz",
        )
        .await
        .unwrap();
        assert_eq!(alpn.as_deref(), Some(&b"h2"[..]), "{user}");
    }
    let (_, alpn) = get(
        &base,
        shard.admin.client_tls(Some("kcp-admin"), &[b"http/1.1"]),
        "/healthz",
    )
    .await
    .unwrap();
    assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
    let (_, alpn) = get(
        &base,
        shard.admin.client_tls(Some("kcp-admin"), &[]),
        "/version",
    )
    .await
    .unwrap();
    assert_eq!(alpn, None);

    // No client certificate: still served (anonymous, or a token in later issues).
    get(&base, shard.admin.client_tls(None, &[b"h2"]), "/healthz")
        .await
        .unwrap();

    // A certificate from a CA the shard does not trust is no credential: the handshake succeeds (as
    // kube-apiserver's), health checks answer, and an API request is 401, not a broken connection.
    let foreign = tempfile::tempdir().unwrap();
    let foreign_pki = kcp_pki::pki::ensure(foreign.path(), &[]).unwrap();
    let (chain, key) = client_identity(
        foreign_pki.kcp_admin.cert_pem.as_bytes(),
        foreign_pki.kcp_admin.key_pem.as_bytes(),
    );
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(&shard.admin.ca_pem()).unwrap())
        .unwrap();
    let mut foreign_tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_client_auth_cert(chain, key)
    .unwrap();
    foreign_tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    let (status, _) = get(&base, foreign_tls.clone(), "/healthz").await.unwrap();
    assert_eq!(status, http::StatusCode::OK);
    let (status, _) = get(&base, foreign_tls, "/clusters/root/api/v1/namespaces")
        .await
        .unwrap();
    assert_eq!(status, http::StatusCode::UNAUTHORIZED);
    get(
        &base,
        shard.admin.client_tls(Some("kcp-admin"), &[b"h2"]),
        "/healthz",
    )
    .await
    .unwrap();

    // kubectl reads the kubeconfig and talks TLS with the embedded admin certificate.
    if kubectl_available() {
        let kubeconfig = shard.kubeconfig_path.to_str().unwrap();
        let view = Command::new("kubectl")
            .args(["config", "view", "--kubeconfig", kubeconfig, "-o", "json"])
            .output()
            .unwrap();
        assert!(
            view.status.success(),
            "{}",
            String::from_utf8_lossy(&view.stderr)
        );
        let view: serde_json::Value = serde_json::from_slice(&view.stdout).unwrap();
        assert_eq!(view["current-context"], "root");
        let mut names: Vec<_> = view["contexts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect();
        names.sort();
        assert_eq!(names, ["base", "root", "shard-base", "system:admin"]);

        for context in ["root", "base", "system:admin", "shard-base"] {
            let out = Command::new("kubectl")
                .args([
                    "--kubeconfig",
                    kubeconfig,
                    "--context",
                    context,
                    "get",
                    "--raw",
                    "/healthz",
                    "--request-timeout",
                    "10s",
                ])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            // Success, or an HTTP error from the server: either way TLS and HTTP worked.
            assert!(
                out.status.success() || stderr.contains("Error from server"),
                "kubectl --context {context}: {stderr}"
            );
        }
    } else {
        eprintln!("kubectl not found; skipping the kubectl checks");
    }

    // Plain HTTP on the TLS port is a failed handshake for that connection only.
    {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (_, authority) = host_and_authority(&base);
        let mut tcp = tokio::net::TcpStream::connect(&authority).await.unwrap();
        tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut buf)).await;
        assert!(!buf.starts_with(b"HTTP/"), "plain HTTP must not be served");
    }
    get(
        &base,
        shard.admin.client_tls(Some("kcp-admin"), &[b"h2"]),
        "/healthz",
    )
    .await
    .unwrap();

    // A client stuck before its handshake must not hold up shutdown.
    let (_, authority) = host_and_authority(&base);
    let _idle_tcp = tokio::net::TcpStream::connect(&authority).await.unwrap();
    let started = Instant::now();
    shard.stop().await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "shutdown took {:?}",
        started.elapsed()
    );
}

/// The real binary, as e2e tests run it: started, stopped with SIGTERM, started again on the same root
/// directory. (Separate processes also release the embedded store's file lock between runs.)
struct Process {
    child: std::process::Child,
    admin: Admin,
}

impl Process {
    async fn start(root: &Path) -> Process {
        let kubeconfig_path = root.join("admin.kubeconfig");
        let _ = std::fs::remove_file(&kubeconfig_path);
        let mut child = Command::new(env!("CARGO_BIN_EXE_kcp-shard"))
            .args([
                "start",
                "--root-directory",
                root.to_str().unwrap(),
                "--secure-port",
                "0",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !kubeconfig_path.exists() {
            assert!(
                child.try_wait().unwrap().is_none(),
                "kcp-shard exited early"
            );
            assert!(Instant::now() < deadline, "no kubeconfig after 30s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let kubeconfig =
            serde_saphyr::from_str(&std::fs::read_to_string(&kubeconfig_path).unwrap()).unwrap();
        Process {
            child,
            admin: Admin { kubeconfig },
        }
    }

    /// SIGTERM, then expect a clean exit.
    async fn stop(mut self) {
        let kill = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "kcp-shard exited with {status}");
                return;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("kcp-shard did not exit within 15s of SIGTERM");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_reuses_the_pki() {
    let dir = tempfile::tempdir().unwrap();
    let first = Process::start(dir.path()).await;
    let ca = std::fs::read(dir.path().join("ca.crt")).unwrap();
    let ca_key = std::fs::read(dir.path().join("ca.key")).unwrap();
    let first_admin = first.admin.user("kcp-admin").clone();
    get(
        first.admin.base_url(),
        first.admin.client_tls(Some("kcp-admin"), &[b"h2"]),
        "/healthz",
    )
    .await
    .unwrap();
    first.stop().await;

    let second = Process::start(dir.path()).await;
    let view = &second.admin;
    assert_eq!(std::fs::read(dir.path().join("ca.crt")).unwrap(), ca);
    assert_eq!(std::fs::read(dir.path().join("ca.key")).unwrap(), ca_key);
    assert_eq!(view.ca_pem(), ca);
    assert_eq!(view.user("kcp-admin"), &first_admin);
    // The admin certificate from before the restart still works.
    get(
        view.base_url(),
        view.client_tls(Some("kcp-admin"), &[b"h2"]),
        "/healthz",
    )
    .await
    .unwrap();
    second.stop().await;
}
