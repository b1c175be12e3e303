//! Admission webhooks per logical cluster: the Mutating- and ValidatingWebhookConfigurations of an
//! LC apply to the writes in that LC only.
//!
//! Known differences from kube-apiserver: `matchPolicy: Equivalent` treats every version of the same
//! group and resource as equivalent and sends the object in the version it was written in (no
//! conversion); `matchConditions` see `object`, `oldObject` and `request` untyped and have no
//! `authorizer`; audit annotations are dropped; each call opens its own
//! connection; a refusal without a known `reason` is reported with the reason matching its code.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::join_all;
use kcp_apimachinery::status::{ApiError, Reason};
use serde_json::{Value, json};

use super::config::{Configurations, Flavor, Webhook};
use super::matching;
use super::review;
use super::{Admission, Attributes};
use crate::registry::CLUSTER_ANNOTATION;
use crate::watch_cache::WatchCache;

/// The webhooks configured in each logical cluster, read from the watch cache.
pub struct WebhookAdmission {
    cache: Arc<WatchCache>,
    mutating: Configurations,
    validating: Configurations,
}

/// How a call went wrong, kept apart as kube-apiserver does: only call failures obey `failurePolicy`.
enum CallFailure {
    /// The webhook could not be called or answered nonsense ("failed calling webhook ...").
    Calling(String),
    /// The webhook refused, or the request cannot be sent to it at all.
    Rejected(ApiError),
}

fn selector_error(hook: &Webhook, which: &str, err: &str) -> ApiError {
    ApiError::internal(format!("webhook {:?}: invalid {which}: {err}", hook.name))
}

