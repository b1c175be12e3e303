//! Authentication: turning a request (and its TLS peer certificates) into a user.

pub mod bearer;
pub mod ca_bundle;
pub mod chain;
pub mod identity_headers;
pub mod request_header;
pub mod service_account;
pub mod token_file;
pub mod x509;

use std::collections::BTreeMap;

use rustls_pki_types::CertificateDer;

pub use ca_bundle::{CaBundle, CaBundleError};
pub use chain::{AuthenticatorChain, authenticate_chain, authenticate_chain_by};
pub use identity_headers::IdentityHeaders;
pub use request_header::{RequestHeaderAuthenticator, RequestHeaderError, RequestHeaderNames};
pub use service_account::{
    ServiceAccountAuthenticator, ServiceAccountError, ServiceAccountIdentity, ServiceAccountLookup,
    ServiceAccountTokens, TokenIssuer, TokenValidation,
};
pub use token_file::{TokenFileAuthenticator, TokenFileError};
pub use x509::{AUTHENTICATED_GROUP, X509Authenticator};

/// The identity of a caller, as Kubernetes' `user.Info`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// Whether the user is in `system:masters`, which every check lets through.
    pub fn is_system_masters(&self) -> bool {
        self.groups
            .iter()
            .any(|g| g == crate::authz::SYSTEM_MASTERS)
    }
}

/// The outcome of one authenticator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthnResult {
    /// The request carries a valid credential of this authenticator's kind.
    Authenticated(UserInfo),
    /// The request carries no credential this authenticator understands: ask the next one.
    NoCredential,
    /// The request carries a credential of this kind that is invalid: answer 401.
    Invalid(String),
}

/// One way of authenticating. `peer_certificates` are the client's certificate chain, leaf first (empty
/// when the client sent none). The TLS layer verified it against the union of every CA the server
/// trusts, so an authenticator that depends on *which* CA issued it checks the chain itself.
pub trait Authenticator: Send + Sync + 'static {
    fn authenticate(
        &self,
        parts: &http::request::Parts,
        peer_certificates: &[CertificateDer<'static>],
    ) -> AuthnResult;
}
