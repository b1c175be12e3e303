//! One module per command. Each takes an [`Env`] and writes to the given output streams.

use std::io::Write;
use std::path::PathBuf;

use crate::client::Client;
use crate::cluster_url::{ClusterUrl, origin};
use crate::error::{Error, Result};
use crate::kubeconfig::Kubeconfig;

pub mod create;
pub mod current;
pub mod tree;
pub mod use_workspace;

/// What the commands need from the process: where the kubeconfig is and the user's home directory.
#[derive(Debug, Clone)]
pub struct Env {
    pub kubeconfig: PathBuf,
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
        Ok(Kubeconfig::load(&self.kubeconfig)?)
    }

    /// A client with the current context's credentials, addressing the server's base URL.
    pub async fn client(&self, kc: &Kubeconfig) -> Result<Client> {
        let server = kc.current_server()?;
        let base = match ClusterUrl::parse(&server) {
            Some(u) => u.base,
            None => origin(&server).ok_or_else(|| Error::NotAWorkspace(server.clone()))?,
        };
        Ok(Client::new(&self.kubeconfig, kc.current_context_name(), &base).await?)
    }
}

/// The workspace the current context points to.
pub fn current_url(kc: &Kubeconfig) -> Result<ClusterUrl> {
    let server = kc.current_server()?;
    ClusterUrl::parse(&server).ok_or(Error::NotAWorkspace(server))
}
