//! PartitionSets (`topology.kcp.io`), as kcp's `kcp-partitionset` controller keeps them: the
//! Shards matching a set's `shardSelector` are grouped by the values of its `dimensions` (shard
//! label keys, plus the selector's `matchLabels` keys), and each group present on at least one
//! shard gets a Partition owned by the set, selecting those values (and the set's
//! `matchExpressions`). Partitions of groups no shard has any more are deleted, and so are all of
//! them when the set's expressions change; the garbage collector takes them with the set.
//! `status.count` is the number of groups; `PartitionSetValid` (reason `InvalidSelector`) and
//! `PartitionsReady` (reason `ErrorGeneratingPartitions`) say how it went.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};

use kcp_api_types::ResourceDef;
use kcp_api_types::conditions::condition;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::selector::label::{Selector, from_label_selector};
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::registry::{DeleteOptions, ObjectRef, WriteOptions, keyspace, str_at as text};
use kcp_controllers::builtin;
use kcp_controllers::feed::{Change, Feed, Feeds};
use kcp_controllers::objects::{self, ObjectQueue};
use serde_json::{Map, Value, json};

const GROUP: &str = "topology.kcp.io";
/// The longest name a generated Partition name may start with (a DNS subdomain, less the `-`).
const NAME_MAX: usize = 252;

struct Controller {
    server: Weak<ApiServer>,
    sets: Arc<ResourceDef>,
    partitions: Arc<ResourceDef>,
    shards: Arc<ResourceDef>,
}

/// Starts the controller; it stops with the server.
pub fn spawn(server: Arc<ApiServer>) {
    let (Some(sets), Some(partitions), Some(shards)) = (
        builtin(GROUP, "partitionsets"),
        builtin(GROUP, "partitions"),
        builtin("core.kcp.io", "shards"),
    ) else {
        tracing::error!("PartitionSet controller: a kind is missing; not started");
        return;
    };
    let stop = server.shutdown_token();
    let cache = server.registry().cache().clone();
    let sets_feed = Feed::new(cache.clone(), keyspace(&sets).all_clusters());
    let partitions_feed = Feed::new(cache.clone(), keyspace(&partitions).all_clusters());
    let shards_feed = Feed::new(cache, keyspace(&shards).all_clusters());
    let controller = Arc::new(Controller {
        server: Arc::downgrade(&server),
        sets,
        partitions,
        shards,
    });
    drop(server);
    let worker = controller.clone();
    let queue = objects::reconciling(
        1,
        stop.clone(),
        "partitions not generated",
        move |cluster, name| {
            let controller = worker.clone();
            async move { controller.reconcile(&cluster, &name).await }
        },
    );
    let (c, q) = (controller.clone(), queue.clone());
    let feeds = Feeds::new().on(sets_feed, move |change| match change {
        Change::Event(e) => q.add((e.object.cluster.clone(), e.object.name.clone())),
        Change::Resync => c.all(&q),
    });
    // A Partition changed or gone: its set makes it again if it must.
    let (c, q) = (controller.clone(), queue.clone());
    let feeds = feeds.on(partitions_feed, move |change| match change {
        Change::Event(e) => {
            if let Some(owner) = e.object.value().ok().as_ref().and_then(owning_set) {
                q.add((e.object.cluster.clone(), owner));
            }
        }
        Change::Resync => c.all(&q),
    });
    // Shards come, go and change labels: every set may group them anew.
    let (c, q) = (controller.clone(), queue.clone());
    let feeds = feeds.on(shards_feed, move |_| c.all(&q));
    feeds.spawn(stop, move || controller.all(&queue));
}

/// The PartitionSet a Partition's controller reference names.
fn owning_set(partition: &Value) -> Option<String> {
    (partition
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter())
    .find(|r| r["kind"] == "PartitionSet" && r["controller"] == true)
    .map(|r| text(r, "/name").to_string())
}

/// The groups of `shards` (their labels) by the values of `keys`: a shard lacking one of them is
/// in no group. Keyed `+k1=v1+k2=v2` (keys sorted), as kcp keys them.
fn groups(
    shards: &[Map<String, Value>],
    keys: &BTreeSet<String>,
) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    if keys.is_empty() {
        return out;
    }
    for labels in shards {
        let values: Option<BTreeMap<String, String>> = (keys.iter())
            .map(|k| Some((k.clone(), labels.get(k)?.as_str()?.to_string())))
            .collect();
        if let Some(values) = values {
            out.insert(group_key(&values), values);
        }
    }
    out
}

