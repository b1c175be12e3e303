//! Workspace types as the shard sees them: references, lookup through the path index, the
//! `extend.with` chain, and what a chain contributes (initializers, terminators, parent and child
//! rules). Shared by workspace admission and the workspace controller.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::paths::PathIndex;
use kcp_apiserver::watch_cache::{CachedObject, WatchCache};

/// On a LogicalCluster, and copied to its children: the groups a requester must be in.
pub use kcp_auth::authz::kcp::REQUIRED_GROUPS_ANNOTATION;
/// On a LogicalCluster: the type of its workspace, as `<path>:<name>`.
pub const TYPE_ANNOTATION: &str = "internal.tenancy.kcp.io/type";
/// On a Workspace and its LC: JSON of the user who created it.
pub use kcp_api_types::tenancy::OWNER_ANNOTATION;
pub use kcp_api_types::tenancy::{SHARD_ANNOTATION, SHARD_HASH_ANNOTATION, shard_hash};
/// On a Workspace: the name of the logical cluster it gets, chosen before that LC is created so a
/// retry after a crash reuses it (kcp's optimistic two-phase scheduling).
pub const CLUSTER_ANNOTATION: &str = "internal.tenancy.kcp.io/cluster";
/// Holds a Workspace until its logical cluster is gone (kcp's name).
pub const WORKSPACE_FINALIZER: &str = "core.kcp.io/logicalcluster";
/// Types may extend each other this deep at most (kcp refuses longer chains as broken).
const MAX_CHAIN: usize = 16;

/// A name for a new workspace's LC: 16 base-36 characters, the form of kcp's (a random hash).
/// Ours begin with the time in milliseconds (8 digits) and end with 8 random ones. An LC's
/// objects are keyed by its name in both stores, whose B-trees then take a burst of new
/// workspaces in the same few pages at the end of each resource's key range, where random
/// names dirty a page per object (a tree of 10,000 next to 100,000 flat workspaces: shard CPU
/// per workspace on the embedded store -38 %, etcd's own CPU -40 %).
/// The random half keeps names of the same millisecond, or after a clock step back, apart.
pub fn new_cluster_name() -> String {
    use kcp_apimachinery::names::base36;
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!(
        "{}{}",
        last_digits(&base36(millis), 8),
        last_digits(&base36(uuid::Uuid::new_v4().as_u128()), 8)
    )
}

/// The last `n` characters of `digits`, zero-padded on the left to `n`. (The time has 8
/// base-36 digits until 2059; then its lowest 8 wrap around, and only the order suffers.)
fn last_digits(digits: &str, n: usize) -> String {
    format!("{:0>n$}", &digits[digits.len().saturating_sub(n)..])
}

/// A WorkspaceType reference: the path of the workspace holding it, and its name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TypeRef {
    pub path: String,
    pub name: String,
}

impl TypeRef {
    /// From a `{name, path}` object; `None` without a name.
    pub fn from_value(v: &Value) -> Option<TypeRef> {
        let name = v.get("name")?.as_str().filter(|n| !n.is_empty())?;
        let path = v.get("path").and_then(Value::as_str).unwrap_or_default();
        Some(TypeRef {
            path: path.to_string(),
            name: name.to_string(),
        })
    }

    /// From `<path>:<name>` (the type annotation's form).
    pub fn parse(s: &str) -> Option<TypeRef> {
        let (path, name) = s.rsplit_once(':')?;
        Some(TypeRef {
            path: path.to_string(),
            name: name.to_string(),
        })
    }

    pub fn to_value(&self) -> Value {
        json!({"name": self.name, "path": self.path})
    }

    /// The name kcp gives the initializer (or terminator) of this type: `<LC of the type>:<name>`.
    pub fn lifecycle_name(&self, type_cluster: &str) -> String {
        format!("{type_cluster}:{}", self.name)
    }
}

impl std::fmt::Display for TypeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.path, self.name)
    }
}

