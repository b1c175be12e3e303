//! kcp-shard: wires the libraries into one process: PKI and kubeconfig on disk, the store, the API
//! server, and the TLS listener. `main.rs` only parses flags, sets up logging and handles signals.

pub mod kubeconfig;
pub mod pki;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use kcp_apiserver::{ApiServer, ApiServerConfig};
use kcp_auth::{AdminAuthorizer, Authenticator, Authorizer, X509Authenticator};
use kcp_store::StoreConfig;
use tokio_util::sync::CancellationToken;

/// The shard's flags, named as kcp names them.
#[derive(clap::Parser, Clone, Debug, PartialEq, Eq)]
#[command(
    name = "kcp-shard",
    about = "Runs a kcp-rs shard: a Kubernetes API server hosting many logical clusters."
)]
pub struct Options {
    /// Directory for the shard's state: the CA and certificates, admin.kubeconfig, and (without
    /// --etcd-servers) the embedded store. Created if missing.
    #[arg(long, default_value = ".kcp", value_name = "DIR")]
    pub root_directory: PathBuf,

    /// Port to serve HTTPS on. 0 picks a free port; the port chosen is logged and written to
    /// admin.kubeconfig.
    #[arg(long, default_value_t = 6443, value_name = "PORT")]
    pub secure_port: u16,

    /// IP address to listen on.
    #[arg(long, default_value = "127.0.0.1", value_name = "IP")]
    pub bind_address: IpAddr,

    /// Hostname (or IP) clients use to reach this shard. It is added to the serving certificate and used
    /// in admin.kubeconfig. Default: the bind address, or localhost when binding to all addresses.
    #[arg(long, value_name = "HOST")]
    pub external_hostname: Option<String>,

    /// Name of this shard.
    #[arg(long, default_value = "root", value_name = "NAME")]
    pub shard_name: String,

    /// Comma-separated etcd endpoints (e.g. http://127.0.0.1:2379). Empty: use the embedded store at
    /// <root-directory>/store.redb.
    #[arg(long, value_delimiter = ',', value_name = "URLS")]
    pub etcd_servers: Vec<String>,
}

impl Options {
    /// The host clients put in URLs, and that the serving certificate must name.
    pub fn client_host(&self) -> String {
        match &self.external_hostname {
            Some(host) if !host.is_empty() => host.clone(),
            _ if self.bind_address.is_unspecified() => "localhost".to_string(),
            _ => self.bind_address.to_string(),
        }
    }

    pub fn store_config(&self) -> StoreConfig {
        let endpoints: Vec<String> = self
            .etcd_servers
            .iter()
            .filter(|s| !s.trim().is_empty())
            .cloned()
            .collect();
        if endpoints.is_empty() {
            StoreConfig::Embedded {
                path: self.root_directory.join("store.redb"),
            }
        } else {
            // One etcd can hold several shards (and other tenants); each shard keeps to its own prefix.
            StoreConfig::Etcd {
                endpoints,
                prefix: format!("/kcp-rs/{}", self.shard_name),
            }
        }
    }
}

/// `https://host:port`, with IPv6 literals bracketed.
fn base_url(host: &str, port: u16) -> String {
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V6(ip)) => format!("https://[{ip}]:{port}"),
        _ => format!("https://{host}:{port}"),
    }
}

