//! Checking ServiceAccount tokens.

use std::sync::Arc;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use rustls_pki_types::CertificateDer;
use serde::Deserialize;

use crate::authn::bearer::bearer_token;
use crate::authn::service_account::issuer::key_id;
use crate::authn::service_account::{
    Claims, ServiceAccountError, ServiceAccountIdentity, ServiceAccountLookup, username,
};
use crate::authn::{Authenticator, AuthnResult};

/// Clock skew tolerated on `exp` and `nbf`, as Kubernetes' JWT validation (one minute).
const LEEWAY_SECS: u64 = 60;

/// What a bearer token turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenValidation {
    /// Not a JWT of this issuer: another authenticator's business.
    NotOurs,
    /// Claims to be ours but is not valid (signature, audience, time, or the account is gone).
    Invalid(String),
    Valid(ServiceAccountIdentity),
}

struct VerificationKey {
    id: String,
    key: DecodingKey,
}

/// Authenticates `Authorization: Bearer <ServiceAccount JWT>`.
pub struct ServiceAccountAuthenticator {
    issuer: String,
    /// The audiences a request's token must name one of (the API server's own).
    audiences: Vec<String>,
    keys: Vec<VerificationKey>,
    validation: Validation,
    lookup: Arc<dyn ServiceAccountLookup>,
}

