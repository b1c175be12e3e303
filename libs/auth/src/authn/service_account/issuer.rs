//! Signing ServiceAccount tokens.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rustls_pki_types::SubjectPublicKeyInfoDer;
use rustls_pki_types::pem::PemObject;
use sha2::{Digest, Sha256};

use crate::authn::service_account::{
    Claims, KubernetesClaims, ObjectRef, ServiceAccountError, username,
};

/// A signed token and when it stops being valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IssuedToken {
    pub token: String,
    pub expiration: SystemTime,
}

/// Signs bound ServiceAccount tokens with an ES256 (P-256) key.
pub struct TokenIssuer {
    issuer: String,
    key: EncodingKey,
    key_id: String,
}

impl std::fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("TokenIssuer")
            .field("issuer", &self.issuer)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

impl TokenIssuer {
    /// `private_key_pem`: a PKCS#8 P-256 key; `public_key_pem`: its public half, which names the key
    /// in the token header (`kid`) so verifiers holding several keys pick the right one.
    pub fn new(
        issuer: impl Into<String>,
        private_key_pem: &[u8],
        public_key_pem: &[u8],
    ) -> Result<TokenIssuer, ServiceAccountError> {
        Ok(TokenIssuer {
            issuer: issuer.into(),
            key: EncodingKey::from_ec_pem(private_key_pem).map_err(ServiceAccountError::Key)?,
            key_id: key_id(public_key_pem)?,
        })
    }

    /// The `iss` of every token this issuer signs.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// A token for ServiceAccount `namespace/name` (uid `uid`) of logical cluster `cluster`, valid for
    /// `audiences` from now until `expiration` from now.
    pub fn issue(
        &self,
        cluster: &str,
        namespace: &str,
        name: &str,
        uid: &str,
        audiences: &[String],
        expiration: Duration,
    ) -> Result<IssuedToken, ServiceAccountError> {
        self.issue_at(
            SystemTime::now(),
            cluster,
            namespace,
            name,
            uid,
            audiences,
            expiration,
        )
    }

    #[allow(clippy::too_many_arguments)] // `issue` plus the clock, which tests turn back
    pub(crate) fn issue_at(
        &self,
        now: SystemTime,
        cluster: &str,
        namespace: &str,
        name: &str,
        uid: &str,
        audiences: &[String],
        expiration: Duration,
    ) -> Result<IssuedToken, ServiceAccountError> {
        if cluster.is_empty() || namespace.is_empty() || name.is_empty() || uid.is_empty() {
            return Err(ServiceAccountError::Request(
                "cluster, namespace, name and uid are all required",
            ));
        }
        if audiences.is_empty() {
            return Err(ServiceAccountError::Request(
                "at least one audience is required",
            ));
        }
        let iat = unix_seconds(now);
        let exp_time = now + expiration;
        let claims = Claims {
            iss: self.issuer.clone(),
            sub: username(namespace, name),
            aud: audiences.to_vec(),
            exp: unix_seconds(exp_time),
            iat,
            nbf: iat,
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes: KubernetesClaims {
                cluster_name: cluster.to_string(),
                namespace: namespace.to_string(),
                serviceaccount: ObjectRef {
                    name: name.to_string(),
                    uid: uid.to_string(),
                },
                pod: None,
                secret: None,
            },
        };
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.key_id.clone());
        let token =
            jsonwebtoken::encode(&header, &claims, &self.key).map_err(ServiceAccountError::Sign)?;
        Ok(IssuedToken {
            token,
            expiration: exp_time,
        })
    }
}

/// Kubernetes' key id: the unpadded base64url SHA-256 of the public key's DER (SubjectPublicKeyInfo).
pub(crate) fn key_id(public_key_pem: &[u8]) -> Result<String, ServiceAccountError> {
    let der = SubjectPublicKeyInfoDer::from_pem_slice(public_key_pem)?;
    Ok(URL_SAFE_NO_PAD.encode(Sha256::digest(der.as_ref())))
}

fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_secs()).unwrap_or(i64::MAX),
    }
}
