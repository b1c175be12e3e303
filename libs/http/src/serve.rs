//! The TLS accept loop: rustls handshake, client certificates, HTTP/1.1 and HTTP/2, graceful shutdown.
//!
//! `axum::serve` and friends hide the TLS connection, but Kubernetes authentication needs the client's
//! certificate chain per connection, so the loop is written by hand: accept, handshake (in the connection's
//! own task, with a timeout), capture the client's certificate chain into [`PeerInfo`], then serve the stream with
//! hyper-util's auto (h1/h2) builder under a [`GracefulShutdown`].

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::client_auth::DeferredClientAuth;

/// A client that has not finished its TLS handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long open connections get to finish their requests after shutdown starts.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Many watches share one connection (kubectl, controllers, the front proxy), so the h2 default of 200
/// would make clients queue.
const H2_MAX_CONCURRENT_STREAMS: u32 = 1000;
/// Pings detect dead peers whose watches would otherwise stay open forever.
const H2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const H2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);
/// kube-apiserver's: a client must send a request's headers within this long of connecting (or of
/// its previous request); idle connections go too.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);
/// kube-apiserver's `MaxHeaderBytes` (large OIDC tokens, impersonation headers).
const MAX_HEADER_BYTES: usize = 1 << 20;
/// Backoff after a failed `accept` (e.g. out of file descriptors) so the loop does not spin.
const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(100);

/// What the TLS layer learnt about the client of one connection.
#[derive(Clone, Debug, Default)]
pub struct PeerInfo {
    pub remote_addr: Option<SocketAddr>,
    /// The client's certificate chain, leaf first (empty if none sent). The handshake only proved that
    /// the client holds the leaf's key; authenticators check the chain against their own CAs.
    pub certificates: Vec<CertificateDer<'static>>,
}

/// Why a TLS server configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsConfigError {
    #[error("reading PEM ({what}): {source}")]
    Pem {
        what: &'static str,
        #[source]
        source: rustls_pki_types::pem::Error,
    },
    #[error("no certificate found in the {0} PEM")]
    Empty(&'static str),
    #[error("invalid client CA certificate: {0}")]
    ClientCa(#[source] rustls::Error),
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// Builds the server side of TLS: the serving chain and key, TLS 1.2 and 1.3 only, ALPN `h2` then
/// `http/1.1`, and optional client certificates: the handshake asks for one of the CAs of
/// `client_ca_pem` — every CA whose certificates may authenticate somehow (user certificates and
/// request-header proxies alike, one PEM bundle) — and proves the client holds its key; the
/// authenticators judge the chain per request, as Kubernetes' do (see [`crate::client_auth`]).
///
/// The ring provider is named explicitly so this works whether or not a process-wide default is installed.
pub fn server_tls_config(
    cert_chain_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: &[u8],
) -> Result<ServerConfig, TlsConfigError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());

    let chain = CertificateDer::pem_slice_iter(cert_chain_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsConfigError::Pem {
            what: "serving certificate",
            source,
        })?;
    if chain.is_empty() {
        return Err(TlsConfigError::Empty("serving certificate"));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|source| TlsConfigError::Pem {
        what: "serving key",
        source,
    })?;

    let mut roots = RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(client_ca_pem) {
        let ca = ca.map_err(|source| TlsConfigError::Pem {
            what: "client CA",
            source,
        })?;
        roots.add(ca).map_err(TlsConfigError::ClientCa)?;
    }
    if roots.is_empty() {
        return Err(TlsConfigError::Empty("client CA"));
    }
    let verifier =
        DeferredClientAuth::new(roots.subjects(), provider.signature_verification_algorithms);

    // Naming the versions keeps anything older out whatever rustls' defaults become.
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)?;
    // h2 first: client-go multiplexes watches over one h2 connection when offered.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Serves HTTPS on `listener` until `shutdown` is cancelled, calling `handler` for every request with
