//! Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`).
//!
//! kubectl's typed commands (`create namespace|configmap|secret|serviceaccount|quota|role|...`,
//! `auth can-i`, `auth whoami`) and client-go's typed clients send protobuf and never fall back
//! to JSON, so the server turns those bodies into the JSON a client would have sent and handles
//! them like any JSON body. The wire format is the magic `k8s\0` followed by a `runtime.Unknown`
//! message whose `raw` field holds the object.

mod json;
pub mod types;

use prost::Message as _;
use serde_json::Value;

use crate::field_error::go_quote;

/// Media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// Prefix of every Kubernetes protobuf body.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// Decoding errors; the API edge answers 415 for [`ProtobufError::UnsupportedKind`] and 400 for
/// the others.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    #[error("empty data")]
    EmptyData,
    /// Only the magic, no envelope.
    #[error("empty body")]
    EmptyBody,
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    MissingMagic,
    #[error("unable to decode protobuf envelope: {0}")]
    MalformedEnvelope(String),
    /// Neither the envelope nor the request says what the object is.
    #[error("Object 'Kind' is missing in protobuf envelope")]
    MissingKind,
    /// A kind this server cannot decode from protobuf.
    #[error(
        "no kind {} is registered for version {} in protobuf decoding",
        go_quote(kind),
        go_quote(api_version)
    )]
    UnsupportedKind { api_version: String, kind: String },
    /// The object bytes are not a valid message of the kind.
    #[error("unable to decode {kind} from protobuf: {message}")]
    Malformed { kind: String, message: String },
}

/// The `runtime.Unknown` envelope.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Envelope {
    pub api_version: String,
    pub kind: String,
    pub raw: Vec<u8>,
    pub content_encoding: String,
    pub content_type: String,
}

/// Splits off the magic and decodes the envelope.
pub fn decode_envelope(body: &[u8]) -> Result<Envelope, ProtobufError> {
    if body.is_empty() {
        return Err(ProtobufError::EmptyData);
    }
    let Some(data) = body.strip_prefix(&MAGIC) else {
        return Err(ProtobufError::MissingMagic);
    };
    if data.is_empty() {
        return Err(ProtobufError::EmptyBody);
    }
    let unknown = types::Unknown::decode(data)
        .map_err(|e| ProtobufError::MalformedEnvelope(e.to_string()))?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    Ok(Envelope {
        api_version: type_meta.api_version.unwrap_or_default(),
        kind: type_meta.kind.unwrap_or_default(),
        raw: unknown.raw.unwrap_or_default(),
        content_encoding: unknown.content_encoding.unwrap_or_default(),
        content_type: unknown.content_type.unwrap_or_default(),
    })
}

