//! `kubectl kcp ...`: kubectl runs this binary for its `kcp` subcommand.

use std::process::ExitCode;

use clap::Parser;
use kubectl_kcp::cli::{KcpCli, execute};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    execute(KcpCli::parse()).await
}
