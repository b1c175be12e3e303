//! The TLS side of client certificates: ask for one, prove the client holds its key, judge nothing else.
//!
//! kube-apiserver asks for a client certificate without verifying it in the handshake; its x509
//! authenticator verifies the chain per request, so a certificate that is expired, not yet valid or of
//! an unknown CA is a 401 `Unauthorized` the client can read (kubectl: "You must be logged in to the
//! server"), not a broken handshake, and a bearer token sent beside it still counts. Each of our
//! authenticators already checks the chain against its own CAs (`kcp_auth::authn::CaBundle`), so
//! the handshake only has to establish that the client owns the certificate's key.
//!
//! That proof reads the public key from the certificate with x509-parser rather than webpki, which
//! refuses X.509 v1 certificates; Kubernetes accepts them, and `openssl x509 -req` makes them.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};
use rustls_pki_types::{CertificateDer, SubjectPublicKeyInfoDer, UnixTime};
use x509_parser::prelude::{FromDer, X509Certificate};

/// Requests a client certificate (optional), hinting the trusted CAs' names, and accepts whichever
/// certificate comes as long as the handshake is signed with its key.
#[derive(Debug)]
pub struct DeferredClientAuth {
    hints: Vec<DistinguishedName>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl DeferredClientAuth {
    /// `hints`: the subjects of the CAs whose certificates authenticate (sent to the client so that it
    /// can pick a certificate); `algorithms`: the signature algorithms of the crypto provider.
    pub fn new(hints: Vec<DistinguishedName>, algorithms: WebPkiSupportedAlgorithms) -> Arc<Self> {
        Arc::new(DeferredClientAuth { hints, algorithms })
    }

    /// The algorithms that may verify a handshake signed with `scheme` (in preference order).
    fn algorithms_for(
        &self,
        scheme: SignatureScheme,
    ) -> Result<
        &'static [&'static dyn rustls_pki_types::SignatureVerificationAlgorithm],
        rustls::Error,
    > {
        self.algorithms
            .mapping
            .iter()
            .find(|(s, _)| *s == scheme)
            .map(|(_, algorithms)| *algorithms)
            .ok_or(rustls::Error::PeerMisbehaved(
                rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme,
            ))
    }
}

/// The certificate's SubjectPublicKeyInfo, as DER.
fn public_key_of<'a>(cert: &'a CertificateDer<'_>) -> Result<&'a [u8], rustls::Error> {
    let (_, parsed) = X509Certificate::from_der(cert.as_ref())
        .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
    Ok(parsed.tbs_certificate.subject_pki.raw)
}

fn bad_signature(_: webpki::Error) -> rustls::Error {
    rustls::Error::InvalidCertificate(CertificateError::BadSignature)
}

impl ClientCertVerifier for DeferredClientAuth {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // The authenticators judge the chain, per request (see the module documentation).
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let spki = SubjectPublicKeyInfoDer::from(public_key_of(cert)?);
        let key = webpki::RawPublicKeyEntity::try_from(&spki).map_err(bad_signature)?;
        // TLS 1.2 schemes do not name the curve, so every algorithm of the scheme is tried, as rustls does.
        for algorithm in self.algorithms_for(dss.scheme)? {
            match key.verify_signature(*algorithm, message, dss.signature()) {
                Ok(()) => return Ok(HandshakeSignatureValid::assertion()),
                Err(webpki::Error::UnsupportedSignatureAlgorithmForPublicKeyContext(_)) => {}
                Err(err) => return Err(bad_signature(err)),
            }
        }
        Err(rustls::Error::InvalidCertificate(
            CertificateError::BadSignature,
        ))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let spki = SubjectPublicKeyInfoDer::from(public_key_of(cert)?);
        rustls::crypto::verify_tls13_signature_with_raw_key(message, &spki, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
