//! kcp's authorizer chain for one shard, in its order:
//!
//! 1. `system:masters` may do anything, anywhere.
//! 2. Wildcard (`*`) and `system:*` logical clusters admit nobody else.
//! 3. Required groups: a logical cluster annotated `authorization.kcp.io/required-groups` admits
//!    only callers holding one of the listed group sets (its own ServiceAccounts excepted).
//! 4. Workspace content: entering a logical cluster at all takes the verb `access` on the
//!    non-resource URL `/` there (its own ServiceAccounts excepted). The refusal says the same
//!    whether or not the logical cluster exists.
//! 5. Maximal permission policy: a resource bound from an APIExport with a local policy must
//!    also be allowed by the export's RBAC for the prefixed caller ([`super::maximal_policy`]).
//! 6. RBAC of the logical cluster, united with the bootstrap policy (see [`RbacIndex`]).
//!
//! A deep SubjectAccessReview ([`Attributes::deep_review`]) skips steps 3 to 5.
//!
//! ServiceAccounts are scoped first ([`scope_user`]). Decisions about LC X are cached until X's RBAC
//! objects, X's LogicalCluster or the bootstrap policy change; changes in other LCs keep them.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;

use crate::authn::UserInfo;
use crate::authn::service_account::{CLUSTER_NAME_EXTRA, SCOPES_EXTRA};
use crate::authz::generations::Generations;
use crate::authz::maximal_policy::{PermissionPolicies, PolicyExport, prefixed};
use crate::authz::rbac::{RbacAuthorizer, RbacIndex};
use crate::authz::scope::scope_user;
use crate::authz::{Attributes, Authorizer, Decision};

/// The annotation of a LogicalCluster naming the groups a caller must hold: `;`-separated
/// alternatives of `,`-separated groups that must all be held.
pub const REQUIRED_GROUPS_ANNOTATION: &str = "authorization.kcp.io/required-groups";
/// Admin through the front proxy: not bound by required groups.
pub const EXTERNAL_LOGICAL_CLUSTER_ADMIN: &str = "system:kcp:external-logical-cluster-admin";
/// What a caller who may not enter a logical cluster is told.
pub const ACCESS_NOT_PERMITTED: &str = "workspace access not permitted";
/// The refusal of wildcard and system logical clusters to unprivileged callers.
pub const PRIVILEGED_ONLY: &str =
    "access to this logical cluster is restricted to privileged users";

/// Decisions kept before the cache starts over (a bound on memory, not a tuning knob).
const CACHE_ENTRIES: usize = 65_536;

/// What the authorizer needs to know about logical clusters.
pub trait ClusterFacts: Send + Sync + 'static {
    /// The `authorization.kcp.io/required-groups` annotation of `cluster`, if any.
    fn required_groups(&self, cluster: &str) -> Option<String>;
}

/// No logical cluster requires groups (tests, and servers without LogicalCluster objects).
pub struct NoRequiredGroups;

impl ClusterFacts for NoRequiredGroups {
    fn required_groups(&self, _cluster: &str) -> Option<String> {
        None
    }
}

/// The chain described in the module docs.
pub struct KcpAuthorizer {
    rbac: RbacAuthorizer,
    clusters: Arc<dyn ClusterFacts>,
    /// Changes of logical clusters (their required groups), per LC; RBAC has its own.
    cluster_changes: Generations,
    cache: RwLock<HashMap<Box<str>, (Tag, Decision)>>,
    /// Set once kcp-apis is plugged in; none means no resource is bound.
    policies: OnceLock<Arc<dyn PermissionPolicies>>,
}

/// What a cached decision about LC X was made from: the generations of X's RBAC, of the
/// bootstrap policy's and of X's LogicalCluster. A change elsewhere leaves it valid.
type Tag = (u64, u64, u64);

impl KcpAuthorizer {
    pub fn new(index: Arc<RbacIndex>, clusters: Arc<dyn ClusterFacts>) -> Self {
        KcpAuthorizer {
            rbac: RbacAuthorizer::new(index),
            clusters,
            cluster_changes: Generations::new(),
            cache: RwLock::new(HashMap::new()),
            policies: OnceLock::new(),
        }
    }

    /// Plugs in what bounds bound resources (once; later calls are ignored).
    pub fn set_permission_policies(&self, policies: Arc<dyn PermissionPolicies>) {
        let _ = self.policies.set(policies);
    }

    /// The export whose policy bounds this request, if any.
    fn bounding(&self, attrs: &Attributes<'_>) -> Option<PolicyExport> {
        if attrs.deep_review || !attrs.resource_request || attrs.cluster.is_empty() {
            return None;
        }
        let policies = self.policies.get()?;
        policies.bounding(attrs.cluster, attrs.api_group, attrs.resource)
    }

