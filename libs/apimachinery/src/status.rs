//! `metav1.Status` errors: every failure a client sees is one of these, with Kubernetes' reason and code.

use serde_json::{Map, Value, json};

/// Kubernetes' `StatusReason` values used by kcp-rs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    BadRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    NotAcceptable,
    AlreadyExists,
    Conflict,
    Gone,
    Expired,
    RequestEntityTooLarge,
    UnsupportedMediaType,
    Invalid,
    TooManyRequests,
    InternalError,
    Timeout,
    ServiceUnavailable,
}

impl Reason {
    /// Every reason, in declaration order.
    pub const ALL: [Reason; 17] = [
        Reason::BadRequest,
        Reason::Unauthorized,
        Reason::Forbidden,
        Reason::NotFound,
        Reason::MethodNotAllowed,
        Reason::NotAcceptable,
        Reason::AlreadyExists,
        Reason::Conflict,
        Reason::Gone,
        Reason::Expired,
        Reason::RequestEntityTooLarge,
        Reason::UnsupportedMediaType,
        Reason::Invalid,
        Reason::TooManyRequests,
        Reason::InternalError,
        Reason::Timeout,
        Reason::ServiceUnavailable,
    ];

    /// The reason a Status names, when it is one of these.
    pub fn parse(name: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::BadRequest => "BadRequest",
            Reason::Unauthorized => "Unauthorized",
            Reason::Forbidden => "Forbidden",
            Reason::NotFound => "NotFound",
            Reason::MethodNotAllowed => "MethodNotAllowed",
            Reason::NotAcceptable => "NotAcceptable",
            Reason::AlreadyExists => "AlreadyExists",
            Reason::Conflict => "Conflict",
            Reason::Gone => "Gone",
            Reason::Expired => "Expired",
            Reason::RequestEntityTooLarge => "RequestEntityTooLarge",
            Reason::UnsupportedMediaType => "UnsupportedMediaType",
            Reason::Invalid => "Invalid",
            Reason::TooManyRequests => "TooManyRequests",
            Reason::InternalError => "InternalError",
            Reason::Timeout => "Timeout",
            Reason::ServiceUnavailable => "ServiceUnavailable",
        }
    }

    /// The HTTP code Kubernetes pairs with this reason.
    pub fn code(self) -> u16 {
        match self {
            Reason::BadRequest => 400,
            Reason::Unauthorized => 401,
            Reason::Forbidden => 403,
            Reason::NotFound => 404,
            Reason::MethodNotAllowed => 405,
            Reason::NotAcceptable => 406,
            Reason::AlreadyExists | Reason::Conflict => 409,
            Reason::Gone | Reason::Expired => 410,
            Reason::RequestEntityTooLarge => 413,
            Reason::UnsupportedMediaType => 415,
            Reason::Invalid => 422,
            Reason::TooManyRequests => 429,
            Reason::InternalError => 500,
            Reason::ServiceUnavailable => 503,
            Reason::Timeout => 504,
        }
    }
}

/// One field-level cause of an `Invalid` (or other) error, as `metav1.StatusCause`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// e.g. `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`, `FieldValueDuplicate`,
    /// `FieldValueForbidden`, `FieldValueTooLong`, `FieldValueTypeInvalid`.
    pub reason: String,
    pub message: String,
    pub field: String,
}

