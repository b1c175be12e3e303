//! kcp-vw's authorization decisions, asked of the shard by SubjectAccessReview, as kcp's
//! virtual-workspace server asks its shard (kcp's delegated authorizer).
//!
//! The shard's answer is the decision. An allowing answer is kept [`ALLOWED_TTL`] (as
//! kube-apiserver's webhook authorizer keeps answers), so a controller's requests cost one review,
//! not one each; but only while kcp-vw's mirror of the cluster's RBAC objects is unchanged, so a
//! revoked grant takes effect as soon as kcp-vw sees the change. Refusals are not kept: a grant
//! the shard acknowledged is used by the next request, however far kcp-vw's mirror has got.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use kcp_apimachinery::status::{ApiError, Reason};
use kcp_apiserver::hooks::AccessReviews;
use kcp_auth::authz::DEEP_SAR_HEADER;
use kcp_auth::{Attributes, Decision, RbacIndex};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tonic::transport::Channel;
use tower::ServiceExt;

/// How long an allowing answer is used at most.
pub const ALLOWED_TTL: Duration = Duration::from_secs(10);
/// How long a review may take before the request is answered 503.
const TIMEOUT: Duration = Duration::from_secs(5);
/// Answers kept at most; past it the oldest half is forgotten.
const MAX_KEPT: usize = 10_000;
/// The most of a review's answer read (it is a few hundred bytes).
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Reviews asked of the shard over the connection kcp-vw follows its store by.
pub struct ShardReviews {
    channel: Channel,
    /// kcp-vw's mirror of the RBAC objects: only to tell when a kept answer may be stale.
    rbac: Arc<RbacIndex>,
    /// The allowed reviews, by path and body: until when, and the RBAC generation asked at.
    kept: Mutex<HashMap<String, (Instant, u64)>>,
}

impl ShardReviews {
    pub fn new(channel: Channel, rbac: Arc<RbacIndex>) -> ShardReviews {
        ShardReviews {
            channel,
            rbac,
            kept: Mutex::new(HashMap::new()),
        }
    }

    /// Changes whenever the RBAC objects a decision in `cluster` rests on change.
    fn generation(&self, cluster: &str) -> u64 {
        (self.rbac.generation_of(cluster))
            .wrapping_add(self.rbac.generation_of(self.rbac.bootstrap_cluster()))
    }

    fn allowed(&self, key: &str, generation: u64) -> bool {
        let kept = self.kept.lock();
        kept.get(key)
            .is_some_and(|(until, at)| Instant::now() < *until && *at == generation)
    }

    fn keep(&self, key: String, generation: u64) {
        let now = Instant::now();
        let mut kept = self.kept.lock();
        if kept.len() >= MAX_KEPT {
            kept.retain(|_, (until, _)| *until > now);
            if kept.len() >= MAX_KEPT {
                kept.clear();
            }
        }
        kept.insert(key, (now + ALLOWED_TTL, generation));
    }

    /// POSTs the review; the shard's decision.
    async fn ask(&self, path: &str, body: &str, deep: bool) -> Result<Decision, ApiError> {
        let unavailable = |why: String| {
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
            .body(tonic::body::Body::new(Full::new(Bytes::from(
                body.to_string(),
            ))))
            .map_err(ApiError::internal)?;
        let asked = async {
            let answer = (self.channel.clone().oneshot(request).await)
                .map_err(|e| unavailable(e.to_string()))?;
            let status = answer.status();
            let bytes = (Limited::new(answer.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await)
                .map_err(|e| unavailable(e.to_string()))?
                .to_bytes();
            Ok::<_, ApiError>((status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(TIMEOUT, asked)
            .await
            .map_err(|_| unavailable(format!("no answer within {TIMEOUT:?}")))??;
        if status != http::StatusCode::CREATED {
            return Err(ApiError::internal(format!(
                "the shard refused the authorization review ({status}): {}",
                String::from_utf8_lossy(&bytes)
            )));
        }
        let answer: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::internal(format!("the shard's authorization review: {e}")))?;
        Ok(decision_of(&answer["status"]))
    }
}

#[async_trait]
impl AccessReviews for ShardReviews {
    async fn review(&self, attrs: &Attributes<'_>) -> Result<Decision, ApiError> {
        let path = format!(
            "/clusters/{}/apis/authorization.k8s.io/v1/subjectaccessreviews",
            attrs.cluster
        );
        let body = review_of(attrs).to_string();
        let key = format!("{}{path}\n{body}", u8::from(attrs.deep_review));
        // Read before asking: a change seen while the review is out makes the answer stale.
        let generation = self.generation(attrs.cluster);
        if self.allowed(&key, generation) {
            return Ok(Decision::Allow);
        }
        let decision = self.ask(&path, &body, attrs.deep_review).await?;
        if decision == Decision::Allow {
            self.keep(key, generation);
        }
        Ok(decision)
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

    #[test]
    fn a_review_names_the_user_and_what_it_asks() {
        let user = UserInfo {
            name: "bob".into(),
            uid: "b-1".into(),
            groups: vec!["system:authenticated".into()],
            extra: [("scopes".to_string(), vec!["cluster:x".to_string()])].into(),
        };
        let attrs = Attributes {
            user: Some(&user),
            cluster: "x",
            verb: "list",
            resource_request: true,
            api_group: "apis.kcp.io",
            api_version: "v1alpha1",
            resource: "apiexports",
            subresource: "content",
            name: "cowboys",
            ..Attributes::default()
        };
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

        let attrs = Attributes {
            user: Some(&user),
            cluster: "x",
            verb: "get",
            path: "/api",
            ..Attributes::default()
        };
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

    fn unanswered() -> ShardReviews {
        // Nothing listens on port 1.
        let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:1").connect_lazy();
        ShardReviews::new(channel, Arc::new(RbacIndex::default()))
    }

    #[tokio::test]
    async fn allowed_answers_are_kept_while_the_rbac_and_their_time_last() {
        let reviews = unanswered();
        let at = reviews.generation("x");
        reviews.keep("a".into(), at);
        assert!(reviews.allowed("a", at));
        assert!(!reviews.allowed("other", at));
        // The cluster's RBAC changed: asked again.
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "r"}, "rules": []});
        (reviews.rbac.apply_object("x", &role)).expect("a ClusterRole");
        assert_ne!(reviews.generation("x"), at);
        assert!(!reviews.allowed("a", reviews.generation("x")));
        // Past its time an answer is asked again.
        reviews.kept.lock().insert(
            "old".into(),
            (Instant::now() - Duration::from_millis(1), at),
        );
        assert!(!reviews.allowed("old", at));
    }

    #[tokio::test]
    async fn a_shard_that_does_not_answer_is_503() {
        let reviews = unanswered();
        let user = UserInfo {
            name: "bob".into(),
            ..UserInfo::default()
        };
        let attrs = Attributes {
            user: Some(&user),
            cluster: "x",
            verb: "get",
            path: "/api",
            ..Attributes::default()
        };
        let err = (reviews.review(&attrs).await).expect_err("nobody answers");
        assert_eq!(err.code, 503, "{err:?}");
        // A failure is not kept: the next request asks again.
        assert!(reviews.kept.lock().is_empty());
    }
}
