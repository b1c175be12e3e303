//! `kcp-bench`: see the crate's README. Everything lives in the library modules.

use clap::Parser as _;

fn main() -> anyhow::Result<()> {
    let args = kcp_bench::Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(kcp_bench::run(args))
}