impl std::fmt::Debug for ServiceAccountAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountAuthenticator")
            .field("issuer", &self.issuer)
            .field("keys", &self.keys.iter().map(|k| &k.id).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl ServiceAccountAuthenticator {
    /// `public_key_pems`: the ES256 keys tokens may be signed with (PEM SubjectPublicKeyInfo).
    /// `audiences`: a token must name at least one of them (Kubernetes' `--api-audiences`, which
    /// defaults to the issuer).
    pub fn new(
        issuer: impl Into<String>,
        audiences: &[String],
        public_key_pems: &[&[u8]],
        lookup: Arc<dyn ServiceAccountLookup>,
    ) -> Result<ServiceAccountAuthenticator, ServiceAccountError> {
        let issuer = issuer.into();
        let keys = public_key_pems
            .iter()
            .map(|pem| {
                Ok(VerificationKey {
                    id: key_id(pem)?,
                    key: DecodingKey::from_ec_pem(pem).map_err(ServiceAccountError::Key)?,
                })
            })
            .collect::<Result<Vec<_>, ServiceAccountError>>()?;
        if keys.is_empty() {
            return Err(ServiceAccountError::NoKey);
        }
        let mut validation = Validation::new(Algorithm::ES256);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&issuer]);
        // Checked after decoding against the audiences the caller wants (a request: ours; a
        // TokenReview: those it names), which also yields the audiences the token is valid for.
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let audiences = if audiences.is_empty() {
            vec![issuer.clone()]
        } else {
            audiences.to_vec()
        };
        Ok(ServiceAccountAuthenticator {
            issuer,
            audiences,
            keys,
            validation,
            lookup,
        })
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The audiences a token must name one of to authenticate a request here.
    pub fn audiences(&self) -> &[String] {
        &self.audiences
    }

    /// Checks `token` completely: signature, claims, audience (one of ours), and the
    /// ServiceAccount's existence.
    pub fn validate(&self, token: &str) -> TokenValidation {
        self.validate_for(token, &self.audiences)
    }

    /// As [`validate`](Self::validate), but the token must name one of `audiences` instead of ours
    /// (a TokenReview's `spec.audiences`). A valid identity carries the audiences it was accepted
    /// for: the token's that are in `audiences`.
    pub fn validate_for(&self, token: &str, audiences: &[String]) -> TokenValidation {
        // Upstream only answers for tokens naming its issuer; anything else (static tokens, other
        // issuers' JWTs) is left to the other authenticators. The peek is unverified, and decides
        // nothing beyond "whose".
        #[derive(Deserialize)]
        struct Issuer {
            iss: Option<String>,
        }
        match jsonwebtoken::dangerous::insecure_decode_claims::<Issuer>(token) {
            Ok(Issuer { iss: Some(iss) }) if iss == self.issuer => {}
            _ => return TokenValidation::NotOurs,
        }
        let kid = match jsonwebtoken::decode_header(token) {
            Ok(header) => header.kid,
            Err(err) => return TokenValidation::Invalid(format!("token header: {err}")),
        };
        // The key the header names first; without a match, every key (older tokens may lack `kid`).
        let mut candidates: Vec<&VerificationKey> = self
            .keys
            .iter()
            .filter(|k| kid.as_deref() == Some(k.id.as_str()))
            .collect();
        if candidates.is_empty() {
            candidates = self.keys.iter().collect();
        }
        let mut last_error = None;
        let mut claims = None;
        for key in candidates {
            match jsonwebtoken::decode::<Claims>(token, &key.key, &self.validation) {
                Ok(data) => {
                    claims = Some(data.claims);
                    break;
                }
                Err(err) if matches!(err.kind(), ErrorKind::InvalidSignature) => {
                    last_error = Some(err);
                }
                Err(err) => return TokenValidation::Invalid(describe(&err)),
            }
        }
        let Some(claims) = claims else {
            return TokenValidation::Invalid(
                last_error.map_or_else(|| "no key".to_string(), |e| describe(&e)),
            );
        };
        let accepted: Vec<String> = claims
            .aud
            .iter()
            .filter(|a| audiences.contains(a))
            .cloned()
            .collect();
        if accepted.is_empty() {
            // Kubernetes' wording.
            return TokenValidation::Invalid(format!(
                "token audiences {:?} is invalid for the target audiences {audiences:?}",
                claims.aud
            ));
        }
        self.check_account(claims, accepted)
    }

    fn check_account(&self, claims: Claims, audiences: Vec<String>) -> TokenValidation {
        let k = claims.kubernetes;
        let sa = k.serviceaccount;
        if k.cluster_name.is_empty() || k.namespace.is_empty() || sa.name.is_empty() {
            return TokenValidation::Invalid(
                "service account token lacks its cluster, namespace or name".to_string(),
            );
        }
        if claims.sub != username(&k.namespace, &sa.name) {
            return TokenValidation::Invalid(
                "service account token subject does not match its claims".to_string(),
            );
        }
        match self.lookup.uid(&k.cluster_name, &k.namespace, &sa.name) {
            None => TokenValidation::Invalid(format!(
                "service account {}/{} in logical cluster {} does not exist",
                k.namespace, sa.name, k.cluster_name
            )),
            Some(uid) if uid != sa.uid => TokenValidation::Invalid(format!(
                "service account uid ({uid}) does not match the token's ({})",
                sa.uid
            )),
            Some(_) => TokenValidation::Valid(ServiceAccountIdentity {
                cluster: k.cluster_name,
                namespace: k.namespace,
                name: sa.name,
                uid: sa.uid,
                token_id: claims.jti,
                audiences,
            }),
        }
    }

    /// The logical cluster of the ServiceAccount whose valid token the request bears, if it bears one
    /// of ours. For routing requests without a `/clusters/<name>` prefix (in-cluster clients) to the
    /// account's own logical cluster.
    pub fn cluster_of(&self, parts: &http::request::Parts) -> Option<String> {
        match self.validate(bearer_token(parts)?) {
            TokenValidation::Valid(identity) => Some(identity.cluster),
            _ => None,
        }
    }
}

fn describe(err: &jsonwebtoken::errors::Error) -> String {
    match err.kind() {
        ErrorKind::ExpiredSignature => "service account token has expired".to_string(),
        ErrorKind::ImmatureSignature => "service account token is not valid yet".to_string(),
        ErrorKind::InvalidAudience => "token audiences are not accepted".to_string(),
        ErrorKind::InvalidSignature => "invalid token signature".to_string(),
        _ => format!("invalid service account token: {err}"),
    }
}

