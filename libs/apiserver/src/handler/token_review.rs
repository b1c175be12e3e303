//! TokenReview (`authentication.k8s.io/v1`): is this bearer token valid here, and whose is it?
//! The token goes through the server's own authenticators, as if a request had carried it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use kcp_api_types::ResourceDef;
use kcp_apimachinery::status::ApiError;
use kcp_auth::AuthnResult;
use serde_json::{Value, json};

use super::review::user_json;
use crate::ApiServer;

impl ApiServer {
    /// The `status` of a TokenReview: `authenticated`, `user`, `audiences`, `error`.
    pub(super) fn token_review_status(
        &self,
        def: &ResourceDef,
        obj: &Value,
    ) -> Result<Value, ApiError> {
        let token = obj
            .pointer("/spec/token")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if token.is_empty() {
            return Err(ApiError::bad_request(format!(
                "token is required for {} in authentication",
                def.kind
            )));
        }
        let requested: Vec<String> = obj
            .pointer("/spec/audiences")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        // The server's own audience: its ServiceAccount issuer (kcp's `--api-audiences` default).
        let implicit: Vec<String> = self
            .config
            .service_account_tokens
            .iter()
            .map(|t| t.authenticator.issuer().to_string())
            .collect();
        let targets = if requested.is_empty() {
            implicit.clone()
        } else {
            requested
        };

        // A token that cannot be a header value cannot be anyone's credential.
        let Ok(value) = http::HeaderValue::from_str(&format!("Bearer {token}")) else {
            return Ok(json!({"authenticated": false}));
        };
        let (mut parts, ()) = http::Request::new(()).into_parts();
        parts.headers.insert(http::header::AUTHORIZATION, value);
        let mut outcome = AuthnResult::NoCredential;
        for authn in &self.config.authenticators {
            match authn.authenticate(&parts, &[]) {
                AuthnResult::NoCredential => continue,
                decided => {
                    outcome = decided;
                    break;
                }
            }
        }
        match outcome {
            AuthnResult::NoCredential => Ok(json!({"authenticated": false})),
            AuthnResult::Invalid(reason) => Ok(json!({"authenticated": false, "error": reason})),
            AuthnResult::Authenticated(user) => {
                // A JWT is valid for the audiences it names (its signature and audience were
                // checked by its authenticator); an opaque token for the server's own.
                let valid_for = jwt_audiences(token).unwrap_or(implicit);
                let granted: Vec<String> = if targets.is_empty() {
                    valid_for.clone()
                } else {
                    targets
                        .iter()
                        .filter(|a| valid_for.contains(a))
                        .cloned()
                        .collect()
                };
                if !targets.is_empty() && granted.is_empty() {
                    return Ok(json!({
                        "authenticated": false,
                        "error": format!("token audiences {valid_for:?} is invalid for the target audiences {targets:?}"),
                    }));
                }
                Ok(json!({"authenticated": true, "user": user_json(&user), "audiences": granted}))
            }
        }
    }
}

/// The `aud` claim of a JWT (a string or a list), read without verification: only called once an
/// authenticator has accepted the token.
fn jwt_audiences(token: &str) -> Option<Vec<String>> {
    let payload = token.split('.').nth(1)?;
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    match claims.get("aud")? {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(a) => Some(
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audiences_of_a_jwt() {
        let payload = URL_SAFE_NO_PAD.encode(br#"{"aud":["a","b"]}"#);
        assert_eq!(
            jwt_audiences(&format!("h.{payload}.s")),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        let payload = URL_SAFE_NO_PAD.encode(br#"{"aud":"a"}"#);
        assert_eq!(
            jwt_audiences(&format!("h.{payload}.s")),
            Some(vec!["a".to_string()])
        );
        assert_eq!(jwt_audiences("opaque-static-token"), None);
    }
}
