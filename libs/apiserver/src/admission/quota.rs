//! ResourceQuota admission for object counts, as kube-apiserver's `ResourceQuota` plugin does it on
//! create: every quota of the object's namespace (in its logical cluster) whose `status.hard` names
//! the object's resource (`count/<resource>[.<group>]`, or a legacy name such as `configmaps`) must
//! have room for one more, and the admission reserves that room by raising the quota's `status.used`
//! with a compare-and-swap on its resourceVersion before the object is written. Two racing creates
//! therefore cannot both take the last slot: the loser's swap fails, it re-reads the quota and is
//! refused.
//!
//! A reservation whose create then fails leaves `used` one too high until the quota controller
//! recounts. The controller must not recount while a reserved create is still on its way to the
//! store (it would miss that object and hand its slot out again), so creates in flight are counted
//! per namespace here and the controller waits for them ([`creates_in_flight`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, LazyLock};

use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_store::keys::ResourceKeyspace;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::registry::{ObjectRef, Registry, UpdateKind, WriteOptions, cache_error};
use kcp_apimachinery::quantity::Quantity;

/// Legacy quota names that count objects of a core resource, as `count/<resource>` does.
const LEGACY_COUNT_NAMES: &[&str] = &[
    "configmaps",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "services",
];

/// Resources quota never counts (Kubernetes' default ignored resources).
fn ignored(group: &str, plural: &str) -> bool {
    group.is_empty() && plural == "events"
}

/// The ResourceQuota keyspace (core, namespaced).
pub fn quota_keyspace() -> &'static ResourceKeyspace {
    crate::registry::keyspaces::resource_quotas()
}

/// The built-in ResourceQuota definition, for writing quota status through the registry.
pub fn quota_def() -> Option<Arc<ResourceDef>> {
    static DEF: LazyLock<Option<Arc<ResourceDef>>> = LazyLock::new(|| {
        kcp_api_types::builtin::catalogue()
            .into_iter()
            .find(|d| d.group.is_empty() && d.plural == "resourcequotas")
            .map(Arc::new)
    });
    DEF.clone()
}

/// The quota names one object of `group`/`plural` uses one of: `count/<plural>[.<group>]`, and for
/// some core resources the legacy name (`configmaps`).
pub fn usage_names(group: &str, plural: &str) -> Vec<String> {
    if ignored(group, plural) {
        return Vec::new();
    }
    if group.is_empty() {
        let mut names = vec![format!("count/{plural}")];
        if LEGACY_COUNT_NAMES.contains(&plural) {
            names.push(plural.to_string());
        }
        names
    } else {
        vec![format!("count/{plural}.{group}")]
    }
}

/// The resource `(group, plural)` whose objects a quota name counts, if it is an object count.
pub fn counted_resource(name: &str) -> Option<(String, String)> {
    if let Some(resource) = name.strip_prefix("count/") {
        // Plurals have no dots; groups do.
        let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
        if plural.is_empty() || ignored(group, plural) {
            return None;
        }
        return Some((group.to_string(), plural.to_string()));
    }
    LEGACY_COUNT_NAMES
        .contains(&name)
        .then(|| (String::new(), name.to_string()))
}

/// A `ResourceList` (`{"count/secrets": "5"}`); values that are no quantities are left out.
pub fn resource_list(value: Option<&Value>) -> BTreeMap<String, Quantity> {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), quantity_of(v)?)))
                .collect()
        })
        .unwrap_or_default()
}

fn quantity_of(value: &Value) -> Option<Quantity> {
    match value {
        Value::String(_) | Value::Number(_) => Quantity::from_json(value).ok(),
        _ => None,
    }
}

/// The JSON form of a `ResourceList`, values in canonical form.
pub fn resource_list_json(list: &BTreeMap<String, Quantity>) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, v)| (k.clone(), json!(v.canonical())))
            .collect::<Map<_, _>>(),
    )
}

/// Object counts ignore quotas with scopes: Kubernetes' object count evaluator matches no scope.
pub fn has_scopes(quota: &Value) -> bool {
    let non_empty = |p: &str| {
        quota
            .pointer(p)
            .is_some_and(|v| v.as_array().is_some_and(|a| !a.is_empty()))
    };
    non_empty("/spec/scopes") || non_empty("/spec/scopeSelector/matchExpressions")
}

