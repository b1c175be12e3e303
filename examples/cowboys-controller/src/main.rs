//! An example provider controller for kcp-rs (and kcp): it reconciles the `wildwest.dev` Cowboys
//! of every workspace that binds the provider's APIExport, through the virtual-workspace URLs an
//! APIExportEndpointSlice publishes. Copy it as the start of your own.
//!
//! ```sh
//! kubectl ws root:provider        # the workspace holding the export and its endpoint slice
//! cargo run -p cowboys-controller -- --slice cowboys --name demo
//! ```
//!
//! Each Cowboy's `status.result` becomes `<name>: <spec.intent>`. Point `--slice` at a slice with
//! an object partition and the controller sees, and writes, only that partition's Cowboys.

mod controller;

use clap::Parser;

#[derive(Parser)]
#[command(about = "Reconciles Cowboys across workspaces through an APIExportEndpointSlice")]
struct Flags {
    /// The kubeconfig to read (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long)]
    kubeconfig: Option<std::path::PathBuf>,
    /// Its context (default: the current one).
    #[arg(long)]
    context: Option<String>,
    /// The provider workspace's URL, instead of the context's server
    /// (`https://<host>/clusters/root:provider`).
    #[arg(long)]
    server: Option<String>,
    /// The APIExportEndpointSlice in that workspace whose URLs are watched.
    #[arg(long)]
    slice: String,
    /// This controller's name, written into each Cowboy's status.
    #[arg(long, default_value = "cowboys-controller")]
    name: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let flags = Flags::parse();
    let config = controller::provider_config(
        flags.kubeconfig.as_deref(),
        flags.context.as_deref(),
        flags.server.as_deref(),
    )
    .await?;
    controller::run(config, &flags.slice, &flags.name).await
}
