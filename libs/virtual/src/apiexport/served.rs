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

/// What an export's set was made from: the export's revision, and each schema it names with the
/// revision it had (`None`: not there). A request checks these against the cache, without
/// parsing the export or its schemas (a schema may be tens of KiB).
struct Made {
    export: i64,
    schemas: Vec<(String, Option<i64>)>,
}

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

    /// What the virtual workspace of export `name` of `cluster` serves; `None`: no such export.
    pub fn export(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
    ) -> Option<Arc<ApiSet>> {
        let cache = server.registry().cache();
        let key = keyspace(&self.exports).object(cluster, None, name);
        let id = (cluster.clone(), name.to_string());
        let Some(cached) = cache.get(&key) else {
            self.by_export.lock().remove(&id);
            return None;
        };
        let revision = |key: &str| cache.get(key).map(|o| o.revision);
        if let Some((made, apis)) = self.by_export.lock().get(&id)
            && made.export == cached.revision
            && (made.schemas.iter()).all(|(key, rev)| revision(key) == *rev)
        {
            return Some(apis.clone());
        }
        let object = cached.value().ok()?;
        let identity = text(&object, "/status/identityHash").to_string();
        let mut made = Made {
            export: cached.revision,
            schemas: Vec::new(),
        };
        let mut schemas = Vec::new();
        // Not served before the export has its identity: its objects have no place yet.
        if !identity.is_empty() {
            for resource in (object.pointer("/spec/resources").and_then(Value::as_array))
                .into_iter()
                .flatten()
            {
                let key = keyspace(&self.schemas).object(cluster, None, text(resource, "/schema"));
                let schema = cache.get(&key);
                made.schemas
                    .push((key, schema.as_ref().map(|s| s.revision)));
                if let Some(schema) = schema.and_then(|s| s.value().ok()) {
                    schemas.push(schema);
                }
            }
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
        Some(apis)
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
