//! A set of trusted CA certificates that one authenticator checks client certificate chains against.
//!
//! The TLS layer accepts certificates of every CA the server trusts (client CA and request-header CA
//! alike), so "the handshake succeeded" does not say *which* CA issued a certificate. Each authenticator
//! that cares therefore verifies the chain against its own bundle.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};
use std::time::{Duration, Instant};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, TrustAnchor, UnixTime};
use sha2::{Digest, Sha256};
use webpki::{EndEntityCert, KeyUsage};

/// How long a verdict on a chain is reused. Short, so a certificate expiring mid-connection stops
/// authenticating soon after; long enough that a busy connection is not re-verified per request.
const VERDICT_TTL: Duration = Duration::from_secs(60);
/// How many chains' verdicts are remembered; the memory starts over when full.
const VERDICT_CAPACITY: usize = 4096;

#[derive(Debug, thiserror::Error)]
pub enum CaBundleError {
    #[error("reading CA PEM: {0}")]
    Pem(#[from] rustls_pki_types::pem::Error),
    #[error("no CA certificate found")]
    Empty,
    #[error("unusable CA certificate: {0}")]
    Anchor(webpki::Error),
}

/// Trusted CAs for client certificates, with a small memory of recent verdicts.
#[derive(Debug)]
pub struct CaBundle {
    anchors: Vec<TrustAnchor<'static>>,
    verdicts: RwLock<HashMap<[u8; 32], (bool, Instant)>>,
}

impl CaBundle {
    /// Every certificate in `pem` (one or more concatenated PEM blocks) becomes a trust anchor.
    pub fn from_pem(pem: &[u8]) -> Result<CaBundle, CaBundleError> {
        let certs = CertificateDer::pem_slice_iter(pem).collect::<Result<Vec<_>, _>>()?;
        CaBundle::from_der(&certs)
    }

    pub fn from_der(certs: &[CertificateDer<'_>]) -> Result<CaBundle, CaBundleError> {
        if certs.is_empty() {
            return Err(CaBundleError::Empty);
        }
        let anchors = certs
            .iter()
            .map(|der| {
                webpki::anchor_from_trusted_cert(der)
                    .map(|a| a.to_owned())
                    .map_err(CaBundleError::Anchor)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(CaBundle {
            anchors,
            verdicts: RwLock::default(),
        })
    }

    /// Whether `chain` (leaf first, then intermediates) leads to one of these CAs and the leaf may be
    /// used for client authentication now.
    pub fn verifies(&self, chain: &[CertificateDer<'_>]) -> bool {
        let Some(leaf) = chain.first() else {
            return false;
        };
        let key = chain_digest(chain);
        let now = Instant::now();
        if let Some((verdict, at)) = self
            .verdicts
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            && now.duration_since(*at) < VERDICT_TTL
        {
            return *verdict;
        }
        let verdict = self.verify_now(leaf, &chain[1..]);
        let mut verdicts = self
            .verdicts
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if verdicts.len() >= VERDICT_CAPACITY {
            verdicts.clear();
        }
        verdicts.insert(key, (verdict, now));
        verdict
    }

    fn verify_now(&self, leaf: &CertificateDer<'_>, intermediates: &[CertificateDer<'_>]) -> bool {
        let Ok(cert) = EndEntityCert::try_from(leaf) else {
            return false;
        };
        cert.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &self.anchors,
            intermediates,
            UnixTime::now(),
            KeyUsage::client_auth(),
            None,
            None,
        )
        .is_ok()
    }
}

/// Intermediates are part of the key: the same leaf sent with another chain may verify differently.
fn chain_digest(chain: &[CertificateDer<'_>]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for cert in chain {
        hash.update((cert.len() as u64).to_be_bytes());
        hash.update(cert.as_ref());
    }
    hash.finalize().into()
}

#[cfg(test)]
pub(crate) mod test_pki {
    //! Test CAs and certificates.
    #![allow(clippy::unwrap_used)]

    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
    };
    use rustls_pki_types::CertificateDer;

    pub struct TestCa {
        pub pem: String,
        issuer: Issuer<'static, KeyPair>,
    }

    impl TestCa {
        pub fn new(name: &str) -> TestCa {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::default();
            params.distinguished_name = DistinguishedName::new();
            params.distinguished_name.push(DnType::CommonName, name);
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            let cert = params.self_signed(&key).unwrap();
            TestCa {
                pem: cert.pem(),
                issuer: Issuer::new(params, key),
            }
        }

        /// A CA signed by this one, and its certificate.
        pub fn intermediate(&self, name: &str) -> (TestCa, CertificateDer<'static>) {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::default();
            params.distinguished_name = DistinguishedName::new();
            params.distinguished_name.push(DnType::CommonName, name);
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            let cert = params.signed_by(&key, &self.issuer).unwrap();
            let der = cert.der().clone();
            let ca = TestCa {
                pem: cert.pem(),
                issuer: Issuer::new(params, key),
            };
            (ca, der)
        }

        /// A client certificate with subject CN `cn` and (at most one) O.
        pub fn client(&self, cn: &str, org: Option<&str>) -> CertificateDer<'static> {
            let key = KeyPair::generate().unwrap();
            let mut params = CertificateParams::default();
            params.distinguished_name = DistinguishedName::new();
            params.distinguished_name.push(DnType::CommonName, cn);
            if let Some(org) = org {
                params
                    .distinguished_name
                    .push(DnType::OrganizationName, org);
            }
            params.signed_by(&key, &self.issuer).unwrap().der().clone()
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::test_pki::TestCa;
    use super::*;

    #[test]
    fn verifies_only_chains_of_its_own_cas() {
        let ours = TestCa::new("ours");
        let theirs = TestCa::new("theirs");
        let bundle = CaBundle::from_pem(ours.pem.as_bytes()).unwrap();
        assert!(bundle.verifies(&[ours.client("a", None)]));
        assert!(!bundle.verifies(&[theirs.client("a", None)]));
        assert!(!bundle.verifies(&[]));
        assert!(!bundle.verifies(&[CertificateDer::from(vec![1u8, 2, 3])]));
        // Asked again: the remembered verdicts agree.
        assert!(!bundle.verifies(&[theirs.client("a", None)]));
    }

    #[test]
    fn intermediates_sent_by_the_client_complete_the_chain() {
        let root = TestCa::new("root");
        let (intermediate, intermediate_der) = root.intermediate("intermediate");
        let bundle = CaBundle::from_pem(root.pem.as_bytes()).unwrap();
        let leaf = intermediate.client("a", None);
        assert!(bundle.verifies(&[leaf.clone(), intermediate_der]));
        assert!(!bundle.verifies(&[leaf]));
    }

    #[test]
    fn several_cas_in_one_pem() {
        let a = TestCa::new("a");
        let b = TestCa::new("b");
        let bundle = CaBundle::from_pem(format!("{}{}", a.pem, b.pem).as_bytes()).unwrap();
        assert!(bundle.verifies(&[a.client("x", None)]));
        assert!(bundle.verifies(&[b.client("x", None)]));
    }

    #[test]
    fn empty_pem_is_an_error() {
        assert!(matches!(CaBundle::from_pem(b""), Err(CaBundleError::Empty)));
    }
}
