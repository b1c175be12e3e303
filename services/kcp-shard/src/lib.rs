//! kcp-shard: wires the libraries into one process: PKI and kubeconfig on disk, the store, the API
//! server, and the TLS listener. `main.rs` only parses flags, sets up logging and handles signals.

use kcp_pki::{kubeconfig, pki};
pub mod authentication;
pub mod process;
pub mod service_accounts;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use kcp_apiserver::{ApiServer, ApiServerConfig};
use kcp_auth::Authorizer;

use crate::authentication::{Authentication, ServiceAccountKeys};
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

    #[command(flatten)]
    pub authentication: authentication::AuthenticationOptions,

    /// Serve the virtual workspaces (`/services/...`, such as each APIExport's endpoint) in this
    /// process. With false, a kcp-vw process serves them at --shard-virtual-workspace-url.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub run_virtual_workspaces: bool,

    /// The URL clients reach this shard's virtual workspaces at, as APIExportEndpointSlices publish
    /// it. Default: this shard's own URL.
    #[arg(long, value_name = "URL")]
    pub shard_virtual_workspace_url: Option<String>,
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

/// The watch cache saved at shutdown for the next start (on etcd only), in the root directory.
pub const CACHE_SNAPSHOT: &str = "watch-cache.snapshot";

/// Runs the shard until `shutdown` is cancelled.
///
/// Order matters to callers that watch the root directory: `admin.kubeconfig` is removed first and
/// written again only once the listener is bound and the API server is ready, so its appearance means
/// "ready" and its server URL holds the real port (even with `--secure-port 0`).
pub async fn run(options: Options, shutdown: CancellationToken) -> anyhow::Result<()> {
    // Start-up steps are logged with the time since this point: restart time is a target.
    let started = std::time::Instant::now();
    let step = |name: &str| {
        tracing::info!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            "start-up: {name}"
        )
    };
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
    let authn = Authentication::build(
        &options.authentication,
        &pki.ca_cert_pem,
        ServiceAccountKeys::Signing(&pki.service_account),
    )?;
    let tls = kcp_http::serve::server_tls_config(
        pki.serving.cert_pem.as_bytes(),
        pki.serving.key_pem.as_bytes(),
        authn.tls_client_cas.as_bytes(),
    )
    .context("TLS configuration")?;

    step("PKI and TLS ready");
    let store_config = options.store_config();
    let store = kcp_store::open(&store_config)
        .await
        .with_context(|| format!("opening the store {store_config:?}"))?;
    step("store open");

    let listener =
        tokio::net::TcpListener::bind(SocketAddr::new(options.bind_address, options.secure_port))
            .await
            .with_context(|| format!("binding {}:{}", options.bind_address, options.secure_port))?;
    let local = listener.local_addr().context("reading the bound address")?;
    let external_url = base_url(&host, local.port());

    // kcp's own chain (inside the API server) decides everything.
    let authorizers: Vec<Arc<dyn Authorizer>> = Vec::new();
    // The generic server with kcp's tenancy plugged in: workspace paths, homes, inactive
    // clusters, workspace admission and root's bootstrap.
    let mut tenancy = kcp_tenancy::Tenancy::new();
    if let Some(url) = options
        .shard_virtual_workspace_url
        .as_ref()
        .filter(|u| !u.is_empty())
    {
        tenancy = tenancy.with_virtual_workspace_url(url.clone());
    }
    let config = ApiServerConfig {
        store,
        role: kcp_apiserver::ServerRole::Shard,
        shard_name: options.shard_name.clone(),
        external_url: external_url.clone(),
        authenticators: authn.authenticators,
        authorizers,
        service_account_tokens: authn.service_account_tokens,
        rbac: Default::default(),
        identity_headers: authn.identity_headers,
        cache_snapshot: Some(root.join(CACHE_SNAPSHOT)),
    };
    let apis = kcp_apis::Apis::new(Some(tenancy.paths().clone()));
    if !options.run_virtual_workspaces
        && (options.shard_virtual_workspace_url.as_deref()).is_none_or(str::is_empty)
    {
        // Else endpoint slices would publish this shard's URL, where nothing serves them.
        anyhow::bail!(
            "--run-virtual-workspaces=false needs --shard-virtual-workspace-url: the URL of the kcp-vw serving this shard's virtual workspaces"
        );
    }
    let virtual_workspaces = kcp_virtual::VirtualWorkspaces {
        base_url: (options.shard_virtual_workspace_url.clone())
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| external_url.clone()),
        shard: options.shard_name.clone(),
        serve: options.run_virtual_workspaces,
        resolver: Some(tenancy.paths().clone()),
    };
    let builder = apis.install(tenancy.install(ApiServer::builder(config)));
    let server =
        (virtual_workspaces.install(builder).build().await).context("starting the API server")?;
    step("API server built");
    authn
        .service_accounts
        .attach(server.registry().cache().clone());
    kcp_controllers::start(
        server.clone(),
        kcp_controllers::ControllerConfig {
            root_ca_pem: pki.ca_cert_pem.clone(),
        },
    );
    tenancy.start_controllers(&server);
    apis.start_controllers(&server);
    virtual_workspaces.start_controllers(&server);

    step("controllers started");
    kubeconfig::write(&kubeconfig_path, &kubeconfig::build(&external_url, &pki))
        .with_context(|| format!("writing {}", kubeconfig_path.display()))?;

    tracing::info!(shard = %options.shard_name, url = %external_url, "serving on https://{local}");
    tracing::info!("admin kubeconfig: {}", kubeconfig_path.display());

    process::serve(server.clone(), listener, tls, shutdown).await?;
    // Requests are drained and the controllers stopped: the cache no longer changes.
    let saving = std::time::Instant::now();
    match server.save_cache_snapshot().await {
        Ok(true) => tracing::info!(
            elapsed_ms = saving.elapsed().as_millis() as u64,
            "watch cache saved for the next start"
        ),
        Ok(false) => {}
        Err(err) => tracing::warn!(error = %err, "saving the watch cache failed"),
    }
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
        assert_eq!(o.authentication.client_ca_file, None);
        assert_eq!(o.authentication.token_auth_file, None);
        assert_eq!(o.authentication.requestheader_client_ca_file, None);
        assert!(o.authentication.requestheader_allowed_names.is_empty());
        assert_eq!(
            o.authentication.requestheader_username_headers,
            ["X-Remote-User"]
        );
        assert_eq!(
            o.authentication.requestheader_group_headers,
            ["X-Remote-Group"]
        );
        assert_eq!(
            o.authentication.requestheader_extra_headers_prefix,
            ["X-Remote-Extra-"]
        );
        assert_eq!(
            o.authentication.service_account_issuer,
            "https://kcp.default.svc"
        );
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

    #[test]
    fn authentication_flags() {
        let o = Options::try_parse_from([
            "kcp-shard",
            "--client-ca-file",
            "/ca.crt",
            "--token-auth-file",
            "/tokens.csv",
            "--requestheader-client-ca-file",
            "/proxy-ca.crt",
            "--requestheader-allowed-names",
            "kcp-front-proxy,other",
            "--requestheader-username-headers",
            "X-User,X-Remote-User",
            "--requestheader-group-headers",
            "X-Group",
            "--requestheader-extra-headers-prefix",
            "X-Extra-",
            "--service-account-issuer",
            "https://issuer.example",
        ])
        .unwrap();
        assert_eq!(
            o.authentication.client_ca_file,
            Some(PathBuf::from("/ca.crt"))
        );
        assert_eq!(
            o.authentication.token_auth_file,
            Some(PathBuf::from("/tokens.csv"))
        );
        assert_eq!(
            o.authentication.requestheader_client_ca_file,
            Some(PathBuf::from("/proxy-ca.crt"))
        );
        assert_eq!(
            o.authentication.requestheader_allowed_names,
            ["kcp-front-proxy", "other"]
        );
        assert_eq!(
            o.authentication.requestheader_username_headers,
            ["X-User", "X-Remote-User"]
        );
        assert_eq!(o.authentication.requestheader_group_headers, ["X-Group"]);
        assert_eq!(
            o.authentication.requestheader_extra_headers_prefix,
            ["X-Extra-"]
        );
        assert_eq!(
            o.authentication.service_account_issuer,
            "https://issuer.example"
        );
    }
}
