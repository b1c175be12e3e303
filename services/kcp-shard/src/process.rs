//! What every kcp-rs server process does the same way: logging to stderr by RUST_LOG, and
//! shutting down on signals.

use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::Context as _;
use kcp_apiserver::ApiServer;

use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

/// Serves `server` on `listener` until `shutdown` is cancelled (or serving fails), then waits
/// for the connections to drain. Open watches would hold their connections past the drain
/// deadline, so they are ended as soon as shutdown starts, not after the listener has drained.
pub async fn serve(
    server: Arc<ApiServer>,
    listener: tokio::net::TcpListener,
    tls: rustls::ServerConfig,
    shutdown: CancellationToken,
) -> anyhow::Result<()> {
    let stop_watches = {
        let server = server.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            server.shutdown();
        })
    };
    let handler = move |req, peer| server.clone().handle(req, peer);
    let served =
        kcp_http::serve::serve_tls(listener, Arc::new(tls), handler, shutdown.clone()).await;
    // serve_tls only returns on shutdown or error; make sure watches end either way.
    shutdown.cancel();
    let _ = stop_watches.await;
    served.context("serving")
}

/// Logs to stderr at RUST_LOG's levels (default: info).
pub fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // Colour codes only help a terminal; in files and CI logs they are noise.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// Cancelled at the first SIGTERM/SIGINT (see [`cancel_on_signal`]).
pub fn shutdown_on_signal() -> CancellationToken {
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));
    shutdown
}

/// First SIGTERM/SIGINT: shut down gracefully. Second: exit at once, for when draining hangs.
async fn cancel_on_signal(shutdown: CancellationToken) {
    wait_for_signal().await;
    tracing::info!("signal received, shutting down");
    shutdown.cancel();
    wait_for_signal().await;
    tracing::warn!("second signal, exiting now");
    std::process::exit(130);
}

#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(err) => {
            tracing::warn!(error = %err, "cannot listen for SIGTERM; only SIGINT stops the process");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() {
    let _ = tokio::signal::ctrl_c().await;
}
