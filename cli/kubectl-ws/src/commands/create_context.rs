//! `kubectl ws create-context [<name>] [--overwrite]`: a kubeconfig context of its own for the current
//! workspace, named after its path unless a name is given.

use super::{Env, Streams};
use crate::cluster_url::ClusterUrl;
use crate::error::{Error, Result};

/// What to create; `kubectl create workspace --create-context` fills in the fields the command line
/// cannot reach.
#[derive(Debug, Clone, Default)]
pub struct CreateContext {
    pub name: Option<String>,
    pub overwrite: bool,
    /// Leave `current-context` alone.
    pub keep_current: bool,
    /// The new cluster's server instead of the current one's.
    pub server: Option<String>,
}

pub fn run(env: &Env, args: &CreateContext, io: &mut Streams<'_>) -> Result<()> {
    let mut kc = env.load()?;
    // As kcp: the copied context is the kubeconfig's current one, whatever `--context` says.
    let server = kc.create_context_server()?;
    let url = ClusterUrl::parse(&server).ok_or_else(|| Error::NotAWorkspace(server.clone()))?;
    let name = match args.name.as_deref().filter(|n| !n.is_empty()) {
        Some(n) => n.to_owned(),
        None => url.path.to_string(),
    };
    let existed = kc.context(&name).is_some();
    if existed && !args.overwrite {
        return Err(Error::ContextExists(name));
    }
    let was_current = kc.current_context_name() == name;
    kc.add_context(&name, args.server.as_deref(), args.keep_current)?;
    kc.save()?;

    let verb = if existed { "Updated" } else { "Created" };
    if args.keep_current || was_current {
        writeln!(io.out, "{verb} context {name:?}.")?;
    } else {
        writeln!(io.out, "{verb} context {name:?} and switched to it.")?;
    }
    Ok(())
}
