//! Calling a webhook: one HTTPS POST to `clientConfig.url`, trusting only `clientConfig.caBundle`.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};

/// Webhook responses larger than this are refused (an AdmissionReview echoes at most a patch).
const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024;

/// Why a call did not produce a response; the text follows "failed to call webhook: ".
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("Post \"{url}\": {reason}")]
    Transport { url: String, reason: String },
    #[error("Post \"{url}\": context deadline exceeded")]
    Timeout { url: String },
    #[error("the server responded with status code {code}: {body}")]
    Status { code: u16, body: String },
}

/// A webhook's URL and the TLS settings built from its caBundle, made once per configuration revision.
pub struct Endpoint {
    url: String,
    uri: http::Uri,
    host: String,
    port: u16,
    server_name: ServerName<'static>,
    tls: Arc<rustls::ClientConfig>,
}

impl Endpoint {
    /// From `clientConfig`: `url` (https) and `caBundle` only. kcp has no in-cluster services, so a
    /// `service` reference cannot be called.
    pub fn from_client_config(cc: &serde_json::Value) -> Result<Endpoint, String> {
        if cc.get("service").is_some_and(|s| !s.is_null()) {
            return Err("service references are not supported; use clientConfig.url".into());
        }
        let url = cc
            .get("url")
            .and_then(serde_json::Value::as_str)
            .ok_or("clientConfig.url is not set")?;
        let uri: http::Uri = url
            .parse()
            .map_err(|e| format!("invalid URL {url:?}: {e}"))?;
        if uri.scheme_str() != Some("https") {
            return Err(format!("invalid URL {url:?}: the scheme must be https"));
        }
        let host = uri
            .host()
            .ok_or_else(|| format!("invalid URL {url:?}: no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(443);
        let server_name = ServerName::try_from(host.clone())
            .map_err(|e| format!("invalid host {host:?}: {e}"))?;
        let bundle = cc
            .get("caBundle")
            .and_then(serde_json::Value::as_str)
            .ok_or("clientConfig.caBundle is not set")?;
        let pem = base64::engine::general_purpose::STANDARD
            .decode(bundle)
            .map_err(|e| format!("caBundle is not base64: {e}"))?;
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|e| format!("caBundle: {e}"))?;
            roots.add(cert).map_err(|e| format!("caBundle: {e}"))?;
        }
        if roots.is_empty() {
            return Err("caBundle holds no certificate".into());
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Endpoint {
            url: url.to_string(),
            uri,
            host,
            port,
            server_name,
            tls: Arc::new(tls),
        })
    }

    /// POSTs `body` and returns the response body of a 200, all within `timeout`.
    pub async fn post(&self, body: Vec<u8>, timeout: Duration) -> Result<Bytes, CallError> {
        match tokio::time::timeout(timeout, self.exchange(body)).await {
            Ok(result) => result,
            Err(_) => Err(CallError::Timeout {
                url: self.url.clone(),
            }),
        }
    }

    async fn exchange(&self, body: Vec<u8>) -> Result<Bytes, CallError> {
        let transport = |reason: String| CallError::Transport {
            url: self.url.clone(),
            reason,
        };
        let tcp = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| transport(format!("dial tcp {}:{}: {e}", self.host, self.port)))?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(self.server_name.clone(), tcp)
            .await
            .map_err(|e| transport(format!("tls: {e}")))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| transport(e.to_string()))?;
        // The connection lives only as long as this one exchange.
        let driver = tokio::spawn(async move {
            let _ = conn.await;
        });
        let path = self.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let authority = self
            .uri
            .authority()
            .map(|a| a.as_str())
            .unwrap_or(self.host.as_str());
        let req = http::Request::post(path)
            .header(http::header::HOST, authority)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| transport(e.to_string()))?;
        let result = async {
            let resp = sender
                .send_request(req)
                .await
                .map_err(|e| transport(e.to_string()))?;
            let code = resp.status().as_u16();
            let bytes = Limited::new(resp.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|e| transport(e.to_string()))?
                .to_bytes();
            if code != 200 {
                return Err(CallError::Status {
                    code,
                    body: String::from_utf8_lossy(&bytes).into_owned(),
                });
            }
            Ok(bytes)
        }
        .await;
        driver.abort();
        result
    }
}