    pub fn rbac(&self) -> &RbacAuthorizer {
        &self.rbac
    }

    /// Forgets cached decisions about `cluster` that its LogicalCluster (required groups) may
    /// change (call when it changes).
    pub fn cluster_changed(&self, cluster: &str) {
        self.cluster_changes.bump(cluster);
    }

    /// Forgets every cached decision that depended on logical clusters (after a full reload).
    pub fn clusters_changed(&self) {
        self.cluster_changes.bump_all();
    }

    /// Read before deciding, so a decision made from a state that changes meanwhile carries an
    /// old tag and is never served.
    fn tag(&self, cluster: &str) -> Tag {
        let index = self.rbac.index();
        (
            index.generation_of(cluster),
            index.generation_of(index.bootstrap_cluster()),
            self.cluster_changes.of(cluster),
        )
    }

    fn cached(&self, key: &str, tag: Tag) -> Option<Decision> {
        match self.cache.read().get(key) {
            Some((cached_tag, decision)) if *cached_tag == tag => Some(decision.clone()),
            _ => None,
        }
    }

    fn remember(&self, key: String, tag: Tag, decision: &Decision) {
        let mut cache = self.cache.write();
        // Outdated entries are replaced as they are met; the bound catches the rest.
        if cache.len() >= CACHE_ENTRIES && !cache.contains_key(key.as_str()) {
            cache.clear();
        }
        // Kept at its length: the key was built with room to spare, and the cache holds thousands.
        cache.insert(key.into_boxed_str(), (tag, decision.clone()));
    }

    fn decide(&self, attrs: &Attributes<'_>, user: &UserInfo) -> Decision {
        let cluster = attrs.cluster;
        if cluster == "*" || cluster.starts_with("system:") {
            return Decision::Deny(PRIVILEGED_ONLY.to_string());
        }
        let attrs = Attributes {
            user: Some(user),
            ..attrs.clone()
        };
        // A deep review asks what the LC's RBAC alone grants (kcp's admission asks "may U bind X in
        // L" without U being allowed into L); the privileged-only rule above still holds.
        if !cluster.is_empty() && !attrs.deep_review {
            let own_service_account = is_own_service_account(user, cluster);
            if !own_service_account
                && !user
                    .groups
                    .iter()
                    .any(|g| g == EXTERNAL_LOGICAL_CLUSTER_ADMIN)
                && let Some(required) = self.clusters.required_groups(cluster)
                && !holds_required_groups(user, &required)
            {
                return Decision::Deny(ACCESS_NOT_PERMITTED.to_string());
            }
            if !own_service_account {
                let access = Attributes {
                    user: Some(user),
                    cluster,
                    verb: "access",
                    path: "/",
                    ..Attributes::default()
                };
                if !self.rbac.decide(&access).allowed {
                    return Decision::Deny(ACCESS_NOT_PERMITTED.to_string());
                }
            }
        }
        // RBAC never denies: no grant is no opinion, which the server answers with 403.
        if self.rbac.decide(&attrs).allowed {
            Decision::Allow
        } else {
            Decision::NoOpinion
        }
    }
}

impl Authorizer for KcpAuthorizer {
    fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        let anonymous = UserInfo::default();
        let user = attrs.user.unwrap_or(&anonymous);
        if user.is_system_masters() {
            return Decision::Allow;
        }
        let user = scope_user(user, attrs.cluster);
        // Bounded by another cluster's RBAC, which the cache's tags do not follow: not cached.
        if let Some(export) = self.bounding(attrs) {
            let decision = self.decide(attrs, &user);
            let policy_user = prefixed(&user);
            let by_policy = Attributes {
                user: Some(&policy_user),
                cluster: &export.cluster,
                ..attrs.clone()
            };
            return match decision {
                Decision::Allow if !self.rbac.decide(&by_policy).allowed => {
                    Decision::Deny(export.refusal())
                }
                decided => decided,
            };
        }
        let key = cache_key(&user, attrs);
        let tag = self.tag(attrs.cluster);
        if let Some(decision) = self.cached(&key, tag) {
            return decision;
        }
        let decision = self.decide(attrs, &user);
        self.remember(key, tag, &decision);
        decision
    }
}