/// One resolved type.
#[derive(Clone, Debug)]
pub struct ResolvedType {
    pub reference: TypeRef,
    /// The LC holding it.
    pub cluster: String,
    /// Its `spec`, all that type rules read (`null` when absent).
    pub spec: Arc<Value>,
}

/// Only a WorkspaceType's `spec`: serde skips its metadata and status without building them.
#[derive(serde::Deserialize)]
struct SpecOnly {
    #[serde(default)]
    spec: Value,
}

/// Parsed WorkspaceType specs by cache key, each beside the cached object it was parsed from (held,
/// so a changed type is told by identity): every workspace created looks its type chain up two or
/// three times, and a type's JSON seldom changes.
#[derive(Default)]
pub struct TypeSpecs(Mutex<HashMap<String, ParsedSpec>>);

/// A cached WorkspaceType and its parsed spec.
type ParsedSpec = (Arc<CachedObject>, Arc<Value>);

impl TypeSpecs {
    /// The spec of the type at `key` in `cache`, parsed once per version of it.
    fn get(&self, cache: &WatchCache, key: &str) -> Option<Arc<Value>> {
        let Some(object) = cache.get(key) else {
            self.0.lock().remove(key);
            return None;
        };
        if let Some((seen, spec)) = self.0.lock().get(key)
            && Arc::ptr_eq(seen, &object)
        {
            return Some(spec.clone());
        }
        let SpecOnly { spec } = object.json.parse().ok()?;
        let spec = Arc::new(spec);
        self.0
            .lock()
            .insert(key.to_string(), (object, spec.clone()));
        Some(spec)
    }
}

/// Looks types up in this shard's cache.
pub struct Types<'a> {
    pub cache: &'a WatchCache,
    pub paths: &'a PathIndex,
}

impl Types<'_> {
    /// The LC a path leads to: a one-segment path is an LC name itself.
    pub fn cluster_of(&self, path: &str) -> Option<String> {
        if path.contains(':') {
            self.paths.resolve(path)
        } else {
            Some(path.to_string())
        }
    }

    /// The canonical path of an LC: its `kcp.io/path`, or its name for a tree top such as `root`.
    pub fn path_of(&self, cluster: &str) -> String {
        self.paths
            .path_of(cluster)
            .unwrap_or_else(|| cluster.to_string())
    }

    pub fn get(&self, reference: &TypeRef) -> Option<ResolvedType> {
        let cluster = self.cluster_of(&reference.path)?;
        let key = kcp_apiserver::registry::keyspaces::workspace_types().object(
            &cluster,
            None,
            &reference.name,
        );
        let spec = self.paths.type_specs().get(self.cache, &key)?;
        Some(ResolvedType {
            reference: reference.clone(),
            cluster,
            spec,
        })
    }

    /// A type named without a path: looked up in `path`, then in each ancestor up to its tree top,
    /// and last in `root` (as kcp: a home's tree finds root's types too).
    pub fn find_upwards(&self, name: &str, path: &str) -> Option<ResolvedType> {
        let mut path = path.to_string();
        loop {
            let candidate = TypeRef {
                path: path.clone(),
                name: name.to_string(),
            };
            if let Some(found) = self.get(&candidate) {
                return Some(found);
            }
            path = match path.rsplit_once(':') {
                Some((parent, _)) => parent.to_string(),
                None if path != kcp_api_types::tenancy::ROOT => {
                    kcp_api_types::tenancy::ROOT.to_string()
                }
                None => return None,
            };
        }
    }

    /// The type and every type it extends, transitively, each once, the type itself first; an
    /// error (kcp's words) names a type that cannot be found or a cycle.
    pub fn chain(&self, reference: &TypeRef) -> Result<Vec<ResolvedType>, String> {
        // kcp's admission wraps the lookup's NotFound as an internal error.
        let top = self.get(reference).ok_or_else(|| {
            format!(
                "Internal error occurred: workspacetypes.tenancy.kcp.io {:?} not found",
                reference.to_string()
            )
        })?;
        let mut out = Vec::new();
        self.extend_chain(top, &mut Vec::new(), &mut BTreeSet::new(), &mut out)?;
        Ok(out)
    }

    /// Depth first from `t`: `path` holds the types being extended, `seen` the types done.
    fn extend_chain(
        &self,
        t: ResolvedType,
        path: &mut Vec<TypeRef>,
        seen: &mut BTreeSet<TypeRef>,
        out: &mut Vec<ResolvedType>,
    ) -> Result<(), String> {
        if path.len() > MAX_CHAIN {
            return Err(format!("workspace type {} extends too deeply", t.reference));
        }
        let extended: Vec<TypeRef> = (t.spec.pointer("/extend/with").and_then(Value::as_array))
            .into_iter()
            .flatten()
            .filter_map(TypeRef::from_value)
            .collect();
        seen.insert(t.reference.clone());
        path.push(t.reference.clone());
        out.push(t);
        for base in extended {
            if let Some(at) = path.iter().position(|p| *p == base) {
                let cycle: Vec<String> = path[at..].iter().map(ToString::to_string).collect();
                return Err(format!(
                    "circular dependency detected in workspace type {base}: {}",
                    cycle.join(" -> ")
                ));
            }
            if seen.contains(&base) {
                continue;
            }
            let resolved = self
                .get(&base)
                .ok_or_else(|| format!("unable to find inherited workspace type {}", base.name))?;
            self.extend_chain(resolved, path, seen, out)?;
        }
        path.pop();
        Ok(())
    }
}

