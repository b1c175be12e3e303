//! Asking several authenticators in turn.

use std::sync::Arc;

use rustls_pki_types::CertificateDer;

use crate::authn::{Authenticator, AuthnResult};

/// Runs `authenticators` in order: the first that recognises a credential (valid or not) decides; if
/// none does, the result is [`AuthnResult::NoCredential`] (the caller treats that as anonymous or 401).
pub fn authenticate_chain(
    authenticators: &[Arc<dyn Authenticator>],
    parts: &http::request::Parts,
    peer_certificates: &[CertificateDer<'static>],
) -> AuthnResult {
    authenticate_chain_by(authenticators, parts, peer_certificates).0
}

/// [`authenticate_chain`], also naming the authenticator that decided (`None` when none did).
pub fn authenticate_chain_by<'a>(
    authenticators: &'a [Arc<dyn Authenticator>],
    parts: &http::request::Parts,
    peer_certificates: &[CertificateDer<'static>],
) -> (AuthnResult, Option<&'a Arc<dyn Authenticator>>) {
    for authenticator in authenticators {
        match authenticator.authenticate(parts, peer_certificates) {
            AuthnResult::NoCredential => continue,
            decided => return (decided, Some(authenticator)),
        }
    }
    (AuthnResult::NoCredential, None)
}

/// A list of authenticators that is itself an [`Authenticator`], so chains can nest.
#[derive(Clone, Default)]
pub struct AuthenticatorChain {
    authenticators: Vec<Arc<dyn Authenticator>>,
}

impl AuthenticatorChain {
    pub fn new(authenticators: Vec<Arc<dyn Authenticator>>) -> Self {
        AuthenticatorChain { authenticators }
    }
}

impl Authenticator for AuthenticatorChain {
    fn authenticate(
        &self,
        parts: &http::request::Parts,
        peer_certificates: &[CertificateDer<'static>],
    ) -> AuthnResult {
        authenticate_chain(&self.authenticators, parts, peer_certificates)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use crate::authn::UserInfo;

    struct Fixed(AuthnResult);
    impl Authenticator for Fixed {
        fn authenticate(
            &self,
            _: &http::request::Parts,
            _: &[CertificateDer<'static>],
        ) -> AuthnResult {
            self.0.clone()
        }
    }

    fn user(name: &str) -> AuthnResult {
        AuthnResult::Authenticated(UserInfo {
            name: name.into(),
            ..UserInfo::default()
        })
    }

    fn run(results: Vec<AuthnResult>) -> AuthnResult {
        let chain: Vec<Arc<dyn Authenticator>> = results
            .into_iter()
            .map(|r| Arc::new(Fixed(r)) as Arc<dyn Authenticator>)
            .collect();
        let parts = http::Request::new(()).into_parts().0;
        AuthenticatorChain::new(chain).authenticate(&parts, &[])
    }

    #[test]
    fn first_recognised_credential_wins() {
        assert_eq!(
            run(vec![AuthnResult::NoCredential, user("a"), user("b")]),
            user("a")
        );
        assert_eq!(
            run(vec![AuthnResult::Invalid("bad".into()), user("b")]),
            AuthnResult::Invalid("bad".into())
        );
    }

    #[test]
    fn empty_or_all_unrecognised_is_no_credential() {
        assert_eq!(run(vec![]), AuthnResult::NoCredential);
        assert_eq!(
            run(vec![AuthnResult::NoCredential, AuthnResult::NoCredential]),
            AuthnResult::NoCredential
        );
    }
}
