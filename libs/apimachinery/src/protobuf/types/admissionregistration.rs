//! admissionregistration.k8s.io/v1 webhook configurations.

use super::{LabelSelector, ObjectMeta};

/// admissionregistration/v1 MutatingWebhookConfiguration
#[derive(Clone, PartialEq, prost::Message)]
pub struct MutatingWebhookConfiguration {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    pub webhooks: Vec<MutatingWebhook>,
}

/// admissionregistration/v1 ValidatingWebhookConfiguration
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValidatingWebhookConfiguration {
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    #[prost(message, repeated, tag = "2")]
    pub webhooks: Vec<ValidatingWebhook>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct MutatingWebhook {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "2")]
    pub client_config: Option<WebhookClientConfig>,
    #[prost(message, repeated, tag = "3")]
    pub rules: Vec<RuleWithOperations>,
    #[prost(string, optional, tag = "4")]
    pub failure_policy: Option<String>,
    #[prost(message, optional, tag = "5")]
    pub namespace_selector: Option<LabelSelector>,
    #[prost(string, optional, tag = "6")]
    pub side_effects: Option<String>,
    #[prost(int32, optional, tag = "7")]
    pub timeout_seconds: Option<i32>,
    #[prost(string, repeated, tag = "8")]
    pub admission_review_versions: Vec<String>,
    #[prost(string, optional, tag = "9")]
    pub match_policy: Option<String>,
    #[prost(string, optional, tag = "10")]
    pub reinvocation_policy: Option<String>,
    #[prost(message, optional, tag = "11")]
    pub object_selector: Option<LabelSelector>,
    #[prost(message, repeated, tag = "12")]
    pub match_conditions: Vec<MatchCondition>,
}

/// Like [`MutatingWebhook`] without `reinvocationPolicy`, so later fields are numbered one less.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValidatingWebhook {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "2")]
    pub client_config: Option<WebhookClientConfig>,
    #[prost(message, repeated, tag = "3")]
    pub rules: Vec<RuleWithOperations>,
    #[prost(string, optional, tag = "4")]
    pub failure_policy: Option<String>,
    #[prost(message, optional, tag = "5")]
    pub namespace_selector: Option<LabelSelector>,
    #[prost(string, optional, tag = "6")]
    pub side_effects: Option<String>,
    #[prost(int32, optional, tag = "7")]
    pub timeout_seconds: Option<i32>,
    #[prost(string, repeated, tag = "8")]
    pub admission_review_versions: Vec<String>,
    #[prost(string, optional, tag = "9")]
    pub match_policy: Option<String>,
    #[prost(message, optional, tag = "10")]
    pub object_selector: Option<LabelSelector>,
    #[prost(message, repeated, tag = "11")]
    pub match_conditions: Vec<MatchCondition>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct WebhookClientConfig {
    #[prost(message, optional, tag = "1")]
    pub service: Option<ServiceReference>,
    #[prost(bytes = "vec", optional, tag = "2")]
    pub ca_bundle: Option<Vec<u8>>,
    #[prost(string, optional, tag = "3")]
    pub url: Option<String>,
}

/// admissionregistration/v1 ServiceReference
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServiceReference {
    #[prost(string, optional, tag = "1")]
    pub namespace: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub path: Option<String>,
    #[prost(int32, optional, tag = "4")]
    pub port: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RuleWithOperations {
    #[prost(string, repeated, tag = "1")]
    pub operations: Vec<String>,
    #[prost(message, optional, tag = "2")]
    pub rule: Option<Rule>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Rule {
    #[prost(string, repeated, tag = "1")]
    pub api_groups: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub api_versions: Vec<String>,
    #[prost(string, repeated, tag = "3")]
    pub resources: Vec<String>,
    #[prost(string, optional, tag = "4")]
    pub scope: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct MatchCondition {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub expression: Option<String>,
}
