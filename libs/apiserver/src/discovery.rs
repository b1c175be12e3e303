//! Discovery documents, legacy (`/api`, `/apis`, `/apis/<g>`, `/api/v1`, `/apis/<g>/<v>`) and aggregated
//! (`apidiscovery.k8s.io/v2`), built from a logical cluster's API set.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kcp_api_types::ResourceDef;
use serde_json::{Value, json};

/// The content type of aggregated discovery v2 responses; kubectl only uses them when it sees exactly this.
pub const V2_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
pub const V2BETA1_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// The resources of one logical cluster, grouped for discovery.
pub struct ApiSet {
    resources: Vec<Arc<ResourceDef>>,
    /// Built on first use: most logical clusters are never asked for their OpenAPI.
    openapi: std::sync::OnceLock<crate::openapi::OpenApiDocs>,
    /// Each resource by its key prefix, built on first use.
    by_prefix: std::sync::OnceLock<HashMap<String, Arc<ResourceDef>>>,
}

/// The subresources `def` serves.
pub(crate) fn subresources(def: &ResourceDef) -> Vec<&'static str> {
    let mut subs = Vec::new();
    if def.status_subresource {
        subs.push("status");
    }
    if def.scale.is_some() {
        subs.push("scale");
    }
    if def.is("", "namespaces") {
        subs.push("finalize");
    }
    if def.is(
        kcp_api_types::builtin::certificates::GROUP,
        kcp_api_types::builtin::certificates::RESOURCE,
    ) {
        subs.push("approval");
    }
    // The TokenRequest API (`kubectl create token`).
    if def.group.is_empty() && def.plural == "serviceaccounts" {
        subs.push("token");
    }
    subs
}

/// The kind a subresource answers with when it is not the resource's own: `(group, version, kind)`.
fn subresource_kind(sub: &str) -> Option<(&'static str, &'static str, &'static str)> {
    match sub {
        "scale" => Some(("autoscaling", "v1", "Scale")),
        "token" => Some(("authentication.k8s.io", "v1", "TokenRequest")),
        _ => None,
    }
}

fn subresource_verbs(sub: &str) -> Vec<&'static str> {
    match sub {
        "finalize" => vec!["update"],
        "token" => vec!["create"],
        _ => vec!["get", "patch", "update"],
    }
}

impl ApiSet {
    pub fn new(resources: Vec<Arc<ResourceDef>>) -> ApiSet {
        ApiSet {
            resources,
            openapi: std::sync::OnceLock::new(),
            by_prefix: std::sync::OnceLock::new(),
        }
    }

    /// The resource whose objects' keys start with `prefix` (its `all_clusters()` key prefix);
    /// the first of the set where several versions share storage.
    pub fn by_key_prefix(&self, prefix: &str) -> Option<&Arc<ResourceDef>> {
        self.by_prefix
            .get_or_init(|| {
                let mut map = HashMap::with_capacity(self.resources.len());
                for def in &self.resources {
                    let prefix = crate::registry::keyspace(def).all_clusters().to_string();
                    map.entry(prefix).or_insert_with(|| def.clone());
                }
                map
            })
            .get(prefix)
    }

    /// The `/openapi/v3` documents of this set.
    pub fn openapi(&self) -> &crate::openapi::OpenApiDocs {
        self.openapi
            .get_or_init(|| crate::openapi::OpenApiDocs::build(self))
    }

    pub fn resources(&self) -> &[Arc<ResourceDef>] {
        &self.resources
    }

    /// The resource served at `group/version/resource`.
    pub fn find(&self, group: &str, version: &str, resource: &str) -> Option<&Arc<ResourceDef>> {
        self.resources
            .iter()
            .find(|d| d.group == group && d.version == version && d.plural == resource)
    }

    /// Named groups (not the core group), each with its versions, in a stable order.
    fn groups(&self) -> BTreeMap<&str, Vec<&str>> {
        let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for d in self.resources.iter().filter(|d| !d.group.is_empty()) {
            let versions = groups.entry(d.group.as_str()).or_default();
            if !versions.contains(&d.version.as_str()) {
                versions.push(d.version.as_str());
            }
        }
        groups
    }

    pub fn has_group_version(&self, group: &str, version: &str) -> bool {
        self.resources
            .iter()
            .any(|d| d.group == group && d.version == version)
    }