/// A ServiceAccount in the logical cluster it belongs to. One that names no cluster (an
/// impersonated account, or one a SubjectAccessReview asks about; tokens always name theirs) is
/// local to the cluster asked about, as kcp takes it.
fn is_own_service_account(user: &UserInfo, cluster: &str) -> bool {
    user.name
        .starts_with(crate::authz::rbac::subject::SERVICE_ACCOUNT_PREFIX)
        && user
            .extra
            .get(CLUSTER_NAME_EXTRA)
            .is_none_or(|c| c.iter().any(|c| c == cluster))
}

/// Whether `user` holds every group of at least one `,`-separated set in `required`
/// (`;`-separated alternatives).
fn holds_required_groups(user: &UserInfo, required: &str) -> bool {
    let mut alternatives = required.split(';').map(str::trim).filter(|a| !a.is_empty());
    let mut any = false;
    let held = alternatives.any(|alternative| {
        any = true;
        alternative
            .split(',')
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .all(|g| user.groups.iter().any(|held| held == g))
    });
    // An empty annotation requires nothing.
    held || !any
}

/// Everything a decision depends on besides the policy: the identity and the attributes.
fn cache_key(user: &UserInfo, a: &Attributes<'_>) -> String {
    let mut key = String::with_capacity(160);
    for part in [
        user.name.as_str(),
        a.cluster,
        a.verb,
        a.api_group,
        a.resource,
        a.subresource,
        a.namespace,
        a.name,
    ] {
        key.push_str(part);
        key.push('\u{0}');
    }
    if !a.resource_request {
        key.push_str(a.path);
    }
    key.push(if a.deep_review { '\u{2}' } else { '\u{1}' });
    for group in &user.groups {
        key.push_str(group);
        key.push('\u{0}');
    }
    // Of the extras, decisions read only these two (ServiceAccount scoping and subject matching);
    // others, such as a token's credential id, would split the cache per token.
    for k in [CLUSTER_NAME_EXTRA, SCOPES_EXTRA] {
        if let Some(values) = user.extra.get(k) {
            key.push_str(k);
            key.push('=');
            for v in values {
                key.push_str(v);
                key.push(',');
            }
        }
        key.push('\u{0}');
    }
    key
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use crate::authz::SYSTEM_MASTERS;
    use serde_json::json;
    use std::collections::BTreeMap;

    struct Required(&'static str, &'static str);
    impl ClusterFacts for Required {
        fn required_groups(&self, cluster: &str) -> Option<String> {
            (cluster == self.0).then(|| self.1.to_string())
        }
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..UserInfo::default()
        }
    }

    fn index() -> Arc<RbacIndex> {
        let index = Arc::new(RbacIndex::new());
        crate::authz::rbac::bootstrap::load(&index).unwrap();
        index
    }

    fn bind_cluster_role(index: &RbacIndex, cluster: &str, role: &str, kind: &str, who: &str) {
        index
            .apply_object(
                cluster,
                &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": {"name": format!("{role}-{who}")},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": who}]}),
            )
            .unwrap();
    }

    fn get(user: &UserInfo, cluster: &'static str) -> Decision {
        let authz = KcpAuthorizer::new(index_with_grants(), Arc::new(NoRequiredGroups));
        authz.authorize(&configmaps(user, cluster, "list"))
    }

    fn configmaps<'a>(user: &'a UserInfo, cluster: &'a str, verb: &'a str) -> Attributes<'a> {
        Attributes {
            user: Some(user),
            cluster,
            verb,
            resource_request: true,
            api_version: "v1",
            resource: "configmaps",
            namespace: "default",
            ..Attributes::default()
        }
    }

    /// `alice` may enter and read in `a` (view); `bob` may enter `a` but holds nothing else.
    fn index_with_grants() -> Arc<RbacIndex> {
        let index = index();
        bind_cluster_role(&index, "a", "system:kcp:workspace:access", "User", "bob");
        bind_cluster_role(&index, "a", "view", "User", "alice");
        bind_cluster_role(&index, "a", "system:kcp:workspace:access", "User", "alice");
        index
    }

    #[test]
    fn masters_pass_everywhere_others_not_in_wildcard_or_system_clusters() {
        let root = user("root", &[SYSTEM_MASTERS]);
        assert_eq!(get(&root, "*"), Decision::Allow);
        assert_eq!(get(&root, "nowhere"), Decision::Allow);
        let admin = user("kcp-admin", &["system:kcp:admin"]);
        assert_eq!(get(&admin, "a"), Decision::Allow);
        assert_eq!(get(&admin, "*"), Decision::Deny(PRIVILEGED_ONLY.into()));
        assert_eq!(
            get(&admin, "system:admin"),
            Decision::Deny(PRIVILEGED_ONLY.into())
        );
    }

    #[test]
    fn access_gate_then_rbac() {
        let alice = user("alice", &["system:authenticated"]);
        assert_eq!(get(&alice, "a"), Decision::Allow);
        // Not allowed in: the same answer whether `b` exists or not.
        assert_eq!(
            get(&alice, "b"),
            Decision::Deny(ACCESS_NOT_PERMITTED.into())
        );
        let bob = user("bob", &["system:authenticated"]);
        assert_eq!(get(&bob, "a"), Decision::NoOpinion);
    }

    #[test]
    fn deep_reviews_ask_only_rbac() {
        let index = index();
        // carol holds `view` in `a` but may not enter it; `a` also requires a group she lacks.
        bind_cluster_role(&index, "a", "view", "User", "carol");
        let authz = KcpAuthorizer::new(index, Arc::new(Required("a", "team-x")));
        let carol = user("carol", &["system:authenticated"]);
        let shallow = configmaps(&carol, "a", "list");
        assert_eq!(
            authz.authorize(&shallow),
            Decision::Deny(ACCESS_NOT_PERMITTED.into())
        );
        let deep = Attributes {
            deep_review: true,
            ..shallow.clone()
        };
        assert_eq!(authz.authorize(&deep), Decision::Allow);
        // The shallow answer is not served from the deep one's cache entry, nor the reverse.
        assert_eq!(
            authz.authorize(&shallow),
            Decision::Deny(ACCESS_NOT_PERMITTED.into())
        );
        // RBAC still decides: carol may not create, and nobody else gains anything.
        let create = Attributes {
            deep_review: true,
            ..configmaps(&carol, "a", "create")
        };
        assert_eq!(authz.authorize(&create), Decision::NoOpinion);
        let dave = user("dave", &["system:authenticated"]);
        let dave_deep = Attributes {
            deep_review: true,
            ..configmaps(&dave, "a", "list")
        };
        assert_eq!(authz.authorize(&dave_deep), Decision::NoOpinion);
        // Wildcard and system LCs stay privileged-only.
        let system = Attributes {
            deep_review: true,
            ..configmaps(&carol, "system:admin", "list")
        };
        assert_eq!(
            authz.authorize(&system),
            Decision::Deny(PRIVILEGED_ONLY.into())
        );
    }

    /// No required groups, counting how often `cluster` is asked about: once per decision that was
    /// not served from the cache.
    #[derive(Default)]
    struct Counting(std::sync::atomic::AtomicUsize);
    impl ClusterFacts for Counting {
        fn required_groups(&self, _cluster: &str) -> Option<String> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            None
        }
    }

    #[test]
    fn changes_forget_the_decisions_of_their_cluster_only() {
        let index = index_with_grants();
        bind_cluster_role(&index, "b", "system:kcp:workspace:access", "User", "bob");
        let facts = Arc::new(Counting::default());
        let authz = KcpAuthorizer::new(index.clone(), facts.clone());
        let asked = || facts.0.load(std::sync::atomic::Ordering::SeqCst);
        let alice = user("alice", &["system:authenticated"]);
        let bob = user("bob", &["system:authenticated"]);
        let in_a = configmaps(&alice, "a", "list");
        let in_b = configmaps(&bob, "b", "list");
        // Checked so the test means what it says (distinct stripes for `a` and `b`).
        let stripes = Generations::new();
        let before = stripes.of("a");
        stripes.bump("b");
        assert_eq!(stripes.of("a"), before);

        assert_eq!(authz.authorize(&in_a), Decision::Allow);
        assert_eq!(authz.authorize(&in_b), Decision::NoOpinion);
        assert_eq!(asked(), 2);
        assert_eq!(authz.authorize(&in_a), Decision::Allow);
        assert_eq!(asked(), 2, "served from the cache");

        // RBAC of `b` changes: b's decision is made again (and sees the grant), a's is kept.
        bind_cluster_role(&index, "b", "view", "User", "bob");
        assert_eq!(authz.authorize(&in_b), Decision::Allow);
        assert_eq!(asked(), 3);
        assert_eq!(authz.authorize(&in_a), Decision::Allow);
        assert_eq!(asked(), 3, "a change in b keeps a's decisions");

        // b's LogicalCluster changes: the same.
        authz.cluster_changed("b");
        authz.authorize(&in_b);
        authz.authorize(&in_a);
        assert_eq!(asked(), 4);

        // A change of a's RBAC forgets a's decisions.
        bind_cluster_role(&index, "a", "edit", "User", "carol");
        authz.authorize(&in_a);
        assert_eq!(asked(), 5);

        // The bootstrap policy applies everywhere: its change forgets everything.
        bind_cluster_role(
            &index,
            crate::authz::rbac::BOOTSTRAP_CLUSTER,
            "view",
            "User",
            "dave",
        );
        authz.authorize(&in_a);
        authz.authorize(&in_b);
        assert_eq!(asked(), 7);

        // As does a full reload of logical clusters.
        authz.clusters_changed();
        authz.authorize(&in_a);
        authz.authorize(&in_b);
        assert_eq!(asked(), 9);
    }

    #[test]
    fn required_groups_gate() {
        let authz = KcpAuthorizer::new(
            index_with_grants(),
            Arc::new(Required("a", "team-x,team-y;ops")),
        );
        let alice = user("alice", &["system:authenticated"]);
        assert_eq!(
            authz.authorize(&configmaps(&alice, "a", "list")),
            Decision::Deny(ACCESS_NOT_PERMITTED.into())
        );
        let alice = user("alice", &["team-x", "team-y"]);
        assert_eq!(
            authz.authorize(&configmaps(&alice, "a", "list")),
            Decision::Allow
        );
        let alice = user("alice", &["ops"]);
        assert_eq!(
            authz.authorize(&configmaps(&alice, "a", "list")),
            Decision::Allow
        );
        assert!(holds_required_groups(&alice, " ; "));
    }

    #[test]
    fn service_accounts_enter_their_own_cluster_and_are_foreigners_elsewhere() {
        let index = index();
        // An SA of `a` may read configmaps in `a` through a binding naming it, without `access`.
        index
            .apply_object(
                "a",
                &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "sa-view", "namespace": "default"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                    "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]}),
            )
            .unwrap();
        let authz = KcpAuthorizer::new(index.clone(), Arc::new(NoRequiredGroups));
        let sa = UserInfo {
            name: "system:serviceaccount:default:robot".into(),
            groups: vec![
                "system:serviceaccounts".into(),
                "system:authenticated".into(),
            ],
            extra: BTreeMap::from([(
                crate::authz::scope::CLUSTER_NAME_EXTRA.to_string(),
                vec!["a".to_string()],
            )]),
            ..UserInfo::default()
        };
        assert_eq!(
            authz.authorize(&configmaps(&sa, "a", "list")),
            Decision::Allow
        );
        assert_eq!(
            authz.authorize(&configmaps(&sa, "b", "list")),
            Decision::Deny(ACCESS_NOT_PERMITTED.into())
        );
        // Named without its cluster (impersonated, or asked about in a review), it is local to
        // the cluster asked about, as kcp takes it.
        let unqualified = UserInfo {
            extra: BTreeMap::new(),
            ..sa.clone()
        };
        assert_eq!(
            authz.authorize(&configmaps(&unqualified, "a", "list")),
            Decision::Allow
        );
        // `b` grants the foreign SA by its kcp name; the cached refusal is forgotten.
        bind_cluster_role(
            &index,
            "b",
            "system:kcp:workspace:access",
            "User",
            "system:kcp:serviceaccount:a:default:robot",
        );
        bind_cluster_role(&index, "b", "view", "Group", "system:cluster:a");
        assert_eq!(
            authz.authorize(&configmaps(&sa, "b", "list")),
            Decision::Allow
        );
        assert_eq!(
            authz.authorize(&configmaps(&sa, "b", "create")),
            Decision::NoOpinion
        );
    }

    #[test]
    fn the_cache_key_ignores_extras_decisions_do_not_read() {
        let with = |extra: &[(&str, &str)]| UserInfo {
            name: "system:serviceaccount:default:robot".into(),
            extra: extra
                .iter()
                .map(|(k, v)| (k.to_string(), vec![v.to_string()]))
                .collect(),
            ..UserInfo::default()
        };
        let key = |user: &UserInfo| cache_key(user, &configmaps(user, "a", "list"));
        let credential = crate::authn::service_account::CREDENTIAL_ID_EXTRA;
        let one = with(&[(CLUSTER_NAME_EXTRA, "a"), (credential, "JTI=1")]);
        let two = with(&[(CLUSTER_NAME_EXTRA, "a"), (credential, "JTI=2")]);
        assert_eq!(key(&one), key(&two));
        // The extras decisions read still tell users apart.
        assert_ne!(key(&one), key(&with(&[(CLUSTER_NAME_EXTRA, "b")])));
        assert_ne!(
            key(&with(&[(SCOPES_EXTRA, "cluster:a")])),
            key(&with(&[(SCOPES_EXTRA, "cluster:b")]))
        );
        assert_ne!(key(&with(&[])), key(&with(&[(SCOPES_EXTRA, "cluster:a")])));
    }
}
