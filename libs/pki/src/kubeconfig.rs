//! `admin.kubeconfig`: how kubectl (and the e2e tests) reach this shard as an administrator.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::pki::{KCP_ADMIN_USER, Pki, PkiError, SHARD_ADMIN_USER};

pub const FILE_NAME: &str = "admin.kubeconfig";

/// The subset of client-go's `clientcmdapi.Config` (v1) that we write.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub struct Config {
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub kind: String,
    pub clusters: Vec<NamedCluster>,
    pub users: Vec<NamedUser>,
    pub contexts: Vec<NamedContext>,
    pub current_context: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NamedCluster {
    pub name: String,
    pub cluster: Cluster,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    pub server: String,
    pub certificate_authority_data: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NamedUser {
    pub name: String,
    pub user: User,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "kebab-case")]
pub struct User {
    pub client_certificate_data: String,
    pub client_key_data: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NamedContext {
    pub name: String,
    pub context: Context,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Context {
    pub cluster: String,
    pub user: String,
}

#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("serializing the kubeconfig: {0}")]
    Serialize(#[from] serde_saphyr::SerializeError),
    #[error(transparent)]
    Write(#[from] PkiError),
    #[error("{path}: {reason}")]
    Read { path: String, reason: String },
    #[error("{0}")]
    Context(String),
}

/// How one context of a kubeconfig reaches its server with a client certificate, as the
/// kubeconfigs kcp-rs writes do it (inline `*-data` fields).
#[derive(Clone)]
pub struct ClientEndpoint {
    /// `https://host:port`, without the context's path.
    pub server: String,
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

/// Reads a kubeconfig.
pub fn read(path: &Path) -> Result<Config, KubeconfigError> {
    let failed = |reason: String| KubeconfigError::Read {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
    serde_saphyr::from_str(&text).map_err(|e| failed(e.to_string()))
}

impl Config {
    /// Where `context` (the current context when `None`) leads and with which certificate.
    pub fn client_endpoint(
        &self,
        context: Option<&str>,
    ) -> Result<ClientEndpoint, KubeconfigError> {
        self.find_endpoint(context)
            .map_err(KubeconfigError::Context)
    }

    fn find_endpoint(&self, context: Option<&str>) -> Result<ClientEndpoint, String> {
        let wanted = context.unwrap_or(&self.current_context);
        let context = (self.contexts.iter().find(|c| c.name == wanted))
            .ok_or_else(|| format!("no context {wanted:?}"))?;
        let cluster = (self
            .clusters
            .iter()
            .find(|c| c.name == context.context.cluster))
        .ok_or_else(|| format!("no cluster {:?}", context.context.cluster))?;
        let user = (self.users.iter().find(|u| u.name == context.context.user))
            .ok_or_else(|| format!("no user {:?}", context.context.user))?;
        let decode = |what: &str, data: &str| {
            if data.trim().is_empty() {
                return Err(format!("{what} is empty: a client certificate is needed"));
            }
            let bytes = STANDARD
                .decode(data.trim())
                .map_err(|e| format!("{what}: {e}"))?;
            String::from_utf8(bytes).map_err(|e| format!("{what}: {e}"))
        };
        let server = &cluster.cluster.server;
        // The server alone: scheme and authority.
        let authority_end = (server.find("://").map(|i| i + 3))
            .and_then(|start| server[start..].find('/').map(|i| start + i))
            .unwrap_or(server.len());
        Ok(ClientEndpoint {
            server: server[..authority_end].to_string(),
            ca_pem: decode(
                "certificate-authority-data",
                &cluster.cluster.certificate_authority_data,
            )?,
            cert_pem: decode(
                "client-certificate-data",
                &user.user.client_certificate_data,
            )?,
            key_pem: decode("client-key-data", &user.user.client_key_data)?,
        })
    }
}

/// The admin kubeconfig for a shard reachable at `base_url` (`https://host:port`, no path).
///
/// Clusters: `root` (the root LC) and `base` (the bare server, for top-level and `/clusters/...` paths).
/// Contexts: `root` (current) and `base` as `kcp-admin`; `system:admin` as `shard-admin` in the
/// `system:admin` logical cluster, and `shard-base` as `shard-admin` on the bare server, as kcp
/// writes them.
pub fn build(base_url: &str, pki: &Pki) -> Config {
    let ca = STANDARD.encode(&pki.ca_cert_pem);
    let cluster = |name: &str, server: String| NamedCluster {
        name: name.to_string(),
        cluster: Cluster {
            server,
            certificate_authority_data: ca.clone(),
        },
    };
    let user = |name: &str, pair: &crate::pki::CertKey| NamedUser {
        name: name.to_string(),
        user: User {
            client_certificate_data: STANDARD.encode(&pair.cert_pem),
            client_key_data: STANDARD.encode(&pair.key_pem),
        },
    };
    let context = |name: &str, cluster: &str, user: &str| NamedContext {
        name: name.to_string(),
        context: Context {
            cluster: cluster.to_string(),
            user: user.to_string(),
        },
    };
    Config {
        api_version: "v1".to_string(),
        kind: "Config".to_string(),
        clusters: vec![
            cluster("root", format!("{base_url}/clusters/root")),
            cluster("base", base_url.to_string()),
            cluster("system:admin", format!("{base_url}/clusters/system:admin")),
        ],
        users: vec![
            user(KCP_ADMIN_USER, &pki.kcp_admin),
            user(SHARD_ADMIN_USER, &pki.shard_admin),
        ],
        contexts: vec![
            context("root", "root", KCP_ADMIN_USER),
            context("base", "base", KCP_ADMIN_USER),
            context("system:admin", "system:admin", SHARD_ADMIN_USER),
            context("shard-base", "base", SHARD_ADMIN_USER),
        ],
        current_context: "root".to_string(),
    }
}

/// Writes `config` to `path` atomically with mode 0600 (it holds private keys), so a reader polling for
/// the file never sees half of it.
pub fn write(path: &Path, config: &Config) -> Result<(), KubeconfigError> {
    // Plain scalars: the long base64 values would otherwise become folded blocks (`>-`), which are
    // valid YAML but surprise people and simpler tools reading the file.
    let options = serde_saphyr::ser_options! { prefer_block_scalars: false };
    let yaml = serde_saphyr::to_string_with_options(config, options)?;
    crate::pki::write_file(path, yaml.as_bytes(), 0o600)?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    #[test]
    fn client_endpoint_of_a_context() {
        let dir = tempfile::tempdir().unwrap();
        let pki = crate::pki::ensure(dir.path(), &[]).unwrap();
        let config = build("https://127.0.0.1:6443", &pki);
        let path = dir.path().join(FILE_NAME);
        write(&path, &config).unwrap();
        let config = read(&path).unwrap();
        let admin = config.client_endpoint(Some("shard-base")).unwrap();
        assert_eq!(admin.server, "https://127.0.0.1:6443");
        assert_eq!(admin.cert_pem, pki.shard_admin.cert_pem);
        assert_eq!(admin.key_pem, pki.shard_admin.key_pem);
        assert_eq!(admin.ca_pem, pki.ca_cert_pem);
        // The current context's path is not part of the server.
        let current = config.client_endpoint(None).unwrap();
        assert_eq!(current.server, "https://127.0.0.1:6443");
        assert_eq!(current.cert_pem, pki.kcp_admin.cert_pem);
        assert!(config.client_endpoint(Some("nope")).is_err());
    }

    #[test]
    fn round_trips_as_yaml() {
        let dir = tempfile::tempdir().unwrap();
        let pki = crate::pki::ensure(dir.path(), &[]).unwrap();
        let config = build("https://127.0.0.1:6443", &pki);
        let path = dir.path().join(FILE_NAME);
        write(&path, &config).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("current-context: root"), "{text}");
        assert!(text.contains("apiVersion: v1"), "{text}");
        assert!(!text.contains(">-"), "{text}");
        assert!(text.contains("certificate-authority-data:"), "{text}");
        let back: Config = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(back, config);
        assert_eq!(
            back.clusters[0].cluster.server,
            "https://127.0.0.1:6443/clusters/root"
        );
        // kcp's four contexts.
        let contexts: Vec<(&str, &str, &str)> = (back.contexts.iter())
            .map(|c| {
                (
                    c.name.as_str(),
                    c.context.cluster.as_str(),
                    c.context.user.as_str(),
                )
            })
            .collect();
        assert_eq!(
            contexts,
            [
                ("root", "root", KCP_ADMIN_USER),
                ("base", "base", KCP_ADMIN_USER),
                ("system:admin", "system:admin", SHARD_ADMIN_USER),
                ("shard-base", "base", SHARD_ADMIN_USER),
            ]
        );
    }
}