impl Authenticator for ServiceAccountAuthenticator {
    fn authenticate(
        &self,
        parts: &http::request::Parts,
        _peer_certificates: &[CertificateDer<'static>],
    ) -> AuthnResult {
        let Some(token) = bearer_token(parts) else {
            return AuthnResult::NoCredential;
        };
        match self.validate(token) {
            TokenValidation::NotOurs => AuthnResult::NoCredential,
            TokenValidation::Invalid(reason) => AuthnResult::Invalid(reason),
            TokenValidation::Valid(identity) => AuthnResult::Authenticated(identity.user_info()),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use std::collections::HashMap;
    use std::sync::RwLock;
    use std::time::{Duration, SystemTime};

    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    use super::*;
    use crate::authn::AUTHENTICATED_GROUP;
    use crate::authn::service_account::{
        CLUSTER_NAME_EXTRA, CREDENTIAL_ID_EXTRA, DEFAULT_ISSUER, SCOPES_EXTRA, TokenIssuer,
    };

    /// ServiceAccounts by (cluster, namespace, name) → uid.
    #[derive(Default)]
    struct Accounts(RwLock<HashMap<(String, String, String), String>>);

    impl Accounts {
        fn set(&self, cluster: &str, ns: &str, name: &str, uid: Option<&str>) {
            let key = (cluster.to_string(), ns.to_string(), name.to_string());
            let mut map = self.0.write().unwrap();
            match uid {
                Some(uid) => map.insert(key, uid.to_string()),
                None => map.remove(&key),
            };
        }
    }

    impl ServiceAccountLookup for Accounts {
        fn uid(&self, cluster: &str, namespace: &str, name: &str) -> Option<String> {
            let key = (cluster.to_string(), namespace.to_string(), name.to_string());
            self.0.read().unwrap().get(&key).cloned()
        }
    }

    struct Keys {
        private: String,
        public: String,
    }

    fn keys() -> Keys {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        Keys {
            private: key.serialize_pem(),
            public: key.public_key_pem(),
        }
    }

    struct Setup {
        issuer: TokenIssuer,
        authn: ServiceAccountAuthenticator,
        accounts: Arc<Accounts>,
        public_pem: String,
    }

    fn setup() -> Setup {
        let k = keys();
        let accounts = Arc::new(Accounts::default());
        accounts.set("lc1", "default", "builder", Some("uid-1"));
        Setup {
            issuer: TokenIssuer::new(DEFAULT_ISSUER, k.private.as_bytes(), k.public.as_bytes())
                .unwrap(),
            authn: ServiceAccountAuthenticator::new(
                DEFAULT_ISSUER,
                &[],
                &[k.public.as_bytes()],
                accounts.clone(),
            )
            .unwrap(),
            accounts,
            public_pem: k.public,
        }
    }

    fn hour() -> Duration {
        Duration::from_secs(3600)
    }

    fn aud(a: &str) -> Vec<String> {
        vec![a.to_string()]
    }

    fn token(s: &Setup) -> String {
        s.issuer
            .issue(
                "lc1",
                "default",
                "builder",
                "uid-1",
                &aud(DEFAULT_ISSUER),
                hour(),
            )
            .unwrap()
            .token
    }

    fn invalid(v: TokenValidation) -> String {
        match v {
            TokenValidation::Invalid(reason) => reason,
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    fn request(token: &str) -> http::request::Parts {
        http::Request::builder()
            .header(http::header::AUTHORIZATION, format!("Bearer {token}"))
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    #[test]
    fn a_valid_token_is_the_service_account() {
        let s = setup();
        let token = token(&s);
        let AuthnResult::Authenticated(user) = s.authn.authenticate(&request(&token), &[]) else {
            panic!("expected a user");
        };
        assert_eq!(user.name, "system:serviceaccount:default:builder");
        assert_eq!(user.uid, "uid-1");
        assert_eq!(
            user.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:default",
                AUTHENTICATED_GROUP
            ]
        );
        assert_eq!(user.extra[CLUSTER_NAME_EXTRA], ["lc1"]);
        assert_eq!(user.extra[SCOPES_EXTRA], ["cluster:lc1"]);
        assert!(user.extra[CREDENTIAL_ID_EXTRA][0].starts_with("JTI="));
        assert_eq!(
            s.authn.cluster_of(&request(&token)),
            Some("lc1".to_string())
        );
    }

    #[test]
    fn claims_have_kubernetes_shape() {
        let s = setup();
        let token = token(&s);
        let header = jsonwebtoken::decode_header(&token).unwrap();
        assert_eq!(header.alg, Algorithm::ES256);
        assert!(header.kid.is_some());
        let payload = token.split('.').nth(1).unwrap();
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        assert_eq!(claims["iss"], DEFAULT_ISSUER);
        assert_eq!(claims["sub"], "system:serviceaccount:default:builder");
        assert_eq!(claims["aud"], serde_json::json!([DEFAULT_ISSUER]));
        assert_eq!(claims["kubernetes.io"]["clusterName"], "lc1");
        assert_eq!(claims["kubernetes.io"]["namespace"], "default");
        assert_eq!(claims["kubernetes.io"]["serviceaccount"]["name"], "builder");
        assert_eq!(claims["kubernetes.io"]["serviceaccount"]["uid"], "uid-1");
        let exp = claims["exp"].as_i64().unwrap();
        let iat = claims["iat"].as_i64().unwrap();
        assert_eq!(exp - iat, 3600);
        assert_eq!(claims["nbf"], claims["iat"]);
        assert!(!claims["jti"].as_str().unwrap().is_empty());
    }

    #[test]
    fn expired_tokens_are_invalid() {
        let s = setup();
        let old = s
            .issuer
            .issue_at(
                SystemTime::now() - Duration::from_secs(7200),
                "lc1",
                "default",
                "builder",
                "uid-1",
                &aud(DEFAULT_ISSUER),
                hour(),
            )
            .unwrap();
        assert!(invalid(s.authn.validate(&old.token)).contains("expired"));
        // Not yet valid (issued in the future, beyond the leeway).
        let future = s
            .issuer
            .issue_at(
                SystemTime::now() + hour(),
                "lc1",
                "default",
                "builder",
                "uid-1",
                &aud(DEFAULT_ISSUER),
                hour(),
            )
            .unwrap();
        assert!(invalid(s.authn.validate(&future.token)).contains("not valid yet"));
    }

    #[test]
    fn other_issuers_tokens_are_not_ours() {
        let s = setup();
        let k = keys();
        let other = TokenIssuer::new(
            "https://elsewhere",
            k.private.as_bytes(),
            k.public.as_bytes(),
        )
        .unwrap();
        let token = other
            .issue(
                "lc1",
                "default",
                "builder",
                "uid-1",
                &aud(DEFAULT_ISSUER),
                hour(),
            )
            .unwrap()
            .token;
        assert_eq!(s.authn.validate(&token), TokenValidation::NotOurs);
        assert_eq!(
            s.authn.authenticate(&request(&token), &[]),
            AuthnResult::NoCredential
        );
        // Static tokens are not JWTs at all.
        assert_eq!(s.authn.validate("static-token"), TokenValidation::NotOurs);
    }

    #[test]
    fn wrong_audience_is_invalid() {
        let s = setup();
        let token = s
            .issuer
            .issue("lc1", "default", "builder", "uid-1", &aud("vault"), hour())
            .unwrap()
            .token;
        assert!(invalid(s.authn.validate(&token)).contains("audience"));
        assert!(matches!(
            s.authn.authenticate(&request(&token), &[]),
            AuthnResult::Invalid(_)
        ));
    }

    #[test]
    fn reviews_name_the_audiences_they_accept() {
        let s = setup();
        let both = vec![DEFAULT_ISSUER.to_string(), "vault".to_string()];
        let token = s
            .issuer
            .issue("lc1", "default", "builder", "uid-1", &both, hour())
            .unwrap()
            .token;
        let valid = |v: TokenValidation| match v {
            TokenValidation::Valid(identity) => identity.audiences,
            other => panic!("expected valid, got {other:?}"),
        };
        assert_eq!(valid(s.authn.validate(&token)), [DEFAULT_ISSUER]);
        assert_eq!(
            valid(
                s.authn
                    .validate_for(&token, &["vault".to_string(), "other".to_string()])
            ),
            ["vault"]
        );
        let reason = invalid(s.authn.validate_for(&token, &aud("other")));
        assert!(
            reason.contains("is invalid for the target audiences"),
            "{reason}"
        );
        // A vault-only token is good for vault's review, not for requests here.
        let vault = s
            .issuer
            .issue("lc1", "default", "builder", "uid-1", &aud("vault"), hour())
            .unwrap()
            .token;
        assert_eq!(
            valid(s.authn.validate_for(&vault, &aud("vault"))),
            ["vault"]
        );
        assert!(matches!(
            s.authn.validate(&vault),
            TokenValidation::Invalid(_)
        ));
    }

    #[test]
    fn tampered_or_foreign_signed_tokens_are_invalid() {
        let s = setup();
        let token = token(&s);
        // Re-encode the claims with another namespace, keeping the signature.
        let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
        let mut claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&parts[1]).unwrap()).unwrap();
        claims["kubernetes.io"]["namespace"] = "kube-system".into();
        parts[1] = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap());
        let tampered = parts.join(".");
        assert!(invalid(s.authn.validate(&tampered)).contains("signature"));
        assert!(matches!(
            s.authn.authenticate(&request(&tampered), &[]),
            AuthnResult::Invalid(_)
        ));

        // Our issuer name, somebody else's key.
        let k = keys();
        let forger =
            TokenIssuer::new(DEFAULT_ISSUER, k.private.as_bytes(), k.public.as_bytes()).unwrap();
        let forged = forger
            .issue(
                "lc1",
                "default",
                "builder",
                "uid-1",
                &aud(DEFAULT_ISSUER),
                hour(),
            )
            .unwrap()
            .token;
        assert!(invalid(s.authn.validate(&forged)).contains("signature"));
    }

    #[test]
    fn other_algorithms_are_refused() {
        // The classic confusion: HMAC "signed" with the public key, which every verifier knows.
        let s = setup();
        let token = token(&s);
        let payload = token.split('.').nth(1).unwrap();
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
        let forged = jsonwebtoken::encode(
            &jsonwebtoken::Header::new(Algorithm::HS256),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(s.public_pem.as_bytes()),
        )
        .unwrap();
        assert!(matches!(
            s.authn.validate(&forged),
            TokenValidation::Invalid(_)
        ));
        // And unsigned tokens.
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let unsigned = format!("{header}.{payload}.");
        assert!(matches!(
            s.authn.validate(&unsigned),
            TokenValidation::Invalid(_)
        ));
    }

    #[test]
    fn deleted_and_recreated_accounts_lose_their_tokens() {
        let s = setup();
        let token = token(&s);
        s.accounts.set("lc1", "default", "builder", None);
        assert!(invalid(s.authn.validate(&token)).contains("does not exist"));
        s.accounts.set("lc1", "default", "builder", Some("uid-2"));
        assert!(invalid(s.authn.validate(&token)).contains("does not match"));
        assert_eq!(s.authn.cluster_of(&request(&token)), None);
        // The same account name in another logical cluster is another account.
        s.accounts.set("lc1", "default", "builder", None);
        s.accounts.set("lc2", "default", "builder", Some("uid-1"));
        assert!(invalid(s.authn.validate(&token)).contains("does not exist"));
    }

    #[test]
    fn several_keys_and_configured_audiences() {
        let old = keys();
        let new = keys();
        let accounts = Arc::new(Accounts::default());
        accounts.set("lc1", "ns", "sa", Some("u"));
        let authn = ServiceAccountAuthenticator::new(
            DEFAULT_ISSUER,
            &["api".to_string(), "other".to_string()],
            &[old.public.as_bytes(), new.public.as_bytes()],
            accounts,
        )
        .unwrap();
        for k in [&old, &new] {
            let issuer =
                TokenIssuer::new(DEFAULT_ISSUER, k.private.as_bytes(), k.public.as_bytes())
                    .unwrap();
            let token = issuer
                .issue("lc1", "ns", "sa", "u", &aud("other"), hour())
                .unwrap()
                .token;
            assert!(matches!(authn.validate(&token), TokenValidation::Valid(_)));
        }
    }

    #[test]
    fn issuing_needs_every_part() {
        let s = setup();
        assert!(
            s.issuer
                .issue("", "ns", "sa", "u", &aud("a"), hour())
                .is_err()
        );
        assert!(s.issuer.issue("lc", "ns", "sa", "u", &[], hour()).is_err());
        assert!(
            ServiceAccountAuthenticator::new(
                DEFAULT_ISSUER,
                &[],
                &[],
                Arc::new(Accounts::default())
            )
            .is_err()
        );
    }
}