impl Cause {
    pub fn new(reason: &str, field: impl Into<String>, message: impl Into<String>) -> Cause {
        Cause {
            reason: reason.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }

    /// `<field>: Invalid value: <value>: <detail>`, the way Kubernetes words an invalid value.
    pub fn invalid(field: &str, value: &Value, detail: &str) -> Cause {
        Cause::new(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {}: {detail}", render_value(value)),
        )
    }

    pub fn required(field: &str, detail: &str) -> Cause {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        Cause::new("FieldValueRequired", field, message)
    }

    pub fn forbidden(field: &str, detail: &str) -> Cause {
        Cause::new("FieldValueForbidden", field, format!("Forbidden: {detail}"))
    }

    pub fn not_supported(field: &str, value: &Value, supported: &[&str]) -> Cause {
        let quoted: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
        Cause::new(
            "FieldValueNotSupported",
            field,
            format!(
                "Unsupported value: {}: supported values: {}",
                render_value(value),
                quoted.join(", ")
            ),
        )
    }

    pub fn duplicate(field: &str, value: &Value) -> Cause {
        Cause::new(
            "FieldValueDuplicate",
            field,
            format!("Duplicate value: {}", render_value(value)),
        )
    }

    /// The full text Kubernetes shows in the error message: `field: message`.
    pub fn full_message(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

impl From<&crate::field_error::FieldError> for Cause {
    fn from(e: &crate::field_error::FieldError) -> Cause {
        Cause {
            reason: e.error_type.cause_type().to_string(),
            field: e.field.clone(),
            message: e.body(),
        }
    }
}

fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// A failed request, ready to be rendered as a `metav1.Status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    pub reason: Reason,
    /// The HTTP code; the reason's usual one unless set otherwise.
    pub code: u16,
    pub message: String,
    /// Boxed so errors stay small on the happy path's `Result`s.
    pub details: Box<Details>,
}

/// `metav1.StatusDetails`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Details {
    pub name: Option<String>,
    pub group: Option<String>,
    /// Kubernetes puts the resource (or kind) here.
    pub kind: Option<String>,
    pub causes: Vec<Cause>,
    pub retry_after_seconds: Option<u32>,
    /// A continue token for the rest of a list (the Status's `metadata.continue`): what an expired
    /// one may still do, inconsistently.
    pub list_continue: Option<String>,
    /// The Status's `reason` as someone else wrote it (an admission webhook's denial, passed on
    /// as Kubernetes does: any string, or none), instead of the error's [`Reason`].
    pub reason_as_sent: Option<String>,
}

/// `configmaps` for the core group, `roles.rbac.authorization.k8s.io` otherwise.
pub fn qualified_resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    pub fn new(reason: Reason, message: impl Into<String>) -> ApiError {
        ApiError {
            reason,
            code: reason.code(),
            message: message.into(),
            details: Box::default(),
        }
    }

    /// The object (or path) addressed does not exist, as client-go's `IsNotFound`.
    pub fn is_not_found(&self) -> bool {
        self.reason == Reason::NotFound
    }

    /// The write lost a race: a stale resourceVersion or precondition, as `IsConflict`.
    pub fn is_conflict(&self) -> bool {
        self.reason == Reason::Conflict
    }

    /// The object to create exists already, as `IsAlreadyExists`.
    pub fn is_already_exists(&self) -> bool {
        self.reason == Reason::AlreadyExists
    }

    /// A 409 of either kind: someone else's write got there first.
    pub fn is_conflict_or_exists(&self) -> bool {
        self.is_conflict() || self.is_already_exists()
    }

