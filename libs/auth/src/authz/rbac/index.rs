//! The RBAC objects of every logical cluster, kept up to date from watch events, and the walk from a
//! user to the rules granted to them (Kubernetes' `VisitRulesFor`, extended with kcp's bootstrap LC).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::ControlFlow;

use kcp_apimachinery::field_error::go_quote;
use parking_lot::RwLock;
use serde_json::Value;

use crate::authn::UserInfo;
use crate::authz::generations::Generations;
use crate::authz::rbac::BOOTSTRAP_CLUSTER;
use crate::authz::rbac::aggregation;
use crate::authz::rbac::object::{
    Binding, ClusterRole, RbacKind, RbacObjectError, RoleRef, parse_binding, parse_cluster_role,
    parse_rules,
};
use crate::authz::rbac::rule::PolicyRule;
use crate::authz::rbac::subject::Subject;

/// The RBAC objects of one logical cluster. Only LCs with at least one object have an entry.
#[derive(Default)]
struct ClusterPolicy {
    cluster_roles: BTreeMap<String, ClusterRole>,
    /// namespace → name → rules.
    roles: HashMap<String, HashMap<String, Vec<PolicyRule>>>,
    /// Ordered by name so decisions and their reasons are deterministic.
    cluster_role_bindings: BTreeMap<String, Binding>,
    /// namespace → name → binding.
    role_bindings: HashMap<String, BTreeMap<String, Binding>>,
}

impl ClusterPolicy {
    fn is_empty(&self) -> bool {
        self.cluster_roles.is_empty()
            && self.roles.is_empty()
            && self.cluster_role_bindings.is_empty()
            && self.role_bindings.is_empty()
    }
}

/// RBAC for many logical clusters, safe to read from request handlers while a watch task writes.
///
/// Requests to LC X are evaluated against X's bindings and then the bootstrap LC's bindings (see
/// [`RbacIndex::visit_rules`]). An LC without RBAC objects costs nothing but its absent map entry.
pub struct RbacIndex {
    bootstrap_cluster: String,
    clusters: RwLock<HashMap<String, ClusterPolicy>>,
    /// Per-LC change counters, for caches of decisions about one LC.
    changes: Generations,
}

impl Default for RbacIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for RbacIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RbacIndex")
            .field("bootstrap_cluster", &self.bootstrap_cluster)
            .field("clusters", &self.clusters.read().len())
            .finish()
    }
}

/// Where a visited rule comes from, displayed as Kubernetes describes it in a reason, e.g.
/// `ClusterRoleBinding "x" of ClusterRole "y" to User "z"`.
#[derive(Clone, Copy, Debug)]
pub struct RuleSource<'a> {
    /// `RoleBinding` or `ClusterRoleBinding`.
    pub binding_kind: RbacKind,
    pub binding_name: &'a str,
    /// Empty for a ClusterRoleBinding.
    pub binding_namespace: &'a str,
    /// The LC holding the binding: the request's LC or the bootstrap LC.
    pub binding_cluster: &'a str,
    pub request_cluster: &'a str,
    pub role_ref: &'a RoleRef,
    pub subject: &'a Subject,
}

impl fmt::Display for RuleSource<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.binding_namespace.is_empty() {
            write!(f, "{} {}", self.binding_kind, go_quote(self.binding_name))?;
        } else {
            let name = format!("{}/{}", self.binding_name, self.binding_namespace);
            write!(f, "{} {}", self.binding_kind, go_quote(&name))?;
        }
        write!(
            f,
            " of {} {} to {}",
            self.role_ref.kind,
            go_quote(&self.role_ref.name),
            self.subject.describe(self.binding_namespace)
        )?;
        // Not in Kubernetes: say when the grant comes from another LC (the bootstrap policy).
        if self.binding_cluster != self.request_cluster {
            write!(f, " in logical cluster {}", go_quote(self.binding_cluster))?;
        }
        Ok(())
    }
}

impl RbacIndex {
    /// An empty index whose bootstrap LC is [`BOOTSTRAP_CLUSTER`].
    pub fn new() -> Self {
        Self::with_bootstrap_cluster(BOOTSTRAP_CLUSTER)
    }

    /// An empty index with another bootstrap LC (tests, or a differently named system LC).
    pub fn with_bootstrap_cluster(bootstrap_cluster: impl Into<String>) -> Self {
        RbacIndex {
            bootstrap_cluster: bootstrap_cluster.into(),
            clusters: RwLock::new(HashMap::new()),
            changes: Generations::new(),
        }
    }

