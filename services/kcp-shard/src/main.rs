//! The `kcp-shard` binary: flags, logging and signals around [`kcp_shard::run`].

use clap::{Parser, Subcommand};
use kcp_shard::Options;

// jemalloc rather than glibc malloc: the shard allocates and frees many small JSON buffers across
// threads; glibc's per-thread arenas kept freed memory (RSS per object) and malloc was ~17 % of CPU.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser, Debug)]
#[command(
    name = "kcp-shard",
    version,
    about = "Runs a kcp-rs shard: a Kubernetes API server hosting many logical clusters.",
    long_about = "Runs a kcp-rs shard: a Kubernetes API server hosting many logical clusters.\n\n\
        `kcp-shard start [flags]` and `kcp-shard [flags]` do the same. Log verbosity follows RUST_LOG \
        (default: info).",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    options: Options,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the shard (what plain `kcp-shard` does).
    Start(Options),
}

fn main() -> anyhow::Result<()> {
    // Named worker threads make the shard's own work easy to tell apart in profiles and `top -H`.
    tokio::runtime::Builder::new_multi_thread()
        .thread_name("kcp-shard")
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
    // rustls panics at first use if it cannot tell which crypto provider to use; name ring once here.
    // Err only means one was installed already, which is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();

    let cli = Cli::parse();
    let options = match cli.command {
        Some(Command::Start(options)) => options,
        None => cli.options,
    };

    kcp_shard::process::init_logging();
    kcp_shard::run(options, kcp_shard::process::shutdown_on_signal()).await
}
