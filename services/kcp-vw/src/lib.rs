//! kcp-vw: a shard's virtual workspaces served by a process of their own, as kcp's
//! `virtual-workspaces` server serves them.
//!
//! It holds no data: its watch cache follows the shard's store over gRPC (the shard serves it to
//! the administrator of the kubeconfig given), and its writes go to that store, so revisions and
//! resourceVersions are the shard's. It runs the same virtual-workspace code as the shard with
//! the same authentication; what it authorizes it asks the shard by SubjectAccessReview
//! ([`reviews`]), as kcp's server does. It runs none of the shard's controllers: the shard
//! writes, kcp-vw only follows (see [`kcp_apiserver::ServerRole::VirtualWorkspaces`]).

pub mod reviews;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use kcp_apiserver::{ApiServer, ApiServerConfig, ServerRole};
use kcp_shard::authentication::{Authentication, AuthenticationOptions, ServiceAccountKeys};
use kcp_store::remote::{RemoteOptions, RemoteStore, RemoteTls};
use tokio_util::sync::CancellationToken;

/// kcp-vw's flags, in the spirit of kcp's `virtual-workspaces` command.
#[derive(clap::Parser, Clone, Debug, PartialEq, Eq)]
#[command(
    name = "kcp-vw",
    version,
    about = "Serves a kcp-rs shard's virtual workspaces (/services/...) as a separate process."
)]
pub struct Options {
    /// Kubeconfig reaching the shard as one of its administrators (group system:masters, as the
    /// context `shard-base` of the shard's admin.kubeconfig): the shard's store is followed and
    /// written through it.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: PathBuf,

    /// The kubeconfig's context to use. Default: its current context.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,

    /// Port to serve HTTPS on (0 picks a free one, which is logged).
    #[arg(long, default_value_t = 6444, value_name = "PORT")]
    pub secure_port: u16,

    /// IP address to listen on.
    #[arg(long, default_value = "127.0.0.1", value_name = "IP")]
    pub bind_address: IpAddr,

    /// Serving certificate (PEM); it must name the host of the URL the shard publishes for its
    /// virtual workspaces (--shard-virtual-workspace-url).
    #[arg(long, value_name = "FILE")]
    pub tls_cert_file: PathBuf,

    /// The serving certificate's private key (PEM).
    #[arg(long, value_name = "FILE")]
    pub tls_private_key_file: PathBuf,

    /// Keys ServiceAccount tokens are checked with (PEM, public or private; the shard's is
    /// service-account.key in its root directory). Without one, ServiceAccount tokens are not
    /// accepted.
    #[arg(long, value_delimiter = ',', value_name = "FILES")]
    pub service_account_key_file: Vec<PathBuf>,

    /// The shard's name.
    #[arg(long, default_value = "root", value_name = "NAME")]
    pub shard_name: String,

    #[command(flatten)]
    pub authentication: AuthenticationOptions,
}

/// How long to wait between attempts to reach the shard at start-up.
const SHARD_RETRY: Duration = Duration::from_secs(1);

/// Runs until `shutdown` is cancelled.
pub async fn run(options: Options, shutdown: CancellationToken) -> anyhow::Result<()> {
    let kubeconfig = kcp_pki::kubeconfig::read(&options.kubeconfig)
        .with_context(|| format!("--kubeconfig {}", options.kubeconfig.display()))?;
    let shard = (kubeconfig.client_endpoint(options.context.as_deref()))
        .with_context(|| format!("--kubeconfig {}", options.kubeconfig.display()))?;
    let remote = RemoteStore::connect(&RemoteOptions {
        url: shard.server.clone(),
        tls: Some(RemoteTls {
            ca_pem: shard.ca_pem.clone(),
            cert_pem: shard.cert_pem.clone(),
            key_pem: shard.key_pem.clone(),
        }),
    })?;
    // The shard may start after us: wait for its store rather than fail.
    let revision = loop {
        match remote.check_access().await {
            Ok(revision) => break revision,
            // Waiting will not mend that: the kubeconfig's user is not an administrator.
            Err(kcp_store::remote::AccessError::Refused(why)) => anyhow::bail!(
                "the shard refuses its store to the user of --kubeconfig {} (context {}): {why}; use a system:masters user, such as the context shard-base of the shard's admin.kubeconfig",
                options.kubeconfig.display(),
                options.context.as_deref().unwrap_or("(current)")
            ),
            Err(err) => {
                tracing::warn!(shard = %shard.server, error = %err, "the shard's store is not reachable yet; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(SHARD_RETRY) => {}
                    _ = shutdown.cancelled() => return Ok(()),
                }
            }
        }
    };
    tracing::info!(shard = %shard.server, revision, "following the shard's store");

    let keys = (options.service_account_key_file.iter())
        .map(|path| {
            kcp_pki::pki::service_account_public_key(path)
                .with_context(|| format!("--service-account-key-file {}", path.display()))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let authn = Authentication::build(
        &options.authentication,
        &shard.ca_pem,
        ServiceAccountKeys::Verifying(keys),
    )?;
    let read =
        |path: &PathBuf| std::fs::read(path).with_context(|| format!("reading {}", path.display()));
    let tls = kcp_http::serve::server_tls_config(
        &read(&options.tls_cert_file)?,
        &read(&options.tls_private_key_file)?,
        authn.tls_client_cas.as_bytes(),
    )
    .context("TLS configuration")?;

    let listener =
        tokio::net::TcpListener::bind(SocketAddr::new(options.bind_address, options.secure_port))
            .await
            .with_context(|| format!("binding {}:{}", options.bind_address, options.secure_port))?;
    let local = listener.local_addr().context("reading the bound address")?;
    let external_url = format!("https://{local}");

    let tenancy = kcp_tenancy::Tenancy::new();
    let config = ApiServerConfig {
        store: Arc::new(remote.clone()),
        role: ServerRole::VirtualWorkspaces,
        shard_name: options.shard_name.clone(),
        external_url: external_url.clone(),
        authenticators: authn.authenticators,
        authorizers: Vec::new(),
        service_account_tokens: None,
        rbac: Default::default(),
        identity_headers: authn.identity_headers,
        cache_snapshot: None,
    };
    let apis = kcp_apis::Apis::new(Some(tenancy.paths().clone()));
    let virtual_workspaces = kcp_virtual::VirtualWorkspaces {
        base_url: external_url.clone(),
        shard: options.shard_name.clone(),
        serve: true,
        resolver: Some(tenancy.paths().clone()),
    };
    let builder = apis
        .install(tenancy.install(ApiServer::builder(config)))
        .access_reviews(Arc::new(reviews::ShardReviews::new(remote.channel())));
    let server =
        (virtual_workspaces.install(builder).build().await).context("starting the API server")?;
    authn
        .service_accounts
        .attach(server.registry().cache().clone());
    // A read that must reflect every acknowledged write waits for the shard's too.
    (server.registry().cache()).follow_writes_of(Arc::new(remote));
    apis.start_followers(&server);
    tracing::info!(shard = %options.shard_name, "serving virtual workspaces on {external_url}");

    kcp_shard::process::serve(server, listener, tls, shutdown).await?;
    tracing::info!("shut down");
    Ok(())
}