fn group_key(values: &BTreeMap<String, String>) -> String {
    values.iter().map(|(k, v)| format!("+{k}={v}")).collect()
}

/// `generateName` of a set's Partition: the set's name and the dimension values (sorted by key,
/// lower-cased), cut to fit a name, then `-`.
fn generate_name(
    set: &str,
    values: &BTreeMap<String, String>,
    dimensions: &BTreeSet<String>,
) -> String {
    let mut name = set.to_string();
    for key in dimensions {
        name.push('-');
        name.push_str(
            &values
                .get(key)
                .map(|v| v.to_lowercase())
                .unwrap_or_default(),
        );
    }
    let cut = (0..=name.len().min(NAME_MAX))
        .rev()
        .find(|i| name.is_char_boundary(*i))
        .unwrap_or(0);
    name.truncate(cut);
    name.push('-');
    name
}

/// What went wrong, in the words of the two conditions.
struct Failure {
    invalid_selector: Option<String>,
    generating: Option<String>,
}

impl Controller {
    fn all(&self, queue: &ObjectQueue) {
        if let Some(server) = self.server.upgrade() {
            objects::enqueue_all(server.registry().cache(), &self.sets, queue);
        }
    }

    async fn reconcile(&self, cluster: &LogicalClusterName, name: &str) -> Result<(), ApiError> {
        let Some(server) = self.server.upgrade() else {
            return Ok(());
        };
        // The Partitions the last pass created must be seen, or this pass makes them again.
        server
            .registry()
            .cache()
            .wait_fresh()
            .await
            .map_err(kcp_apiserver::registry::cache_error)?;
        let key = keyspace(&self.sets).object(cluster, None, name);
        let Some(cached) = server.registry().cache().get(&key) else {
            return Ok(());
        };
        if cached.is_deleting() {
            return Ok(());
        }
        let set = cached.value().map_err(ApiError::internal)?;
        let (count, failure) = match self.partition(&server, cluster, &set).await {
            Ok(count) => (count, None),
            Err(failure) => (0, Some(failure)),
        };
        let mut conditions = Vec::new();
        let (invalid, generating) = match &failure {
            Some(f) => (f.invalid_selector.as_deref(), f.generating.as_deref()),
            None => (None, None),
        };
        conditions.push(condition(
            "PartitionSetValid",
            invalid.map(|m| ("InvalidSelector", m)),
        ));
        conditions.push(condition(
            "PartitionsReady",
            (failure.is_some()).then(|| ("ErrorGeneratingPartitions", generating.unwrap_or(""))),
        ));
        let mut status = json!({"conditions": conditions});
        if failure.is_none() || count > 0 {
            status["count"] = json!(count);
        }
        objects::write_status(&server, &self.sets, cluster, name, &set, status).await?;
        match failure {
            Some(Failure {
                invalid_selector: None,
                generating: Some(err),
            }) => Err(ApiError::internal(err)),
            _ => Ok(()),
        }
    }

