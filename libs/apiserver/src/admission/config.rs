//! Webhook configurations of a logical cluster, read from the watch cache and parsed once per
//! revision of each configuration object.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kcp_apimachinery::selector::Selector;
use kcp_apimachinery::selector::label::from_label_selector;
use kcp_store::Revision;
use kcp_store::keys::ResourceKeyspace;
use parking_lot::Mutex;
use serde_json::Value;

use super::client::Endpoint;
use super::matching::{Conditions, compile_conditions};
use super::rules::Rule;
use crate::watch_cache::WatchCache;

/// Which of the two configuration kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Mutating,
    Validating,
}

impl Flavor {
    fn plural(self) -> &'static str {
        match self {
            Flavor::Mutating => "mutatingwebhookconfigurations",
            Flavor::Validating => "validatingwebhookconfigurations",
        }
    }
}

/// One webhook of a configuration, with the defaults of admissionregistration.k8s.io/v1 applied.
pub struct Webhook {
    pub name: String,
    /// Identifies the webhook across reinvocation rounds: configuration key and index.
    pub id: (String, usize),
    /// The HTTPS endpoint, or why it cannot be called (a `service` reference, a bad caBundle...).
    pub endpoint: Result<Endpoint, String>,
    pub rules: Vec<Rule>,
    pub fail_open: bool,
    pub match_equivalent: bool,
    /// `Err` keeps a selector that does not parse: every matching request fails on it.
    pub namespace_selector: Result<Selector, String>,
    pub object_selector: Result<Selector, String>,
    /// `None`, `NoneOnDryRun`, `Some`, `Unknown`; empty when unset.
    pub side_effects: String,
    pub timeout: Duration,
    pub reinvoke_if_needed: bool,
    /// `matchConditions` by name; `Err` keeps a compile error, reported when the webhook matches.
    pub match_conditions: Conditions,
}

/// The variables a match condition may name.
pub const CONDITION_VARIABLES: &[&str] = &["object", "oldObject", "request"];

const DEFAULT_TIMEOUT_SECONDS: u64 = 10;
const MAX_TIMEOUT_SECONDS: u64 = 30;

fn selector(v: Option<&Value>) -> Result<Selector, String> {
    match v {
        // An absent selector matches everything ({}), unlike a literal null label selector.
        None | Some(Value::Null) => Ok(Selector::everything()),
        Some(v) => from_label_selector(v).map_err(|e| e.to_string()),
    }
}

fn str_or<'v>(v: &'v Value, field: &str, default: &'v str) -> &'v str {
    v.get(field).and_then(Value::as_str).unwrap_or(default)
}

fn parse_webhook(key: &str, index: usize, v: &Value) -> Webhook {
    let timeout = v
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
        .clamp(1, MAX_TIMEOUT_SECONDS);
    Webhook {
        name: str_or(v, "name", "").to_string(),
        id: (key.to_string(), index),
        endpoint: Endpoint::from_client_config(v.get("clientConfig").unwrap_or(&Value::Null)),
        rules: v
            .get("rules")
            .and_then(Value::as_array)
            .map(|rules| rules.iter().map(Rule::parse).collect())
            .unwrap_or_default(),
        fail_open: str_or(v, "failurePolicy", "Fail") == "Ignore",
        match_equivalent: str_or(v, "matchPolicy", "Equivalent") == "Equivalent",
        namespace_selector: selector(v.get("namespaceSelector")),
        object_selector: selector(v.get("objectSelector")),
        side_effects: str_or(v, "sideEffects", "").to_string(),
        timeout: Duration::from_secs(timeout),
        reinvoke_if_needed: str_or(v, "reinvocationPolicy", "Never") == "IfNeeded",
        match_conditions: compile_conditions(v.get("matchConditions"), CONDITION_VARIABLES),
    }
}

fn parse_configuration(key: &str, obj: &Value) -> Vec<Arc<Webhook>> {
    obj.get("webhooks")
        .and_then(Value::as_array)
        .map(|hooks| {
            hooks
                .iter()
                .enumerate()
                .map(|(i, h)| Arc::new(parse_webhook(key, i, h)))
                .collect()
        })
        .unwrap_or_default()
}

struct Parsed {
    revision: Revision,
    webhooks: Vec<Arc<Webhook>>,
}

/// Parsed configurations by object key. Nothing runs per LC: a configuration is parsed when a
/// request first needs it at a new revision.
pub struct Configurations {
    keyspace: ResourceKeyspace,
    parsed: Mutex<HashMap<String, Parsed>>,
    /// Entry count after the last sweep of deleted configurations.
    swept_at: Mutex<usize>,
}

impl Configurations {
    pub fn new(flavor: Flavor) -> Configurations {
        Configurations {
            keyspace: ResourceKeyspace::new(
                "admissionregistration.k8s.io",
                flavor.plural(),
                None,
                false,
            ),
            parsed: Mutex::new(HashMap::new()),
            swept_at: Mutex::new(0),
        }
    }

    /// The webhooks of `cluster`, configurations sorted by name, webhooks in their listed order.
    pub fn webhooks(&self, cache: &WatchCache, cluster: &str) -> Vec<Arc<Webhook>> {
        let objects = cache.list(&self.keyspace.cluster(cluster), None);
        if objects.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut parsed = self.parsed.lock();
        for obj in objects {
            let fresh = parsed
                .get(&obj.key)
                .is_some_and(|p| p.revision == obj.revision);
            if !fresh {
                let value = obj.value().unwrap_or(Value::Null);
                parsed.insert(
                    obj.key.clone(),
                    Parsed {
                        revision: obj.revision,
                        webhooks: parse_configuration(&obj.key, &value),
                    },
                );
            }
            if let Some(p) = parsed.get(&obj.key) {
                out.extend(p.webhooks.iter().cloned());
            }
        }
        self.sweep(cache, &mut parsed);
        out
    }

    /// Drops deleted configurations once the map has doubled since the last sweep, so the cost is
    /// amortised over insertions.
    fn sweep(&self, cache: &WatchCache, parsed: &mut HashMap<String, Parsed>) {
        let mut swept_at = self.swept_at.lock();
        if parsed.len() <= (*swept_at * 2).max(64) {
            return;
        }
        parsed.retain(|key, _| cache.get(key).is_some());
        *swept_at = parsed.len();
    }
}

#[cfg(test)]
pub(super) mod tests_support {
    /// A webhook parsed from `v` with a placeholder endpoint, for tests of matching.
    pub fn webhook(v: serde_json::Value) -> super::Webhook {
        super::parse_webhook("test", 0, &v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn v1_defaults() {
        let hook = parse_webhook(
            "k",
            0,
            &json!({"name": "a.example.com", "clientConfig": {"url": "https://127.0.0.1:1/x"}}),
        );
        assert!(!hook.fail_open, "failurePolicy defaults to Fail");
        assert!(hook.match_equivalent, "matchPolicy defaults to Equivalent");
        assert_eq!(hook.timeout, Duration::from_secs(10));
        assert!(!hook.reinvoke_if_needed);
        assert!(
            hook.namespace_selector
                .as_ref()
                .is_ok_and(Selector::is_empty)
        );
    }

    #[test]
    fn timeout_is_capped_and_service_references_are_refused() {
        let hook = parse_webhook(
            "k",
            0,
            &json!({"name": "a", "timeoutSeconds": 90, "failurePolicy": "Ignore",
                    "clientConfig": {"service": {"name": "s", "namespace": "n"}}}),
        );
        assert_eq!(hook.timeout, Duration::from_secs(30));
        assert!(hook.fail_open);
        assert!(hook.endpoint.is_err());
    }
}
