//! The `kcp-vw` binary: flags, logging and signals around [`kcp_vw::run`].

use clap::Parser;

// As the shard: many small JSON buffers freed across threads.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .thread_name("kcp-vw")
        .enable_all()
        .build()?
        .block_on(async {
            // rustls needs its crypto provider named once; Err means it already is.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let options = kcp_vw::Options::parse();
            kcp_shard::process::init_logging();
            kcp_vw::run(options, kcp_shard::process::shutdown_on_signal()).await
        })
}
