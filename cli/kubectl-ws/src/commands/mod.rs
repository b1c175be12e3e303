//! One module per command. Each takes an [`Env`] and writes to the given output streams.

use std::io::Write;

use crate::client::Client;
use crate::cluster_url::{ClusterUrl, origin};
use crate::error::{Error, Result};
use crate::kubeconfig::{Kubeconfig, Sources};
use crate::overrides::Overrides;
use crate::path::{PathError, resolve};

pub mod create;
pub mod create_context;
pub mod current;
pub mod tree;
pub mod use_workspace;

/// What the commands need from the process: the kubeconfig files, the connection flags and the user's
/// home directory.
#[derive(Debug, Clone)]
pub struct Env {
    pub sources: Sources,
    pub overrides: Overrides,
    /// Used to undo the shell's expansion of `~` in `kubectl ws ~`.
    pub home_dir: Option<String>,
    /// `--workspace` of `create` and `tree`: target this workspace instead of the current one.
    pub workspace: Option<String>,
}

/// Standard output and error, injectable for tests.
pub struct Streams<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
}

impl Env {
    pub fn load(&self) -> Result<Kubeconfig> {
        Ok(Kubeconfig::load(&self.sources)?)
    }

    /// The server requests go to: `--server`, else that of `--context`, else the current context's; moved
    /// to `--workspace` when given.
    pub fn server(&self, kc: &Kubeconfig) -> Result<String> {
        let server = match (&self.overrides.server, &self.overrides.context) {
            (Some(s), _) => s.clone(),
            (None, Some(c)) => kc.server_of_context(c)?,
            (None, None) => kc.current_server()?,
        };
        match self.workspace.as_deref().filter(|w| !w.is_empty()) {
            Some(w) => workspace_flag(&server, w),
            None => Ok(server),
        }
    }

    /// The workspace requests go to.
    pub fn current_url(&self, kc: &Kubeconfig) -> Result<ClusterUrl> {
        let server = self.server(kc)?;
        ClusterUrl::parse(&server).ok_or(Error::NotAWorkspace(server))
    }

    /// A client with the effective context's credentials, addressing the server's base URL.
    pub async fn client(&self, kc: &Kubeconfig) -> Result<Client> {
        let server = self.server(kc)?;
        let base = match ClusterUrl::parse(&server) {
            Some(u) => u.base,
            None => origin(&server).ok_or_else(|| Error::NotAWorkspace(server.clone()))?,
        };
        Ok(Client::new(&kc.paths(), &self.overrides, &base).await?)
    }
}

/// The URL `--workspace` points to: an absolute path with a leading colon, else one relative to the
/// workspace of `server`; `.` and `..` segments resolved.
fn workspace_flag(server: &str, workspace: &str) -> Result<String> {
    let url = ClusterUrl::parse(server).ok_or_else(|| Error::NotAWorkspace(server.to_owned()))?;
    let (absolute, path) = match workspace.strip_prefix(':') {
        Some(p) => (true, p),
        None => (false, workspace),
    };
    let target = resolve(&url.path, absolute, path).map_err(|e| match e {
        PathError::AboveRoot => Error::AboveRoot,
        PathError::Invalid(_) => Error::Path(PathError::Invalid(workspace.to_owned())),
    })?;
    Ok(url.with_path(&target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_flag_paths() {
        let s = "https://kcp:6443/clusters/root:org";
        let w = |w: &str| workspace_flag(s, w).map_err(|e| e.to_string());
        assert_eq!(
            w("team").as_deref(),
            Ok("https://kcp:6443/clusters/root:org:team")
        );
        assert_eq!(
            w(":root:x").as_deref(),
            Ok("https://kcp:6443/clusters/root:x")
        );
        assert_eq!(w("..").as_deref(), Ok("https://kcp:6443/clusters/root"));
        assert_eq!(w(".").as_deref(), Ok(s));
        assert_eq!(
            w("..:..:..").err().as_deref(),
            Some("cannot go above the root workspace")
        );
        assert_eq!(
            w("Bad").err().as_deref(),
            Some("invalid workspace path: Bad")
        );
    }
}
