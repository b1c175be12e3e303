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

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use std::sync::Arc;

    use rcgen::{CertificateParams, KeyPair};
    use rustls::client::ResolvesClientCert;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{PrivateKeyDer, ServerName};
    use rustls::sign::CertifiedKey;
    use rustls::{ClientConfig, RootCertStore, ServerConfig, SignatureScheme};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// An openssl-made X.509 v1 certificate (CN v1-client) and its PKCS#8 key.
    const V1_PEM: &str = include_str!("testdata/v1_client_and_key.pem");

    /// Presents `certified` whatever the server asks: a client that may lie about its key.
    #[derive(Debug)]
    struct Presenting(Arc<CertifiedKey>);

    impl ResolvesClientCert for Presenting {
        fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
            Some(self.0.clone())
        }

        fn has_certs(&self) -> bool {
            true
        }
    }

    fn provider() -> Arc<rustls::crypto::CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    fn signing_key(key_der: &[u8]) -> Arc<dyn rustls::sign::SigningKey> {
        let key = PrivateKeyDer::try_from(key_der.to_vec()).unwrap();
        provider().key_provider.load_private_key(key).unwrap()
    }

    /// The server side as the shard builds it (any client certificate asked for, key possession
    /// proven), and a client trusting its certificate.
    fn configs(
        presented: CertifiedKey,
        version: &'static rustls::SupportedProtocolVersion,
    ) -> (Arc<ServerConfig>, Arc<ClientConfig>) {
        let server_key = KeyPair::generate().unwrap();
        let server_cert = CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&server_key)
            .unwrap();
        let server = ServerConfig::builder_with_provider(provider())
            .with_protocol_versions(&[version])
            .unwrap()
            .with_client_cert_verifier(DeferredClientAuth::new(
                Vec::new(),
                provider().signature_verification_algorithms,
            ))
            .with_single_cert(
                vec![server_cert.der().clone()],
                PrivateKeyDer::try_from(server_key.serialize_der()).unwrap(),
            )
            .unwrap();
        let mut roots = RootCertStore::empty();
        roots.add(server_cert.der().clone()).unwrap();
        let client = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(&[version])
            .unwrap()
            .with_root_certificates(roots)
            .with_client_cert_resolver(Arc::new(Presenting(Arc::new(presented))));
        (Arc::new(server), Arc::new(client))
    }

    /// Whether the server completes a handshake with the client and reads a byte from it.
    async fn server_accepts(server: Arc<ServerConfig>, client: Arc<ClientConfig>) -> bool {
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        let accepting = tokio::spawn(async move {
            let mut tls = tokio_rustls::TlsAcceptor::from(server)
                .accept(server_io)
                .await?;
            let mut byte = [0u8; 1];
            tls.read_exact(&mut byte).await.map(|_| ())
        });
        let name = ServerName::try_from("localhost").unwrap();
        // Held open until the server is done: a closed pipe would fail its read for another reason.
        let mut connected = tokio_rustls::TlsConnector::from(client)
            .connect(name, client_io)
            .await;
        if let Ok(tls) = &mut connected {
            let _ = tls.write_all(b"x").await;
            let _ = tls.flush().await;
        }
        let accepted = accepting.await.unwrap().is_ok();
        drop(connected);
        accepted
    }

    #[tokio::test]
    async fn the_client_must_hold_the_key_of_the_certificate_it_presents() {
        let own = KeyPair::generate().unwrap();
        let other = KeyPair::generate().unwrap();
        let v3 = CertificateParams::new(vec!["client".to_string()])
            .unwrap()
            .self_signed(&own)
            .unwrap()
            .der()
            .clone();
        let mut v1_pem = CertificateDer::pem_slice_iter(V1_PEM.as_bytes());
        let v1 = v1_pem.next().unwrap().unwrap();
        let v1_key = PrivateKeyDer::from_pem_slice(V1_PEM.as_bytes()).unwrap();
        let v1_key = signing_key(v1_key.secret_der());
        for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
            let cases = [
                (
                    "v3, own key",
                    v3.clone(),
                    signing_key(&own.serialize_der()),
                    true,
                ),
                (
                    "v3, another key",
                    v3.clone(),
                    signing_key(&other.serialize_der()),
                    false,
                ),
                ("v1, own key", v1.clone(), v1_key.clone(), true),
                (
                    "v1, another key",
                    v1.clone(),
                    signing_key(&other.serialize_der()),
                    false,
                ),
            ];
            for (case, cert, key, accepted) in cases {
                let (server, client) = configs(CertifiedKey::new(vec![cert], key), version);
                assert_eq!(
                    server_accepts(server, client).await,
                    accepted,
                    "{case} over {:?}",
                    version.version
                );
            }
        }
    }
}