    /// Refused, as `IsForbidden`.
    pub fn is_forbidden(&self) -> bool {
        self.reason == Reason::Forbidden
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> ApiError {
        if !group.is_empty() {
            self.details.group = Some(group.to_string());
        }
        if !kind.is_empty() {
            self.details.kind = Some(kind.to_string());
        }
        if !name.is_empty() {
            self.details.name = Some(name.to_string());
        }
        self
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(Reason::BadRequest, message)
    }

    pub fn internal(message: impl std::fmt::Display) -> ApiError {
        ApiError::new(
            Reason::InternalError,
            format!("Internal error occurred: {message}"),
        )
    }

    pub fn not_found(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::new(
            Reason::NotFound,
            format!(
                "{} \"{name}\" not found",
                qualified_resource(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }

    /// A 404 for a path that serves nothing (Kubernetes' generic "the server could not find the requested resource").
    pub fn path_not_found() -> ApiError {
        ApiError::new(
            Reason::NotFound,
            "the server could not find the requested resource",
        )
    }

    pub fn already_exists(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::new(
            Reason::AlreadyExists,
            format!(
                "{} \"{name}\" already exists",
                qualified_resource(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }

    /// The optimistic-concurrency conflict of an update with a stale resourceVersion.
    pub fn conflict(group: &str, resource: &str, name: &str, detail: &str) -> ApiError {
        ApiError::new(
            Reason::Conflict,
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {detail}",
                qualified_resource(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }

    pub fn stale_object(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422: `Kind.group "name" is invalid: [cause, cause]` (the kind alone in the core group),
    /// as kube-apiserver words it.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> ApiError {
        // The message lists each text once (Go's error aggregate); the causes keep every one.
        let texts: Vec<String> = causes.iter().map(Cause::full_message).collect();
        let joined = match texts.is_empty() {
            true => "[]".to_string(),
            false => crate::field_error::aggregate_message(&texts),
        };
        let qualified = match group {
            "" => kind.to_string(),
            group => format!("{kind}.{group}"),
        };
        let mut err = ApiError::new(
            Reason::Invalid,
            format!("{qualified} \"{name}\" is invalid: {joined}"),
        )
        .with_details(group, kind, name);
        err.details.causes = causes;
        err
    }

    pub fn forbidden(group: &str, resource: &str, name: &str, detail: &str) -> ApiError {
        let qr = qualified_resource(group, resource);
        let message = if name.is_empty() {
            format!("{qr} is forbidden: {detail}")
        } else {
            format!("{qr} \"{name}\" is forbidden: {detail}")
        };
        ApiError::new(Reason::Forbidden, message).with_details(group, resource, name)
    }

    /// 403 for a non-resource path.
    pub fn forbidden_path(detail: &str) -> ApiError {
        ApiError::new(Reason::Forbidden, format!("forbidden: {detail}"))
    }

    pub fn unauthorized() -> ApiError {
        ApiError::new(Reason::Unauthorized, "Unauthorized")
    }

    pub fn method_not_allowed(message: impl Into<String>) -> ApiError {
        ApiError::new(Reason::MethodNotAllowed, message)
    }

    pub fn not_acceptable(accept: &str) -> ApiError {
        ApiError::new(
            Reason::NotAcceptable,
            format!(
                "only the following media types are accepted: application/json, application/yaml; got {accept:?}"
            ),
        )
    }

    pub fn unsupported_media_type(content_type: &str) -> ApiError {
        ApiError::new(
            Reason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf; got {content_type:?}"
            ),
        )
    }

    pub fn too_large(limit: usize) -> ApiError {
        ApiError::new(
            Reason::RequestEntityTooLarge,
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 410 for a resourceVersion older than the retained history.
    pub fn expired(message: impl Into<String>) -> ApiError {
        ApiError::new(Reason::Expired, message)
    }

    pub fn gone(message: impl Into<String>) -> ApiError {
        ApiError::new(Reason::Gone, message)
    }

    pub fn timeout(message: impl Into<String>) -> ApiError {
        ApiError::new(Reason::Timeout, message)
    }

    /// The `metav1.Status` object for this error.
    pub fn to_status(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        let metadata = match &self.details.list_continue {
            Some(token) => json!({ "continue": token }),
            None => json!({}),
        };
        status.insert("metadata".into(), metadata);
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.message));
        match &self.details.reason_as_sent {
            Some(reason) if reason.is_empty() => {}
            Some(reason) => {
                status.insert("reason".into(), json!(reason));
            }
            None => {
                status.insert("reason".into(), json!(self.reason.as_str()));
            }
        }
        let mut details = Map::new();
        let d = &self.details;
        if let Some(name) = &d.name {
            details.insert("name".into(), json!(name));
        }
        if let Some(group) = &d.group {
            details.insert("group".into(), json!(group));
        }
        if let Some(kind) = &d.kind {
            details.insert("kind".into(), json!(kind));
        }
        if !d.causes.is_empty() {
            let causes: Vec<Value> = d
                .causes
                .iter()
                .map(|c| {
                    // Kubernetes omits an empty field (`omitempty`).
                    let mut cause = json!({"reason": c.reason, "message": c.message});
                    if !c.field.is_empty() {
                        cause["field"] = json!(c.field);
                    }
                    cause
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if let Some(secs) = d.retry_after_seconds {
            details.insert("retryAfterSeconds".into(), json!(secs));
        }
        if !details.is_empty() {
            status.insert("details".into(), Value::Object(details));
        }
        status.insert("code".into(), json!(self.code));
        Value::Object(status)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.code,
            self.reason.as_str(),
            self.message
        )
    }
}

impl std::error::Error for ApiError {}

/// The `Status` a successful delete answers with when the object is gone at once.
pub fn success_status(group: &str, resource: &str, name: &str, uid: &str) -> Value {
    let mut details = Map::new();
    details.insert("name".into(), json!(name));
    if !group.is_empty() {
        details.insert("group".into(), json!(group));
    }
    details.insert("kind".into(), json!(resource));
    if !uid.is_empty() {
        details.insert("uid".into(), json!(uid));
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_reads_like_kubernetes() {
        let s = ApiError::not_found("", "configmaps", "x").to_status();
        assert_eq!(s["message"], "configmaps \"x\" not found");
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["kind"], "configmaps");
        let s = ApiError::not_found("rbac.authorization.k8s.io", "roles", "r").to_status();
        assert_eq!(
            s["message"],
            "roles.rbac.authorization.k8s.io \"r\" not found"
        );
        assert_eq!(s["details"]["group"], "rbac.authorization.k8s.io");
    }

    #[test]
    fn invalid_lists_causes() {
        let err = ApiError::invalid(
            "",
            "ConfigMap",
            "Bad_Name",
            vec![Cause::invalid(
                "metadata.name",
                &json!("Bad_Name"),
                "a lowercase RFC 1123 subdomain must consist of ...",
            )],
        );
        let s = err.to_status();
        assert_eq!(s["code"], 422);
        assert_eq!(
            s["message"],
            "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of ..."
        );
        assert_eq!(s["details"]["causes"][0]["field"], "metadata.name");
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueInvalid");
        let grouped = ApiError::invalid(
            "rbac.authorization.k8s.io",
            "ClusterRole",
            "a/b",
            vec![Cause::invalid(
                "metadata.name",
                &json!("a/b"),
                "may not contain '/'",
            )],
        );
        assert_eq!(
            grouped.to_status()["message"],
            "ClusterRole.rbac.authorization.k8s.io \"a/b\" is invalid: metadata.name: Invalid \
             value: \"a/b\": may not contain '/'"
        );
        assert_eq!(grouped.to_status()["details"]["kind"], "ClusterRole");
    }

    #[test]
    fn invalid_message_lists_a_repeated_cause_once() {
        let twice = vec![Cause::forbidden("spec.a", "no"); 2];
        let err = ApiError::invalid("", "ResourceQuota", "q", twice);
        assert_eq!(
            err.message,
            "ResourceQuota \"q\" is invalid: spec.a: Forbidden: no"
        );
        assert_eq!(err.details.causes.len(), 2);
        let mut three = vec![Cause::forbidden("spec.a", "no"); 2];
        three.push(Cause::forbidden("spec.b", "no"));
        let err = ApiError::invalid("", "ResourceQuota", "q", three);
        assert_eq!(
            err.message,
            "ResourceQuota \"q\" is invalid: [spec.a: Forbidden: no, spec.b: Forbidden: no]"
        );
    }

    #[test]
    fn conflict_message() {
        let s = ApiError::stale_object("", "configmaps", "c").to_status();
        assert_eq!(s["code"], 409);
        assert_eq!(s["reason"], "Conflict");
        assert!(
            s["message"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Operation cannot be fulfilled on configmaps \"c\"")
        );
    }
}
