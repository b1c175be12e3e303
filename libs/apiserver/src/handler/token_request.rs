//! TokenRequest: `POST .../namespaces/<ns>/serviceaccounts/<name>/token` signs a ServiceAccount token
//! for the logical cluster of the request (`kubectl create token`). Nothing is stored.

use std::time::Duration;

use http::{Response, StatusCode};
use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::{ApiError, Cause};
use serde_json::{Value, json};

use super::RequestContext;
use crate::ApiServer;
use crate::admission::rules::strings;
use crate::codec;
use crate::registry::ObjectRef;
use kcp_http::request_info::ResourceRequest;
use kcp_http::{Body, response};

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";
/// `spec.expirationSeconds` when the request names none, as Kubernetes defaults it.
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// Kubernetes refuses shorter tokens (ten minutes)...
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// ...and longer than 2^32 seconds.
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

impl ApiServer {
    pub(super) async fn serve_token_request(
        &self,
        ctx: &RequestContext,
        serviceaccounts: &ResourceDef,
        cluster: &LogicalClusterName,
        req: &ResourceRequest,
        body: kcp_http::request_body::RequestBody,
    ) -> Result<Response<Body>, ApiError> {
        if req.verb != "create" {
            return Err(ApiError::method_not_allowed(format!(
                "{} is not supported on serviceaccounts/token",
                req.verb
            )));
        }
        // Without a signing key the server offers no tokens, as kube-apiserver without one.
        let Some(tokens) = &self.config.service_account_tokens else {
            return Err(ApiError::path_not_found());
        };
        let (Some(namespace), Some(name)) = (req.namespace.as_deref(), req.name.as_deref()) else {
            return Err(ApiError::path_not_found());
        };
        let raw = codec::read_body(body).await?;
        let mut obj = codec::decode_object(ctx.content_type.as_deref(), &raw)?;
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the body of a TokenRequest must be an object",
            ));
        }
        // The request names its account in the URL; a body naming another is a mistake.
        for (field, expected) in [("name", name), ("namespace", namespace)] {
            match obj
                .pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str)
            {
                None | Some("") => {}
                Some(given) if given == expected => {}
                Some(given) => {
                    return Err(ApiError::bad_request(format!(
                        "the {field} of the object ({given}) does not match the {field} on the URL ({expected})"
                    )));
                }
            }
        }
        if !obj.get("spec").is_some_and(Value::is_object) {
            obj["spec"] = json!({});
        }
        let spec = &mut obj["spec"];
        let expiration = match spec.get("expirationSeconds") {
            None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
            Some(v) => v.as_i64().ok_or_else(|| {
                ApiError::bad_request("spec.expirationSeconds must be an integer")
            })?,
        };
        spec["expirationSeconds"] = json!(expiration);
        let mut causes = Vec::new();
        if expiration < MIN_EXPIRATION_SECONDS {
            causes.push(Cause::invalid(
                "spec.expirationSeconds",
                &json!(expiration),
                "may not specify a duration less than 10 minutes",
            ));
        }
        if expiration > MAX_EXPIRATION_SECONDS {
            causes.push(Cause::invalid(
                "spec.expirationSeconds",
                &json!(expiration),
                "may not specify a duration larger than 2^32 seconds",
            ));
        }
        // Tokens bound to a Pod or Secret need those objects' lifecycles; not offered yet.
        if let Some(bound) = spec.get("boundObjectRef").filter(|v| !v.is_null()) {
            causes.push(Cause::invalid(
                "spec.boundObjectRef",
                bound,
                "bound tokens are not supported by this server",
            ));
        }
        if !causes.is_empty() {
            return Err(ApiError::invalid(GROUP, KIND, "", causes));
        }
        let mut audiences = strings(spec.get("audiences"));
        if audiences.is_empty() {
            // The server's own audience, which its authenticator accepts.
            audiences.push(tokens.authenticator.issuer().to_string());
        }
        spec["audiences"] = json!(audiences);

        let at = ObjectRef {
            cluster,
            namespace: Some(namespace),
            name,
        };
        let account = self.registry.get(serviceaccounts, at).await?;
        let account: Value = account.json.parse().map_err(ApiError::internal)?;
        let uid = account
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let expires_in = Duration::from_secs(u64::try_from(expiration).unwrap_or_default());
        let issued = tokens
            .issuer
            .issue(cluster, namespace, name, uid, &audiences, expires_in)
            .map_err(ApiError::internal)?;
        let expires_at: chrono::DateTime<chrono::Utc> = issued.expiration.into();

        obj["apiVersion"] = json!(format!("{GROUP}/v1"));
        obj["kind"] = json!(KIND);
        if !obj.get("metadata").is_some_and(Value::is_object) {
            obj["metadata"] = json!({});
        }
        obj["metadata"]["name"] = json!(name);
        obj["metadata"]["namespace"] = json!(namespace);
        obj["metadata"]["creationTimestamp"] = json!(crate::registry::metadata::now_rfc3339());
        obj["status"] = json!({
            "token": issued.token,
            "expirationTimestamp": expires_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        });
        Ok(response::json_value(StatusCode::CREATED, &obj))
    }
}
