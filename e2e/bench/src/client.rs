//! An HTTPS client for the shard: hyper 1 HTTP/2 connections over tokio-rustls, authenticated with the
//! client certificate of `admin.kubeconfig`'s `system:admin` context.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde::Deserialize;

/// Every request gives up after this long (a hung server fails the phase instead of the run).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The content type of every request body unless a caller names another.
pub const JSON: &str = "application/json";
/// How much of an error response body is quoted in a report.
const QUOTED_BODY: usize = 600;

#[derive(Deserialize)]
struct Kubeconfig {
    clusters: Vec<NamedCluster>,
    users: Vec<NamedUser>,
    contexts: Vec<NamedContext>,
}

#[derive(Deserialize)]
struct NamedCluster {
    name: String,
    cluster: ClusterEntry,
}

#[derive(Deserialize)]
struct NamedUser {
    name: String,
    user: UserEntry,
}

#[derive(Deserialize)]
struct NamedContext {
    name: String,
    context: ContextEntry,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct ClusterEntry {
    server: String,
    certificate_authority_data: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct UserEntry {
    client_certificate_data: String,
    client_key_data: String,
}

#[derive(Deserialize)]
struct ContextEntry {
    cluster: String,
    user: String,
}

fn find<'a, T>(
    list: &'a [T],
    name: &str,
    name_of: impl Fn(&T) -> &str,
    what: &str,
) -> anyhow::Result<&'a T> {
    list.iter()
        .find(|n| name_of(n) == name)
        .with_context(|| format!("kubeconfig has no {what} named {name:?}"))
}

/// Opens connections to one shard.
#[derive(Clone)]
pub struct Connector {
    tls: Arc<rustls::ClientConfig>,
    addr: SocketAddr,
    server_name: ServerName<'static>,
    /// `https://host:port`, prefixed to every path.
    base: Arc<str>,
}

impl Connector {
    /// Reads `context`'s server, CA and client certificate from a kubeconfig.
    pub fn from_kubeconfig(path: &Path, context: &str) -> anyhow::Result<Connector> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let config: Kubeconfig =
            serde_saphyr::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let ctx = &find(&config.contexts, context, |c| &c.name, "context")?.context;
        let cluster = &find(&config.clusters, &ctx.cluster, |c| &c.name, "cluster")?.cluster;
        let user = &find(&config.users, &ctx.user, |u| &u.name, "user")?.user;

        let ca = STANDARD
            .decode(cluster.certificate_authority_data.trim())
            .context("certificate-authority-data is not base64")?;
        let cert = STANDARD
            .decode(user.client_certificate_data.trim())
            .context("client-certificate-data is not base64")?;
        let key = STANDARD
            .decode(user.client_key_data.trim())
            .context("client-key-data is not base64")?;

        let mut roots = rustls::RootCertStore::empty();
        for der in CertificateDer::pem_slice_iter(&ca) {
            roots
                .add(der.context("parsing the CA certificate")?)
                .context("adding the CA certificate")?;
        }
        let chain = CertificateDer::pem_slice_iter(&cert)
            .collect::<Result<Vec<_>, _>>()
            .context("parsing the client certificate")?;
        let key = PrivateKeyDer::from_pem_slice(&key).context("parsing the client key")?;
        let mut tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .with_root_certificates(roots)
        .with_client_auth_cert(chain, key)
        .context("client certificate")?;
        tls.alpn_protocols = vec![b"h2".to_vec()];

        // Only the base URL is used; the context's path (if any) is not.
        let server = cluster.server.trim_end_matches('/');
        let authority = server
            .strip_prefix("https://")
            .with_context(|| format!("server {server:?} is not https://"))?
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        let addr: SocketAddr = authority
            .parse()
            .with_context(|| format!("server authority {authority:?} is not IP:PORT"))?;
        if !addr.ip().is_loopback() {
            bail!("refusing to benchmark a non-loopback server {addr}");
        }
        Ok(Connector {
            tls: Arc::new(tls),
            addr,
            server_name: ServerName::IpAddress(addr.ip().into()),
            base: Arc::from(format!("https://{authority}")),
        })
    }

    /// The same credentials and trust at another loopback port (a kcp-vw beside the shard, whose
    /// serving certificate is the shard's).
    pub fn at_port(&self, port: u16) -> Connector {
        let addr = SocketAddr::new(self.addr.ip(), port);
        Connector {
            tls: self.tls.clone(),
            addr,
            server_name: self.server_name.clone(),
            base: Arc::from(format!("https://{addr}")),
        }
    }

    /// One TLS + HTTP/2 connection.
    pub async fn connect(&self) -> anyhow::Result<Conn> {
        let tcp = tokio::time::timeout(REQUEST_TIMEOUT, tokio::net::TcpStream::connect(self.addr))
            .await
            .context("TCP connect timed out")?
            .with_context(|| format!("connecting to {}", self.addr))?;
        tcp.set_nodelay(true)?;
        let tls = tokio::time::timeout(
            REQUEST_TIMEOUT,
            tokio_rustls::TlsConnector::from(self.tls.clone())
                .connect(self.server_name.clone(), tcp),
        )
        .await
        .context("TLS handshake timed out")?
        .context("TLS handshake")?;
        if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
            bail!("the server did not negotiate HTTP/2");
        }
        let (sender, connection) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .initial_stream_window_size(4 << 20)
            .initial_connection_window_size(16 << 20)
            .handshake(TokioIo::new(tls))
            .await
            .context("HTTP/2 handshake")?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Conn {
            sender,
            base: self.base.clone(),
        })
    }

    /// `n` connections.
    pub async fn pool(&self, n: usize) -> anyhow::Result<Vec<Conn>> {
        let mut conns = Vec::with_capacity(n);
        for _ in 0..n.max(1) {
            conns.push(self.connect().await?);
        }
        Ok(conns)
    }
}

