//! Client-certificate authentication, as Kubernetes' x509 authenticator: CN is the user, each O a group.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};

use rustls_pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::authn::{Authenticator, AuthnResult, CaBundle, UserInfo};

/// The group every authenticated identity is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// Authenticates by the client's TLS certificate, if its chain leads to one of this authenticator's
/// CAs (the shard's own CA and `--client-ca-file`). The TLS layer accepts any certificate whose key
/// the client holds (the request-header CA's name a proxy, not a user), so a chain of another CA is
/// no credential here.
///
/// Clients send the same certificate on every request, so the user read from a certificate is kept
/// (up to [`CACHE_CAPACITY`] certificates; the cache starts over when full) instead of parsing the DER
/// on every request.
#[derive(Debug)]
pub struct X509Authenticator {
    roots: CaBundle,
    cache: RwLock<HashMap<Box<[u8]>, UserInfo>>,
}

/// How many distinct client certificates the authenticator remembers.
pub const CACHE_CAPACITY: usize = 4096;

impl X509Authenticator {
    pub fn new(roots: CaBundle) -> Self {
        X509Authenticator {
            roots,
            cache: RwLock::default(),
        }
    }
}

impl Authenticator for X509Authenticator {
    fn authenticate(
        &self,
        _parts: &http::request::Parts,
        peer_certificates: &[CertificateDer<'static>],
    ) -> AuthnResult {
        let Some(leaf) = peer_certificates.first() else {
            return AuthnResult::NoCredential;
        };
        if !self.roots.verifies(peer_certificates) {
            return AuthnResult::NoCredential;
        }
        if let Some(user) = self
            .cache
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(leaf.as_ref())
        {
            return AuthnResult::Authenticated(user.clone());
        }
        let result = user_from_certificate(leaf);
        if let AuthnResult::Authenticated(user) = &result {
            let mut cache = self.cache.write().unwrap_or_else(PoisonError::into_inner);
            if cache.len() >= CACHE_CAPACITY {
                cache.clear();
            }
            cache.insert(leaf.as_ref().into(), user.clone());
        }
        result
    }
}

/// Maps a (verified) certificate to a user: CN → name, every O → a group, plus `system:authenticated`.
pub fn user_from_certificate(cert: &CertificateDer<'_>) -> AuthnResult {
    let cert = match X509Certificate::from_der(cert.as_ref()) {
        Ok((_, cert)) => cert,
        Err(err) => return AuthnResult::Invalid(format!("unparsable client certificate: {err}")),
    };
    let subject = cert.subject();
    // Go's subject keeps the last CN, which Kubernetes takes; a certificate without one names
    // nobody, and another credential of the request may still count.
    let name = match subject.iter_common_name().last().map(|cn| cn.as_str()) {
        Some(Ok(name)) if !name.is_empty() => name.to_string(),
        Some(Err(err)) => {
            return AuthnResult::Invalid(format!("client certificate common name: {err}"));
        }
        _ => return AuthnResult::NoCredential,
    };
    let mut groups = Vec::new();
    for org in subject.iter_organization() {
        match org.as_str() {
            Ok(group) if !group.is_empty() => groups.push(group.to_string()),
            Ok(_) => {}
            Err(err) => {
                return AuthnResult::Invalid(format!("client certificate organization: {err}"));
            }
        }
    }
    if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
        groups.push(AUTHENTICATED_GROUP.to_string());
    }
    AuthnResult::Authenticated(UserInfo {
        name,
        groups,
        ..UserInfo::default()
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use rcgen::{CertificateParams, DnType, KeyPair};

    use super::*;
    use crate::authn::ca_bundle::test_pki::TestCa;

    /// A self-signed certificate, for reading subjects without a CA in the way.
    fn cert(cn: Option<&str>, orgs: &[&str]) -> CertificateDer<'static> {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(cn) = cn {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        // rcgen keeps one value per attribute type, so a second O goes in under O's raw OID
        // (2.5.4.10), which encodes to the same attribute type as the first.
        assert!(
            orgs.len() <= 2,
            "the test helper supports two organizations"
        );
        for (i, org) in orgs.iter().enumerate() {
            let ty = if i == 0 {
                DnType::OrganizationName
            } else {
                DnType::CustomDnType(vec![2, 5, 4, 10])
            };
            params.distinguished_name.push(ty, *org);
        }
        params.self_signed(&key).unwrap().der().clone()
    }

    fn parts() -> http::request::Parts {
        http::Request::new(()).into_parts().0
    }

    fn authenticator(ca: &TestCa) -> X509Authenticator {
        X509Authenticator::new(CaBundle::from_pem(ca.pem.as_bytes()).unwrap())
    }

    #[test]
    fn cn_is_user_and_orgs_are_groups() {
        let result = user_from_certificate(&cert(Some("alice"), &["system:kcp:admin", "team-a"]));
        assert_eq!(
            result,
            AuthnResult::Authenticated(UserInfo {
                name: "alice".into(),
                groups: vec![
                    "system:kcp:admin".into(),
                    "team-a".into(),
                    AUTHENTICATED_GROUP.into()
                ],
                ..UserInfo::default()
            })
        );
    }

    #[test]
    fn no_orgs_still_authenticated() {
        let ca = TestCa::new("ca");
        let AuthnResult::Authenticated(user) =
            authenticator(&ca).authenticate(&parts(), &[ca.client("bob", None)])
        else {
            panic!("expected a user");
        };
        assert_eq!(user.name, "bob");
        assert_eq!(user.groups, vec![AUTHENTICATED_GROUP.to_string()]);
    }

    #[test]
    fn no_certificate_is_no_credential() {
        let ca = TestCa::new("ca");
        assert_eq!(
            authenticator(&ca).authenticate(&parts(), &[]),
            AuthnResult::NoCredential
        );
    }

    #[test]
    fn a_certificate_of_another_ca_is_no_credential() {
        // The request-header CA's proxy certificates pass the TLS layer like any; they name no user here.
        let ca = TestCa::new("client-ca");
        let proxy_ca = TestCa::new("requestheader-ca");
        assert_eq!(
            authenticator(&ca).authenticate(&parts(), &[proxy_ca.client("front-proxy", None)]),
            AuthnResult::NoCredential
        );
        assert_eq!(
            authenticator(&ca).authenticate(&parts(), &[cert(Some("self-signed"), &[])]),
            AuthnResult::NoCredential
        );
    }

    #[test]
    fn missing_cn_is_no_credential() {
        let result = user_from_certificate(&cert(None, &["g"]));
        assert_eq!(result, AuthnResult::NoCredential);
    }

    #[test]
    fn the_last_cn_names_the_user() {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, "first");
        params.distinguished_name.push(DnType::CommonName, "last");
        let cert = params.self_signed(&key).unwrap().der().clone();
        let result = user_from_certificate(&cert);
        assert!(
            matches!(result, AuthnResult::Authenticated(ref u) if u.name == "last"),
            "{result:?}"
        );
    }

    #[test]
    fn garbage_is_invalid() {
        let result = user_from_certificate(&CertificateDer::from(vec![1u8, 2, 3]));
        assert!(matches!(result, AuthnResult::Invalid(_)), "{result:?}");
    }

    #[test]
    fn a_certificate_is_read_once_and_remembered() {
        let ca = TestCa::new("ca");
        let authn = authenticator(&ca);
        let c = ca.client("carol", Some("team"));
        let first = authn.authenticate(&parts(), std::slice::from_ref(&c));
        let second = authn.authenticate(&parts(), std::slice::from_ref(&c));
        assert_eq!(first, second);
        assert!(matches!(second, AuthnResult::Authenticated(ref u) if u.name == "carol"));
        assert_eq!(authn.cache.read().unwrap().len(), 1);
    }
}
