//! Starting and stopping an in-process shard for the tests of this crate.
#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use kcp_pki::kubeconfig::Config;
use kcp_shard::Options;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;
use tokio_util::sync::CancellationToken;

/// A shard running in this process on a random port, its state under `root`.
pub struct Running {
    pub root: PathBuf,
    pub kubeconfig_path: PathBuf,
    pub kubeconfig: Config,
    /// The `base` context's server: `https://host:port`.
    pub base_url: String,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<anyhow::Result<()>>,
}

impl Running {
    /// Starts `kcp-shard --root-directory <root> --secure-port 0 <extra_args>` and waits (30 s at
    /// most, only a bound against hangs) until it wrote its kubeconfig.
    pub async fn start(root: &Path, extra_args: &[&str]) -> Running {
        let mut args = vec![
            "kcp-shard",
            "--root-directory",
            root.to_str().unwrap(),
            "--secure-port",
            "0",
        ];
        args.extend_from_slice(extra_args);
        let options = Options::try_parse_from(args).unwrap();
        // The shard deletes a stale kubeconfig itself, but a poller started at the same moment could
        // still read the old one (and its old port); harnesses restarting a shard must do this too.
        let kubeconfig_path = root.join("admin.kubeconfig");
        let _ = std::fs::remove_file(&kubeconfig_path);
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(kcp_shard::run(options, shutdown.clone()));
        // The kubeconfig appears once the shard listens; it holds the real port.
        let deadline = Instant::now() + Duration::from_secs(30);
        while !kubeconfig_path.exists() {
            assert!(
                !task.is_finished(),
                "the shard stopped early: {:?}",
                task.await
            );
            assert!(Instant::now() < deadline, "no kubeconfig after 30s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let kubeconfig: Config =
            serde_saphyr::from_str(&std::fs::read_to_string(&kubeconfig_path).unwrap()).unwrap();
        let base_url = kubeconfig
            .clusters
            .iter()
            .find(|c| c.name == "base")
            .unwrap()
            .cluster
            .server
            .clone();
        Running {
            root: root.to_path_buf(),
            kubeconfig_path,
            kubeconfig,
            base_url,
            shutdown,
            task,
        }
    }

    /// Cancels the shard and waits (15 s at most) for a clean stop.
    pub async fn stop(self) {
        self.shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(15), self.task)
            .await
            .expect("the shard did not stop within 15s")
            .unwrap()
            .unwrap();
    }
}

/// A client certificate chain and its key.
pub struct Identity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

/// One request to a shard, over a fresh HTTP/1.1 connection.
pub struct Request<'a> {
    pub method: http::Method,
    pub path: &'a str,
    pub headers: Vec<(&'a str, String)>,
    pub body: Option<serde_json::Value>,
    pub identity: Option<&'a Identity>,
    pub tls12_only: bool,
}

impl<'a> Request<'a> {
    pub fn get(path: &'a str) -> Request<'a> {
        Request {
            method: http::Method::GET,
            path,
            headers: Vec::new(),
            body: None,
            identity: None,
            tls12_only: false,
        }
    }

    pub fn header(mut self, name: &'a str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub fn bearer(self, token: &str) -> Self {
        self.header("Authorization", format!("Bearer {token}"))
    }

    pub fn cert(mut self, identity: &'a Identity) -> Self {
        self.identity = Some(identity);
        self
    }

    /// Sends the request over a fresh HTTP/1.1 connection; returns the status and body.
    pub async fn send(self, shard: &Running) -> (http::StatusCode, String) {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(
                CertificateDer::from_pem_slice(
                    std::fs::read_to_string(shard.root.join("ca.crt"))
                        .unwrap()
                        .as_bytes(),
                )
                .unwrap(),
            )
            .unwrap();
        let versions: &[&rustls::SupportedProtocolVersion] = if self.tls12_only {
            &[&rustls::version::TLS12]
        } else {
            rustls::DEFAULT_VERSIONS
        };
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots);
        let tls = match self.identity {
            Some(id) => builder
                .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
                .unwrap(),
            None => builder.with_no_client_auth(),
        };
        let authority = shard.base_url.strip_prefix("https://").unwrap();
        let tcp = tokio::net::TcpStream::connect(authority).await.unwrap();
        let stream = TlsConnector::from(Arc::new(tls))
            .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
            .await
            .unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(conn);
        let mut request = http::Request::builder()
            .method(self.method)
            .uri(format!("{}{}", shard.base_url, self.path))
            .header("Host", authority);
        for (name, value) in &self.headers {
            request = request.header(*name, value);
        }
        let body = match &self.body {
            Some(body) => {
                request = request.header("Content-Type", "application/json");
                Bytes::from(serde_json::to_vec(body).unwrap())
            }
            None => Bytes::new(),
        };
        let response = sender
            .send_request(request.body(Full::new(body)).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }
}
