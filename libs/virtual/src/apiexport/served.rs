//! What an export's virtual workspace serves: every resource of `spec.resources`, from its
//! APIResourceSchema, stored under the export's identity, and the APIBindings of the export
//! (read-only). Built as the bound CRDs kcp-apis serves in consumer clusters, through the same
//! interning, so the compiled schemas are the ones every binding already shares; kept per export
//! until the export or one of its schemas changes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kcp_api_types::ResourceDef;
use kcp_api_types::apis::GROUP;
use kcp_api_types::apis::claims::{claim_key, claim_label_value};
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
    /// The schemas, and the exports whose identity a claim names.
    schemas: Vec<(String, Option<i64>)>,
    /// When the export claims another export's resource by identity: nothing tells when an
    /// export of that identity appears (the claim resolves, or one more maximal permission
    /// policy bounds it), so the set is made again once [`IDENTITY_RECHECK`] has passed.
    by_identity: Option<Instant>,
}

/// How long a set with an identity claim is served before it is made again (making it reads
/// every export).
const IDENTITY_RECHECK: Duration = Duration::from_secs(2);

pub type ExportId = (LogicalClusterName, String);

/// The schema of a resource another export serves, which a claim names by that export's
/// identity.
struct Claimed {
    identity: String,
    schema: Value,
    /// The exports with that identity whose local maximal permission policy bounds it.
    policies: Vec<ExportId>,
}

/// A permission claim the export makes on a built-in resource, served beside its own.
pub struct Claim {
    pub group: String,
    pub resource: String,
    /// The identity of the export whose resource it claims; `None` for a built-in.
    pub identity: Option<String>,
    /// The exports of that identity with a local maximal permission policy, each of which must
    /// allow a request on the claimed resource (kcp asks them all).
    pub policies: Vec<ExportId>,
    /// kcp's `resource/group/identityHash` key, to find the binding's acceptance by.
    pub key: String,
    pub verbs: Vec<String>,
    /// The claim label's value on the objects it covers.
    pub label_value: String,
}

/// What an export's virtual workspace serves.
pub struct Served {
    /// Its resources, its bindings and its claimed resources.
    pub apis: Arc<ApiSet>,
    /// Without the claimed resources (an object partition's endpoint).
    pub exported: Arc<ApiSet>,
    pub claims: Vec<Claim>,
}

impl Served {
    /// The claim a request of `group`/`resource` is served under, if it is a claimed one.
    pub fn claim(&self, group: &str, resource: &str) -> Option<&Claim> {
        (self.claims.iter()).find(|c| c.group == group && c.resource == resource)
    }
}

pub struct ServedApis {
    exports: Arc<ResourceDef>,
    schemas: Arc<ResourceDef>,
    by_export: Mutex<HashMap<ExportId, (Made, Arc<Served>)>>,
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
    ) -> Option<Arc<Served>> {
        let cache = server.registry().cache();
        let key = keyspace(&self.exports).object(cluster, None, name);
        let id = (cluster.clone(), name.to_string());
        let Some(cached) = cache.get(&key) else {
            self.by_export.lock().remove(&id);
            return None;
        };
        let revision = |key: &str| cache.get(key).map(|o| o.revision);
        if let Some((made, apis)) = self.by_export.lock().get(&id)
            && made
                .by_identity
                .is_none_or(|at| at.elapsed() < IDENTITY_RECHECK)
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
            by_identity: None,
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
        let claimed = self.claimed_schemas(server, &object, &mut made);
        let served = Arc::new(build(server, &identity, &schemas, &claimed, &object));
        let mut by_export = self.by_export.lock();
        // Sets are rebuilt rarely (an export or schema changed): forget deleted exports' then.
        by_export.retain(|(c, n), _| {
            cache
                .get(&keyspace(&self.exports).object(c, None, n))
                .is_some()
        });
        by_export.insert(id, (made, served.clone()));
        Some(served)
    }
}

