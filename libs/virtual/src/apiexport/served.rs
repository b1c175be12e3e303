//! What an export's virtual workspace serves: every resource of `spec.resources`, from its
//! APIResourceSchema, stored under the export's identity, and the APIBindings of the export
//! (read-only). Built as the bound CRDs kcp-apis serves in consumer clusters, through the same
//! interning, so the compiled schemas are the ones every binding already shares; kept per export
//! until the export or one of its schemas changes.

use std::collections::HashMap;
use std::sync::Arc;

use kcp_api_types::ResourceDef;
use kcp_api_types::apis::GROUP;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apis::binding::serving::bound_crd;
use kcp_apiserver::ApiServer;
use kcp_apiserver::crd::ServedCrd;
use kcp_apiserver::discovery::ApiSet;
use kcp_apiserver::registry::{keyspace, str_at as text};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// An export as its virtual workspace sees it.
pub struct Export {
    pub cluster: LogicalClusterName,
    pub name: String,
    /// The stored (v1alpha2) object.
    pub object: Value,
    /// What its URL serves.
    pub apis: Arc<ApiSet>,
}

impl Export {
    pub fn identity(&self) -> &str {
        text(&self.object, "/status/identityHash")
    }
}

/// What each export's set was made from: the export's and its schemas' revisions.
type Made = Vec<i64>;

type ExportId = (LogicalClusterName, String);

pub struct ServedApis {
    exports: Arc<ResourceDef>,
    schemas: Arc<ResourceDef>,
    by_export: Mutex<HashMap<ExportId, (Made, Arc<ApiSet>)>>,
}

impl ServedApis {
    pub fn new(exports: Arc<ResourceDef>, schemas: Arc<ResourceDef>) -> ServedApis {
        ServedApis {
            exports,
            schemas,
            by_export: Mutex::new(HashMap::new()),
        }
    }

    /// Export `name` of `cluster` and what its virtual workspace serves; `None`: there is none.
    pub fn export(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
    ) -> Option<Export> {
        let cache = server.registry().cache();
        let key = keyspace(&self.exports).object(cluster, None, name);
        let Some(cached) = cache.get(&key) else {
            self.by_export
                .lock()
                .remove(&(cluster.clone(), name.to_string()));
            return None;
        };
        let object = cached.value().ok()?;
        let identity = text(&object, "/status/identityHash").to_string();
        let mut made = vec![cached.revision];
        let mut schemas = Vec::new();
        // Not served before the export has its identity: its objects have no place yet.
        if !identity.is_empty() {
            for resource in (object.pointer("/spec/resources").and_then(Value::as_array))
                .into_iter()
                .flatten()
            {
                let key = keyspace(&self.schemas).object(cluster, None, text(resource, "/schema"));
                let Some(schema) = cache.get(&key) else {
                    continue;
                };
                made.push(schema.revision);
                if let Ok(schema) = schema.value() {
                    schemas.push(schema);
                }
            }
        }
        let id = (cluster.clone(), name.to_string());
        if let Some((was, apis)) = self.by_export.lock().get(&id)
            && *was == made
        {
            let apis = apis.clone();
            return Some(Export {
                cluster: cluster.clone(),
                name: name.to_string(),
                object,
                apis,
            });
        }
        let apis = Arc::new(build(server, &identity, &schemas));
        let mut by_export = self.by_export.lock();
        // Sets are rebuilt rarely (an export or schema changed): forget deleted exports' then.
        by_export.retain(|(c, n), _| {
            cache
                .get(&keyspace(&self.exports).object(c, None, n))
                .is_some()
        });
        by_export.insert(id, (made, apis.clone()));
        drop(by_export);
        Some(Export {
            cluster: cluster.clone(),
            name: name.to_string(),
            object,
            apis,
        })
    }
}

fn build(server: &ApiServer, identity: &str, schemas: &[Value]) -> ApiSet {
    let crds: Vec<Value> = schemas
        .iter()
        .map(|schema| {
            let storage: Vec<&str> = (schema.pointer("/spec/versions").and_then(Value::as_array))
                .into_iter()
                .flatten()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").and_then(Value::as_str))
                .collect();
            let bound = json!({
                "schema": {"identityHash": identity},
                "storageVersions": storage,
            });
            bound_crd(schema, &bound, false)
        })
        .collect();
    let served: Vec<ServedCrd<'_>> = crds.iter().map(|crd| ServedCrd { crd }).collect();
    let mut resources = server
        .crd_apis()
        .part(&served)
        .map(|part| part.resources.clone())
        .unwrap_or_default();
    // The export's bindings, in every version kcp serves them.
    resources.extend(
        (server.cluster_apis().builtins().resources().iter())
            .filter(|d| d.group == GROUP && d.plural == "apibindings")
            .cloned(),
    );
    ApiSet::new(resources)
}
