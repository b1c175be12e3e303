//! Protobuf messages → the JSON a client would have sent for the same object: Go's
//! `encoding/json` output of the typed struct (camelCase names, `omitempty` honoured, `[]byte`
//! as base64, timestamps as RFC 3339 or `null`).

use base64::Engine as _;
use serde_json::{Map, Value};

use super::types::{
    ConfigMap, LabelSelector, ManagedFieldsEntry, Namespace, ObjectMeta, OwnerReference, Quantity,
    ResourceList, Secret, SelectorAttributes, SelectorRequirement, SelfSubjectAccessReview,
    SelfSubjectReview, SelfSubjectRulesReview, SubjectAccessReview, Time, TokenRequest,
    TokenReview,
};
use super::types::{NonResourceAttributes, ResourceAttributes};

mod admissionregistration;
mod certificates;
mod coordination;
mod core_v1;
mod events;
mod rbac;

pub(crate) use admissionregistration::{
    mutating_webhook_configuration, validating_webhook_configuration,
};
pub(crate) use certificates::certificate_signing_request;
pub(crate) use coordination::lease;
pub(crate) use core_v1::{event, limit_range, resource_quota, service_account};
pub(crate) use events::events_event;
pub(crate) use rbac::{cluster_role, role, role_binding};

/// A conversion failure, reported by the caller with the kind being decoded.
pub(crate) type Result<T> = std::result::Result<T, String>;

/// Builds a JSON object in Go struct-field order.
#[derive(Default)]
struct Obj(Map<String, Value>);

impl Obj {
    fn put(&mut self, key: &str, v: impl Into<Value>) -> &mut Self {
        self.0.insert(key.to_owned(), v.into());
        self
    }

    /// `omitempty` string.
    fn str(&mut self, key: &str, v: &Option<String>) -> &mut Self {
        if let Some(s) = v.as_deref().filter(|s| !s.is_empty()) {
            self.put(key, s);
        }
        self
    }

    /// String without `omitempty`: always present.
    fn str_always(&mut self, key: &str, v: &Option<String>) -> &mut Self {
        self.put(key, v.clone().unwrap_or_default())
    }

    /// `omitempty` list of strings.
    fn strings(&mut self, key: &str, v: &[String]) -> &mut Self {
        if !v.is_empty() {
            self.put(key, v.to_vec());
        }
        self
    }

    /// `omitempty` map of strings, keys sorted as Go prints them.
    fn string_map(
        &mut self,
        key: &str,
        v: &std::collections::BTreeMap<String, String>,
    ) -> &mut Self {
        if !v.is_empty() {
            let m: Map<String, Value> = v
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                .collect();
            self.put(key, m);
        }
        self
    }

    /// `omitempty` map of `[]byte`, base64-encoded like Go.
    fn bytes_map(
        &mut self,
        key: &str,
        v: &std::collections::BTreeMap<String, Vec<u8>>,
    ) -> &mut Self {
        if !v.is_empty() {
            let engine = base64::engine::general_purpose::STANDARD;
            let m: Map<String, Value> = v
                .iter()
                .map(|(k, v)| (k.clone(), Value::from(engine.encode(v))))
                .collect();
            self.put(key, m);
        }
        self
    }

    /// Pointer field (`*bool`, `*int64`): present when set, even if zero.
    fn opt(&mut self, key: &str, v: Option<impl Into<Value>>) -> &mut Self {
        if let Some(v) = v {
            self.put(key, v);
        }
        self
    }

    /// Slice without `omitempty`: `null` when empty (Go decodes an absent repeated field as nil).
    fn strings_or_null(&mut self, key: &str, v: &[String]) -> &mut Self {
        if v.is_empty() {
            self.put(key, Value::Null)
        } else {
            self.put(key, v.to_vec())
        }
    }

    /// `omitempty` list of converted elements.
    fn list(&mut self, key: &str, v: Vec<Value>) -> &mut Self {
        if !v.is_empty() {
            self.put(key, v);
        }
        self
    }

