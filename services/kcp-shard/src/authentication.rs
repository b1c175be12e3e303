//! Who a request comes from: the authentication flags, as kube-apiserver names them, and the
//! authenticators built from them. The shard and the virtual-workspace server share both, so a
//! credential that works on one works on the other.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use kcp_auth::authn::request_header::{
    DEFAULT_EXTRA_HEADERS_PREFIX, DEFAULT_GROUP_HEADER, DEFAULT_USERNAME_HEADER, RequestHeaderNames,
};
use kcp_auth::authn::service_account::DEFAULT_ISSUER;
use kcp_auth::{
    Authenticator, CaBundle, IdentityHeaders, RequestHeaderAuthenticator,
    ServiceAccountAuthenticator, ServiceAccountTokens, TokenFileAuthenticator, TokenIssuer,
    X509Authenticator,
};

use crate::service_accounts::StoredServiceAccounts;

#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct AuthenticationOptions {
    /// PEM bundle of CAs whose client certificates authenticate users (CN = user, O = groups), in
    /// addition to the shard's own CA.
    #[arg(long, value_name = "FILE")]
    pub client_ca_file: Option<PathBuf>,

    /// Static bearer tokens, in Kubernetes' CSV format: token,user,uid[,"group1,group2"].
    #[arg(long, value_name = "FILE")]
    pub token_auth_file: Option<PathBuf>,

    /// PEM bundle of CAs whose client certificates may assert identities in request headers (a front
    /// proxy). Unless --client-ca-file also names the CA, its certificates authenticate no one by
    /// themselves.
    #[arg(long, value_name = "FILE")]
    pub requestheader_client_ca_file: Option<PathBuf>,

    /// Common names a request-header client certificate may have. Empty: any the CA signed.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub requestheader_allowed_names: Vec<String>,

    /// Request headers naming the user; the first one present wins.
    #[arg(long, value_delimiter = ',', value_name = "HEADERS", default_value = DEFAULT_USERNAME_HEADER)]
    pub requestheader_username_headers: Vec<String>,

    /// Request headers listing groups; every value of each is a group.
    #[arg(long, value_delimiter = ',', value_name = "HEADERS", default_value = DEFAULT_GROUP_HEADER)]
    pub requestheader_group_headers: Vec<String>,

    /// Prefixes of request headers carrying user extras (the rest of the name, percent-decoded, is the
    /// key).
    #[arg(long, value_delimiter = ',', value_name = "PREFIXES", default_value = DEFAULT_EXTRA_HEADERS_PREFIX)]
    pub requestheader_extra_headers_prefix: Vec<String>,

    /// The `iss` of the ServiceAccount tokens this shard signs and accepts (also their audience).
    #[arg(long, default_value = DEFAULT_ISSUER, value_name = "URL")]
    pub service_account_issuer: String,
}

/// The ServiceAccount keys a server has: the shard signs tokens and checks them; the
/// virtual-workspace server only checks them.
pub enum ServiceAccountKeys<'a> {
    Signing(&'a kcp_pki::pki::ServiceAccountKey),
    /// Public keys (PEM).
    Verifying(Vec<String>),
}

/// A server's authenticators and what the TLS layer must know for them.
pub struct Authentication {
    /// In kube-apiserver's order: request headers from a trusted proxy, client certificates, static
    /// tokens, ServiceAccount JWTs. The proxy comes before the plain certificate so that a proxy whose
    /// certificate the client CA also signed still asserts the user it forwards.
    pub authenticators: Vec<Arc<dyn Authenticator>>,
    /// Every CA a client certificate may come from (PEM): the TLS layer names them to clients (which
    /// pick a certificate by them); each certificate authenticator checks the chain against its own.
    pub tls_client_cas: String,
    /// The issuer, when the server signs tokens.
    pub service_account_tokens: Option<ServiceAccountTokens>,
    pub service_accounts: Arc<StoredServiceAccounts>,
    /// Stripped from every request after authentication, whether or not a proxy is configured.
    pub identity_headers: IdentityHeaders,
}

impl Authentication {
    /// `own_ca_pem` signs the certificates of the server's own users (its admin kubeconfig).
    pub fn build(
        options: &AuthenticationOptions,
        own_ca_pem: &str,
        keys: ServiceAccountKeys<'_>,
    ) -> anyhow::Result<Authentication> {
        let read = |path: &PathBuf| {
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
        };
        let mut authenticators: Vec<Arc<dyn Authenticator>> = Vec::new();

        let mut client_cas = own_ca_pem.to_string();
        if let Some(path) = &options.client_ca_file {
            client_cas.push('\n');
            client_cas.push_str(&read(path)?);
        }
        let mut tls_client_cas = client_cas.clone();

        let names = RequestHeaderNames {
            username_headers: options.requestheader_username_headers.clone(),
            group_headers: options.requestheader_group_headers.clone(),
            extra_headers_prefixes: options.requestheader_extra_headers_prefix.clone(),
        };
        let identity_headers =
            IdentityHeaders::new(&names).context("--requestheader-* header names")?;
        if let Some(path) = &options.requestheader_client_ca_file {
            let pem = read(path)?;
            let ca = CaBundle::from_pem(pem.as_bytes())
                .with_context(|| format!("--requestheader-client-ca-file {}", path.display()))?;
            authenticators.push(Arc::new(
                RequestHeaderAuthenticator::new(
                    ca,
                    options.requestheader_allowed_names.clone(),
                    names,
                )
                .context("--requestheader-* flags")?,
            ));
            tls_client_cas.push('\n');
            tls_client_cas.push_str(&pem);
        }

        let x509_roots = CaBundle::from_pem(client_cas.as_bytes()).context("client CAs")?;
        authenticators.push(Arc::new(X509Authenticator::new(x509_roots)));

        if let Some(path) = &options.token_auth_file {
            let tokens = TokenFileAuthenticator::from_file(path)
                .with_context(|| format!("--token-auth-file {}", path.display()))?;
            tracing::info!(tokens = tokens.len(), file = %path.display(), "static tokens loaded");
            authenticators.push(Arc::new(tokens));
        }

        let issuer_name = &options.service_account_issuer;
        let (issuer, public_keys) = match keys {
            ServiceAccountKeys::Signing(key) => {
                let issuer = TokenIssuer::new(
                    issuer_name.clone(),
                    key.private_pem.as_bytes(),
                    key.public_pem.as_bytes(),
                )
                .context("ServiceAccount token issuer")?;
                (Some(Arc::new(issuer)), vec![key.public_pem.clone()])
            }
            ServiceAccountKeys::Verifying(keys) => (None, keys),
        };
        let public_keys: Vec<&[u8]> = public_keys.iter().map(|k| k.as_bytes()).collect();
        let service_accounts = Arc::new(StoredServiceAccounts::default());
        // Without a key no ServiceAccount token can be checked, so none is accepted.
        let sa_authenticator = if public_keys.is_empty() {
            None
        } else {
            Some(Arc::new(
                ServiceAccountAuthenticator::new(
                    issuer_name.clone(),
                    &[],
                    &public_keys,
                    service_accounts.clone(),
                )
                .context("ServiceAccount token authenticator")?,
            ))
        };
        if let Some(sa) = &sa_authenticator {
            authenticators.push(sa.clone());
        }

        Ok(Authentication {
            authenticators,
            tls_client_cas,
            service_account_tokens: (issuer.zip(sa_authenticator)).map(
                |(issuer, authenticator)| ServiceAccountTokens {
                    issuer,
                    authenticator,
                },
            ),
            service_accounts,
            identity_headers,
        })
    }
}
