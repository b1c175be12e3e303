//! events.k8s.io/v1 Event.

use serde_json::Value;

use super::core_v1::{event_series, event_source, object_reference};
use super::{Result, head, object_meta};
use crate::protobuf::types::EventsEvent;

pub(crate) fn events_event(e: &EventsEvent, api_version: &str) -> Result<Value> {
    let mut o = head(api_version, "Event");
    o.put("metadata", object_meta(e.metadata.as_ref())?)
        .micro_time("eventTime", &e.event_time)?;
    if let Some(series) = &e.series {
        o.put("series", event_series(series, false)?);
    }
    o.str("reportingController", &e.reporting_controller)
        .str("reportingInstance", &e.reporting_instance)
        .str("action", &e.action)
        .str("reason", &e.reason)
        .put(
            "regarding",
            object_reference(&e.regarding.clone().unwrap_or_default()),
        );
    if let Some(related) = &e.related {
        o.put("related", object_reference(related));
    }
    o.str("note", &e.note)
        .str("type", &e.r#type)
        .put(
            "deprecatedSource",
            event_source(e.deprecated_source.as_ref()),
        )
        .time("deprecatedFirstTimestamp", &e.deprecated_first_timestamp)?
        .time("deprecatedLastTimestamp", &e.deprecated_last_timestamp)?;
    if let Some(count) = e.deprecated_count.filter(|c| *c != 0) {
        o.put("deprecatedCount", count);
    }
    Ok(o.done())
}