    /// `omitempty` `[]byte`, base64-encoded.
    fn bytes(&mut self, key: &str, v: &Option<Vec<u8>>) -> &mut Self {
        if let Some(b) = v.as_deref().filter(|b| !b.is_empty()) {
            self.put(key, base64::engine::general_purpose::STANDARD.encode(b));
        }
        self
    }

    /// `metav1.Time` field: structs are never omitted, so absent is `null`.
    fn time(&mut self, key: &str, v: &Option<Time>) -> Result<&mut Self> {
        let t = v.as_ref().map(time).transpose()?;
        Ok(self.put(key, t.unwrap_or(Value::Null)))
    }

    /// `metav1.MicroTime` field, likewise never omitted.
    fn micro_time(&mut self, key: &str, v: &Option<Time>) -> Result<&mut Self> {
        let t = v.as_ref().map(micro_time).transpose()?;
        Ok(self.put(key, t.unwrap_or(Value::Null)))
    }

    /// `omitempty` `ResourceList`.
    fn quantities(&mut self, key: &str, v: &ResourceList) -> Result<&mut Self> {
        if !v.is_empty() {
            let m = v
                .iter()
                .map(|(k, q)| Ok((k.clone(), quantity(k, q)?)))
                .collect::<Result<Map<String, Value>>>()?;
            self.put(key, m);
        }
        Ok(self)
    }

    fn done(&mut self) -> Value {
        Value::Object(std::mem::take(&mut self.0))
    }
}

/// Unix seconds of Go's zero `time.Time` (year 1), which Kubernetes prints as `null`.
const GO_ZERO_TIME_UNIX: i64 = -62_135_596_800;

/// meta/v1 Time: an empty message is the zero time (`null`); nanoseconds are dropped, as
/// Kubernetes drops them.
pub(crate) fn time(t: &Time) -> Result<Value> {
    if t.seconds.is_none() && t.nanos.is_none() {
        return Ok(Value::Null);
    }
    let seconds = t.seconds.unwrap_or(0);
    if seconds == GO_ZERO_TIME_UNIX {
        return Ok(Value::Null);
    }
    rfc3339(seconds)
        .map(Value::from)
        .ok_or_else(|| format!("timestamp {seconds} is out of range"))
}

/// meta/v1 MicroTime: like [`time`] but with microseconds (`.000000`, truncated as Go does).
pub(crate) fn micro_time(t: &Time) -> Result<Value> {
    if t.seconds.is_none() && t.nanos.is_none() {
        return Ok(Value::Null);
    }
    // time.Unix normalises nanoseconds outside [0, 1e9) into the seconds.
    let nanos = i64::from(t.nanos.unwrap_or(0));
    let seconds = t
        .seconds
        .unwrap_or(0)
        .checked_add(nanos.div_euclid(1_000_000_000))
        .ok_or_else(|| "timestamp is out of range".to_owned())?;
    let nanos = nanos.rem_euclid(1_000_000_000);
    if seconds == GO_ZERO_TIME_UNIX && nanos == 0 {
        return Ok(Value::Null);
    }
    let whole = rfc3339(seconds).ok_or_else(|| format!("timestamp {seconds} is out of range"))?;
    let micros = nanos / 1_000;
    Ok(Value::from(format!(
        "{}.{micros:06}Z",
        whole.trim_end_matches('Z')
    )))
}