/// A user as kcp records a workspace's creator (`createdBy`, the owner annotation's JSON): empty
/// fields are left out, as Go's `omitempty` leaves them.
pub fn owner_info(user: &kcp_auth::UserInfo) -> Value {
    let mut owner = json!({"username": user.name});
    if !user.uid.is_empty() {
        owner["uid"] = json!(user.uid);
    }
    if !user.groups.is_empty() {
        owner["groups"] = json!(user.groups);
    }
    if !user.extra.is_empty() {
        owner["extra"] = json!(user.extra);
    }
    owner
}

/// The `workspace-admin` ClusterRoleBinding making a workspace's creator cluster-admin in it.
pub fn workspace_admin_binding(username: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "workspace-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": username}],
    })
}

/// The LogicalCluster of a new workspace (or home) at `path`, of type `reference` (whose chain is
/// `chain`), created by `created_by` (see [`owner_info`]): annotations, `createdBy`, and the
/// initializers and terminators of the chain. Callers add what is theirs (owner, finalizers).
pub fn new_logical_cluster(
    path: &str,
    reference: &TypeRef,
    chain: &[ResolvedType],
    created_by: &Value,
) -> Value {
    let mut lc = json!({
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "LogicalCluster",
        "metadata": {
            "name": "cluster",
            "annotations": {
                crate::paths::PATH_ANNOTATION: path,
                TYPE_ANNOTATION: reference.to_string(),
            },
        },
        "spec": {
            "initializers": lifecycle_names(chain, "initializer"),
            "terminators": lifecycle_names(chain, "terminator"),
        },
    });
    // A workspace made by system:masters has no recorded creator (kcp's admission records none).
    if created_by.get("username").is_some() {
        lc["metadata"]["annotations"][OWNER_ANNOTATION] = json!(created_by.to_string());
        lc["spec"]["createdBy"] = created_by.clone();
    }
    lc
}