/// Builds a body the way client-go does: magic, then the envelope with empty content
/// encoding and type.
pub fn encode_envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let unknown = types::Unknown {
        type_meta: Some(types::TypeMeta {
            api_version: Some(api_version.to_owned()),
            kind: Some(kind.to_owned()),
        }),
        raw: Some(raw.to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = MAGIC.to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

/// The kinds [`decode_object`] knows.
#[derive(Clone, Copy)]
enum Known {
    Namespace,
    ConfigMap,
    Secret,
    ServiceAccount,
    ResourceQuota,
    LimitRange,
    Event,
    EventsEvent,
    Lease,
    Role,
    ClusterRole,
    RoleBinding,
    CertificateSigningRequest,
    MutatingWebhookConfiguration,
    ValidatingWebhookConfiguration,
    SelfSubjectAccessReview,
    SelfSubjectReview,
    SelfSubjectRulesReview,
    TokenRequest,
    SubjectAccessReview,
    TokenReview,
}

fn known(api_version: &str, kind: &str) -> Option<Known> {
    Some(match (api_version, kind) {
        ("v1", "Namespace") => Known::Namespace,
        ("v1", "ConfigMap") => Known::ConfigMap,
        ("v1", "Secret") => Known::Secret,
        ("v1", "ServiceAccount") => Known::ServiceAccount,
        ("v1", "ResourceQuota") => Known::ResourceQuota,
        ("v1", "LimitRange") => Known::LimitRange,
        ("v1", "Event") => Known::Event,
        ("events.k8s.io/v1", "Event") => Known::EventsEvent,
        ("coordination.k8s.io/v1", "Lease") => Known::Lease,
        ("rbac.authorization.k8s.io/v1", "Role") => Known::Role,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => Known::ClusterRole,
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => {
            Known::RoleBinding
        }
        ("certificates.k8s.io/v1", "CertificateSigningRequest") => Known::CertificateSigningRequest,
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => {
            Known::MutatingWebhookConfiguration
        }
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => {
            Known::ValidatingWebhookConfiguration
        }
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => Known::SelfSubjectAccessReview,
        ("authentication.k8s.io/v1", "SelfSubjectReview") => Known::SelfSubjectReview,
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => Known::SelfSubjectRulesReview,
        ("authentication.k8s.io/v1", "TokenRequest") => Known::TokenRequest,
        ("authorization.k8s.io/v1", "SubjectAccessReview" | "LocalSubjectAccessReview") => {
            Known::SubjectAccessReview
        }
        ("authentication.k8s.io/v1", "TokenReview") => Known::TokenReview,
        _ => return None,
    })
}

/// Whether [`decode_object`] knows `(apiVersion, kind)`.
pub fn is_supported(api_version: &str, kind: &str) -> bool {
    known(api_version, kind).is_some()
}

/// Decodes `raw` as message `M` and converts it.
fn convert<M: prost::Message + Default>(
    raw: &[u8],
    api_version: &str,
    to_json: fn(&M, &str) -> json::Result<Value>,
) -> json::Result<Value> {
    let message = M::decode(raw).map_err(|e| e.to_string())?;
    to_json(&message, api_version)
}

/// Decodes the object bytes (`raw` of the envelope) of a known kind into JSON.
pub fn decode_object(api_version: &str, kind: &str, raw: &[u8]) -> Result<Value, ProtobufError> {
    let Some(known) = known(api_version, kind) else {
        return Err(ProtobufError::UnsupportedKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        });
    };
    let v = api_version;
    let converted = match known {
        Known::Namespace => convert(raw, v, json::namespace),
        Known::ConfigMap => convert(raw, v, json::config_map),
        Known::Secret => convert(raw, v, json::secret),
        Known::ServiceAccount => convert(raw, v, json::service_account),
        Known::ResourceQuota => convert(raw, v, json::resource_quota),
        Known::LimitRange => convert(raw, v, json::limit_range),
        Known::Event => convert(raw, v, json::event),
        Known::EventsEvent => convert(raw, v, json::events_event),
        Known::Lease => convert(raw, v, json::lease),
        Known::Role => convert(raw, v, json::role),
        Known::ClusterRole => convert(raw, v, json::cluster_role),
        Known::RoleBinding => types::RoleBinding::decode(raw)
            .map_err(|e| e.to_string())
            .and_then(|b| json::role_binding(&b, v, kind)),
        Known::CertificateSigningRequest => convert(raw, v, json::certificate_signing_request),
        Known::MutatingWebhookConfiguration => {
            convert(raw, v, json::mutating_webhook_configuration)
        }
        Known::ValidatingWebhookConfiguration => {
            convert(raw, v, json::validating_webhook_configuration)
        }
        Known::SelfSubjectAccessReview => convert(raw, v, json::self_subject_access_review),
        Known::SelfSubjectReview => convert(raw, v, json::self_subject_review),
        Known::SelfSubjectRulesReview => convert(raw, v, json::self_subject_rules_review),
        Known::TokenRequest => convert(raw, v, json::token_request),
        Known::SubjectAccessReview => types::SubjectAccessReview::decode(raw)
            .map_err(|e| e.to_string())
            .and_then(|r| json::subject_access_review(&r, v, kind)),
        Known::TokenReview => convert(raw, v, json::token_review),
    };
    converted.map_err(|message| ProtobufError::Malformed {
        kind: kind.to_owned(),
        message,
    })
}

/// Decodes a whole request body into JSON. `expected` is the `(apiVersion, kind)` the URL
/// implies; like Kubernetes, it fills in what the envelope leaves empty.
pub fn decode(body: &[u8], expected: Option<(&str, &str)>) -> Result<Value, ProtobufError> {
    let envelope = decode_envelope(body)?;
    let mut api_version = envelope.api_version.as_str();
    let mut kind = envelope.kind.as_str();
    if let Some((expected_version, expected_kind)) = expected {
        if kind.is_empty() {
            kind = expected_kind;
        }
        if api_version.is_empty() {
            api_version = expected_version;
        }
    }
    if kind.is_empty() {
        return Err(ProtobufError::MissingKind);
    }
    decode_object(api_version, kind, &envelope.raw)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests;
