//! `kubectl create workspace <name>`: kubectl looks up `kubectl-create-workspace` for the two-word spelling
//! (`kubectl-create_workspace` serves `kubectl create-workspace`); both are the same program.

use std::process::ExitCode;

use clap::Parser;
use kubectl_ws::cli::{CreateCli, Plugin};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    Plugin::Create(CreateCli::parse()).main().await
}
