//! events.k8s.io/v1 Event.

use super::{EventSeries, EventSource, MicroTime, ObjectMeta, ObjectReference, Time};

/// events/v1 Event
#[derive(Clone, PartialEq, prost::Message)]
pub struct EventsEvent {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    pub event_time: Option<MicroTime>,
    #[prost(message, optional, tag = "3")]
    pub series: Option<EventSeries>,
    #[prost(string, optional, tag = "4")]
    pub reporting_controller: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub reporting_instance: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub action: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub reason: Option<String>,
    #[prost(message, optional, tag = "8")]
    pub regarding: Option<ObjectReference>,
    #[prost(message, optional, tag = "9")]
    pub related: Option<ObjectReference>,
    #[prost(string, optional, tag = "10")]
    pub note: Option<String>,
    #[prost(string, optional, tag = "11")]
    pub r#type: Option<String>,
    #[prost(message, optional, tag = "12")]
    pub deprecated_source: Option<EventSource>,
    #[prost(message, optional, tag = "13")]
    pub deprecated_first_timestamp: Option<Time>,
    #[prost(message, optional, tag = "14")]
    pub deprecated_last_timestamp: Option<Time>,
    #[prost(int32, optional, tag = "15")]
    pub deprecated_count: Option<i32>,
}
