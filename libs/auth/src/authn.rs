//! Authentication: turning a request (and its TLS peer certificates) into a user.

pub mod chain;
pub mod x509;

use std::collections::BTreeMap;

use rustls_pki_types::CertificateDer;

pub use chain::{AuthenticatorChain, authenticate_chain};
pub use x509::{AUTHENTICATED_GROUP, X509Authenticator};

/// The identity of a caller, as Kubernetes' `user.Info`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
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

/// One way of authenticating. `peer_certificates` are the client certificates the TLS layer already
/// verified against the client CA (empty when the client sent none).
pub trait Authenticator: Send + Sync + 'static {
    fn authenticate(
        &self,
        parts: &http::request::Parts,
        peer_certificates: &[CertificateDer<'static>],
    ) -> AuthnResult;
}
