//! ServiceAccount tokens: bound JWTs as Kubernetes issues them (`iss`, `sub`, `aud`, `exp`, `iat`,
//! `nbf`, `jti` and the private `kubernetes.io` claim), plus kcp's `clusterName` inside that claim,
//! because a ServiceAccount lives in one logical cluster and its token must say which.
//!
//! [`TokenIssuer`] signs tokens with the shard's ES256 key; [`ServiceAccountAuthenticator`] checks
//! them: signature, issuer, audience, time, and that the ServiceAccount still exists with the uid the
//! token names (a deleted and re-created account does not inherit its predecessor's tokens).

mod authenticator;
mod claims;
mod issuer;

use std::collections::BTreeMap;
use std::sync::Arc;

pub use authenticator::{ServiceAccountAuthenticator, TokenValidation};
pub use claims::{Claims, KubernetesClaims, ObjectRef};
pub use issuer::{IssuedToken, TokenIssuer};

use crate::authn::{AUTHENTICATED_GROUP, UserInfo};

/// kcp's default `--service-account-issuer`.
pub const DEFAULT_ISSUER: &str = "https://kcp.default.svc";
/// The extra key kcp records a ServiceAccount's logical cluster under.
pub const CLUSTER_NAME_EXTRA: &str = "authentication.kcp.io/cluster-name";
/// The extra key that limits an identity to some logical clusters (`cluster:<name>` values).
pub const SCOPES_EXTRA: &str = "authentication.kcp.io/scopes";
/// Kubernetes' extra key naming the credential (`JTI=<token id>`), for audit.
pub const CREDENTIAL_ID_EXTRA: &str = "authentication.kubernetes.io/credential-id";
/// Every ServiceAccount is in this group, and in `system:serviceaccounts:<namespace>`.
pub const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The user name prefix of ServiceAccounts: `system:serviceaccount:<namespace>:<name>`.
pub const USERNAME_PREFIX: &str = "system:serviceaccount:";

/// Answers whether a ServiceAccount exists now, and with which uid. The caller backs it with its
/// storage; an account being deleted should answer `None`.
pub trait ServiceAccountLookup: Send + Sync + 'static {
    fn uid(&self, cluster: &str, namespace: &str, name: &str) -> Option<String>;
}

#[derive(Debug, thiserror::Error)]
pub enum ServiceAccountError {
    #[error("service account key: {0}")]
    Key(#[source] jsonwebtoken::errors::Error),
    #[error("service account public key PEM: {0}")]
    PublicKeyPem(#[from] rustls_pki_types::pem::Error),
    #[error("no service account verification key")]
    NoKey,
    #[error("signing a service account token: {0}")]
    Sign(#[source] jsonwebtoken::errors::Error),
    #[error("invalid token request: {0}")]
    Request(&'static str),
}

/// A server's ServiceAccount tokens: the issuer (for the TokenRequest API) and the authenticator that
/// accepts what it issues.
#[derive(Clone, Debug)]
pub struct ServiceAccountTokens {
    pub issuer: Arc<TokenIssuer>,
    pub authenticator: Arc<ServiceAccountAuthenticator>,
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn username(namespace: &str, name: &str) -> String {
    format!("{USERNAME_PREFIX}{namespace}:{name}")
}

/// The groups of a ServiceAccount in `namespace`, but `system:authenticated`:
/// `system:serviceaccounts` and `system:serviceaccounts:<namespace>`.
pub fn groups(namespace: &str) -> Vec<String> {
    vec![
        SERVICE_ACCOUNTS_GROUP.to_string(),
        format!("{SERVICE_ACCOUNTS_GROUP}:{namespace}"),
    ]
}

/// Who a valid token speaks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceAccountIdentity {
    /// The logical cluster the ServiceAccount lives in.
    pub cluster: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// The token's `jti`.
    pub token_id: String,
    /// The token's audiences that were asked for (Kubernetes' `status.audiences` of a TokenReview).
    pub audiences: Vec<String>,
}

impl ServiceAccountIdentity {
    /// The user Kubernetes makes of a ServiceAccount, with kcp's extras naming its logical cluster.
    pub fn user_info(&self) -> UserInfo {
        let mut extra = BTreeMap::new();
        extra.insert(CLUSTER_NAME_EXTRA.to_string(), vec![self.cluster.clone()]);
        extra.insert(
            SCOPES_EXTRA.to_string(),
            vec![format!("cluster:{}", self.cluster)],
        );
        if !self.token_id.is_empty() {
            extra.insert(
                CREDENTIAL_ID_EXTRA.to_string(),
                vec![format!("JTI={}", self.token_id)],
            );
        }
        let mut groups = groups(&self.namespace);
        groups.push(AUTHENTICATED_GROUP.to_string());
        UserInfo {
            name: username(&self.namespace, &self.name),
            uid: self.uid.clone(),
            groups,
            extra,
        }
    }
}
