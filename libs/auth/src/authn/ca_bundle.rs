//! A set of trusted CA certificates that one authenticator checks client certificate chains against.
//!
//! The TLS layer only proves that a client holds its certificate's key; it judges no chain (as
//! kube-apiserver's, so that a bad certificate is a 401, not a broken handshake). Each
//! authenticator that reads certificates therefore verifies the chain against its own bundle.

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};
use std::time::{Duration, Instant};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, TrustAnchor, UnixTime};
use sha2::{Digest, Sha256};
use webpki::{EndEntityCert, KeyUsage};
use x509_parser::oid_registry::{
    OID_PKCS1_RSASSAPSS, OID_PKCS1_SHA256WITHRSA, OID_PKCS1_SHA384WITHRSA, OID_PKCS1_SHA512WITHRSA,
    OID_SIG_ECDSA_WITH_SHA256, OID_SIG_ECDSA_WITH_SHA384, OID_SIG_ED25519,
};
use x509_parser::prelude::{FromDer, X509Certificate, X509Version};

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
    /// The CAs' certificates, for X.509 v1 leaves (see [`CaBundle::verify_v1`]).
    certificates: Vec<CertificateDer<'static>>,
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
            certificates: certs.iter().map(|c| c.clone().into_owned()).collect(),
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
        let cert = match EndEntityCert::try_from(leaf) {
            Ok(cert) => cert,
            Err(webpki::Error::UnsupportedCertVersion) => return self.verify_v1(leaf),
            Err(_) => return false,
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

    /// An X.509 v1 leaf, which webpki refuses but Go's verifier (so Kubernetes) accepts: `openssl x509
    /// -req` makes one unless told to add extensions. It has no extensions, so no key usage to check;
    /// it must be valid now and signed by one of the CAs itself (a v1 certificate cannot be an
    /// intermediate, and v1 leaves under intermediates are not served here).
    fn verify_v1(&self, leaf: &CertificateDer<'_>) -> bool {
        let Ok((_, leaf)) = X509Certificate::from_der(leaf.as_ref()) else {
            return false;
        };
        if leaf.version() != X509Version::V1 || !leaf.validity().is_valid() {
            return false;
        }
        // What webpki (and Go) accept for v3 chains: no SHA-1, which x509-parser would still check.
        let algorithm = &leaf.signature_algorithm.algorithm;
        if ![
            OID_PKCS1_SHA256WITHRSA,
            OID_PKCS1_SHA384WITHRSA,
            OID_PKCS1_SHA512WITHRSA,
            OID_PKCS1_RSASSAPSS,
            OID_SIG_ECDSA_WITH_SHA256,
            OID_SIG_ECDSA_WITH_SHA384,
            OID_SIG_ED25519,
        ]
        .contains(algorithm)
        {
            return false;
        }
        self.certificates.iter().any(|ca| {
            X509Certificate::from_der(ca.as_ref()).is_ok_and(|(_, ca)| {
                ca.subject().as_raw() == leaf.issuer().as_raw()
                    && leaf.verify_signature(Some(ca.public_key())).is_ok()
            })
        })
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

    /// Made with openssl 3.0 (`openssl x509 -req`, which writes X.509 v1): the CA `v1-test-ca`, then
    /// `jane` (O `dev`) valid until 2126, the same expired, and the same signed by another CA that is
    /// also named `v1-test-ca`.
    const V1_PEM: &str = include_str!("testdata/v1_client_certs.pem");

    #[test]
    fn x509_v1_leaves_signed_by_a_ca_verify() {
        let certs = CertificateDer::pem_slice_iter(V1_PEM.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let [ca, jane, expired, foreign] = &certs[..] else {
            panic!("four certificates expected, got {}", certs.len());
        };
        let bundle = CaBundle::from_der(std::slice::from_ref(ca)).unwrap();
        assert!(bundle.verifies(std::slice::from_ref(jane)));
        assert!(!bundle.verifies(std::slice::from_ref(expired)));
        // Same issuer name, another key: the signature decides.
        assert!(!bundle.verifies(std::slice::from_ref(foreign)));
        // A v3 leaf of another CA still fails as before.
        assert!(!bundle.verifies(&[TestCa::new("v1-test-ca").client("jane", None)]));
    }

    /// openssl 3.0 too: an RSA CA `v1-rsa-ca`, then `jane` as X.509 v1 signed with SHA-1, and the same
    /// signed with SHA-256.
    const V1_RSA_PEM: &str = include_str!("testdata/v1_rsa_sha1.pem");

    #[test]
    fn x509_v1_leaves_signed_with_sha1_do_not_verify() {
        let certs = CertificateDer::pem_slice_iter(V1_RSA_PEM.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let [ca, sha1, sha256] = &certs[..] else {
            panic!("three certificates expected, got {}", certs.len());
        };
        let bundle = CaBundle::from_der(std::slice::from_ref(ca)).unwrap();
        assert!(!bundle.verifies(std::slice::from_ref(sha1)));
        assert!(bundle.verifies(std::slice::from_ref(sha256)));
    }
}
