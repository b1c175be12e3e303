//! `kubectl ws .` and `kubectl ws current [--short]`.

use std::io::Write;

use super::{Env, Streams};
use crate::cluster_url::ClusterUrl;
use crate::error::Result;

pub fn run(env: &Env, short: bool, io: &mut Streams<'_>) -> Result<()> {
    let kc = env.load()?;
    print(io.out, &env.server(&kc)?, short, None)
}

/// Prints the workspace behind `server` in kcp's words; `type_ref` is `path:name` of its type when known.
pub fn print(out: &mut dyn Write, server: &str, short: bool, type_ref: Option<&str>) -> Result<()> {
    let Some(url) = ClusterUrl::parse(server) else {
        if !short {
            writeln!(out, "Current workspace is the URL {server:?}.")?;
        }
        return Ok(());
    };
    if short {
        writeln!(out, "{}", url.path)?;
        return Ok(());
    }
    let mut message = format!("Current workspace is '{}'", url.path);
    if let Some(t) = type_ref.filter(|t| !t.is_empty()) {
        message.push_str(&format!(" (type {t})"));
    }
    writeln!(out, "{message}.")?;
    Ok(())
}
