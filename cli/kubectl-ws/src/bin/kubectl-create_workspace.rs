//! `kubectl create-workspace <name>`: the binary kubectl runs for the hyphenated spelling.

use std::process::ExitCode;

use clap::Parser;
use kubectl_ws::cli::{CreateCli, Plugin};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    Plugin::Create(CreateCli::parse()).main().await
}
