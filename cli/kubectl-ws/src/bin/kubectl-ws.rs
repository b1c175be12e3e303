//! `kubectl ws`: switch between kcp workspaces by rewriting the kubeconfig.

use std::process::ExitCode;

use clap::Parser;
use kubectl_ws::cli::{Plugin, WsCli};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    Plugin::Ws(WsCli::parse()).main().await
}