    /// Makes the set's Partitions what its shards say; the number of groups.
    async fn partition(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        set: &Value,
    ) -> Result<usize, Failure> {
        let selector = set.pointer("/spec/shardSelector").filter(|s| !s.is_null());
        let shard_selector = match selector {
            Some(s) => from_label_selector(s).map_err(|err| Failure {
                invalid_selector: Some(err.to_string()),
                generating: Some(String::new()),
            })?,
            None => Selector::everything(),
        };
        let failed = |what: &str| Failure {
            invalid_selector: None,
            generating: Some(what.to_string()),
        };
        let cache = server.registry().cache();
        let shards: Vec<Map<String, Value>> = (cache.list(
            &keyspace(&self.shards).cluster(kcp_api_types::tenancy::ROOT),
            None,
        ))
        .iter()
        .filter_map(|s| s.value().ok())
        .filter(|s| shard_selector.matches_object(s))
        .map(|s| {
            (s.pointer("/metadata/labels").and_then(Value::as_object))
                .cloned()
                .unwrap_or_default()
        })
        .collect();
        let dimensions: BTreeSet<String> =
            (set.pointer("/spec/dimensions").and_then(Value::as_array))
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
        let mut keys = dimensions.clone();
        keys.extend(
            (selector
                .and_then(|s| s.get("matchLabels"))
                .and_then(Value::as_object))
            .into_iter()
            .flatten()
            .map(|(k, _)| k.clone()),
        );
        let wanted = groups(&shards, &keys);
        let expressions = selector
            .and_then(|s| s.get("matchExpressions"))
            .filter(|e| e.as_array().is_some_and(|a| !a.is_empty()))
            .cloned()
            .unwrap_or_else(|| json!([]));
        let set_name = text(set, "/metadata/name");
        let uid = text(set, "/metadata/uid");
        let mut present = BTreeSet::new();
        for partition in cache.list(&keyspace(&self.partitions).cluster(cluster), None) {
            let Ok(value) = partition.value() else {
                continue;
            };
            if owning_set(&value).as_deref() != Some(set_name) {
                continue;
            }
            let selector = value.pointer("/spec/selector");
            let their_expressions = (selector.and_then(|s| s.get("matchExpressions")))
                .filter(|e| e.as_array().is_some_and(|a| !a.is_empty()))
                .cloned()
                .unwrap_or_else(|| json!([]));
            let values: BTreeMap<String, String> = (selector
                .and_then(|s| s.get("matchLabels"))
                .and_then(Value::as_object))
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect();
            let key = group_key(&values);
            // One Partition per group: a second one (made twice) goes like a stale one.
            if their_expressions == expressions
                && wanted.contains_key(&key)
                && !present.contains(&key)
            {
                present.insert(key);
                continue;
            }
            let at = ObjectRef {
                cluster,
                namespace: None,
                name: &partition.name,
            };
            match server
                .registry()
                .delete(&self.partitions, at, &DeleteOptions::default())
                .await
            {
                Ok(_) => {}
                Err(err) if err.is_not_found() => {}
                Err(_) => return Err(failed("old partition could not get deleted")),
            }
        }
        for (key, values) in &wanted {
            if present.contains(key) {
                continue;
            }
            let mut selector = json!({"matchLabels": values});
            if expressions.as_array().is_some_and(|a| !a.is_empty()) {
                selector["matchExpressions"] = expressions.clone();
            }
            let partition = json!({
                "apiVersion": "topology.kcp.io/v1alpha1",
                "kind": "Partition",
                "metadata": {
                    "generateName": generate_name(set_name, values, &dimensions),
                    "ownerReferences": [{
                        "apiVersion": "topology.kcp.io/v1alpha1",
                        "kind": "PartitionSet",
                        "name": set_name,
                        "uid": uid,
                        "controller": true,
                        "blockOwnerDeletion": true,
                    }],
                },
                "spec": {"selector": selector},
            });
            server
                .registry()
                .create(
                    &self.partitions,
                    cluster,
                    None,
                    partition,
                    WriteOptions::default(),
                )
                .await
                .map_err(|_| failed("partition could not get created"))?;
        }
        Ok(wanted.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect()
    }

    #[test]
    fn shards_are_grouped_by_the_dimension_values_they_have() {
        let shards = [
            labels(&[("region", "east"), ("cloud", "a")]),
            labels(&[("region", "east"), ("cloud", "a"), ("name", "s2")]),
            labels(&[("region", "west"), ("cloud", "b")]),
            labels(&[("region", "north")]),
        ];
        let keys: BTreeSet<String> = ["cloud", "region"].map(String::from).into();
        let groups = groups(&shards, &keys);
        assert_eq!(
            groups.keys().collect::<Vec<_>>(),
            ["+cloud=a+region=east", "+cloud=b+region=west"]
        );
        assert!(super::groups(&shards, &BTreeSet::new()).is_empty());
    }

    #[test]
    fn names_follow_the_dimension_values() {
        let values: BTreeMap<String, String> = [("region", "East"), ("cloud", "a")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
        let dims: BTreeSet<String> = ["region", "cloud"].map(String::from).into();
        assert_eq!(generate_name("set", &values, &dims), "set-a-east-");
        let long = "x".repeat(300);
        assert_eq!(generate_name(&long, &values, &dims).len(), NAME_MAX + 1);
    }
}