/// the connection's [`PeerInfo`].
///
/// A failed handshake or connection only ends that connection. On shutdown the listener closes, open
/// connections are asked to finish (h1: close after the current response; h2: GOAWAY), and the function
/// returns once they have, or after a bounded grace period.
pub async fn serve_tls<H, F>(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    handler: H,
    shutdown: CancellationToken,
) -> std::io::Result<()>
where
    H: Fn(http::Request<Incoming>, Arc<PeerInfo>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = http::Response<crate::Body>> + Send + 'static,
{
    let acceptor = TlsAcceptor::from(tls);
    let builder = http_builder();
    let graceful = GracefulShutdown::new();
    // Owning the connection tasks lets shutdown really drop the ones that outlive the grace period.
    let mut connections = JoinSet::new();

    loop {
        let (tcp, remote_addr) = tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            // Reap finished connections so the set does not grow with every connection ever served.
            Some(done) = connections.join_next(), if !connections.is_empty() => {
                if let Err(err) = done
                    && err.is_panic()
                {
                    tracing::error!(error = %err, "a connection task panicked");
                }
                continue;
            }
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Per-connection errors (reset before accept, EMFILE) must not stop the server.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                    continue;
                }
            },
        };
        // Latency matters more than packet count for API calls and watch events.
        let _ = tcp.set_nodelay(true);

        let acceptor = acceptor.clone();
        let builder = builder.clone();
        let handler = handler.clone();
        let shutdown = shutdown.clone();
        // Taken before the handshake so that shutdown also waits for connections still handshaking.
        let watcher = graceful.watcher();
        connections.spawn(async move {
            let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp));
            let tls = tokio::select! {
                _ = shutdown.cancelled() => return,
                result = handshake => match result {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(err)) => {
                        tracing::debug!(remote = %remote_addr, error = %err, "TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(remote = %remote_addr, "TLS handshake timed out");
                        return;
                    }
                },
            };
            let peer = Arc::new(PeerInfo {
                remote_addr: Some(remote_addr),
                certificates: tls
                    .get_ref()
                    .1
                    .peer_certificates()
                    .map(<[_]>::to_vec)
                    .unwrap_or_default(),
            });
            let service = hyper::service::service_fn(move |req| {
                let response = handler(req, peer.clone());
                async move { Ok::<_, Infallible>(response.await) }
            });
            // The protocol is the one TLS agreed on. Left to sniff the first bytes, hyper waits for
            // them without a deadline, and a client that sends nothing holds its socket forever.
            let builder = match tls.get_ref().1.alpn_protocol() {
                Some(b"h2") => builder.http2_only(),
                _ => builder.http1_only(),
            };
            let (io, heard) = crate::first_bytes::FirstBytes::new(tls);
            let conn = builder.serve_connection(TokioIo::new(io), service);
            let conn = watcher.watch(conn.into_owned());
            tokio::pin!(conn);
            // A client that has said nothing by the header deadline goes (kube-apiserver's
            // ReadHeaderTimeout runs from the accept).
            let silent = async {
                tokio::time::sleep(HEADER_READ_TIMEOUT).await;
                if heard.load(std::sync::atomic::Ordering::Relaxed) {
                    std::future::pending::<()>().await;
                }
            };
            tokio::select! {
                ended = &mut conn => if let Err(err) = ended {
                    // Clients hanging up mid-request are routine; not worth more than debug.
                    tracing::debug!(remote = %remote_addr, error = %err, "connection ended with an error");
                },
                _ = silent => {
                    tracing::debug!(remote = %remote_addr, "client sent nothing; connection dropped");
                }
            }
        });
    }

    drop(listener);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(grace = ?SHUTDOWN_GRACE, open = connections.len(), "connections still open after the shutdown grace period; dropping them");
    }
    connections.shutdown().await;
    Ok(())
}

fn http_builder() -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // The h1 header-read timeout needs a timer to take effect; it also ends idle keep-alive
    // connections. Headers may be as large as kube-apiserver allows.
    builder
        .http1()
        .timer(TokioTimer::new())
        .keep_alive(true)
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(MAX_HEADER_BYTES);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(MAX_HEADER_BYTES as u32)
        .max_concurrent_streams(H2_MAX_CONCURRENT_STREAMS)
        .keep_alive_interval(H2_KEEP_ALIVE_INTERVAL)
        .keep_alive_timeout(H2_KEEP_ALIVE_TIMEOUT);
    builder
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    #[test]
    fn rejects_empty_pem() {
        let err = server_tls_config(b"", b"", b"").unwrap_err();
        assert!(
            matches!(err, TlsConfigError::Empty("serving certificate")),
            "{err}"
        );
    }
}