    pub fn bootstrap_cluster(&self) -> &str {
        &self.bootstrap_cluster
    }

    /// Changes whenever the RBAC objects of `cluster` change (or all are reloaded). A decision
    /// about a request in LC X depends on X's objects and the bootstrap LC's only.
    pub fn generation_of(&self, cluster: &str) -> u64 {
        self.changes.of(cluster)
    }

    /// Number of LCs that hold at least one RBAC object.
    pub fn cluster_count(&self) -> usize {
        self.clusters.read().len()
    }

    /// Records the current state of one object: `Some(json)` for an added or updated object, `None`
    /// for a deleted one. `namespace` is required for Roles and RoleBindings and ignored otherwise.
    ///
    /// A malformed object is refused with an error saying why, and any previous version of it is
    /// dropped: a stale grant must not outlive an update we cannot read (fail closed). Never panics.
    pub fn apply(
        &self,
        cluster: &str,
        kind: RbacKind,
        namespace: Option<&str>,
        name: &str,
        object: Option<&Value>,
    ) -> Result<(), RbacObjectError> {
        let namespace = match (kind.is_namespaced(), namespace) {
            (true, Some(ns)) if !ns.is_empty() => ns,
            (true, _) => return Err(RbacObjectError::MissingNamespace(kind)),
            (false, _) => "",
        };
        let malformed = |message: String| RbacObjectError::Malformed {
            cluster: cluster.to_owned(),
            kind,
            name: name.to_owned(),
            message,
        };
        // Parse before taking the lock, so writers hold it only for map updates.
        let parsed = match object {
            None => Ok(None),
            Some(object) => parse(kind, object).map(Some).map_err(malformed),
        };
        let (new, result) = match parsed {
            Ok(new) => (new, Ok(())),
            Err(e) => (None, Err(e)),
        };
        let mut clusters = self.clusters.write();
        let changed = match new {
            Some(new) => {
                let policy = clusters.entry(cluster.to_owned()).or_default();
                put(policy, namespace, name, new)
            }
            None => match clusters.get_mut(cluster) {
                Some(policy) => {
                    let changed = remove(policy, kind, namespace, name);
                    if policy.is_empty() {
                        clusters.remove(cluster);
                    }
                    changed
                }
                None => false,
            },
        };
        drop(clusters);
        if changed {
            self.changes.bump(cluster);
        }
        result
    }

    /// [`RbacIndex::apply`] for an added or updated object, taking kind, namespace and name from it.
    pub fn apply_object(&self, cluster: &str, object: &Value) -> Result<(), RbacObjectError> {
        let kind_name = object.get("kind").and_then(Value::as_str).unwrap_or("");
        let kind = RbacKind::from_kind(kind_name)
            .ok_or_else(|| RbacObjectError::UnknownKind(kind_name.to_owned()))?;
        let metadata = object.get("metadata");
        let name = metadata
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or(RbacObjectError::MissingName)?;
        let namespace = metadata
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str);
        self.apply(cluster, kind, namespace, name, Some(object))
    }

    /// Forgets everything (the source of objects starts over with a full listing).
    pub fn clear(&self) {
        self.clusters.write().clear();
        self.changes.bump_all();
    }

    /// Forgets every RBAC object of a logical cluster (the LC was deleted).
    pub fn remove_cluster(&self, cluster: &str) {
        if self.clusters.write().remove(cluster).is_some() {
            self.changes.bump(cluster);
        }
    }

    /// Calls `visitor` with every rule granted to `user` for a request in `cluster` and `namespace`
    /// (empty for cluster-scoped and non-resource requests), until it breaks. Returns the errors met on
    /// the way (bindings to missing roles, unsupported roleRef kinds), as Kubernetes reports them.
    ///
    /// Order: the ClusterRoleBindings of `cluster`, its RoleBindings in `namespace`, then the same of
    /// the bootstrap LC. A ClusterRole named by a binding of `cluster` is looked up in `cluster` first
    /// and then in the bootstrap LC, so every LC can bind the default roles; bindings of the bootstrap
    /// LC resolve their roles there only. A wildcard or empty `cluster` has no objects of its own, so
    /// only the bootstrap bindings apply to it.
    pub fn visit_rules<F>(
        &self,
        user: &UserInfo,
        cluster: &str,
        namespace: &str,
        mut visitor: F,
    ) -> Vec<String>
    where
        F: FnMut(&RuleSource<'_>, &PolicyRule) -> ControlFlow<()>,
    {
        let clusters = self.clusters.read();
        let local = clusters.get(cluster);
        let bootstrap = if cluster == self.bootstrap_cluster {
            None
        } else {
            clusters.get(&self.bootstrap_cluster)
        };
        let mut errors = Vec::new();
        let walks = [
            local.map(|p| (cluster, p, bootstrap)),
            bootstrap.map(|p| (self.bootstrap_cluster.as_str(), p, None)),
        ];
        for (binding_cluster, policy, fallback) in walks.into_iter().flatten() {
            let walk = Walk {
                request_cluster: cluster,
                binding_cluster,
                policy,
                fallback,
            };
            if walk
                .visit(user, namespace, &mut visitor, &mut errors)
                .is_break()
            {
                break;
            }
        }
        errors
    }

    /// The rules `role_ref` grants to a binding of `cluster` in `namespace` (empty for a
    /// ClusterRoleBinding), resolved as [`RbacIndex::visit_rules`] resolves the LC's own bindings
    /// (a ClusterRole missing from `cluster` is taken from the bootstrap LC), or the error the walk
    /// reports for it (`clusterrole.rbac.authorization.k8s.io "x" not found`, or an unsupported kind).
    pub fn role_ref_rules(
        &self,
        cluster: &str,
        namespace: &str,
        role_ref: &RoleRef,
    ) -> Result<Vec<PolicyRule>, String> {
        let clusters = self.clusters.read();
        // An LC without RBAC objects of its own still binds the bootstrap roles.
        let empty = ClusterPolicy::default();
        let walk = Walk {
            request_cluster: cluster,
            binding_cluster: cluster,
            policy: clusters.get(cluster).unwrap_or(&empty),
            fallback: if cluster == self.bootstrap_cluster {
                None
            } else {
                clusters.get(&self.bootstrap_cluster)
            },
        };
        let sets = walk.resolve(role_ref, namespace)?;
        Ok(sets.into_iter().flatten().cloned().collect())
    }
}