/// One HTTP/2 connection; clones share it (multiplexed streams).
#[derive(Clone)]
pub struct Conn {
    sender: SendRequest<Full<Bytes>>,
    base: Arc<str>,
}

impl Conn {
    /// Sends a request and returns the response head with its still-streaming body.
    pub async fn send(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> anyhow::Result<Response<Incoming>> {
        self.send_as(method, path, body, JSON).await
    }

    /// [`Conn::send`] with a body of `content_type` (a patch type, for instance).
    pub async fn send_as(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        content_type: &str,
    ) -> anyhow::Result<Response<Incoming>> {
        let mut builder = Request::builder()
            .method(method.clone())
            .uri(format!("{}{path}", self.base))
            .header(header::ACCEPT, JSON);
        if body.is_some() {
            builder = builder.header(header::CONTENT_TYPE, content_type);
        }
        let request = builder
            .body(Full::new(body.unwrap_or_default()))
            .with_context(|| format!("building {method} {path}"))?;
        self.sender
            .ready()
            .await
            .with_context(|| format!("{method} {path}: connection closed"))?;
        tokio::time::timeout(REQUEST_TIMEOUT, self.sender.send_request(request))
            .await
            .with_context(|| format!("{method} {path}: no response within {REQUEST_TIMEOUT:?}"))?
            .with_context(|| format!("{method} {path}"))
    }

    /// Sends a request and reads the whole response.
    pub async fn call(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> anyhow::Result<(StatusCode, Bytes)> {
        self.call_as(method, path, body, JSON).await
    }

    /// [`Conn::call`] with a body of `content_type`.
    pub async fn call_as(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        content_type: &str,
    ) -> anyhow::Result<(StatusCode, Bytes)> {
        let response = self
            .send_as(method.clone(), path, body, content_type)
            .await?;
        let status = response.status();
        let bytes = tokio::time::timeout(REQUEST_TIMEOUT, response.into_body().collect())
            .await
            .with_context(|| {
                format!("{method} {path}: body not complete within {REQUEST_TIMEOUT:?}")
            })?
            .with_context(|| format!("{method} {path}: reading the body"))?
            .to_bytes();
        Ok((status, bytes))
    }

    /// Like [`Conn::call`], but a status for which `ok` is false is an error quoting the request and
    /// the response.
    pub async fn expect(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        ok: impl Fn(StatusCode) -> bool,
    ) -> anyhow::Result<Bytes> {
        self.expect_as(method, path, body, JSON, ok).await
    }

    /// [`Conn::expect`] with a body of `content_type`.
    pub async fn expect_as(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        content_type: &str,
        ok: impl Fn(StatusCode) -> bool,
    ) -> anyhow::Result<Bytes> {
        let sent = body.clone();
        let (status, bytes) = self
            .call_as(method.clone(), path, body, content_type)
            .await?;
        if ok(status) {
            return Ok(bytes);
        }
        bail!(
            "{}",
            describe_failure(&method, path, sent.as_deref(), status, &bytes)
        )
    }

    /// A request that must answer 2xx.
    pub async fn ok(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> anyhow::Result<Bytes> {
        self.expect(method, path, body, |s| s.is_success()).await
    }
}

/// "METHOD PATH [body] → STATUS body", shortened for a report.
pub fn describe_failure(
    method: &Method,
    path: &str,
    sent: Option<&[u8]>,
    status: StatusCode,
    body: &[u8],
) -> String {
    let quote = |b: &[u8]| {
        let s = String::from_utf8_lossy(b);
        if s.len() > QUOTED_BODY {
            let mut end = QUOTED_BODY;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}…", &s[..end])
        } else {
            s.into_owned()
        }
    };
    match sent {
        Some(sent) => format!(
            "{method} {path} with body {} → {status}: {}",
            quote(sent),
            quote(body)
        ),
        None => format!("{method} {path} → {status}: {}", quote(body)),
    }
}

/// The body of a watch that answered 200, or the failure described as every phase reports it.
pub async fn watch_body(response: Response<Incoming>, path: &str) -> anyhow::Result<Incoming> {
    if response.status() == StatusCode::OK {
        return Ok(response.into_body());
    }
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    bail!(
        "{}",
        describe_failure(&Method::GET, path, None, status, &body)
    )
}

/// Splits a watch stream's bytes into its events (one JSON object per line).
#[derive(Default)]
pub struct WatchLines {
    buffer: Vec<u8>,
}

/// One event of a watch, parsed, with its line (for messages).
pub struct WatchLine<T> {
    pub event: T,
    pub line: Vec<u8>,
}

impl WatchLines {
    pub fn push(&mut self, data: &[u8]) {
        self.buffer.extend_from_slice(data);
    }

    /// The next complete event, `None` until more bytes arrive; fails on a line that is no event.
    pub fn next<T: serde::de::DeserializeOwned>(
        &mut self,
        path: &str,
    ) -> anyhow::Result<Option<WatchLine<T>>> {
        while let Some(pos) = self.buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=pos).collect();
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let event = serde_json::from_slice(&line).with_context(|| {
                format!(
                    "GET {path}: not a watch event: {}",
                    String::from_utf8_lossy(&line[..line.len().min(300)])
                )
            })?;
            return Ok(Some(WatchLine { event, line }));
        }
        Ok(None)
    }
}

/// The message for an ERROR event of the watch at `path`.
pub fn watch_error(path: &str, line: &[u8]) -> String {
    format!(
        "GET {path}: ERROR event: {}",
        String::from_utf8_lossy(&line[..line.len().min(600)])
    )
}
