//! The create-only review APIs: SubjectAccessReview and its local and self forms,
//! SelfSubjectRulesReview, SelfSubjectReview and TokenReview. Each answers from the request and the
//! authorizer (or authenticator) chain of the server; nothing is stored.

use std::collections::BTreeMap;

use http::{Response, StatusCode};
use kcp_api_types::ResourceDef;
use kcp_apimachinery::status::{ApiError, Cause};
use kcp_auth::{Attributes, Decision, RbacAuthorizer, UserInfo};
use serde_json::{Value, json};

use super::RequestContext;
use crate::ApiServer;
use crate::admission::rules::strings;
use kcp_http::request_info::Target;
use kcp_http::{Body, response};

/// What an access review asks about, owned (the spec's strings outlive no request).
#[derive(Debug, Default)]
struct Asked {
    resource_request: bool,
    verb: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
    path: String,
}

impl Asked {
    fn attributes<'a>(&'a self, user: &'a UserInfo, cluster: &'a str) -> Attributes<'a> {
        Attributes {
            user: Some(user),
            cluster,
            verb: &self.verb,
            resource_request: self.resource_request,
            api_group: &self.group,
            api_version: &self.version,
            resource: &self.resource,
            subresource: &self.subresource,
            namespace: &self.namespace,
            name: &self.name,
            path: &self.path,
            deep_review: false,
        }
    }
}

impl ApiServer {
    /// Answers a review with 201 and the object, its `status` filled in.
    pub(super) fn serve_review(
        &self,
        ctx: &RequestContext,
        def: &ResourceDef,
        mut obj: Value,
    ) -> Result<Response<Body>, ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request(format!(
                "the body of a {} must be an object",
                def.kind
            )));
        }
        let cluster = ctx.info.cluster.as_str();
        let status = match def.kind.as_str() {
            "SelfSubjectReview" => json!({"userInfo": user_json(&ctx.user)}),
            "SelfSubjectAccessReview" => {
                let asked = asked(def, &obj)?;
                self.access_status(&asked.attributes(&ctx.user, cluster))
            }
            "SubjectAccessReview" => {
                let user = spec_user(def, &obj)?;
                let asked = asked(def, &obj)?;
                let attrs = Attributes {
                    deep_review: ctx.deep_review,
                    ..asked.attributes(&user, cluster)
                };
                self.access_status(&attrs)
            }
            "LocalSubjectAccessReview" => {
                let namespace = path_namespace(ctx)?;
                set_object_namespace(&mut obj, namespace)?;
                let user = spec_user(def, &obj)?;
                let asked = asked(def, &obj)?;
                if !asked.resource_request {
                    return Err(invalid(
                        def,
                        Cause::invalid(
                            "spec.nonResourceAttributes",
                            &obj["spec"]["nonResourceAttributes"],
                            "disallowed on this kind of request",
                        ),
                    ));
                }
                if asked.namespace != namespace {
                    return Err(invalid(
                        def,
                        Cause::invalid(
                            "spec.resourceAttributes.namespace",
                            &json!(asked.namespace),
                            "must match metadata.namespace",
                        ),
                    ));
                }
                self.access_status(&asked.attributes(&user, cluster))
            }
            "SelfSubjectRulesReview" => {
                let namespace = obj
                    .pointer("/spec/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                // Rules are per namespace: Kubernetes' REST refuses a review without one.
                if namespace.is_empty() {
                    return Err(ApiError::bad_request("no namespace on request"));
                }
                self.rules_status(&ctx.user, cluster, namespace)
            }
            "TokenReview" => self.token_review_status(def, &obj)?,
            _ => return Err(ApiError::path_not_found()),
        };
        obj["apiVersion"] = json!(def.api_version());
        obj["kind"] = json!(def.kind);
        if !obj.get("metadata").is_some_and(Value::is_object) {
            obj["metadata"] = json!({});
        }
        obj["metadata"]["creationTimestamp"] = Value::Null;
        obj["status"] = status;
        Ok(response::json_value(StatusCode::CREATED, &obj))
    }

    /// Asks the authorizer chain, as the request path does, and reports the answer as a
    /// SubjectAccessReview status: a chain with no opinion is neither allowed nor denied.
    fn access_status(&self, attrs: &Attributes<'_>) -> Value {
        let mut status = json!({"allowed": false});
        match self.decide(attrs) {
            Decision::Allow => status["allowed"] = json!(true),
            // kcp's content authorizer has no opinion where the caller may not enter: refused,
            // not denied (a later authorizer could still allow).
            Decision::Deny(reason) if reason == kcp_auth::authz::kcp::ACCESS_NOT_PERMITTED => {
                status["reason"] = json!(reason);
            }
            Decision::Deny(reason) => {
                status["denied"] = json!(true);
                if !reason.is_empty() {
                    status["reason"] = json!(reason);
                }
            }
            Decision::NoOpinion => {}
        }
        status
    }

    /// The RBAC rules of `user` in `cluster` and `namespace`.
    fn rules_status(&self, user: &UserInfo, cluster: &str, namespace: &str) -> Value {
        let mut rules =
            RbacAuthorizer::new(self.config.rbac.clone()).rules_for(user, cluster, namespace);
        if user.is_system_masters() {
            let all = vec!["*".to_string()];
            rules.resource_rules.insert(
                0,
                kcp_auth::authz::rbac::ResourceRule {
                    verbs: all.clone(),
                    api_groups: all.clone(),
                    resources: all.clone(),
                    resource_names: Vec::new(),
                },
            );
            rules.non_resource_rules.insert(
                0,
                kcp_auth::authz::rbac::NonResourceRule {
                    verbs: all.clone(),
                    non_resource_urls: all,
                },
            );
        }
        rules.to_status_json()
    }
}

