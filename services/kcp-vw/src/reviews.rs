//! kcp-vw's authorization decisions, asked of the shard by SubjectAccessReview, as kcp's
//! virtual-workspace server asks its shard (kcp's delegated authorizer).
//!
//! The shard's answer is the decision, asked anew for every request as kcp asks it (kcp makes a
//! new delegated authorizer in each decision, so its answer cache never serves a second request).
//! A grant or a revocation the shard has acknowledged therefore holds for kcp-vw's next request,
//! whatever kcp-vw's own mirror has got to; a review costs a round trip to the shard on the
//! connection kcp-vw already holds.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::StatusCode;
use http_body_util::{BodyExt, Full, Limited};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::{ApiError, Reason};
use kcp_apiserver::hooks::AccessReviews;
use kcp_auth::authz::DEEP_SAR_HEADER;
use kcp_auth::{Attributes, Decision};
use serde_json::{Value, json};
use tonic::transport::Channel;
use tower::ServiceExt;

/// How long a review may take before the request is answered 503.
const TIMEOUT: Duration = Duration::from_secs(5);
/// The most of a review's answer read (it is a few hundred bytes).
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Reviews asked of the shard over the connection kcp-vw follows its store by.
pub struct ShardReviews {
    channel: Channel,
}

impl ShardReviews {
    pub fn new(channel: Channel) -> ShardReviews {
        ShardReviews { channel }
    }

