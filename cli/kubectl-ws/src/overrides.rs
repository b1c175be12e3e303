//! The standard kubectl connection flags kcp's plugins accept (client-go's override flags, minus the ones
//! kcp leaves out: `--cluster`, `--client-certificate`, `--client-key`, `--as`, `--as-group`,
//! `--request-timeout`; `--as-uid` is not offered here).
//!
//! As in client-go they change how requests are made (server, context, credentials) but not the raw
//! kubeconfig: switching workspaces still copies the file's current context.

use kube::config::{KubeConfigOptions, Kubeconfig};

#[derive(Debug, Clone, Default, clap::Args)]
pub struct Overrides {
    /// The name of the kubeconfig context to use
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// The name of the kubeconfig user to use
    #[arg(long, global = true)]
    pub user: Option<String>,
    /// If present, the namespace scope for this CLI request
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// The address and port of the Kubernetes API server
    #[arg(short = 's', long, global = true)]
    pub server: Option<String>,
    /// Bearer token for authentication to the API server
    #[arg(long, global = true)]
    pub token: Option<String>,
    /// Username for basic authentication to the API server
    #[arg(long, global = true)]
    pub username: Option<String>,
    /// Password for basic authentication to the API server
    #[arg(long, global = true)]
    pub password: Option<String>,
    /// Path to a cert file for the certificate authority
    #[arg(long, global = true)]
    pub certificate_authority: Option<String>,
    /// If true, the server's certificate will not be checked for validity. This will make your HTTPS
    /// connections insecure
    #[arg(long, global = true, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub insecure_skip_tls_verify: Option<bool>,
    /// If provided, this URL will be used to connect via proxy
    #[arg(long, global = true)]
    pub proxy_url: Option<String>,
    /// If true, opt-out of response compression for all requests to the server
    #[arg(long, global = true, num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    pub disable_compression: Option<bool>,
    /// Server name to use for server certificate validation. If it is not provided, the hostname used to
    /// contact the server is used
    #[arg(long, global = true)]
    pub tls_server_name: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum OverrideError {
    #[error("context was not found for specified context: {0}")]
    NoContext(String),
}

impl Overrides {
    /// Folds the flags into `kc` (the merged kubeconfig kube will read) and says which context and user
    /// to load.
    pub fn apply(&self, kc: &mut Kubeconfig) -> Result<KubeConfigOptions, OverrideError> {
        let context_name = self
            .context
            .clone()
            .or_else(|| kc.current_context.clone())
            .unwrap_or_default();
        let context = kc
            .contexts
            .iter()
            .find(|c| c.name == context_name)
            .and_then(|c| c.context.clone())
            .ok_or_else(|| OverrideError::NoContext(context_name.clone()))?;
        let user = self.user.clone().or(context.user.clone());

        if let Some(cluster) = kc
            .clusters
            .iter_mut()
            .find(|c| c.name == context.cluster)
            .and_then(|c| c.cluster.as_mut())
        {
            if let Some(s) = &self.server {
                cluster.server = Some(s.clone());
            }
            if let Some(n) = &self.tls_server_name {
                cluster.tls_server_name = Some(n.clone());
            }
            if let Some(p) = &self.proxy_url {
                cluster.proxy_url = Some(p.clone());
            }
            if let Some(d) = self.disable_compression {
                cluster.disable_compression = Some(d);
            }
            // As client-go: a CA or "insecure" given on the command line replaces all three settings, so
            // the file's CA cannot conflict with an insecure override.
            let insecure = self.insecure_skip_tls_verify.unwrap_or(false);
            if insecure || self.certificate_authority.is_some() {
                cluster.insecure_skip_tls_verify = Some(insecure);
                cluster.certificate_authority = self.certificate_authority.clone();
                cluster.certificate_authority_data = None;
            }
        }
        if let Some(auth) = kc
            .auth_infos
            .iter_mut()
            .find(|a| Some(&a.name) == user.as_ref())
            .and_then(|a| a.auth_info.as_mut())
        {
            if let Some(t) = &self.token {
                auth.token = Some(t.clone().into());
            }
            if let Some(u) = &self.username {
                auth.username = Some(u.clone());
            }
            if let Some(p) = &self.password {
                auth.password = Some(p.clone().into());
            }
        }
        Ok(KubeConfigOptions {
            context: Some(context_name),
            cluster: None,
            user,
        })
    }
}