/// Initializers (or terminators, with `field` = "terminator") a chain of types gives a workspace.
pub fn lifecycle_names(chain: &[ResolvedType], field: &str) -> Vec<String> {
    let mut names: Vec<String> = chain
        .iter()
        .filter(|t| t.spec.get(field) == Some(&Value::Bool(true)))
        .map(|t| t.reference.lifecycle_name(&t.cluster))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// What a `limitAllowedParents`/`limitAllowedChildren` rule says of the types in `other`.
enum Admits {
    Yes,
    /// `none`: no type at all.
    Nothing,
    /// None of `other` is among these types.
    OnlyOthers(Vec<String>),
}

fn admits(rule: Option<&Value>, other: &[ResolvedType]) -> Admits {
    let Some(rule) = rule else {
        return Admits::Yes;
    };
    if rule.get("none") == Some(&Value::Bool(true)) {
        return Admits::Nothing;
    }
    let listed: Vec<TypeRef> = (rule.get("types").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .filter_map(TypeRef::from_value)
        .collect();
    let admitted =
        listed.is_empty() || (listed.iter()).any(|l| other.iter().any(|t| t.reference == *l));
    match admitted {
        true => Admits::Yes,
        false => Admits::OnlyOthers(listed.iter().map(ToString::to_string).collect()),
    }
}

/// Sorted and without repeats, as Go prints a string set: `[a b]`.
fn go_set(names: impl IntoIterator<Item = String>) -> String {
    let names: BTreeSet<String> = names.into_iter().collect();
    format!("[{}]", names.into_iter().collect::<Vec<_>>().join(" "))
}

/// Go's aggregate of errors: one alone, several as `[a, b]`.
fn aggregate(errors: Vec<String>) -> Option<String> {
    match errors.len() {
        0 => None,
        1 => errors.into_iter().next(),
        _ => Some(format!("[{}]", errors.join(", "))),
    }
}

/// A chain's name: its first type (the one named), "none" for a parent without a type.
fn chain_name(chain: &[ResolvedType]) -> String {
    (chain.first()).map_or_else(|| "none".to_string(), |t| t.reference.to_string())
}

/// What the rules `field` (`limitAllowedParents` or `limitAllowedChildren`) of the chain `holders`
/// refuse of the chain `other`, which is the holders' `role` ("parent" or "child").
fn refusals(
    holders: &[ResolvedType],
    field: &str,
    other: &[ResolvedType],
    role: &str,
) -> Vec<String> {
    let (holder_type, other_type) = (chain_name(holders), chain_name(other));
    let implemented = go_set(other.iter().map(|t| t.reference.to_string()));
    (holders.iter())
        .filter_map(|t| match admits(t.spec.get(field), other) {
            Admits::Yes => None,
            Admits::Nothing => Some(format!(
                "workspace type {holder_type} cannot have any {role}"
            )),
            Admits::OnlyOthers(allowed) => {
                // " extends <t>, which" when the rule is that of a type the named one extends.
                let extending = match t.reference.to_string() {
                    own if own == holder_type => String::new(),
                    own => format!(" extends {own}, which"),
                };
                Some(format!(
                    "workspace type {holder_type}{extending} only allows {} {role} workspaces, \
                     but {role} type {other_type} only implements {implemented}",
                    go_set(allowed)
                ))
            }
        })
        .collect()
}

/// Why a child of type chain `child` may not sit under a parent of chain `parent`, if it may not,
/// in kcp's words: each type of the child's chain must admit one of the parent's, then each of
/// the parent's one of the child's (a chain's first type is the one named).
pub fn placement_error(parent: &[ResolvedType], child: &[ResolvedType]) -> Option<String> {
    aggregate(refusals(child, "limitAllowedParents", parent, "parent"))
        .or_else(|| aggregate(refusals(parent, "limitAllowedChildren", child, "child")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    #[test]
    fn cluster_names_are_sixteen_base36_characters() {
        let a = new_cluster_name();
        assert_eq!(a.len(), 16);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        );
        assert_ne!(a, new_cluster_name());
        assert!(kcp_apimachinery::names::is_valid_cluster_name(&a));
    }

    #[test]
    fn later_cluster_names_sort_after_earlier_ones() {
        let a = new_cluster_name();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_cluster_name();
        assert!(a < b, "{a} then {b}");
        // Same millisecond: the time half is shared, the random half differs.
        let names: Vec<String> = (0..64).map(|_| new_cluster_name()).collect();
        let distinct: BTreeSet<&String> = names.iter().collect();
        assert_eq!(distinct.len(), names.len());
    }

    #[test]
    fn last_digits_pads_and_cuts() {
        assert_eq!(last_digits("z", 4), "000z");
        assert_eq!(last_digits("123456789", 8), "23456789");
        assert_eq!(last_digits("", 2), "00");
    }

    fn t(name: &str, spec: Value) -> ResolvedType {
        let spec = Arc::new(spec);
        ResolvedType {
            reference: TypeRef {
                path: "root".into(),
                name: name.into(),
            },
            cluster: "root".into(),
            spec,
        }
    }

    #[test]
    fn kcp_bootstrap_rules() {
        let universal = t("universal", json!({"initializer": true}));
        let root = t("root", json!({"limitAllowedParents": {"none": true}}));
        let org = t(
            "organization",
            json!({"limitAllowedParents": {"types": [{"name": "root", "path": "root"}]},
                   "limitAllowedChildren": {"types": [{"name": "universal", "path": "root"}]}}),
        );
        let team = t(
            "team",
            json!({"limitAllowedParents": {"types": [{"name": "organization", "path": "root"}, {"name": "team", "path": "root"}]}}),
        );
        let chain = |ts: &[&ResolvedType]| ts.iter().map(|t| (*t).clone()).collect::<Vec<_>>();
        // An organization under root, a team under an organization: fine.
        assert_eq!(
            placement_error(&chain(&[&root, &universal]), &chain(&[&org, &universal])),
            None
        );
        // A universal workspace under an organization: allowed children include universal.
        assert_eq!(
            placement_error(&chain(&[&org, &universal]), &chain(&[&universal])),
            None
        );
        // A team under an organization: a team counts as universal, which the organization allows.
        assert_eq!(
            placement_error(&chain(&[&org, &universal]), &chain(&[&team, &universal])),
            None
        );
        // A team directly under root: teams want an organization or team parent (kcp's words).
        assert_eq!(
            placement_error(&chain(&[&root, &universal]), &chain(&[&team, &universal])).unwrap(),
            "workspace type root:team only allows [root:organization root:team] parent \
             workspaces, but parent type root:root only implements [root:root root:universal]"
        );
        // An organization under a universal workspace: organization wants root as parent.
        assert!(placement_error(&chain(&[&universal]), &chain(&[&org, &universal])).is_some());
        // A root-typed workspace has no parent at all.
        assert_eq!(
            placement_error(&chain(&[&universal]), &chain(&[&root])).unwrap(),
            "workspace type root:root cannot have any parent"
        );
        // What the organization's children must be; a team extending it says so.
        let custom = t("custom", json!({}));
        assert_eq!(
            placement_error(&chain(&[&org, &universal]), &chain(&[&custom])).unwrap(),
            "workspace type root:organization only allows [root:universal] child workspaces, \
             but child type root:custom only implements [root:custom]"
        );
        let sub = t(
            "sub",
            json!({"extend": {"with": [{"name": "organization", "path": "root"}]}}),
        );
        assert_eq!(
            placement_error(&chain(&[&sub, &org]), &chain(&[&custom])).unwrap(),
            "workspace type root:sub extends root:organization, which only allows \
             [root:universal] child workspaces, but child type root:custom only implements \
             [root:custom]"
        );
        assert_eq!(
            lifecycle_names(&chain(&[&org, &universal]), "initializer"),
            ["root:universal"]
        );
        assert!(lifecycle_names(&chain(&[&org, &universal]), "terminator").is_empty());
    }

    #[test]
    fn references_parse_and_print() {
        let r = TypeRef::parse("root:org:custom").unwrap();
        assert_eq!((r.path.as_str(), r.name.as_str()), ("root:org", "custom"));
        assert_eq!(r.to_string(), "root:org:custom");
        assert_eq!(TypeRef::from_value(&r.to_value()), Some(r));
        assert_eq!(TypeRef::from_value(&json!({"path": "root"})), None);
    }
}