    fn group_json(name: &str, versions: &[&str]) -> Value {
        let versions: Vec<Value> = versions
            .iter()
            .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
            .collect();
        let preferred = versions.first().cloned().unwrap_or(Value::Null);
        json!({"name": name, "versions": versions, "preferredVersion": preferred})
    }

    /// `/api`
    pub fn core_versions(&self, server_address: &str) -> Value {
        json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
        })
    }

    /// `/apis`
    pub fn group_list(&self) -> Value {
        let groups: Vec<Value> = self
            .groups()
            .iter()
            .map(|(g, vs)| Self::group_json(g, vs))
            .collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    /// `/apis/<group>`
    pub fn group(&self, group: &str) -> Option<Value> {
        let groups = self.groups();
        let versions = groups.get(group)?;
        let mut doc = Self::group_json(group, versions);
        if let Some(m) = doc.as_object_mut() {
            m.insert("kind".into(), json!("APIGroup"));
            m.insert("apiVersion".into(), json!("v1"));
        }
        Some(doc)
    }

    /// `/api/v1` or `/apis/<group>/<version>`
    pub fn resource_list(&self, group: &str, version: &str) -> Option<Value> {
        if !self.has_group_version(group, version) {
            return None;
        }
        let mut resources = Vec::new();
        for d in self
            .resources
            .iter()
            .filter(|d| d.group == group && d.version == version)
        {
            let mut r = json!({
                "name": d.plural,
                "singularName": d.singular,
                "namespaced": d.namespaced,
                "kind": d.kind,
                "verbs": d.verbs,
            });
            if !d.short_names.is_empty() {
                r["shortNames"] = json!(d.short_names);
            }
            if !d.categories.is_empty() {
                r["categories"] = json!(d.categories);
            }
            resources.push(r);
            for sub in subresources(d) {
                let mut r = json!({
                    "name": format!("{}/{sub}", d.plural),
                    "singularName": "",
                    "namespaced": d.namespaced,
                    "kind": d.kind,
                    "verbs": subresource_verbs(sub),
                });
                if let Some((group, version, kind)) = subresource_kind(sub) {
                    r["group"] = json!(group);
                    r["version"] = json!(version);
                    r["kind"] = json!(kind);
                }
                resources.push(r);
            }
        }
        let gv = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        Some(
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
        )
    }

    fn v2_resource(d: &ResourceDef) -> Value {
        let kind = json!({"group": d.group, "version": d.version, "kind": d.kind});
        let mut r = json!({
            "resource": d.plural,
            "responseKind": kind,
            "scope": if d.namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": d.singular,
            "verbs": d.verbs,
        });
        if !d.short_names.is_empty() {
            r["shortNames"] = json!(d.short_names);
        }
        if !d.categories.is_empty() {
            r["categories"] = json!(d.categories);
        }
        let subs: Vec<Value> = subresources(d)
            .into_iter()
            .map(|s| {
                let kind = match subresource_kind(s) {
                    Some((group, version, kind)) => {
                        json!({"group": group, "version": version, "kind": kind})
                    }
                    None => kind.clone(),
                };
                json!({"subresource": s, "responseKind": kind, "verbs": subresource_verbs(s)})
            })
            .collect();
        if !subs.is_empty() {
            r["subresources"] = Value::Array(subs);
        }
        r
    }

    fn v2_group(&self, group: &str, versions: &[&str]) -> Value {
        let versions: Vec<Value> = versions
            .iter()
            .map(|v| {
                let resources: Vec<Value> = self
                    .resources
                    .iter()
                    .filter(|d| d.group == group && d.version == *v)
                    .map(|d| Self::v2_resource(d))
                    .collect();
                json!({"version": v, "resources": resources, "freshness": "Current"})
            })
            .collect();
        let mut metadata = json!({"creationTimestamp": null});
        if !group.is_empty() {
            metadata["name"] = json!(group);
        }
        json!({"metadata": metadata, "versions": versions})
    }

    /// Aggregated discovery for `/api` (core) or `/apis` (named groups).
    pub fn aggregated(&self, core: bool, beta: bool) -> Value {
        let items: Vec<Value> = if core {
            vec![self.v2_group("", &["v1"])]
        } else {
            self.groups()
                .iter()
                .map(|(g, vs)| self.v2_group(g, vs))
                .collect()
        };
        let api_version = if beta {
            "apidiscovery.k8s.io/v2beta1"
        } else {
            "apidiscovery.k8s.io/v2"
        };
        json!({"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items})
    }
}

/// Kind lookups, for references that name a kind rather than a resource (ownerReferences).
impl ApiSet {
    /// The resource serving `kind` in `group/version`; when that version is not served, another
    /// version of the same group and kind (they share storage, and owners are matched by uid anyway).
    pub fn find_kind(&self, group: &str, version: &str, kind: &str) -> Option<&Arc<ResourceDef>> {
        let same_kind = |d: &&Arc<ResourceDef>| d.group == group && d.kind == kind;
        self.resources
            .iter()
            .filter(same_kind)
            .find(|d| d.version == version)
            .or_else(|| self.resources.iter().find(same_kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> ApiSet {
        ApiSet::new(
            kcp_api_types::builtin::catalogue()
                .into_iter()
                .map(Arc::new)
                .collect(),
        )
    }

    #[test]
    fn resources_by_key_prefix() {
        let s = set();
        for def in s.resources() {
            let prefix = crate::registry::keyspace(def).all_clusters().to_string();
            let found = s.by_key_prefix(&prefix).expect("every resource is found");
            // Resources sharing storage answer the first of them, as a scan in order would.
            let first = s
                .resources()
                .iter()
                .find(|d| crate::registry::keyspace(d).all_clusters() == prefix)
                .expect("itself at least");
            assert!(Arc::ptr_eq(found, first), "{prefix}");
        }
        assert!(s.by_key_prefix("/core/nothings/local/").is_none());
    }

    #[test]
    fn legacy_documents() {
        let s = set();
        let core = s.resource_list("", "v1").expect("core");
        let names: Vec<&str> = core["resources"]
            .as_array()
            .map(|a| a.iter().filter_map(|r| r["name"].as_str()).collect())
            .unwrap_or_default();
        assert!(names.contains(&"configmaps"));
        assert!(names.contains(&"namespaces/status"));
        assert!(s.group("rbac.authorization.k8s.io").is_some());
        assert!(s.group("nope.io").is_none());
        assert!(s.resource_list("apps", "v1").is_none());
        let groups = s.group_list();
        assert!(
            groups["groups"]
                .as_array()
                .is_some_and(|g| g.iter().any(|x| x["name"] == "core.kcp.io"))
        );
    }

    #[test]
    fn aggregated_documents() {
        let s = set();
        let core = s.aggregated(true, false);
        assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2");
        let cm = core["items"][0]["versions"][0]["resources"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["resource"] == "configmaps"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(cm["scope"], "Namespaced");
        assert_eq!(cm["shortNames"], json!(["cm"]));
        let apis = s.aggregated(false, false);
        assert!(apis["items"].as_array().is_some_and(|i| {
            i.iter()
                .any(|g| g["metadata"]["name"] == "coordination.k8s.io")
        }));
    }

    #[test]
    fn token_request_and_reviews() {
        let s = set();
        let core = s.resource_list("", "v1").expect("core");
        let token = core["resources"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["name"] == "serviceaccounts/token"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(token["verbs"], json!(["create"]));
        assert_eq!(token["group"], "authentication.k8s.io");
        assert_eq!(token["kind"], "TokenRequest");
        let v2 = s.aggregated(true, false);
        let sa = v2["items"][0]["versions"][0]["resources"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["resource"] == "serviceaccounts"))
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            sa["subresources"][0],
            json!({"subresource": "token", "verbs": ["create"],
                "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"}})
        );
        for (group, plural, namespaced) in [
            ("authorization.k8s.io", "subjectaccessreviews", false),
            ("authorization.k8s.io", "selfsubjectaccessreviews", false),
            ("authorization.k8s.io", "localsubjectaccessreviews", true),
            ("authorization.k8s.io", "selfsubjectrulesreviews", false),
            ("authentication.k8s.io", "tokenreviews", false),
            ("authentication.k8s.io", "selfsubjectreviews", false),
        ] {
            let list = s.resource_list(group, "v1").expect(group);
            let r = list["resources"]
                .as_array()
                .and_then(|a| a.iter().find(|r| r["name"] == plural))
                .cloned()
                .unwrap_or_default();
            assert_eq!(r["verbs"], json!(["create"]), "{plural}");
            assert_eq!(r["namespaced"], json!(namespaced), "{plural}");
        }
    }
}
