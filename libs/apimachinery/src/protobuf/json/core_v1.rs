//! core/v1 ServiceAccount, ResourceQuota, LimitRange and Event.

use serde_json::Value;

use super::{Obj, Result, head, object_meta};
use crate::protobuf::types::{
    Event, EventSeries, EventSource, LimitRange, ObjectReference, ResourceQuota, ServiceAccount,
};

/// core/v1 ObjectReference: every field `omitempty`.
pub(super) fn object_reference(r: &ObjectReference) -> Value {
    Obj::default()
        .str("kind", &r.kind)
        .str("namespace", &r.namespace)
        .str("name", &r.name)
        .str("uid", &r.uid)
        .str("apiVersion", &r.api_version)
        .str("resourceVersion", &r.resource_version)
        .str("fieldPath", &r.field_path)
        .done()
}

pub(super) fn event_source(s: Option<&EventSource>) -> Value {
    let empty = EventSource::default();
    let s = s.unwrap_or(&empty);
    Obj::default()
        .str("component", &s.component)
        .str("host", &s.host)
        .done()
}

pub(crate) fn service_account(s: &ServiceAccount, api_version: &str) -> Result<Value> {
    Ok(head(api_version, "ServiceAccount")
        .put("metadata", object_meta(s.metadata.as_ref())?)
        .list("secrets", s.secrets.iter().map(object_reference).collect())
        .list(
            "imagePullSecrets",
            s.image_pull_secrets
                .iter()
                .map(|r| Obj::default().str("name", &r.name).done())
                .collect(),
        )
        .opt(
            "automountServiceAccountToken",
            s.automount_service_account_token,
        )
        .done())
}

pub(crate) fn resource_quota(q: &ResourceQuota, api_version: &str) -> Result<Value> {
    let spec = q.spec.clone().unwrap_or_default();
    let mut spec_json = Obj::default();
    spec_json
        .quantities("hard", &spec.hard)?
        .strings("scopes", &spec.scopes);
    if let Some(selector) = &spec.scope_selector {
        let expressions = selector
            .match_expressions
            .iter()
            .map(|r| {
                Obj::default()
                    .str_always("scopeName", &r.scope_name)
                    .str_always("operator", &r.operator)
                    .strings("values", &r.values)
                    .done()
            })
            .collect();
        spec_json.put(
            "scopeSelector",
            Obj::default().list("matchExpressions", expressions).done(),
        );
    }
    let status = q.status.clone().unwrap_or_default();
    let mut status_json = Obj::default();
    status_json
        .quantities("hard", &status.hard)?
        .quantities("used", &status.used)?;
    Ok(head(api_version, "ResourceQuota")
        .put("metadata", object_meta(q.metadata.as_ref())?)
        .put("spec", spec_json.done())
        .put("status", status_json.done())
        .done())
}

pub(crate) fn limit_range(l: &LimitRange, api_version: &str) -> Result<Value> {
    let limits = l
        .spec
        .as_ref()
        .map(|s| s.limits.as_slice())
        .unwrap_or_default();
    // `limits` has no `omitempty`: an empty list is `null`.
    let limits_json = if limits.is_empty() {
        Value::Null
    } else {
        let items = limits
            .iter()
            .map(|item| {
                let mut o = Obj::default();
                o.str_always("type", &item.r#type)
                    .quantities("max", &item.max)?
                    .quantities("min", &item.min)?
                    .quantities("default", &item.default)?
                    .quantities("defaultRequest", &item.default_request)?
                    .quantities("maxLimitRequestRatio", &item.max_limit_request_ratio)?;
                Ok(o.done())
            })
            .collect::<Result<Vec<_>>>()?;
        Value::from(items)
    };
    Ok(head(api_version, "LimitRange")
        .put("metadata", object_meta(l.metadata.as_ref())?)
        .put("spec", Obj::default().put("limits", limits_json).done())
        .done())
}

/// EventSeries: `count` is `omitempty` in core/v1 only.
pub(super) fn event_series(s: &EventSeries, count_omitempty: bool) -> Result<Value> {
    let mut o = Obj::default();
    match s.count {
        Some(0) | None if count_omitempty => {}
        count => {
            o.put("count", count.unwrap_or(0));
        }
    }
    o.micro_time("lastObservedTime", &s.last_observed_time)?;
    Ok(o.done())
}

pub(crate) fn event(e: &Event, api_version: &str) -> Result<Value> {
    let mut o = head(api_version, "Event");
    o.put("metadata", object_meta(e.metadata.as_ref())?)
        .put(
            "involvedObject",
            object_reference(&e.involved_object.clone().unwrap_or_default()),
        )
        .str("reason", &e.reason)
        .str("message", &e.message)
        .put("source", event_source(e.source.as_ref()))
        .time("firstTimestamp", &e.first_timestamp)?
        .time("lastTimestamp", &e.last_timestamp)?;
    if let Some(count) = e.count.filter(|c| *c != 0) {
        o.put("count", count);
    }
    o.str("type", &e.r#type)
        .micro_time("eventTime", &e.event_time)?;
    if let Some(series) = &e.series {
        o.put("series", event_series(series, true)?);
    }
    o.str("action", &e.action);
    if let Some(related) = &e.related {
        o.put("related", object_reference(related));
    }
    Ok(o.str_always("reportingComponent", &e.reporting_component)
        .str_always("reportingInstance", &e.reporting_instance)
        .done())
}