/// `admission webhook "x" denied the request: <message>`, with the webhook's code (at least 400).
fn denial(hook: &Webhook, status: Option<&Value>) -> ApiError {
    let text = |k: &str| {
        status
            .and_then(|s| s.get(k))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let denied_by = format!("admission webhook {:?} denied the request", hook.name);
    let message = match (text("message"), text("reason")) {
        (Some(m), _) | (None, Some(m)) => format!("{denied_by}: {m}"),
        (None, None) => format!("{denied_by} without explanation"),
    };
    let code = status
        .and_then(|s| s.get("code"))
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let reason = text("reason")
        .and_then(Reason::parse)
        .unwrap_or_else(|| reason_for_code(code));
    let mut err = ApiError::new(reason, message);
    err.code = code;
    // The client sees the webhook's own reason, whatever it is (none if it gave none).
    err.details.reason_as_sent = Some(text("reason").unwrap_or_default().to_string());
    err
}

fn reason_for_code(code: u16) -> Reason {
    match code {
        401 => Reason::Unauthorized,
        403 => Reason::Forbidden,
        404 => Reason::NotFound,
        405 => Reason::MethodNotAllowed,
        406 => Reason::NotAcceptable,
        409 => Reason::Conflict,
        410 => Reason::Gone,
        413 => Reason::RequestEntityTooLarge,
        415 => Reason::UnsupportedMediaType,
        422 => Reason::Invalid,
        429 => Reason::TooManyRequests,
        504 => Reason::Timeout,
        503 => Reason::ServiceUnavailable,
        c if c >= 500 => Reason::InternalError,
        _ => Reason::BadRequest,
    }
}

impl WebhookAdmission {
    pub fn new(cache: Arc<WatchCache>) -> WebhookAdmission {
        WebhookAdmission {
            cache,
            mutating: Configurations::new(Flavor::Mutating),
            validating: Configurations::new(Flavor::Validating),
        }
    }

    /// Whether `hook` selects this request: rules, then namespace and object selectors.
    fn should_call(
        &self,
        hook: &Webhook,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<bool, ApiError> {
        let input = matching::rule_input(attrs);
        let ruled = hook.rules.iter().any(|r| {
            r.matches(&input, false) || (hook.match_equivalent && r.matches(&input, true))
        });
        if !ruled {
            return Ok(false);
        }
        let ns_selector = hook
            .namespace_selector
            .as_ref()
            .map_err(|e| selector_error(hook, "namespaceSelector", e))?;
        let obj_selector = hook
            .object_selector
            .as_ref()
            .map_err(|e| selector_error(hook, "objectSelector", e))?;
        if !matching::selectors_match(&self.cache, ns_selector, obj_selector, attrs, object)? {
            return Ok(false);
        }
        Self::conditions_hold(hook, attrs, object)
    }

    /// `matchConditions`: any false skips the webhook; errors (with none false) fail the request
    /// as 403 under `failurePolicy: Fail` and skip the webhook under `Ignore`.
    fn conditions_hold(
        hook: &Webhook,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<bool, ApiError> {
        if hook.match_conditions.is_empty() {
            return Ok(true);
        }
        let values = matching::variables(attrs, object);
        let refs: Vec<(&str, &Value)> = values.iter().map(|(n, v)| (*n, v)).collect();
        match matching::conditions_hold(&hook.match_conditions, &refs) {
            Ok(holds) => Ok(holds),
            Err(_) if hook.fail_open => Ok(false),
            Err(errors) => {
                let def = attrs.def;
                Err(ApiError::forbidden(
                    &def.group,
                    &def.plural,
                    attrs.name,
                    &errors,
                ))
            }
        }
    }

    /// One call: the dry-run rule, the review, and the checks on the answer.
    async fn call(
        &self,
        hook: &Webhook,
        mutating: bool,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<review::Verdict, CallFailure> {
        if attrs.dry_run {
            match hook.side_effects.as_str() {
                "None" | "NoneOnDryRun" => {}
                "" => return Err(CallFailure::Calling("Webhook SideEffects is nil".into())),
                _ => {
                    return Err(CallFailure::Rejected(ApiError::bad_request(format!(
                        "admission webhook {:?} does not support dry run",
                        hook.name
                    ))));
                }
            }
        }
        let endpoint = hook
            .endpoint
            .as_ref()
            .map_err(|e| CallFailure::Calling(format!("could not get REST client: {e}")))?;
        let uid = uuid::Uuid::new_v4().to_string();
        let body = serde_json::to_vec(&review::request(&uid, attrs, object)).map_err(|e| {
            CallFailure::Calling(format!("could not create admission objects: {e}"))
        })?;
        let answer = endpoint
            .post(body, hook.timeout)
            .await
            .map_err(|e| CallFailure::Calling(format!("failed to call webhook: {e}")))?;
        let verdict = review::verify(&uid, mutating, &answer)
            .map_err(|e| CallFailure::Calling(format!("received invalid webhook response: {e}")))?;
        for w in &verdict.warnings {
            super::warnings::add(w.clone());
        }
        if !verdict.allowed {
            return Err(CallFailure::Rejected(denial(hook, verdict.status.as_ref())));
        }
        Ok(verdict)
    }

    /// Turns a failure into the request's error, or `None` when `failurePolicy: Ignore` lets it pass.
    fn failure(hook: &Webhook, failure: CallFailure) -> Option<ApiError> {
        match failure {
            CallFailure::Calling(reason) => {
                let message = format!("failed calling webhook {:?}: {reason}", hook.name);
                if hook.fail_open {
                    tracing::warn!(webhook = %hook.name, %message, "failing open");
                    None
                } else {
                    Some(ApiError::internal(message))
                }
            }
            CallFailure::Rejected(err) => Some(err),
        }
    }

    /// Calls one mutating webhook and applies its patch; whether the object changed.
    async fn mutate_once(
        &self,
        hook: &Webhook,
        attrs: &Attributes<'_>,
        object: &mut Option<&mut Value>,
    ) -> Result<bool, ApiError> {
        let verdict = match self.call(hook, true, attrs, object.as_deref()).await {
            Ok(v) => v,
            Err(failure) => return Self::failure(hook, failure).map_or(Ok(false), Err),
        };
        let Some(ops) = verdict
            .patch
            .filter(|p| p.as_array().is_some_and(|a| !a.is_empty()))
        else {
            return Ok(false);
        };
        let Some(obj) = object.as_deref_mut() else {
            return Err(ApiError::internal(format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            )));
        };
        let patched = kcp_apimachinery::patch::apply_json_patch(obj, &ops)
            .map_err(|e| ApiError::internal(format!("webhook {:?}: {e}", hook.name)))?;
        let changed = patched != *obj;
        *obj = patched;
        Ok(changed)
    }
}

#[async_trait]
impl Admission for WebhookAdmission {
    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        mut object: Option<&mut Value>,
    ) -> Result<bool, ApiError> {
        let hooks = self.mutating.webhooks(&self.cache, attrs.cluster);
        if hooks.is_empty() {
            return Ok(false);
        }
        if let Some(meta) = object
            .as_deref_mut()
            .and_then(|o| o.get_mut("metadata"))
            .and_then(Value::as_object_mut)
        {
            // Webhooks see the logical cluster, as on every stored object.
            let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(a) = annotations.as_object_mut() {
                a.insert(CLUSTER_ANNOTATION.into(), json!(attrs.cluster));
            }
        }
        // Round one calls every matching webhook in order. A change by one webhook makes the
        // IfNeeded webhooks invoked before it due for one more call in round two.
        let mut invoked_reinvocable: Vec<(String, usize)> = Vec::new();
        let mut reinvoke: HashSet<(String, usize)> = HashSet::new();
        for hook in &hooks {
            if !self.should_call(hook, attrs, object.as_deref())? {
                continue;
            }
            if self.mutate_once(hook, attrs, &mut object).await? {
                reinvoke.extend(invoked_reinvocable.iter().cloned());
            }
            if hook.reinvoke_if_needed {
                invoked_reinvocable.push(hook.id.clone());
            }
        }
        // Webhooks ran (and the cluster annotation was set): the object may have changed.
        if reinvoke.is_empty() {
            return Ok(true);
        }
        for hook in hooks.iter().filter(|h| reinvoke.contains(&h.id)) {
            if self.should_call(hook, attrs, object.as_deref())? {
                self.mutate_once(hook, attrs, &mut object).await?;
            }
        }
        Ok(true)
    }

    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        let hooks = self.validating.webhooks(&self.cache, attrs.cluster);
        if hooks.is_empty() {
            return Ok(());
        }
        let mut relevant = Vec::new();
        for hook in &hooks {
            if self.should_call(hook, attrs, object)? {
                relevant.push(hook.clone());
            }
        }
        // Validating webhooks cannot see each other's effects, so they run at once.
        let outcomes = join_all(relevant.iter().map(|hook| async move {
            match self.call(hook, false, attrs, object).await {
                Ok(_) => None,
                Err(failure) => Self::failure(hook, failure),
            }
        }))
        .await;
        match outcomes.into_iter().flatten().next() {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kcp_apimachinery::selector::Selector;

    fn hook() -> Webhook {
        Webhook {
            name: "deny.example.com".into(),
            id: ("k".into(), 0),
            endpoint: Err("unused".into()),
            rules: Vec::new(),
            fail_open: false,
            match_equivalent: true,
            namespace_selector: Ok(Selector::everything()),
            object_selector: Ok(Selector::everything()),
            side_effects: "None".into(),
            timeout: std::time::Duration::from_secs(1),
            reinvoke_if_needed: false,
            match_conditions: Vec::new(),
        }
    }

    #[test]
    fn denials_read_as_kubernetes_words_them() {
        let err = denial(&hook(), Some(&json!({"code": 403, "message": "no"})));
        assert_eq!(err.code, 403);
        assert_eq!(err.reason, Reason::Forbidden);
        assert_eq!(
            err.message,
            r#"admission webhook "deny.example.com" denied the request: no"#
        );
        let err = denial(&hook(), None);
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            r#"admission webhook "deny.example.com" denied the request without explanation"#
        );
        let err = denial(&hook(), Some(&json!({"code": 200, "reason": "Invalid"})));
        assert_eq!((err.code, err.reason), (400, Reason::Invalid));
        // The webhook's reason reaches the client as it is, or none.
        let err = denial(&hook(), Some(&json!({"message": "nope", "reason": "Nope"})));
        assert_eq!(err.to_status()["reason"], "Nope");
        let err = denial(&hook(), Some(&json!({"code": 403, "message": "no"})));
        assert_eq!(err.to_status().get("reason"), None);
    }

    #[test]
    fn only_call_failures_obey_the_failure_policy() {
        let mut h = hook();
        h.fail_open = true;
        assert!(WebhookAdmission::failure(&h, CallFailure::Calling("x".into())).is_none());
        let rejected = CallFailure::Rejected(ApiError::bad_request("no"));
        assert!(WebhookAdmission::failure(&h, rejected).is_some());
        h.fail_open = false;
        let err = WebhookAdmission::failure(&h, CallFailure::Calling("boom".into()));
        assert_eq!(
            err.map(|e| (e.code, e.message)),
            Some((
                500,
                r#"Internal error occurred: failed calling webhook "deny.example.com": boom"#
                    .into()
            ))
        );
    }
}

#[cfg(test)]
mod condition_tests {
    use super::*;
    use kcp_auth::UserInfo;

    fn with_conditions(conditions: Value, fail_open: bool) -> Webhook {
        let mut hook = super::super::config::tests_support::webhook(json!({
            "name": "cond.example.com",
            "failurePolicy": if fail_open { "Ignore" } else { "Fail" },
            "matchConditions": conditions,
        }));
        hook.fail_open = fail_open;
        hook
    }

    fn check(hook: &Webhook, object: &Value) -> Result<bool, ApiError> {
        let defs = kcp_api_types::builtin::catalogue();
        let def = defs
            .iter()
            .find(|d| d.group.is_empty() && d.plural == "configmaps")
            .expect("configmaps are built in");
        let user = UserInfo::default();
        let attrs = Attributes {
            def,
            cluster: "root",
            namespace: Some("default"),
            name: "cm",
            operation: super::super::Operation::Create,
            subresource: None,
            user: &user,
            dry_run: false,
            old_object: None,
        };
        WebhookAdmission::conditions_hold(hook, &attrs, Some(object))
    }

    #[test]
    fn every_condition_must_hold() {
        let hook = with_conditions(
            json!([
                {"name": "create", "expression": "request.operation == 'CREATE'"},
                {"name": "named", "expression": "object.metadata.name.startsWith('keep')"},
            ]),
            false,
        );
        assert_eq!(
            check(&hook, &json!({"metadata": {"name": "keep-1"}})),
            Ok(true)
        );
        assert_eq!(
            check(&hook, &json!({"metadata": {"name": "other"}})),
            Ok(false)
        );
    }

    #[test]
    fn errors_follow_the_failure_policy() {
        let conditions = json!([{"name": "broken", "expression": "object.spec.missing == 1"}]);
        let obj = json!({"metadata": {"name": "x"}});
        let err = check(&with_conditions(conditions.clone(), false), &obj);
        assert!(
            matches!(&err, Err(e) if e.is_forbidden() && e.message.contains("matchCondition \"broken\"")),
            "{err:?}"
        );
        assert_eq!(check(&with_conditions(conditions, true), &obj), Ok(false));
        let uncompilable = json!([{"name": "bad", "expression": "nope("}]);
        assert!(check(&with_conditions(uncompilable, false), &obj).is_err());
    }
}