    /// POSTs the review; the shard's decision.
    async fn ask(&self, path: &str, body: String, deep: bool) -> Result<Decision, ApiError> {
        let unavailable = |why: &dyn std::fmt::Display| {
            ApiError::new(
                Reason::ServiceUnavailable,
                format!("the shard did not answer the authorization review: {why}"),
            )
        };
        let mut request = http::Request::post(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json");
        if deep {
            request = request.header(DEEP_SAR_HEADER, "true");
        }
        let request = request
            .body(tonic::body::Body::new(Full::new(Bytes::from(body))))
            .map_err(ApiError::internal)?;
        let asked = async {
            let answer =
                (self.channel.clone().oneshot(request).await).map_err(|e| unavailable(&e))?;
            let status = answer.status();
            let bytes = (Limited::new(answer.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await)
                .map_err(|e| unavailable(&e))?
                .to_bytes();
            Ok::<_, ApiError>((status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(TIMEOUT, asked)
            .await
            .map_err(|_| unavailable(&format!("no answer within {TIMEOUT:?}")))??;
        match status {
            StatusCode::CREATED => {}
            // A logical cluster the shard does not have: nobody there may do anything.
            StatusCode::NOT_FOUND => return Ok(Decision::NoOpinion),
            // Busy or failing: worth another try, as the client of any overloaded server knows.
            s if s == StatusCode::TOO_MANY_REQUESTS || s.is_server_error() => {
                return Err(unavailable(&s));
            }
            s => {
                // The shard's words stay in kcp-vw's log: they are about kcp-vw's credentials,
                // not the caller's request.
                tracing::warn!(status = %s, answer = %String::from_utf8_lossy(&bytes), "the shard refused an authorization review");
                return Err(ApiError::internal(format!(
                    "the shard refused the authorization review ({s})"
                )));
            }
        }
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::internal(format!("the shard's authorization review: {e}")))?;
        Ok(decision_of(&answer["status"]))
    }
}

#[async_trait]
impl AccessReviews for ShardReviews {
    async fn review(&self, attrs: &Attributes<'_>) -> Result<Decision, ApiError> {
        // Only a logical cluster's name goes into the review's path.
        if LogicalClusterName::parse(attrs.cluster).is_err() {
            return Ok(Decision::NoOpinion);
        }
        let path = format!(
            "/clusters/{}/apis/authorization.k8s.io/v1/subjectaccessreviews",
            attrs.cluster
        );
        self.ask(&path, review_of(attrs).to_string(), attrs.deep_review)
            .await
    }
}

/// The SubjectAccessReview asking about `attrs` (its cluster is the URL's).
fn review_of(attrs: &Attributes<'_>) -> Value {
    let mut spec = json!({});
    if let Some(user) = attrs.user {
        spec["user"] = json!(user.name);
        spec["groups"] = json!(user.groups);
        if !user.uid.is_empty() {
            spec["uid"] = json!(user.uid);
        }
        if !user.extra.is_empty() {
            spec["extra"] = json!(user.extra);
        }
    }
    if attrs.resource_request {
        spec["resourceAttributes"] = json!({
            "namespace": attrs.namespace,
            "verb": attrs.verb,
            "group": attrs.api_group,
            "version": attrs.api_version,
            "resource": attrs.resource,
            "subresource": attrs.subresource,
            "name": attrs.name,
        });
    } else {
        spec["nonResourceAttributes"] = json!({"path": attrs.path, "verb": attrs.verb});
    }
    json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": spec,
    })
}

/// A review's status as a decision: the reason is kept for the refusal's text.
fn decision_of(status: &Value) -> Decision {
    if status["allowed"] == true {
        return Decision::Allow;
    }
    match status["reason"].as_str() {
        Some(reason) if !reason.is_empty() => Decision::Deny(reason.to_string()),
        _ if status["denied"] == true => Decision::Deny(String::new()),
        _ => Decision::NoOpinion,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcp_auth::UserInfo;

    /// `list` on the content of export `cowboys` in `cluster`.
    fn content<'a>(user: &'a UserInfo, cluster: &'a str) -> Attributes<'a> {
        Attributes {
            user: Some(user),
            cluster,
            verb: "list",
            resource_request: true,
            api_group: "apis.kcp.io",
            api_version: "v1alpha1",
            resource: "apiexports",
            subresource: "content",
            name: "cowboys",
            ..Attributes::default()
        }
    }

    /// `get` of `/api` in `cluster`.
    fn discovery<'a>(user: &'a UserInfo, cluster: &'a str) -> Attributes<'a> {
        Attributes {
            user: Some(user),
            cluster,
            verb: "get",
            path: "/api",
            ..Attributes::default()
        }
    }

    #[test]
    fn a_review_names_the_user_and_what_it_asks() {
        let user = UserInfo {
            name: "bob".into(),
            uid: "b-1".into(),
            groups: vec!["system:authenticated".into()],
            extra: [("scopes".to_string(), vec!["cluster:x".to_string()])].into(),
        };
        let attrs = content(&user, "x");
        let review = review_of(&attrs);
        assert_eq!(review["spec"]["user"], "bob");
        assert_eq!(review["spec"]["uid"], "b-1");
        assert_eq!(review["spec"]["groups"], json!(["system:authenticated"]));
        assert_eq!(review["spec"]["extra"]["scopes"], json!(["cluster:x"]));
        let asked = &review["spec"]["resourceAttributes"];
        assert_eq!(asked["verb"], "list");
        assert_eq!(asked["group"], "apis.kcp.io");
        assert_eq!(asked["resource"], "apiexports");
        assert_eq!(asked["subresource"], "content");
        assert_eq!(asked["name"], "cowboys");
        assert!(review["spec"].get("nonResourceAttributes").is_none());

        let attrs = discovery(&user, "x");
        let review = review_of(&attrs);
        assert_eq!(
            review["spec"]["nonResourceAttributes"],
            json!({"path": "/api", "verb": "get"})
        );
        assert!(review["spec"].get("resourceAttributes").is_none());
    }

    #[test]
    fn an_answer_becomes_a_decision_with_its_reason() {
        assert_eq!(decision_of(&json!({"allowed": true})), Decision::Allow);
        assert_eq!(
            decision_of(&json!({"allowed": false, "denied": true, "reason": "no"})),
            Decision::Deny("no".into())
        );
        assert_eq!(
            decision_of(&json!({"allowed": false, "reason": "access not permitted"})),
            Decision::Deny("access not permitted".into())
        );
        assert_eq!(
            decision_of(&json!({"allowed": false, "denied": true})),
            Decision::Deny(String::new())
        );
        assert_eq!(decision_of(&json!({"allowed": false})), Decision::NoOpinion);
        assert_eq!(decision_of(&json!(null)), Decision::NoOpinion);
    }

    /// What the stub shard was asked: the path, whether deep, the review.
    type Asked = (String, bool, Value);

    /// A shard answering every review with `status` and `body` over HTTP/2, as kcp-shard does,
    /// telling what it was asked.
    async fn shard_answering(
        status: u16,
        body: &'static str,
    ) -> (ShardReviews, tokio::sync::mpsc::UnboundedReceiver<Asked>) {
        use hyper_util::rt::{TokioExecutor, TokioIo};
        let listener = (tokio::net::TcpListener::bind("127.0.0.1:0").await).expect("a port");
        let addr = listener.local_addr().expect("its address");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let tx = tx.clone();
                let service =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let tx = tx.clone();
                        async move {
                            let path = req.uri().path().to_string();
                            let deep = req.headers().contains_key(DEEP_SAR_HEADER);
                            let review = req.into_body().collect().await?.to_bytes();
                            let review = serde_json::from_slice(&review).unwrap_or_default();
                            let _ = tx.send((path, deep, review));
                            let answer = http::Response::builder()
                                .status(status)
                                .body(Full::new(Bytes::from_static(body.as_bytes())))
                                .expect("an answer");
                            Ok::<_, hyper::Error>(answer)
                        }
                    });
                tokio::spawn(
                    hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        let channel = (tonic::transport::Endpoint::from_shared(format!("http://{addr}")))
            .expect("an endpoint")
            .connect_lazy();
        (ShardReviews::new(channel), rx)
    }

    fn bob() -> UserInfo {
        UserInfo {
            name: "bob".into(),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        }
    }

    #[tokio::test]
    async fn the_shard_decides_and_is_asked_in_the_cluster() {
        let (reviews, mut asked) = shard_answering(
            201,
            r#"{"kind":"SubjectAccessReview","status":{"allowed":true}}"#,
        )
        .await;
        let user = bob();
        let attrs = content(&user, "provider");
        assert_eq!(reviews.review(&attrs).await, Ok(Decision::Allow));
        let (path, deep, review) = asked.recv().await.expect("asked");
        assert_eq!(
            path,
            "/clusters/provider/apis/authorization.k8s.io/v1/subjectaccessreviews"
        );
        assert!(!deep);
        assert_eq!(review["spec"]["user"], "bob");
        // Asked again for the next request: the shard's answer is never kept.
        let deep_attrs = Attributes {
            deep_review: true,
            ..attrs.clone()
        };
        assert_eq!(reviews.review(&deep_attrs).await, Ok(Decision::Allow));
        let (_, deep, _) = asked.recv().await.expect("asked again");
        assert!(deep, "a deep review carries kcp's header");
        // No name of a logical cluster, no review.
        let nowhere = Attributes {
            cluster: "a/../b?c",
            ..attrs.clone()
        };
        assert_eq!(reviews.review(&nowhere).await, Ok(Decision::NoOpinion));
        assert!(asked.try_recv().is_err());
    }

    #[tokio::test]
    async fn the_shards_refusals_and_failures_map_to_kubernetes_codes() {
        let user = bob();
        let attrs = discovery(&user, "provider");
        for (status, body, expected) in [
            (
                201,
                r#"{"status":{"allowed":false,"reason":"no"}}"#,
                Ok(Decision::Deny("no".into())),
            ),
            (404, "{}", Ok(Decision::NoOpinion)),
            (429, "{}", Err(503)),
            (503, "{}", Err(503)),
            (403, r#"{"message":"secret details"}"#, Err(500)),
            (201, "not json", Err(500)),
        ] {
            let (reviews, _asked) = shard_answering(status, body).await;
            let got = reviews.review(&attrs).await.map_err(|e| {
                assert!(!e.message.contains("secret"), "{e:?}");
                e.code
            });
            assert_eq!(got, expected, "{status} {body}");
        }
    }

    #[tokio::test]
    async fn a_shard_that_does_not_answer_is_503() {
        // Nothing listens on port 1.
        let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:1").connect_lazy();
        let reviews = ShardReviews::new(channel);
        let user = UserInfo {
            name: "bob".into(),
            ..UserInfo::default()
        };
        let attrs = discovery(&user, "x");
        let err = (reviews.review(&attrs).await).expect_err("nobody answers");
        assert_eq!(err.code, 503, "{err:?}");
    }
}
