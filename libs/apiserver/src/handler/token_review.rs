//! TokenReview (`authentication.k8s.io/v1`): is this bearer token valid here, and whose is it?
//! A ServiceAccount token is checked against the audiences the review names (Kubernetes' semantics:
//! valid for at least one of them, `status.audiences` the ones it is valid for); any other token
//! goes through the server's own authenticators, as if a request had carried it. An invalid token
//! is a review that says so (`authenticated: false` and an `error`), not a failed request.

use kcp_api_types::ResourceDef;
use kcp_apimachinery::status::ApiError;
use kcp_auth::{AuthnResult, authn::TokenValidation};
use serde_json::{Value, json};

use super::review::user_json;
use crate::ApiServer;
use crate::admission::rules::strings;

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
        let requested = strings(obj.pointer("/spec/audiences"));
        // The server's own audiences: what its ServiceAccount tokens must name to authenticate
        // requests (kcp's `--api-audiences`, by default the issuer).
        let implicit: Vec<String> = self
            .config
            .service_account_tokens
            .iter()
            .flat_map(|t| t.authenticator.audiences().iter().cloned())
            .collect();
        // As Kubernetes: the audiences asked for, or else the server's own.
        let targets = if requested.is_empty() {
            implicit.clone()
        } else {
            requested
        };

        // ServiceAccount tokens know their audiences: valid when they name one of the targets,
        // which need not be ours (a token minted for another service is reviewed for it).
        if let Some(tokens) = &self.config.service_account_tokens {
            match tokens.authenticator.validate_for(token, &targets) {
                TokenValidation::Valid(identity) => {
                    return Ok(json!({
                        "authenticated": true,
                        "user": user_json(&identity.user_info()),
                        "audiences": identity.audiences,
                    }));
                }
                TokenValidation::Invalid(reason) => {
                    return Ok(json!({"authenticated": false, "error": reason}));
                }
                TokenValidation::NotOurs => {}
            }
        }

        // A token that cannot be a header value cannot be anyone's credential.
        let Ok(value) = http::HeaderValue::from_str(&format!("Bearer {token}")) else {
            return Ok(json!({"authenticated": false}));
        };
        let (mut parts, ()) = http::Request::new(()).into_parts();
        parts.headers.insert(http::header::AUTHORIZATION, value);
        let outcome = kcp_auth::authn::authenticate_chain(&self.config.authenticators, &parts, &[]);
        match outcome {
            AuthnResult::NoCredential => Ok(json!({"authenticated": false})),
            AuthnResult::Invalid(reason) => Ok(json!({"authenticated": false, "error": reason})),
            AuthnResult::Authenticated(user) => {
                // Other tokens (static ones) carry no audience: they are good for the server's own
                // audiences only, as Kubernetes' audience-agnostic authenticators (a server without
                // audiences of its own accepts them only for reviews that name none).
                let granted: Vec<String> = targets
                    .iter()
                    .filter(|a| implicit.contains(a))
                    .cloned()
                    .collect();
                if !targets.is_empty() && granted.is_empty() {
                    return Ok(json!({
                        "authenticated": false,
                        "error": format!("the token is not valid for the target audiences {targets:?}"),
                    }));
                }
                Ok(json!({"authenticated": true, "user": user_json(&user), "audiences": granted}))
            }
        }
    }
}
