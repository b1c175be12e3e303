//! WorkspaceType status: where the initializing and terminating virtual workspaces of each type are
//! served, one URL of each per Shard that has a virtual-workspace URL, as kcp publishes them:
//! `<virtualWorkspaceURL>/services/initializingworkspaces/<initializer>` and
//! `.../terminatingworkspaces/<terminator>`, where both names are `<LC of the type>:<type name>`.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use kcp_api_types::ResourceDef;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::registry::keyspace;
use serde_json::{Value, json};

use kcp_controllers::builtin;
use kcp_controllers::feed::{Change, Feed, Feeds};
use kcp_controllers::objects::{self, ObjectQueue};

struct Controller {
    server: Weak<ApiServer>,
    types: Arc<ResourceDef>,
    shards: Arc<ResourceDef>,
}

/// Starts the controller; it stops with the server.
pub fn spawn(server: Arc<ApiServer>) {
    let (Some(types), Some(shards)) = (
        builtin("tenancy.kcp.io", "workspacetypes"),
        builtin("core.kcp.io", "shards"),
    ) else {
        tracing::error!("workspace type controller: a tenancy kind is missing; not started");
        return;
    };
    let stop = server.shutdown_token();
    let cache = server.registry().cache().clone();
    let type_feed = Feed::new(cache.clone(), keyspace(&types).all_clusters());
    let shard_feed = Feed::new(cache, keyspace(&shards).all_clusters());
    let controller = Arc::new(Controller {
        server: Arc::downgrade(&server),
        types,
        shards,
    });
    drop(server);
    let worker = controller.clone();
    let queue = objects::reconciling(
        2,
        stop.clone(),
        "workspace type status failed",
        move |cluster, name| {
            let controller = worker.clone();
            async move { controller.reconcile(&cluster, &name).await }
        },
    );
    let (c, q) = (controller.clone(), queue.clone());
    let types = Feeds::new().on(type_feed, move |change| match change {
        Change::Event(e) => q.add((e.object.cluster.clone(), e.object.name.clone())),
        Change::Resync => c.all(&q),
    });
    // Every type lists every shard.
    let (c, q) = (controller.clone(), queue.clone());
    let feeds = types.on(shard_feed, move |_| c.all(&q));
    feeds.spawn(stop, move || controller.all(&queue));
}

impl Controller {
    fn all(&self, queue: &ObjectQueue) {
        if let Some(server) = self.server.upgrade() {
            objects::enqueue_all(server.registry().cache(), &self.types, queue);
        }
    }

    /// The virtual workspaces of the type `name` in LC `cluster`, from the Shards in root: for
    /// each shard by name, its initializing and its terminating one (kcp's order).
    fn urls(&self, server: &ApiServer, cluster: &LogicalClusterName, name: &str) -> Vec<Value> {
        let lifecycle_name = format!("{cluster}:{name}");
        let shards = server.registry().cache().list(
            &keyspace(&self.shards).cluster(kcp_api_types::tenancy::ROOT),
            None,
        );
        let bases: BTreeMap<String, String> = (shards.iter().filter_map(|s| s.value().ok()))
            .map(|shard| {
                let url = (shard
                    .pointer("/spec/virtualWorkspaceURL")
                    .and_then(Value::as_str))
                .unwrap_or_default()
                .trim_end_matches('/');
                let name = shard.pointer("/metadata/name").and_then(Value::as_str);
                (name.unwrap_or_default().to_string(), url.to_string())
            })
            .filter(|(_, url)| !url.is_empty())
            .collect();
        let mut out = Vec::with_capacity(bases.len() * 2);
        for base in bases.values() {
            for (kind, service) in [
                ("initializing", "initializingworkspaces"),
                ("terminating", "terminatingworkspaces"),
            ] {
                let url = format!("{base}/services/{service}/{lifecycle_name}");
                out.push(json!({"url": url, "type": kind}));
            }
        }
        out
    }

    async fn reconcile(&self, cluster: &LogicalClusterName, name: &str) -> Result<(), ApiError> {
        let Some(server) = self.server.upgrade() else {
            return Ok(());
        };
        let key = keyspace(&self.types).object(cluster, None, name);
        let Some(current) = server.registry().cache().get(&key) else {
            return Ok(());
        };
        let current = current.value().map_err(ApiError::internal)?;
        let status = json!({
            "virtualWorkspaces": self.urls(&server, cluster, name),
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "VirtualWorkspaceURLsReady", "status": "True"},
            ],
        });
        objects::write_status(&server, &self.types, cluster, name, &current, status).await
    }
}