/// `a=1,b=2` with sorted names (Kubernetes' `prettyPrint`).
fn pretty(list: &BTreeMap<String, Quantity>) -> String {
    list.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn masked(list: &BTreeMap<String, Quantity>, names: &[String]) -> BTreeMap<String, Quantity> {
    list.iter()
        .filter(|(k, _)| names.contains(k))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// What admitting one object does to one quota.
enum Verdict {
    /// The quota limits none of the object's names.
    NotLimited,
    /// Room for it: the new `status.used`.
    Reserve(BTreeMap<String, Quantity>),
    /// Refused, with the reason Kubernetes gives.
    Refuse(String),
}

fn evaluate(quota: &Value, names: &[String]) -> Verdict {
    if has_scopes(quota) {
        return Verdict::NotLimited;
    }
    let quota_name = quota
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let hard = resource_list(quota.pointer("/status/hard"));
    let used = resource_list(quota.pointer("/status/used"));
    let mut limited: Vec<String> = names
        .iter()
        .filter(|n| hard.contains_key(*n))
        .cloned()
        .collect();
    limited.sort();
    if limited.is_empty() {
        return Verdict::NotLimited;
    }
    if limited.iter().any(|n| !used.contains_key(n)) {
        return Verdict::Refuse(format!(
            "status unknown for quota: {quota_name}, resources: {}",
            limited.join(",")
        ));
    }
    let one = Quantity::from_count(1);
    let requested: BTreeMap<String, Quantity> = limited.iter().map(|n| (n.clone(), one)).collect();
    let mut new_used = used.clone();
    let mut exceeded = Vec::new();
    for name in &limited {
        let Some(total) = used.get(name).and_then(|u| u.checked_add(&one)) else {
            exceeded.push(name.clone());
            continue;
        };
        if hard.get(name).is_some_and(|h| total > *h) {
            exceeded.push(name.clone());
        }
        new_used.insert(name.clone(), total);
    }
    if !exceeded.is_empty() {
        return Verdict::Refuse(format!(
            "exceeded quota: {quota_name}, requested: {}, used: {}, limited: {}",
            pretty(&masked(&requested, &exceeded)),
            pretty(&masked(&used, &exceeded)),
            pretty(&masked(&hard, &exceeded)),
        ));
    }
    Verdict::Reserve(new_used)
}

/// A logical cluster and namespace.
type InFlightKey = (String, String);

/// Creates that reserved quota and are not written (or failed) yet, per logical cluster and
/// namespace: one count per registry (its own, so several API servers in one process, e.g. in
/// tests, never see each other's).
#[derive(Clone, Default)]
pub struct CreatesInFlight(Arc<Mutex<HashMap<InFlightKey, usize>>>);

fn in_flight_key(cluster: &str, namespace: &str) -> InFlightKey {
    (cluster.to_string(), namespace.to_string())
}

/// How many creates in `cluster`/`namespace` reserved quota and are not written (or failed) yet.
pub fn creates_in_flight(registry: &Registry, cluster: &str, namespace: &str) -> usize {
    (registry.quota_reservations().0.lock())
        .get(&in_flight_key(cluster, namespace))
        .copied()
        .unwrap_or(0)
}

/// Held by a create from before its quota reservation until its write is acknowledged (or failed).
#[must_use]
pub struct Reservation {
    held: Option<(CreatesInFlight, InFlightKey)>,
}

impl Reservation {
    fn none() -> Reservation {
        Reservation { held: None }
    }

    fn start(registry: &Registry, cluster: &str, namespace: &str) -> Reservation {
        let key = in_flight_key(cluster, namespace);
        let counts = registry.quota_reservations().clone();
        *counts.0.lock().entry(key.clone()).or_insert(0) += 1;
        Reservation {
            held: Some((counts, key)),
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let Some((counts, key)) = self.held.take() else {
            return;
        };
        let mut map = counts.0.lock();
        if let Some(count) = map.get_mut(&key) {
            *count -= 1;
            if *count == 0 {
                map.remove(&key);
            }
        }
    }
}

/// Admits the create of `name` (a `def` object) in `cluster`/`namespace` against the namespace's
/// quotas, reserving its usage unless `dry_run`. Refusals are 403 Forbidden with Kubernetes' message.
pub async fn admit(
    registry: &Registry,
    def: &ResourceDef,
    cluster: &LogicalClusterName,
    namespace: Option<&str>,
    name: &str,
    dry_run: bool,
) -> Result<Reservation, ApiError> {
    let Some(namespace) = namespace.filter(|_| def.namespaced) else {
        return Ok(Reservation::none());
    };
    let names = usage_names(&def.group, &def.plural);
    if names.is_empty() {
        return Ok(Reservation::none());
    }
    // A namespace without quotas in the cache costs nothing more. A quota created so recently that the
    // cache misses it has no status yet, and a quota without status limits nothing (as in Kubernetes).
    let quotas = quota_keyspace().namespace(cluster, namespace);
    if registry.cache().list(&quotas, None).is_empty() {
        return Ok(Reservation::none());
    }
    // With quotas, decide on every acknowledged write: their status may just have been set.
    registry.cache().wait_fresh().await.map_err(cache_error)?;
    let limiting = limiting_quotas(registry, def, cluster, namespace, name, &names)?;
    if limiting.is_empty() || dry_run {
        return Ok(Reservation::none());
    }
    let Some(quota_def) = quota_def() else {
        return Ok(Reservation::none());
    };
    let reservation = Reservation::start(registry, cluster, namespace);
    for quota_name in &limiting {
        let at = ObjectRef {
            cluster,
            namespace: Some(namespace),
            name: quota_name,
        };
        // The registry retries the swap on conflicts, re-running this check on the fresh quota.
        let result = registry
            .update(
                &quota_def,
                at,
                UpdateKind::Status,
                WriteOptions::default(),
                |current| match evaluate(current, &names) {
                    Verdict::NotLimited => Ok(current.clone()),
                    Verdict::Refuse(reason) => Err(refusal(def, name, &reason)),
                    Verdict::Reserve(used) => {
                        let mut next = current.clone();
                        // No resourceVersion of our own: the registry then retries on conflicts.
                        if let Some(meta) =
                            next.pointer_mut("/metadata").and_then(Value::as_object_mut)
                        {
                            meta.remove("resourceVersion");
                        }
                        if let Some(status) =
                            next.pointer_mut("/status").and_then(Value::as_object_mut)
                        {
                            status.insert("used".into(), resource_list_json(&used));
                        }
                        Ok(next)
                    }
                },
            )
            .await;
        match result {
            Ok(_) => {}
            // Deleted meanwhile: it limits nothing any more.
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(reservation)
}

/// The names of the quotas in the namespace that limit `names`, or the first refusal.
fn limiting_quotas(
    registry: &Registry,
    def: &ResourceDef,
    cluster: &str,
    namespace: &str,
    name: &str,
    names: &[String],
) -> Result<Vec<String>, ApiError> {
    let quotas = registry
        .cache()
        .list(&quota_keyspace().namespace(cluster, namespace), None);
    let mut limiting = Vec::new();
    for quota in &quotas {
        let value = quota.value().map_err(ApiError::internal)?;
        match evaluate(&value, names) {
            Verdict::NotLimited => {}
            Verdict::Refuse(reason) => return Err(refusal(def, name, &reason)),
            Verdict::Reserve(_) => limiting.push(quota.name.clone()),
        }
    }
    Ok(limiting)
}

fn refusal(def: &ResourceDef, name: &str, reason: &str) -> ApiError {
    ApiError::forbidden(&def.group, &def.plural, name, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(hard: Value, used: Value) -> Value {
        json!({"metadata": {"name": "q1"}, "spec": {"hard": hard.clone()}, "status": {"hard": hard, "used": used}})
    }

    #[test]
    fn names_of_core_group_and_custom_resources() {
        assert_eq!(
            usage_names("", "configmaps"),
            vec!["count/configmaps", "configmaps"]
        );
        assert_eq!(
            usage_names("", "serviceaccounts"),
            vec!["count/serviceaccounts"]
        );
        assert_eq!(
            usage_names("example.com", "widgets"),
            vec!["count/widgets.example.com"]
        );
        assert!(usage_names("", "events").is_empty());
        assert_eq!(
            counted_resource("count/widgets.example.com"),
            Some(("example.com".into(), "widgets".into()))
        );
        assert_eq!(
            counted_resource("secrets"),
            Some((String::new(), "secrets".into()))
        );
        assert_eq!(counted_resource("requests.cpu"), None);
        assert_eq!(counted_resource("pods"), None);
    }

    #[test]
    fn refuses_with_kubernetes_message() {
        let names = usage_names("", "configmaps");
        let q = quota(
            json!({"count/configmaps": "2"}),
            json!({"count/configmaps": "2"}),
        );
        match evaluate(&q, &names) {
            Verdict::Refuse(reason) => assert_eq!(
                reason,
                "exceeded quota: q1, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2"
            ),
            _ => panic!("a full quota admits"),
        }
        let both = quota(
            json!({"count/configmaps": "2k", "configmaps": "1"}),
            json!({"count/configmaps": "1", "configmaps": "1"}),
        );
        match evaluate(&both, &names) {
            Verdict::Refuse(reason) => assert_eq!(
                reason,
                "exceeded quota: q1, requested: configmaps=1, used: configmaps=1, limited: configmaps=1"
            ),
            _ => panic!("a full legacy limit admits"),
        }
    }

    #[test]
    fn reserves_within_the_limit_and_ignores_other_quotas() {
        let names = usage_names("", "secrets");
        let q = quota(json!({"secrets": "2"}), json!({"secrets": "1"}));
        match evaluate(&q, &names) {
            Verdict::Reserve(used) => {
                assert_eq!(resource_list_json(&used), json!({"secrets": "2"}))
            }
            _ => panic!("room for one more"),
        }
        let other = quota(
            json!({"count/configmaps": "0"}),
            json!({"count/configmaps": "0"}),
        );
        assert!(matches!(evaluate(&other, &names), Verdict::NotLimited));
        let mut scoped = quota(json!({"secrets": "0"}), json!({"secrets": "0"}));
        scoped["spec"]["scopes"] = json!(["Terminating"]);
        assert!(matches!(evaluate(&scoped, &names), Verdict::NotLimited));
    }

    #[test]
    fn unknown_usage_is_refused() {
        let names = usage_names("", "secrets");
        let q = json!({"metadata": {"name": "q1"}, "status": {"hard": {"secrets": "2"}}});
        match evaluate(&q, &names) {
            Verdict::Refuse(reason) => {
                assert_eq!(reason, "status unknown for quota: q1, resources: secrets")
            }
            _ => panic!("admitted without usage"),
        }
    }
}
