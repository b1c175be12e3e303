//! Authenticating a request, and what the request looks like afterwards: the identity headers a
//! front proxy asserts are gone (whether the proxy sent them or someone forged them), so the rest of
//! the chain only knows the caller by its [`UserInfo`].

use std::sync::Arc;

use kcp_apimachinery::status::ApiError;
use kcp_auth::authn::authenticate_chain_by;
use kcp_auth::{Authenticator, AuthnResult, IdentityHeaders, UserInfo};
use rustls_pki_types::CertificateDer;

/// Asks `authenticators` in order (the first that recognises a credential decides), then strips
/// the identity headers from `parts`. No credential, or an invalid one, is a 401. The user comes with
/// the authenticator that recognised it.
pub fn authenticate<'a>(
    authenticators: &'a [Arc<dyn Authenticator>],
    identity_headers: &IdentityHeaders,
    parts: &mut http::request::Parts,
    peer_certificates: &[CertificateDer<'static>],
) -> Result<(UserInfo, &'a Arc<dyn Authenticator>), ApiError> {
    let outcome = match authenticate_chain_by(authenticators, parts, peer_certificates) {
        (AuthnResult::Authenticated(user), Some(by)) => Ok((user, by)),
        (AuthnResult::Invalid(reason), _) => {
            tracing::debug!(%reason, "authentication failed");
            Err(ApiError::unauthorized())
        }
        _ => Err(ApiError::unauthorized()),
    };
    identity_headers.strip(&mut parts.headers);
    outcome
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    /// A stand-in for the request-header authenticator trusting its caller (`trusted`) or not.
    struct Proxy {
        trusted: bool,
    }

    impl Authenticator for Proxy {
        fn authenticate(
            &self,
            parts: &http::request::Parts,
            _: &[CertificateDer<'static>],
        ) -> AuthnResult {
            match parts.headers.get("x-remote-user") {
                Some(name) if self.trusted => AuthnResult::Authenticated(UserInfo {
                    name: name.to_str().unwrap().to_string(),
                    ..UserInfo::default()
                }),
                _ => AuthnResult::NoCredential,
            }
        }
    }

    struct Certificate(&'static str);

    impl Authenticator for Certificate {
        fn authenticate(
            &self,
            _: &http::request::Parts,
            _: &[CertificateDer<'static>],
        ) -> AuthnResult {
            AuthnResult::Authenticated(UserInfo {
                name: self.0.to_string(),
                ..UserInfo::default()
            })
        }
    }

    fn forged() -> http::request::Parts {
        http::Request::builder()
            .header("X-Remote-User", "mallory")
            .header("X-Remote-Group", "system:masters")
            .header("X-Remote-Extra-Authentication.kcp.io%2Fscopes", "cluster:x")
            .header("Impersonate-User", "bob")
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    fn identity_header_names(parts: &http::request::Parts) -> Vec<&str> {
        parts
            .headers
            .keys()
            .map(http::HeaderName::as_str)
            .filter(|n| n.starts_with("x-remote-"))
            .collect()
    }

    #[test]
    fn forged_identity_headers_neither_authenticate_nor_survive() {
        let chain: Vec<Arc<dyn Authenticator>> = vec![
            Arc::new(Proxy { trusted: false }),
            Arc::new(Certificate("eve")),
        ];
        let mut parts = forged();
        let (user, _) = authenticate(&chain, &IdentityHeaders::default(), &mut parts, &[]).unwrap();
        assert_eq!(user.name, "eve");
        assert!(
            identity_header_names(&parts).is_empty(),
            "{:?}",
            parts.headers
        );
        // Headers that are not identity assertions stay for the handlers.
        assert!(parts.headers.contains_key("impersonate-user"));
    }

    #[test]
    fn a_trusted_proxys_headers_are_consumed() {
        let chain: Vec<Arc<dyn Authenticator>> = vec![Arc::new(Proxy { trusted: true })];
        let mut parts = forged();
        let (user, _) = authenticate(&chain, &IdentityHeaders::default(), &mut parts, &[]).unwrap();
        assert_eq!(user.name, "mallory");
        assert!(identity_header_names(&parts).is_empty());
    }

    #[test]
    fn no_credential_is_unauthorized_and_still_stripped() {
        let chain: Vec<Arc<dyn Authenticator>> = vec![Arc::new(Proxy { trusted: false })];
        let mut parts = forged();
        let Err(err) = authenticate(&chain, &IdentityHeaders::default(), &mut parts, &[]) else {
            panic!("authenticated without a credential");
        };
        assert_eq!(err.code, 401);
        assert!(identity_header_names(&parts).is_empty());
    }
}
