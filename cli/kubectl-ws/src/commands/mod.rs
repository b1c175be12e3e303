//! One module per command. Each takes an [`Env`] and writes to the given output streams.

use std::io::Write;

use crate::client::Client;
use crate::cluster_url::{ClusterUrl, origin};
use crate::error::{Error, Result};
use crate::kubeconfig::{Kubeconfig, Sources};
use crate::overrides::Overrides;

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

    /// The server requests go to: `--server`, else that of `--context`, else the current context's.
    pub fn server(&self, kc: &Kubeconfig) -> Result<String> {
        if let Some(s) = &self.overrides.server {
            return Ok(s.clone());
        }
        Ok(match &self.overrides.context {
            Some(c) => kc.server_of_context(c)?,
            None => kc.current_server()?,
        })
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