/// The bindings of one LC being walked for a request.
struct Walk<'a> {
    request_cluster: &'a str,
    binding_cluster: &'a str,
    policy: &'a ClusterPolicy,
    /// Where ClusterRoles missing from `policy` are looked up (the bootstrap LC), if anywhere.
    fallback: Option<&'a ClusterPolicy>,
}

impl<'a> Walk<'a> {
    fn visit<F>(
        &self,
        user: &UserInfo,
        namespace: &str,
        visitor: &mut F,
        errors: &mut Vec<String>,
    ) -> ControlFlow<()>
    where
        F: FnMut(&RuleSource<'_>, &PolicyRule) -> ControlFlow<()>,
    {
        let cluster_bindings = self
            .policy
            .cluster_role_bindings
            .iter()
            .map(|(name, b)| (RbacKind::ClusterRoleBinding, name, "", b));
        let namespace_bindings = (!namespace.is_empty())
            .then(|| self.policy.role_bindings.get(namespace))
            .flatten()
            .into_iter()
            .flat_map(|bindings| {
                bindings
                    .iter()
                    .map(|(name, b)| (RbacKind::RoleBinding, name, namespace, b))
            });
        for (binding_kind, name, binding_namespace, binding) in
            cluster_bindings.chain(namespace_bindings)
        {
            let Some(subject) = binding
                .subjects
                .iter()
                .find(|s| s.applies_to(user, binding_namespace, self.binding_cluster))
            else {
                continue;
            };
            let rule_sets = match self.resolve(&binding.role_ref, binding_namespace) {
                Ok(sets) => sets,
                Err(e) => {
                    errors.push(e);
                    continue;
                }
            };
            let source = RuleSource {
                binding_kind,
                binding_name: name,
                binding_namespace,
                binding_cluster: self.binding_cluster,
                request_cluster: self.request_cluster,
                role_ref: &binding.role_ref,
                subject,
            };
            for rule in rule_sets.into_iter().flatten() {
                visitor(&source, rule)?;
            }
        }
        ControlFlow::Continue(())
    }

    /// The rules a roleRef grants, as slices to walk in turn, or Kubernetes' error for it.
    fn resolve(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<Vec<&'a [PolicyRule]>, String> {
        match role_ref.kind.as_str() {
            "Role" => self
                .policy
                .roles
                .get(namespace)
                .and_then(|roles| roles.get(&role_ref.name))
                .map(|rules| vec![rules.as_slice()])
                .ok_or_else(|| not_found("role", &role_ref.name)),
            "ClusterRole" => {
                if let Some(role) = self.policy.cluster_roles.get(&role_ref.name) {
                    return Ok(vec![role.effective()]);
                }
                let role = self
                    .fallback
                    .and_then(|p| p.cluster_roles.get(&role_ref.name))
                    .ok_or_else(|| not_found("clusterrole", &role_ref.name))?;
                // An aggregated bootstrap role also takes in this LC's matching roles (see
                // [`aggregation`] for why).
                let mut sets = vec![role.effective()];
                sets.extend(
                    aggregation::matching(&self.policy.cluster_roles, &role.aggregated_selectors)
                        .map(|(_, r)| r.effective()),
                );
                Ok(sets)
            }
            other => Err(format!(
                "unsupported role reference kind: {}",
                go_quote(other)
            )),
        }
    }
}

fn not_found(resource: &str, name: &str) -> String {
    format!(
        "{resource}.rbac.authorization.k8s.io {} not found",
        go_quote(name)
    )
}

enum Parsed {
    Role(Vec<PolicyRule>),
    ClusterRole(ClusterRole),
    Binding(RbacKind, Binding),
}

fn parse(kind: RbacKind, object: &Value) -> Result<Parsed, String> {
    if !object.is_object() {
        return Err("not a JSON object".into());
    }
    Ok(match kind {
        RbacKind::Role => Parsed::Role(parse_rules(object)?),
        RbacKind::ClusterRole => Parsed::ClusterRole(parse_cluster_role(object)?),
        RbacKind::RoleBinding | RbacKind::ClusterRoleBinding => {
            Parsed::Binding(kind, parse_binding(object)?)
        }
    })
}

/// Stores `new`; true when it differs from what was there.
fn put(policy: &mut ClusterPolicy, namespace: &str, name: &str, new: Parsed) -> bool {
    match new {
        Parsed::Role(rules) => {
            let roles = policy.roles.entry(namespace.to_owned()).or_default();
            roles.insert(name.to_owned(), rules.clone()) != Some(rules)
        }
        Parsed::ClusterRole(role) => {
            let unchanged = policy
                .cluster_roles
                .get(name)
                .is_some_and(|old| old.same_definition(&role));
            if !unchanged {
                policy.cluster_roles.insert(name.to_owned(), role);
                aggregation::recompute(&mut policy.cluster_roles);
            }
            !unchanged
        }
        Parsed::Binding(RbacKind::ClusterRoleBinding, binding) => {
            policy
                .cluster_role_bindings
                .insert(name.to_owned(), binding.clone())
                != Some(binding)
        }
        Parsed::Binding(_, binding) => {
            let bindings = policy
                .role_bindings
                .entry(namespace.to_owned())
                .or_default();
            bindings.insert(name.to_owned(), binding.clone()) != Some(binding)
        }
    }
}

/// Deletes an object; true when it was there.
fn remove(policy: &mut ClusterPolicy, kind: RbacKind, namespace: &str, name: &str) -> bool {
    match kind {
        RbacKind::Role => remove_namespaced(&mut policy.roles, namespace, name),
        RbacKind::RoleBinding => remove_namespaced(&mut policy.role_bindings, namespace, name),
        RbacKind::ClusterRoleBinding => policy.cluster_role_bindings.remove(name).is_some(),
        RbacKind::ClusterRole => {
            let removed = policy.cluster_roles.remove(name).is_some();
            if removed {
                aggregation::recompute(&mut policy.cluster_roles);
            }
            removed
        }
    }
}

fn remove_namespaced<M: NamespaceMap>(
    by_namespace: &mut HashMap<String, M>,
    namespace: &str,
    name: &str,
) -> bool {
    let Some(objects) = by_namespace.get_mut(namespace) else {
        return false;
    };
    let removed = objects.remove_name(name);
    if objects.is_empty_map() {
        by_namespace.remove(namespace);
    }
    removed
}

/// The per-namespace maps of roles and bindings, so one removal routine serves both.
trait NamespaceMap {
    fn remove_name(&mut self, name: &str) -> bool;
    fn is_empty_map(&self) -> bool;
}

impl<V> NamespaceMap for HashMap<String, V> {
    fn remove_name(&mut self, name: &str) -> bool {
        self.remove(name).is_some()
    }
    fn is_empty_map(&self) -> bool {
        self.is_empty()
    }
}

impl<V> NamespaceMap for BTreeMap<String, V> {
    fn remove_name(&mut self, name: &str) -> bool {
        self.remove(name).is_some()
    }
    fn is_empty_map(&self) -> bool {
        self.is_empty()
    }
}