/// resource.Quantity as JSON: its string. An absent string is Go's zero Quantity, `"0"`; an
/// empty one does not parse in Go either.
fn quantity(name: &str, q: &Quantity) -> Result<Value> {
    match q.string.as_deref() {
        None => Ok(Value::from("0")),
        Some("") => Err(format!("quantity {name}: quantities must not be empty")),
        Some(s) => Ok(Value::from(s)),
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` for years 0..=9999.
pub(crate) fn rfc3339(seconds: i64) -> Option<String> {
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    // Days to civil date (proleptic Gregorian), after Howard Hinnant's `civil_from_days`.
    let z = days.checked_add(719_468)?;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = era.checked_mul(400)?.checked_add(yoe)? + i64::from(month <= 2);
    if !(0..=9999).contains(&year) {
        return None;
    }
    Some(format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    ))
}

fn owner_reference(r: &OwnerReference) -> Value {
    Obj::default()
        .str_always("apiVersion", &r.api_version)
        .str_always("kind", &r.kind)
        .str_always("name", &r.name)
        .str_always("uid", &r.uid)
        .opt("controller", r.controller)
        .opt("blockOwnerDeletion", r.block_owner_deletion)
        .done()
}

fn managed_fields_entry(e: &ManagedFieldsEntry) -> Result<Value> {
    let mut o = Obj::default();
    o.str("manager", &e.manager)
        .str("operation", &e.operation)
        .str("apiVersion", &e.api_version);
    if let Some(t) = &e.time {
        o.put("time", time(t)?);
    }
    o.str("fieldsType", &e.fields_type);
    if let Some(f) = &e.fields_v1 {
        let fields = match f.raw.as_deref() {
            None | Some([]) => Value::Null,
            Some(raw) => serde_json::from_slice(raw)
                .map_err(|err| format!("managedFields fieldsV1 is not JSON: {err}"))?,
        };
        o.put("fieldsV1", fields);
    }
    o.str("subresource", &e.subresource);
    Ok(o.done())
}

/// metav1.ObjectMeta. A missing message is an empty ObjectMeta, which Go still prints with
/// `"creationTimestamp": null`.
pub(crate) fn object_meta(m: Option<&ObjectMeta>) -> Result<Value> {
    let empty = ObjectMeta::default();
    let m = m.unwrap_or(&empty);
    let mut o = Obj::default();
    o.str("name", &m.name)
        .str("generateName", &m.generate_name)
        .str("namespace", &m.namespace)
        .str("selfLink", &m.self_link)
        .str("uid", &m.uid)
        .str("resourceVersion", &m.resource_version);
    if let Some(g) = m.generation.filter(|g| *g != 0) {
        o.put("generation", g);
    }
    o.put(
        "creationTimestamp",
        m.creation_timestamp
            .as_ref()
            .map(time)
            .transpose()?
            .unwrap_or(Value::Null),
    );
    if let Some(t) = &m.deletion_timestamp {
        o.put("deletionTimestamp", time(t)?);
    }
    o.opt(
        "deletionGracePeriodSeconds",
        m.deletion_grace_period_seconds,
    )
    .string_map("labels", &m.labels)
    .string_map("annotations", &m.annotations);
    if !m.owner_references.is_empty() {
        o.put(
            "ownerReferences",
            m.owner_references
                .iter()
                .map(owner_reference)
                .collect::<Vec<_>>(),
        );
    }
    o.strings("finalizers", &m.finalizers);
    if !m.managed_fields.is_empty() {
        o.put(
            "managedFields",
            m.managed_fields
                .iter()
                .map(managed_fields_entry)
                .collect::<Result<Vec<_>>>()?,
        );
    }
    Ok(o.done())
}

fn head(api_version: &str, kind: &str) -> Obj {
    let mut o = Obj::default();
    o.put("kind", kind).put("apiVersion", api_version);
    o
}

pub(crate) fn namespace(n: &Namespace, api_version: &str) -> Result<Value> {
    let spec = n.spec.clone().unwrap_or_default();
    let status = n.status.clone().unwrap_or_default();
    let conditions = status
        .conditions
        .iter()
        .map(|c| {
            let mut o = Obj::default();
            o.str_always("type", &c.r#type)
                .str_always("status", &c.status)
                .put(
                    "lastTransitionTime",
                    c.last_transition_time
                        .as_ref()
                        .map(time)
                        .transpose()?
                        .unwrap_or(Value::Null),
                );
            o.str("reason", &c.reason).str("message", &c.message);
            Ok(o.done())
        })
        .collect::<Result<Vec<_>>>()?;
    let mut status_json = Obj::default();
    status_json.str("phase", &status.phase);
    if !conditions.is_empty() {
        status_json.put("conditions", conditions);
    }
    Ok(head(api_version, "Namespace")
        .put("metadata", object_meta(n.metadata.as_ref())?)
        .put(
            "spec",
            Obj::default()
                .strings("finalizers", &spec.finalizers)
                .done(),
        )
        .put("status", status_json.done())
        .done())
}

pub(crate) fn config_map(c: &ConfigMap, api_version: &str) -> Result<Value> {
    Ok(head(api_version, "ConfigMap")
        .put("metadata", object_meta(c.metadata.as_ref())?)
        .opt("immutable", c.immutable)
        .string_map("data", &c.data)
        .bytes_map("binaryData", &c.binary_data)
        .done())
}

pub(crate) fn secret(s: &Secret, api_version: &str) -> Result<Value> {
    Ok(head(api_version, "Secret")
        .put("metadata", object_meta(s.metadata.as_ref())?)
        .opt("immutable", s.immutable)
        .bytes_map("data", &s.data)
        .string_map("stringData", &s.string_data)
        .str("type", &s.r#type)
        .done())
}

/// meta/v1 LabelSelector
fn label_selector(s: &LabelSelector) -> Value {
    Obj::default()
        .string_map("matchLabels", &s.match_labels)
        .list(
            "matchExpressions",
            s.match_expressions.iter().map(requirement).collect(),
        )
        .done()
}

fn requirement(r: &SelectorRequirement) -> Value {
    Obj::default()
        .str_always("key", &r.key)
        .str_always("operator", &r.operator)
        .strings("values", &r.values)
        .done()
}

fn selector_attributes(a: &SelectorAttributes) -> Value {
    let mut o = Obj::default();
    o.str("rawSelector", &a.raw_selector);
    if !a.requirements.is_empty() {
        o.put(
            "requirements",
            a.requirements.iter().map(requirement).collect::<Vec<_>>(),
        );
    }
    o.done()
}

/// The attributes part of an access review's spec (resource or non-resource).
fn access_attributes(
    resource: Option<&ResourceAttributes>,
    non_resource: Option<&NonResourceAttributes>,
) -> Obj {
    let mut spec_json = Obj::default();
    if let Some(a) = resource {
        let mut o = Obj::default();
        o.str("namespace", &a.namespace)
            .str("verb", &a.verb)
            .str("group", &a.group)
            .str("version", &a.version)
            .str("resource", &a.resource)
            .str("subresource", &a.subresource)
            .str("name", &a.name);
        if let Some(f) = &a.field_selector {
            o.put("fieldSelector", selector_attributes(f));
        }
        if let Some(l) = &a.label_selector {
            o.put("labelSelector", selector_attributes(l));
        }
        spec_json.put("resourceAttributes", o.done());
    }
    if let Some(a) = non_resource {
        spec_json.put(
            "nonResourceAttributes",
            Obj::default()
                .str("path", &a.path)
                .str("verb", &a.verb)
                .done(),
        );
    }
    spec_json
}

pub(crate) fn self_subject_access_review(
    r: &SelfSubjectAccessReview,
    api_version: &str,
) -> Result<Value> {
    let spec = r.spec.clone().unwrap_or_default();
    let mut spec_json = access_attributes(
        spec.resource_attributes.as_ref(),
        spec.non_resource_attributes.as_ref(),
    );
    let status = r.status.clone().unwrap_or_default();
    let mut status_json = Obj::default();
    status_json.put("allowed", status.allowed.unwrap_or(false));
    if status.denied == Some(true) {
        status_json.put("denied", true);
    }
    status_json
        .str("reason", &status.reason)
        .str("evaluationError", &status.evaluation_error);
    Ok(head(api_version, "SelfSubjectAccessReview")
        .put("metadata", object_meta(r.metadata.as_ref())?)
        .put("spec", spec_json.done())
        .put("status", status_json.done())
        .done())
}

pub(crate) fn self_subject_review(r: &SelfSubjectReview, api_version: &str) -> Result<Value> {
    let user = r
        .status
        .clone()
        .unwrap_or_default()
        .user_info
        .unwrap_or_default();
    let mut u = Obj::default();
    u.str("username", &user.username)
        .str("uid", &user.uid)
        .strings("groups", &user.groups);
    if !user.extra.is_empty() {
        let extra: Map<String, Value> = user
            .extra
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.items.clone())))
            .collect();
        u.put("extra", extra);
    }
    let mut status = Obj::default();
    status.put("userInfo", u.done());
    Ok(head(api_version, "SelfSubjectReview")
        .put("metadata", object_meta(r.metadata.as_ref())?)
        .put("status", status.done())
        .done())
}

pub(crate) fn self_subject_rules_review(
    r: &SelfSubjectRulesReview,
    api_version: &str,
) -> Result<Value> {
    let spec = r.spec.clone().unwrap_or_default();
    Ok(head(api_version, "SelfSubjectRulesReview")
        .put("metadata", object_meta(r.metadata.as_ref())?)
        .put(
            "spec",
            Obj::default().str("namespace", &spec.namespace).done(),
        )
        .put("status", Obj::default().put("incomplete", false).done())
        .done())
}

pub(crate) fn token_request(r: &TokenRequest, api_version: &str) -> Result<Value> {
    let spec = r.spec.clone().unwrap_or_default();
    let mut s = Obj::default();
    s.strings("audiences", &spec.audiences);
    if let Some(seconds) = spec.expiration_seconds {
        s.put("expirationSeconds", seconds);
    }
    if let Some(b) = &spec.bound_object_ref {
        s.put(
            "boundObjectRef",
            Obj::default()
                .str("kind", &b.kind)
                .str("apiVersion", &b.api_version)
                .str("name", &b.name)
                .str("uid", &b.uid)
                .done(),
        );
    }
    Ok(head(api_version, "TokenRequest")
        .put("metadata", object_meta(r.metadata.as_ref())?)
        .put("spec", s.done())
        .put(
            "status",
            Obj::default()
                .put("token", "")
                .put("expirationTimestamp", Value::Null)
                .done(),
        )
        .done())
}

/// SubjectAccessReview or LocalSubjectAccessReview (`kind`): one message for both.
pub(crate) fn subject_access_review(
    r: &SubjectAccessReview,
    api_version: &str,
    kind: &str,
) -> Result<Value> {
    let spec = r.spec.clone().unwrap_or_default();
    let mut spec_json = access_attributes(
        spec.resource_attributes.as_ref(),
        spec.non_resource_attributes.as_ref(),
    );
    spec_json
        .str("user", &spec.user)
        .strings("groups", &spec.groups);
    if !spec.extra.is_empty() {
        let extra: Map<String, Value> = spec
            .extra
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.items.clone())))
            .collect();
        spec_json.put("extra", extra);
    }
    spec_json.str("uid", &spec.uid);
    Ok(head(api_version, kind)
        .put("metadata", object_meta(r.metadata.as_ref())?)
        .put("spec", spec_json.done())
        .put("status", Obj::default().put("allowed", false).done())
        .done())
}

pub(crate) fn token_review(r: &TokenReview, api_version: &str) -> Result<Value> {
    let spec = r.spec.clone().unwrap_or_default();
    Ok(head(api_version, "TokenReview")
        .put("metadata", object_meta(r.metadata.as_ref())?)
        .put(
            "spec",
            Obj::default()
                .str("token", &spec.token)
                .strings("audiences", &spec.audiences)
                .done(),
        )
        .put("status", Obj::default().done())
        .done())
}
