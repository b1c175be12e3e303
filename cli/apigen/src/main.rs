//! `apigen --input-dir <crds> --output-dir <manifests>`: see the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let options = apigen::options::Options::parse();
    match apigen::main(&options, &mut std::io::stderr()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("apigen: {e}");
            ExitCode::FAILURE
        }
    }
}
