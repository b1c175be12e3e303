//! ClusterRole aggregation, as Kubernetes' clusterrole-aggregation controller (which kcp runs per
//! logical cluster) keeps it: an aggregated ClusterRole's `rules` are rewritten to the rules of the
//! other ClusterRoles of its LC that match its `aggregationRule` selectors, selector by selector,
//! each selector's roles in name order, without duplicates. Authorization does not wait for this
//! (the RBAC index aggregates by itself); it is what `kubectl get clusterrole -o yaml`, `describe`
//! and GitOps tools read. A role that aggregates another aggregated role takes the rules written
//! into it, so chains settle as each write brings the next reconcile.

use std::sync::{Arc, Weak};
use std::time::Duration;

use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::selector::label::from_label_selector;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::registry::{ObjectRef, UpdateKind, WriteOptions, keyspace};
use serde_json::{Map, Value};

use crate::feed::{Change, Feed, Feeds};
use crate::per_namespace::builtin;
use crate::workqueue::{Outcome, WorkQueue};

const RETRY_DELAY: Duration = Duration::from_millis(200);
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

struct Controller {
    server: Weak<ApiServer>,
    roles: Arc<ResourceDef>,
}

/// Starts the controller; it stops with the server.
pub fn spawn(server: Arc<ApiServer>) {
    let Some(roles) = builtin("rbac.authorization.k8s.io", "clusterroles") else {
        tracing::error!("clusterrole aggregation: ClusterRoles missing; not started");
        return;
    };
    let stop = server.shutdown_token();
    let feed = Feed::new(
        server.registry().cache().clone(),
        keyspace(&roles).all_clusters(),
    );
    let controller = Arc::new(Controller {
        server: Arc::downgrade(&server),
        roles,
    });
    drop(server);
    // One key per logical cluster: any ClusterRole of it may change what its aggregated ones hold.
    let queue: Arc<WorkQueue<LogicalClusterName>> = WorkQueue::new(RETRY_DELAY, MAX_RETRY_DELAY);
    let worker = controller.clone();
    queue.spawn_workers(1, stop.clone(), move |cluster| {
        let controller = worker.clone();
        async move {
            Outcome::of(controller.reconcile(&cluster).await, |err| {
                tracing::warn!(%cluster, error = %err, "clusterrole aggregation failed; retrying");
            })
        }
    });
    let (c, q) = (controller.clone(), queue.clone());
    let feeds = Feeds::new().on(feed, move |change| match change {
        Change::Event(e) => {
            if c.aggregates(&e.object.cluster) {
                q.add(e.object.cluster.clone());
            }
        }
        Change::Resync => c.all(&q),
    });
    feeds.spawn(stop, move || controller.all(&queue));
}

/// A rule as Kubernetes compares rules: empty lists are absent ones (the JSON omits them).
fn normalized(rule: &Value) -> Value {
    match rule.as_object() {
        Some(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.as_array().is_some_and(Vec::is_empty) && !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Map<String, Value>>(),
        ),
        None => rule.clone(),
    }
}

fn rules_of(role: &Value) -> Vec<Value> {
    role.get("rules")
        .and_then(Value::as_array)
        .map(|rules| rules.iter().map(normalized).collect())
        .unwrap_or_default()
}

fn selectors_of(role: &Value) -> Option<&Vec<Value>> {
    role.pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
}

fn name_of(role: &Value) -> &str {
    role.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The rules `role` aggregates from `roles` (all of its LC, in name order).
fn aggregated_rules(role: &Value, roles: &[Value]) -> Result<Vec<Value>, String> {
    let mut out: Vec<Value> = Vec::new();
    for selector in selectors_of(role).into_iter().flatten() {
        let selector = from_label_selector(selector).map_err(|e| e.to_string())?;
        let matched = roles
            .iter()
            .filter(|other| name_of(other) != name_of(role) && selector.matches_object(other));
        for other in matched {
            for rule in rules_of(other) {
                if !out.contains(&rule) {
                    out.push(rule);
                }
            }
        }
    }
    Ok(out)
}

impl Controller {
    fn roles_of(&self, server: &ApiServer, cluster: &str) -> Vec<Value> {
        let mut roles: Vec<Value> = server
            .registry()
            .cache()
            .list(&keyspace(&self.roles).cluster(cluster), None)
            .iter()
            .filter_map(|r| r.value().ok())
            .collect();
        roles.sort_by(|a, b| name_of(a).cmp(name_of(b)));
        roles
    }

    /// Whether `cluster` has an aggregated ClusterRole (most LCs have none: nothing to do).
    fn aggregates(&self, cluster: &str) -> bool {
        let Some(server) = self.server.upgrade() else {
            return false;
        };
        server
            .registry()
            .cache()
            .list(&keyspace(&self.roles).cluster(cluster), None)
            .iter()
            .any(|r| r.json.may_contain(b"\"aggregationRule\""))
    }

    fn all(&self, queue: &WorkQueue<LogicalClusterName>) {
        let Some(server) = self.server.upgrade() else {
            return;
        };
        for role in server
            .registry()
            .cache()
            .list(keyspace(&self.roles).all_clusters(), None)
        {
            if role.json.may_contain(b"\"aggregationRule\"") {
                queue.add(role.cluster.clone());
            }
        }
    }

    async fn reconcile(&self, cluster: &LogicalClusterName) -> Result<(), ApiError> {
        let Some(server) = self.server.upgrade() else {
            return Ok(());
        };
        let roles = self.roles_of(&server, cluster);
        for role in roles.iter().filter(|r| selectors_of(r).is_some()) {
            let rules = aggregated_rules(role, &roles).map_err(ApiError::bad_request)?;
            if rules == rules_of(role) {
                continue;
            }
            let at = ObjectRef {
                cluster,
                namespace: None,
                name: name_of(role),
            };
            let written = server
                .registry()
                .update(
                    &self.roles,
                    at,
                    UpdateKind::Main,
                    WriteOptions::default(),
                    |old| {
                        let mut new = old.clone();
                        new["rules"] = Value::Array(rules.clone());
                        Ok(new)
                    },
                )
                .await;
            match written {
                // Gone meanwhile: nothing to keep.
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
                Ok(_) => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn role(name: &str, labels: Value, rules: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "rules": rules})
    }

    #[test]
    fn rules_of_matching_roles_selector_by_selector() {
        let get = |r: &str| json!({"verbs": ["get"], "apiGroups": [""], "resources": [r]});
        let agg = json!({
            "metadata": {"name": "agg", "labels": {"a": "1"}},
            "aggregationRule": {"clusterRoleSelectors": [
                {"matchLabels": {"a": "1"}}, {"matchLabels": {"b": "1"}},
            ]},
            "rules": [get("stale")],
        });
        let roles = vec![
            agg.clone(),
            role("x", json!({"b": "1"}), json!([get("secrets")])),
            role("y", json!({"a": "1"}), json!([get("pods"), get("secrets")])),
            role("z", json!({"a": "1"}), json!([get("pods")])),
            role("other", json!({}), json!([get("nodes")])),
        ];
        let rules = aggregated_rules(&agg, &roles).expect("valid selectors");
        // Selector a=1 first (y, z; never agg itself), then b=1 (x); duplicates once.
        assert_eq!(rules, vec![get("pods"), get("secrets")]);
        let empty_lists = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": []});
        assert_eq!(normalized(&empty_lists), get("pods"));
    }
}