impl ServedApis {
    /// For each claim naming another export's identity: the schema of the claimed resource in
    /// the first export that has that identity (identities are random, so there is one unless
    /// exports share an identity secret), and which of them bound it by a maximal permission
    /// policy. What it read goes into `made`.
    fn claimed_schemas(&self, server: &ApiServer, export: &Value, made: &mut Made) -> Vec<Claimed> {
        let cache = server.registry().cache();
        let mut out = Vec::new();
        let identity_claims = (export.pointer("/spec/permissionClaims"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| !text(c, "/identityHash").is_empty());
        let mut exports: Option<Vec<Arc<kcp_apiserver::watch_cache::CachedObject>>> = None;
        for claim in identity_claims {
            made.by_identity = Some(Instant::now());
            let identity = text(claim, "/identityHash");
            let all = exports
                .get_or_insert_with(|| cache.list(keyspace(&self.exports).all_clusters(), None));
            let owners: Vec<_> = (all.iter())
                // Only an export whose bytes hold the identity is worth parsing.
                .filter(|o| o.json.may_contain(identity.as_bytes()))
                .filter_map(|o| {
                    let value = o.value().ok()?;
                    (text(&value, "/status/identityHash") == identity).then(|| (o.clone(), value))
                })
                .collect();
            let mut policies = Vec::new();
            for (owner, value) in &owners {
                let owner_key = keyspace(&self.exports).object(&owner.cluster, None, &owner.name);
                made.schemas.push((owner_key, Some(owner.revision)));
                if kcp_apis::policy::has_local_policy(value) {
                    policies.push((owner.cluster.clone(), owner.name.clone()));
                }
            }
            let Some((owner, value)) = owners.into_iter().next() else {
                continue;
            };
            let schema_name = (value.pointer("/spec/resources").and_then(Value::as_array))
                .into_iter()
                .flatten()
                .find(|r| {
                    text(r, "/group") == text(claim, "/group")
                        && text(r, "/name") == text(claim, "/resource")
                })
                .map(|r| text(r, "/schema").to_string());
            let Some(schema_name) = schema_name else {
                continue;
            };
            let key = keyspace(&self.schemas).object(&owner.cluster, None, &schema_name);
            let schema = cache.get(&key);
            made.schemas
                .push((key, schema.as_ref().map(|s| s.revision)));
            if let Some(schema) = schema.and_then(|s| s.value().ok()) {
                out.push(Claimed {
                    identity: identity.to_string(),
                    schema,
                    policies,
                });
            }
        }
        out
    }
}

/// The resources served for `schemas`, stored under `identity`.
fn bound_resources(
    server: &ApiServer,
    identity: &str,
    schemas: &[&Value],
) -> Vec<Arc<ResourceDef>> {
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
    server
        .crd_apis()
        .part(&served)
        .map(|part| part.resources.clone())
        .unwrap_or_default()
}

fn build(
    server: &ApiServer,
    identity: &str,
    schemas: &[Value],
    claimed: &[Claimed],
    export: &Value,
) -> Served {
    let mut resources = bound_resources(server, identity, &schemas.iter().collect::<Vec<_>>());
    let builtins = server.cluster_apis().builtins().resources();
    // The export's bindings, in every version kcp serves them.
    resources.extend(
        (builtins.iter())
            .filter(|d| d.group == GROUP && d.plural == "apibindings")
            .cloned(),
    );
    let exported = Arc::new(ApiSet::new(resources.clone()));
    let mut claimed_defs = Vec::new();
    for c in claimed {
        claimed_defs.extend(bound_resources(server, &c.identity, &[&c.schema]));
    }
    let claims = claims(export, &resources, &claimed_defs, claimed);
    for claim in &claims {
        let found = |d: &&Arc<ResourceDef>| {
            d.group == claim.group
                && d.plural == claim.resource
                && d.storage_identity.as_deref() == claim.identity.as_deref()
        };
        resources.extend(builtins.iter().filter(found).cloned());
        resources.extend(claimed_defs.iter().filter(found).cloned());
    }
    Served {
        apis: Arc::new(ApiSet::new(resources)),
        exported,
        claims,
    }
}

/// The export's claims on resources it does not serve itself (kcp ignores a claim overlapping
/// an exported resource): built-ins, and resources of the exports whose identity a claim names
/// (`claimed`, when their schema was found).
fn claims(
    export: &Value,
    served: &[Arc<ResourceDef>],
    claimed: &[Arc<ResourceDef>],
    schemas: &[Claimed],
) -> Vec<Claim> {
    (export
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array))
    .into_iter()
    .flatten()
    .filter(|c| {
        let identity = text(c, "/identityHash");
        identity.is_empty()
            || (claimed.iter()).any(|d| {
                d.group == text(c, "/group")
                    && d.plural == text(c, "/resource")
                    && d.storage_identity.as_deref() == Some(identity)
            })
    })
    .filter(|c| {
        !(served.iter()).any(|d| d.group == text(c, "/group") && d.plural == text(c, "/resource"))
    })
    .map(|c| Claim {
        policies: (schemas.iter())
            .find(|s| s.identity == text(c, "/identityHash"))
            .map(|s| s.policies.clone())
            .unwrap_or_default(),
        group: text(c, "/group").to_string(),
        resource: text(c, "/resource").to_string(),
        identity: Some(text(c, "/identityHash"))
            .filter(|i| !i.is_empty())
            .map(str::to_string),
        key: claim_key(c),
        verbs: (c.get("verbs").and_then(Value::as_array).into_iter())
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        label_value: claim_label_value(c),
    })
    .collect()
}