/// Runs the shard until `shutdown` is cancelled.
///
/// Order matters to callers that watch the root directory: `admin.kubeconfig` is removed first and
/// written again only once the listener is bound and the API server is ready, so its appearance means
/// "ready" and its server URL holds the real port (even with `--secure-port 0`).
pub async fn run(options: Options, shutdown: CancellationToken) -> anyhow::Result<()> {
    let root = &options.root_directory;
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let kubeconfig_path = root.join(kubeconfig::FILE_NAME);
    match std::fs::remove_file(&kubeconfig_path) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => {
            return Err(err)
                .with_context(|| format!("removing the stale {}", kubeconfig_path.display()));
        }
    }

    let host = options.client_host();
    let mut hostnames = vec![host.clone()];
    if !options.bind_address.is_unspecified() {
        hostnames.push(options.bind_address.to_string());
    }
    let pki = {
        let root = root.clone();
        // Key generation and file I/O: keep them off the async workers.
        tokio::task::spawn_blocking(move || pki::ensure(&root, &hostnames))
            .await
            .context("PKI task")??
    };
    let tls = kcp_apiserver::serve::server_tls_config(
        pki.serving.cert_pem.as_bytes(),
        pki.serving.key_pem.as_bytes(),
        pki.ca_cert_pem.as_bytes(),
    )
    .context("TLS configuration")?;

    let store_config = options.store_config();
    let store = kcp_store::open(&store_config)
        .await
        .with_context(|| format!("opening the store {store_config:?}"))?;

    let listener =
        tokio::net::TcpListener::bind(SocketAddr::new(options.bind_address, options.secure_port))
            .await
            .with_context(|| format!("binding {}:{}", options.bind_address, options.secure_port))?;
    let local = listener.local_addr().context("reading the bound address")?;
    let external_url = base_url(&host, local.port());

    let authenticators: Vec<Arc<dyn Authenticator>> = vec![Arc::new(X509Authenticator::new())];
    let authorizers: Vec<Arc<dyn Authorizer>> = vec![Arc::new(AdminAuthorizer::new())];
    let server = ApiServer::new(ApiServerConfig {
        store,
        shard_name: options.shard_name.clone(),
        external_url: external_url.clone(),
        authenticators,
        authorizers,
    })
    .await
    .context("starting the API server")?;
    kcp_controllers::start(
        server.clone(),
        kcp_controllers::ControllerConfig {
            root_ca_pem: pki.ca_cert_pem.clone(),
        },
    );

    kubeconfig::write(&kubeconfig_path, &kubeconfig::build(&external_url, &pki))
        .with_context(|| format!("writing {}", kubeconfig_path.display()))?;

    tracing::info!(shard = %options.shard_name, url = %external_url, "serving on https://{local}");
    tracing::info!("admin kubeconfig: {}", kubeconfig_path.display());

    // Open watches would hold their connections past the drain deadline, so end them as soon as shutdown
    // starts, not after the listener has drained.
    let stop_watches = {
        let server = server.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            shutdown.cancelled().await;
            server.shutdown();
        })
    };

    let handler = {
        let server = server.clone();
        move |req, peer| server.clone().handle(req, peer)
    };
    let served =
        kcp_apiserver::serve::serve_tls(listener, Arc::new(tls), handler, shutdown.clone()).await;
    // serve_tls only returns on shutdown or error; make sure watches end either way.
    shutdown.cancel();
    let _ = stop_watches.await;
    served.context("serving")?;
    tracing::info!("shut down");
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use std::path::Path;

    use clap::Parser;

    use super::*;

    #[test]
    fn defaults() {
        let o = Options::try_parse_from(["kcp-shard"]).unwrap();
        assert_eq!(o.root_directory, PathBuf::from(".kcp"));
        assert_eq!(o.secure_port, 6443);
        assert_eq!(o.bind_address.to_string(), "127.0.0.1");
        assert_eq!(o.shard_name, "root");
        assert!(o.etcd_servers.is_empty());
        assert_eq!(o.client_host(), "127.0.0.1");
        assert!(
            matches!(o.store_config(), StoreConfig::Embedded { path } if path == Path::new(".kcp/store.redb"))
        );
    }

    #[test]
    fn etcd_servers_and_hosts() {
        let o = Options::try_parse_from([
            "kcp-shard",
            "--etcd-servers",
            "http://a:2379,http://b:2379",
            "--shard-name",
            "s1",
            "--bind-address",
            "0.0.0.0",
        ])
        .unwrap();
        let StoreConfig::Etcd { endpoints, prefix } = o.store_config() else {
            panic!("expected etcd")
        };
        assert_eq!(endpoints, ["http://a:2379", "http://b:2379"]);
        assert_eq!(prefix, "/kcp-rs/s1");
        assert_eq!(o.client_host(), "localhost");
        let o = Options::try_parse_from(["kcp-shard", "--external-hostname", "kcp.example.com"])
            .unwrap();
        assert_eq!(o.client_host(), "kcp.example.com");
        assert_eq!(base_url("::1", 6443), "https://[::1]:6443");
    }
}