/// `authentication.k8s.io/v1` UserInfo.
pub(super) fn user_json(user: &UserInfo) -> Value {
    let mut info = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    info
}

fn invalid(def: &ResourceDef, cause: Cause) -> ApiError {
    ApiError::invalid(&def.group, &def.kind, "", vec![cause])
}

fn string_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The attributes of `spec.resourceAttributes` or `spec.nonResourceAttributes` (exactly one).
fn asked(def: &ResourceDef, obj: &Value) -> Result<Asked, ApiError> {
    let spec = &obj["spec"];
    let ra = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let nra = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    match (ra, nra) {
        (Some(_), Some(nra)) => Err(invalid(
            def,
            Cause::invalid(
                "spec.nonResourceAttributes",
                nra,
                "cannot be specified in combination with resourceAttributes",
            ),
        )),
        (None, None) => Err(invalid(
            def,
            Cause::required(
                "spec.resourceAttributes",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ),
        )),
        (Some(ra), None) => Ok(Asked {
            resource_request: true,
            verb: string_at(ra, "verb").to_string(),
            group: string_at(ra, "group").to_string(),
            version: string_at(ra, "version").to_string(),
            resource: string_at(ra, "resource").to_string(),
            subresource: string_at(ra, "subresource").to_string(),
            namespace: string_at(ra, "namespace").to_string(),
            name: string_at(ra, "name").to_string(),
            path: String::new(),
        }),
        (None, Some(nra)) => Ok(Asked {
            verb: string_at(nra, "verb").to_string(),
            path: string_at(nra, "path").to_string(),
            ..Asked::default()
        }),
    }
}

/// The subject of a (Local)SubjectAccessReview: `spec.user`, `groups`, `extra`, `uid`.
fn spec_user(def: &ResourceDef, obj: &Value) -> Result<UserInfo, ApiError> {
    let spec = &obj["spec"];
    let extra: BTreeMap<String, Vec<String>> = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), strings(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    let user = UserInfo {
        name: string_at(spec, "user").to_string(),
        uid: string_at(spec, "uid").to_string(),
        groups: strings(spec.get("groups")),
        extra,
    };
    if user.name.is_empty() && user.groups.is_empty() {
        return Err(invalid(
            def,
            Cause::invalid(
                "spec.user",
                &json!(""),
                "at least one of user or group must be specified",
            ),
        ));
    }
    Ok(user)
}

fn path_namespace(ctx: &RequestContext) -> Result<&str, ApiError> {
    match &ctx.info.target {
        Target::Resource(r) => r
            .namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
            .ok_or_else(|| ApiError::bad_request("namespace is required on this type: ")),
        _ => Err(ApiError::path_not_found()),
    }
}

/// `metadata.namespace` defaults to the request's and may not differ from it, as for every
/// namespaced create.
fn set_object_namespace(obj: &mut Value, namespace: &str) -> Result<(), ApiError> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    match obj["metadata"].get("namespace").and_then(Value::as_str) {
        None | Some("") => {
            obj["metadata"]["namespace"] = json!(namespace);
            Ok(())
        }
        Some(ns) if ns == namespace => Ok(()),
        Some(_) => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
    }
}
