//! `kubectl create workspace <name>`: kubectl looks up `kubectl-create-workspace` for the two-word spelling
//! (`kubectl-create_workspace` serves `kubectl create-workspace`); both are the same program.

use std::process::ExitCode;

use clap::Parser;
use kubectl_ws::cli::CreateCli;
use kubectl_ws::commands::Streams;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = CreateCli::parse();
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let result: anyhow::Result<()> = cli
        .run(&mut Streams {
            out: &mut out,
            err: &mut err,
        })
        .await
        .map_err(Into::into);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    }
}
