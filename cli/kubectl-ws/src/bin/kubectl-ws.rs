//! `kubectl ws`: switch between kcp workspaces by rewriting the kubeconfig.

use std::process::ExitCode;

use clap::Parser;
use kubectl_ws::cli::WsCli;
use kubectl_ws::commands::Streams;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = WsCli::parse();
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
            // cobra's wording, which kcp's plugin prints. The library's messages already include their causes.
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    }
}
