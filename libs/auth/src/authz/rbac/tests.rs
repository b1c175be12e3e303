//! Table tests of the index and authorizer, and property tests of the evaluator.

#![allow(clippy::unwrap_used)] // tests may panic on unexpected input

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::authn::UserInfo;
use crate::authz::{Attributes, Authorizer, Decision};

const X: &str = "x-cluster";
const Y: &str = "y-cluster";

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..UserInfo::default()
    }
}

fn bob() -> UserInfo {
    user("bob", &["system:authenticated"])
}

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": groups, "resources": resources})
}

fn cluster_role(name: &str, rules: Vec<Value>) -> Value {
    json!({"kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
}

fn labelled_cluster_role(name: &str, labels: Value, rules: Vec<Value>) -> Value {
    json!({"kind": "ClusterRole", "metadata": {"name": name, "labels": labels}, "rules": rules})
}

fn role(ns: &str, name: &str, rules: Vec<Value>) -> Value {
    json!({"kind": "Role", "metadata": {"name": name, "namespace": ns}, "rules": rules})
}

fn subject_user(name: &str) -> Value {
    json!({"kind": "User", "name": name})
}

fn cluster_binding(name: &str, role: &str, subjects: Vec<Value>) -> Value {
    json!({"kind": "ClusterRoleBinding", "metadata": {"name": name},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
           "subjects": subjects})
}

fn binding(ns: &str, name: &str, role_kind: &str, role: &str, subjects: Vec<Value>) -> Value {
    json!({"kind": "RoleBinding", "metadata": {"name": name, "namespace": ns},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
           "subjects": subjects})
}

fn index_with(objects: &[(&str, Value)]) -> Arc<RbacIndex> {
    let index = Arc::new(RbacIndex::new());
    for (cluster, object) in objects {
        index.apply_object(cluster, object).unwrap();
    }
    index
}

fn bootstrapped(objects: &[(&str, Value)]) -> Arc<RbacIndex> {
    let index = index_with(objects);
    bootstrap::load(&index).unwrap();
    index
}

fn res<'a>(
    user: &'a UserInfo,
    cluster: &'a str,
    verb: &'a str,
    resource: &'a str,
    namespace: &'a str,
) -> Attributes<'a> {
    Attributes {
        user: Some(user),
        cluster,
        verb,
        resource_request: true,
        api_version: "v1",
        resource,
        namespace,
        ..Attributes::default()
    }
}

fn path<'a>(user: Option<&'a UserInfo>, cluster: &'a str, p: &'a str) -> Attributes<'a> {
    Attributes {
        user,
        cluster,
        verb: "get",
        path: p,
        ..Attributes::default()
    }
}

fn decide(index: &Arc<RbacIndex>, attrs: &Attributes<'_>) -> RbacDecision {
    RbacAuthorizer::new(index.clone()).decide(attrs)
}

fn allowed(index: &Arc<RbacIndex>, attrs: &Attributes<'_>) -> bool {
    decide(index, attrs).allowed
}

#[test]
fn role_binding_grants_in_its_namespace_and_cluster_only() {
    let index = index_with(&[
        (
            X,
            role(
                "a",
                "reader",
                vec![rule(&["get", "list"], &[""], &["configmaps"])],
            ),
        ),
        (
            X,
            binding("a", "rb", "Role", "reader", vec![subject_user("bob")]),
        ),
    ]);
    let bob = bob();
    let d = decide(&index, &res(&bob, X, "list", "configmaps", "a"));
    assert_eq!(
        d,
        RbacDecision {
            allowed: true,
            reason: r#"RBAC: allowed by RoleBinding "rb/a" of Role "reader" to User "bob""#.into()
        }
    );
    assert!(!allowed(&index, &res(&bob, X, "delete", "configmaps", "a")));
    assert!(!allowed(&index, &res(&bob, X, "list", "configmaps", "b")));
    assert!(!allowed(&index, &res(&bob, X, "list", "configmaps", "")));
    assert!(!allowed(&index, &res(&bob, Y, "list", "configmaps", "a")));
    let alice = user("alice", &[]);
    assert!(!allowed(&index, &res(&alice, X, "list", "configmaps", "a")));
}

#[test]
fn cluster_role_bindings_grant_everywhere_in_their_cluster() {
    let index = index_with(&[
        (
            X,
            cluster_role(
                "ns-reader",
                vec![rule(&["get"], &[""], &["namespaces", "configmaps"])],
            ),
        ),
        (
            X,
            cluster_binding(
                "crb",
                "ns-reader",
                vec![json!({"kind": "Group", "name": "devs"})],
            ),
        ),
    ]);
    let dev = user("dev", &["devs"]);
    let d = decide(&index, &res(&dev, X, "get", "namespaces", ""));
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by ClusterRoleBinding "crb" of ClusterRole "ns-reader" to Group "devs""#
    );
    assert!(allowed(&index, &res(&dev, X, "get", "configmaps", "any")));
    assert!(!allowed(&index, &res(&dev, Y, "get", "configmaps", "any")));
    let bob = bob();
    assert!(!allowed(&index, &res(&bob, X, "get", "configmaps", "any")));
}

#[test]
fn role_binding_to_cluster_role_is_limited_to_its_namespace() {
    let index = index_with(&[
        (
            X,
            cluster_role("cm", vec![rule(&["*"], &[""], &["configmaps"])]),
        ),
        (
            X,
            binding("a", "rb", "ClusterRole", "cm", vec![subject_user("bob")]),
        ),
    ]);
    let bob = bob();
    assert!(allowed(&index, &res(&bob, X, "create", "configmaps", "a")));
    assert!(!allowed(&index, &res(&bob, X, "create", "configmaps", "b")));
    assert!(!allowed(&index, &res(&bob, X, "list", "configmaps", "")));
}

#[test]
fn other_clusters_are_isolated() {
    let index = index_with(&[
        (
            X,
            cluster_role("custom", vec![rule(&["*"], &["*"], &["*"])]),
        ),
        (
            X,
            cluster_binding("crb", "custom", vec![subject_user("bob")]),
        ),
        // Y binds a role only X has: not found, no grant.
        (
            Y,
            cluster_binding("crb", "custom", vec![subject_user("bob")]),
        ),
    ]);
    let bob = bob();
    assert!(allowed(&index, &res(&bob, X, "delete", "secrets", "a")));
    let d = decide(&index, &res(&bob, Y, "delete", "secrets", "a"));
    assert_eq!(
        d,
        RbacDecision {
            allowed: false,
            reason: r#"RBAC: clusterrole.rbac.authorization.k8s.io "custom" not found"#.into()
        }
    );
    assert!(!allowed(
        &index,
        &res(&bob, "z-cluster", "get", "secrets", "a")
    ));
}

#[test]
fn bootstrap_roles_can_be_bound_from_any_cluster() {
    let index = bootstrapped(&[
        (
            X,
            binding(
                "a",
                "viewers",
                "ClusterRole",
                "view",
                vec![subject_user("bob")],
            ),
        ),
        (
            X,
            binding(
                "b",
                "editors",
                "ClusterRole",
                "edit",
                vec![subject_user("bob")],
            ),
        ),
        (
            X,
            binding(
                "c",
                "admins",
                "ClusterRole",
                "admin",
                vec![subject_user("bob")],
            ),
        ),
    ]);
    let bob = bob();
    // view: reads, not secrets, not writes.
    assert!(allowed(&index, &res(&bob, X, "list", "configmaps", "a")));
    assert!(!allowed(&index, &res(&bob, X, "get", "secrets", "a")));
    assert!(!allowed(&index, &res(&bob, X, "create", "configmaps", "a")));
    // edit aggregates view and the edit part.
    assert!(allowed(&index, &res(&bob, X, "list", "events", "b")));
    assert!(allowed(&index, &res(&bob, X, "create", "secrets", "b")));
    assert!(!allowed(&index, &res(&bob, X, "create", "roles", "b")));
    // admin aggregates edit (and so view) and RBAC in the namespace.
    let mut roles = res(&bob, X, "create", "roles", "c");
    roles.api_group = "rbac.authorization.k8s.io";
    assert!(allowed(&index, &roles));
    assert!(allowed(&index, &res(&bob, X, "delete", "secrets", "c")));
    assert!(allowed(&index, &res(&bob, X, "watch", "namespaces", "c")));
    // Nothing outside the bound namespaces, nothing in another LC.
    assert!(!allowed(&index, &res(&bob, X, "list", "configmaps", "d")));
    assert!(!allowed(&index, &res(&bob, Y, "list", "configmaps", "a")));
}

#[test]
fn a_cluster_own_role_shadows_the_bootstrap_one() {
    let index = bootstrapped(&[
        (
            X,
            cluster_role("view", vec![rule(&["get"], &[""], &["widgets"])]),
        ),
        (
            X,
            binding(
                "a",
                "viewers",
                "ClusterRole",
                "view",
                vec![subject_user("bob")],
            ),
        ),
    ]);
    let bob = bob();
    assert!(allowed(&index, &res(&bob, X, "get", "widgets", "a")));
    assert!(!allowed(&index, &res(&bob, X, "list", "configmaps", "a")));
}

#[test]
fn bootstrap_bindings_apply_in_every_cluster() {
    let index = bootstrapped(&[]);
    let admin = user("kcp-admin", &["system:kcp:admin", "system:authenticated"]);
    for cluster in [X, Y, "root", BOOTSTRAP_CLUSTER] {
        let d = decide(
            &index,
            &res(&admin, cluster, "deletecollection", "secrets", "a"),
        );
        assert!(d.allowed, "{cluster}");
        if cluster != BOOTSTRAP_CLUSTER {
            assert_eq!(
                d.reason,
                r#"RBAC: allowed by ClusterRoleBinding "system:kcp:admin:cluster-admin" of ClusterRole "cluster-admin" to Group "system:kcp:admin" in logical cluster "system:admin""#
            );
        }
        assert!(allowed(&index, &path(Some(&admin), cluster, "/metrics")));
    }
    let bob = bob();
    assert!(!allowed(&index, &res(&bob, X, "get", "secrets", "a")));
    assert!(allowed(&index, &path(Some(&bob), X, "/apis/apps/v1")));
    assert!(allowed(&index, &path(Some(&bob), X, "/version")));
    assert!(!allowed(&index, &path(Some(&bob), X, "/metrics")));
    let mut review = res(&bob, X, "create", "selfsubjectaccessreviews", "");
    review.api_group = "authorization.k8s.io";
    assert!(allowed(&index, &review));
    // Without a user: anonymous, only the public info.
    assert!(allowed(&index, &path(None, X, "/healthz")));
    assert!(allowed(&index, &path(None, X, "/readyz")));
    assert!(!allowed(&index, &path(None, X, "/api")));
}

#[test]
fn bootstrap_bindings_resolve_roles_in_the_bootstrap_cluster_only() {
    let index = index_with(&[
        (
            X,
            cluster_role("local-only", vec![rule(&["*"], &["*"], &["*"])]),
        ),
        (
            BOOTSTRAP_CLUSTER,
            cluster_binding("b", "local-only", vec![subject_user("bob")]),
        ),
    ]);
    let bob = bob();
    let d = decide(&index, &res(&bob, X, "get", "secrets", "a"));
    assert!(!d.allowed);
    assert!(d.reason.contains("not found"), "{}", d.reason);
}

#[test]
fn bootstrap_aggregated_roles_take_in_the_cluster_own_parts() {
    let index = bootstrapped(&[
        (
            X,
            labelled_cluster_role(
                "widgets-view",
                json!({"rbac.authorization.k8s.io/aggregate-to-view": "true"}),
                vec![rule(&["get"], &["example.io"], &["widgets"])],
            ),
        ),
        (
            X,
            binding(
                "a",
                "viewers",
                "ClusterRole",
                "view",
                vec![subject_user("bob")],
            ),
        ),
        (
            X,
            binding(
                "a",
                "admins",
                "ClusterRole",
                "admin",
                vec![subject_user("alice")],
            ),
        ),
        (
            Y,
            binding(
                "a",
                "viewers",
                "ClusterRole",
                "view",
                vec![subject_user("bob")],
            ),
        ),
    ]);
    let bob = bob();
    let alice = user("alice", &[]);
    let mut widgets = res(&bob, X, "get", "widgets", "a");
    widgets.api_group = "example.io";
    assert!(allowed(&index, &widgets));
    // admin takes in edit, which takes in view: X's view part reaches them too.
    widgets.user = Some(&alice);
    assert!(allowed(&index, &widgets));
    widgets.verb = "delete";
    assert!(!allowed(&index, &widgets));
    widgets.verb = "get";
    // Y's view is not widened by X's role.
    widgets.user = Some(&bob);
    widgets.cluster = Y;
    assert!(!allowed(&index, &widgets));
}

#[test]
fn resource_names_and_subresources() {
    let index = index_with(&[
        (
            X,
            role(
                "a",
                "r",
                vec![
                    json!({"verbs": ["get", "update", "list"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cm1"]}),
                    json!({"verbs": ["patch"], "apiGroups": [""], "resources": ["*/status"]}),
                ],
            ),
        ),
        (
            X,
            binding("a", "rb", "Role", "r", vec![subject_user("bob")]),
        ),
    ]);
    let bob = bob();
    let mut a = res(&bob, X, "get", "configmaps", "a");
    a.name = "cm1";
    assert!(allowed(&index, &a));
    a.name = "cm2";
    assert!(!allowed(&index, &a));
    // list carries no name, so a named rule does not cover it.
    assert!(!allowed(&index, &res(&bob, X, "list", "configmaps", "a")));
    let mut status = res(&bob, X, "patch", "secrets", "a");
    status.subresource = "status";
    assert!(allowed(&index, &status));
    status.subresource = "scale";
    assert!(!allowed(&index, &status));
}

#[test]
fn service_account_subjects() {
    let index = index_with(&[
        (
            X,
            cluster_role("cm", vec![rule(&["get"], &[""], &["configmaps"])]),
        ),
        (
            X,
            binding(
                "a",
                "implicit",
                "ClusterRole",
                "cm",
                vec![json!({"kind": "ServiceAccount", "name": "builder"})],
            ),
        ),
        (
            X,
            cluster_binding(
                "implicit",
                "cm",
                vec![json!({"kind": "ServiceAccount", "name": "deployer"})],
            ),
        ),
        (
            X,
            cluster_binding(
                "explicit",
                "cm",
                vec![json!({"kind": "ServiceAccount", "name": "robot", "namespace": "b"})],
            ),
        ),
    ]);
    let builder = user("system:serviceaccount:a:builder", &[]);
    let d = decide(&index, &res(&builder, X, "get", "configmaps", "a"));
    assert_eq!(
        d.reason,
        r#"RBAC: allowed by RoleBinding "implicit/a" of ClusterRole "cm" to ServiceAccount "builder/a""#
    );
    assert!(!allowed(
        &index,
        &res(&builder, X, "get", "configmaps", "b")
    ));
    // A ClusterRoleBinding's SA subject needs a namespace.
    let deployer = user("system:serviceaccount:a:deployer", &[]);
    assert!(!allowed(
        &index,
        &res(&deployer, X, "get", "configmaps", "a")
    ));
    let mut robot = user("system:serviceaccount:b:robot", &[]);
    assert!(allowed(&index, &res(&robot, X, "get", "configmaps", "z")));
    // The same SA name from another LC is someone else.
    robot
        .extra
        .insert(subject::CLUSTER_NAME_EXTRA.into(), vec![Y.into()]);
    assert!(!allowed(&index, &res(&robot, X, "get", "configmaps", "z")));
    robot
        .extra
        .insert(subject::CLUSTER_NAME_EXTRA.into(), vec![X.into()]);
    assert!(allowed(&index, &res(&robot, X, "get", "configmaps", "z")));
}

#[test]
fn aggregation_follows_updates_and_deletes() {
    let index = index_with(&[
        (
            X,
            json!({"kind": "ClusterRole", "metadata": {"name": "agg"},
                   "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"team": "a"}}]}}),
        ),
        (X, cluster_binding("crb", "agg", vec![subject_user("bob")])),
    ]);
    let bob = bob();
    let attrs = res(&bob, X, "get", "configmaps", "n");
    assert!(!allowed(&index, &attrs));
    let part = |team: &str| {
        labelled_cluster_role(
            "part",
            json!({"team": team}),
            vec![rule(&["get"], &[""], &["configmaps"])],
        )
    };
    let g0 = index.generation_of(X);
    index.apply_object(X, &part("a")).unwrap();
    assert!(index.generation_of(X) > g0);
    assert!(allowed(&index, &attrs));
    index.apply_object(X, &part("b")).unwrap();
    assert!(!allowed(&index, &attrs));
    index.apply_object(X, &part("a")).unwrap();
    assert!(allowed(&index, &attrs));
    index
        .apply(X, RbacKind::ClusterRole, None, "part", None)
        .unwrap();
    assert!(!allowed(&index, &attrs));
    // Changing the selector of the aggregated role itself.
    index.apply_object(X, &part("b")).unwrap();
    index
        .apply_object(X, &json!({"kind": "ClusterRole", "metadata": {"name": "agg"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [{"key": "team", "operator": "Exists"}]}]}}))
        .unwrap();
    assert!(allowed(&index, &attrs));
}

#[test]
fn missing_roles_and_unsupported_kinds_are_reported() {
    let index = index_with(&[
        (X, cluster_binding("crb", "nope", vec![subject_user("bob")])),
        (
            X,
            binding("a", "rb", "Role", "missing", vec![subject_user("bob")]),
        ),
        (
            X,
            binding("a", "odd", "Robot", "r", vec![subject_user("bob")]),
        ),
    ]);
    let bob = bob();
    let d = decide(&index, &res(&bob, X, "get", "configmaps", "a"));
    assert_eq!(
        d.reason,
        // Bindings in name order: "odd" before "rb".
        r#"RBAC: [clusterrole.rbac.authorization.k8s.io "nope" not found, unsupported role reference kind: "Robot", role.rbac.authorization.k8s.io "missing" not found]"#
    );
    let rules = RbacAuthorizer::new(index.clone()).rules_for(&bob, X, "a");
    assert!(rules.incomplete);
    assert!(rules.evaluation_error.contains("nope"));
}

#[test]
fn malformed_objects_are_refused_and_drop_the_previous_version() {
    let index = index_with(&[
        (
            X,
            cluster_role("cm", vec![rule(&["get"], &[""], &["configmaps"])]),
        ),
        (X, cluster_binding("crb", "cm", vec![subject_user("bob")])),
    ]);
    let bob = bob();
    let attrs = res(&bob, X, "get", "configmaps", "a");
    assert!(allowed(&index, &attrs));
    let err = index
        .apply(
            X,
            RbacKind::ClusterRole,
            None,
            "cm",
            Some(&json!({"rules": "all"})),
        )
        .unwrap_err();
    assert!(matches!(err, RbacObjectError::Malformed { .. }), "{err}");
    assert!(!allowed(&index, &attrs));

    for (kind, object) in [
        (RbacKind::ClusterRoleBinding, json!({"roleRef": "cm"})),
        (
            RbacKind::ClusterRoleBinding,
            json!({"roleRef": {"kind": "ClusterRole"}}),
        ),
        (
            RbacKind::ClusterRoleBinding,
            json!({"roleRef": {"kind": "ClusterRole", "name": "cm"}, "subjects": {}}),
        ),
        (
            RbacKind::ClusterRole,
            json!({"aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [{"key": "a", "operator": "Near"}]}]}}),
        ),
        (
            RbacKind::ClusterRole,
            json!({"metadata": {"labels": {"a": 1}}}),
        ),
        (RbacKind::Role, json!(42)),
    ] {
        let ns = kind.is_namespaced().then_some("a");
        assert!(
            index.apply(X, kind, ns, "bad", Some(&object)).is_err(),
            "{object}"
        );
    }
    assert_eq!(
        index.apply(X, RbacKind::Role, None, "r", Some(&json!({}))),
        Err(RbacObjectError::MissingNamespace(RbacKind::Role))
    );
    assert!(matches!(
        index.apply_object(X, &json!({"kind": "Pod", "metadata": {"name": "p"}})),
        Err(RbacObjectError::UnknownKind(_))
    ));
    assert_eq!(
        index.apply_object(X, &json!({"kind": "Role", "metadata": {}})),
        Err(RbacObjectError::MissingName)
    );
}

#[test]
fn generation_and_empty_clusters() {
    let index = RbacIndex::new();
    assert_eq!(index.cluster_count(), 0);
    let g0 = index.generation_of(X);
    let object = role("a", "r", vec![rule(&["get"], &[""], &["configmaps"])]);
    index.apply_object(X, &object).unwrap();
    let g1 = index.generation_of(X);
    assert_ne!(g0, g1);
    // A resync of the same object is not a change.
    index.apply_object(X, &object).unwrap();
    assert_eq!(index.generation_of(X), g1);
    // Deleting what is not there is not a change either.
    let gy = index.generation_of(Y);
    index
        .apply(Y, RbacKind::Role, Some("a"), "r", None)
        .unwrap();
    assert_eq!(index.generation_of(X), g1);
    assert_eq!(index.generation_of(Y), gy);
    assert_eq!(index.cluster_count(), 1);
    index
        .apply(X, RbacKind::Role, Some("a"), "r", None)
        .unwrap();
    assert_ne!(index.generation_of(X), g1);
    assert_eq!(
        index.cluster_count(),
        0,
        "an LC without objects has no entry"
    );

    index.apply_object(X, &object).unwrap();
    let g2 = index.generation_of(X);
    index.remove_cluster(X);
    assert_ne!(index.generation_of(X), g2);
    assert_eq!(index.cluster_count(), 0);
}

#[test]
fn rules_for_lists_local_and_bootstrap_rules() {
    let index = bootstrapped(&[
        (
            X,
            role(
                "a",
                "r",
                vec![
                    json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["one"]}),
                    json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["one"]}),
                ],
            ),
        ),
        (
            X,
            binding("a", "rb", "Role", "r", vec![subject_user("bob")]),
        ),
    ]);
    let bob = bob();
    let authz = RbacAuthorizer::new(index.clone());
    let rules = authz.rules_for(&bob, X, "a");
    assert!(!rules.incomplete);
    assert_eq!(
        rules.resource_rules[0],
        ResourceRule {
            verbs: vec!["get".into()],
            api_groups: vec!["".into()],
            resources: vec!["configmaps".into()],
            resource_names: vec!["one".into()],
        }
    );
    assert_eq!(
        rules
            .resource_rules
            .iter()
            .filter(|r| r.resources == ["configmaps"])
            .count(),
        1,
        "duplicates are dropped"
    );
    assert!(
        rules
            .resource_rules
            .iter()
            .any(|r| r.resources.contains(&"selfsubjectrulesreviews".to_string()))
    );
    assert!(
        rules
            .non_resource_rules
            .iter()
            .any(|r| r.non_resource_urls.contains(&"/apis/*".to_string()))
    );
    let status = rules.to_status_json();
    assert_eq!(status["incomplete"], false);
    assert_eq!(
        status["resourceRules"][0],
        json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["one"]})
    );
    assert!(status.get("evaluationError").is_none());
    // Another namespace: only the bootstrap rules.
    let other = authz.rules_for(&bob, X, "b");
    assert!(
        other
            .resource_rules
            .iter()
            .all(|r| r.resources != ["configmaps"])
    );
}

#[test]
fn authorizer_trait_allows_or_has_no_opinion() {
    let index = bootstrapped(&[]);
    let authz = RbacAuthorizer::new(index);
    let bob = bob();
    assert_eq!(
        authz.authorize(&path(Some(&bob), X, "/version")),
        Decision::Allow
    );
    assert_eq!(
        authz.authorize(&res(&bob, X, "get", "secrets", "a")),
        Decision::NoOpinion
    );
}

#[test]
fn bootstrap_objects_look_like_kubernetes() {
    for object in bootstrap::objects() {
        let meta = &object["metadata"];
        assert_eq!(
            meta["labels"]["kubernetes.io/bootstrapping"],
            "rbac-defaults"
        );
        assert_eq!(
            meta["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
            "true"
        );
        assert_eq!(object["apiVersion"], "rbac.authorization.k8s.io/v1");
    }
    let index = bootstrapped(&[]);
    assert_eq!(index.cluster_count(), 1);
    // Loading twice changes nothing.
    let g = index.generation_of(index.bootstrap_cluster());
    bootstrap::load(&index).unwrap();
    assert_eq!(index.generation_of(index.bootstrap_cluster()), g);
}

#[test]
fn another_bootstrap_cluster_name() {
    let index = Arc::new(RbacIndex::with_bootstrap_cluster("system:policy"));
    bootstrap::load(&index).unwrap();
    let admin = user("a", &["system:kcp:admin"]);
    assert!(allowed(&index, &res(&admin, X, "get", "secrets", "a")));
    assert_eq!(index.bootstrap_cluster(), "system:policy");
}

#[test]
fn readers_see_a_consistent_index_while_a_writer_updates_it() {
    let index = bootstrapped(&[(
        X,
        cluster_role("cm", vec![rule(&["get"], &[""], &["configmaps"])]),
    )]);
    let writer = {
        let index = index.clone();
        std::thread::spawn(move || {
            for i in 0..200 {
                let name = format!("b{}", i % 7);
                let object = cluster_binding(&name, "cm", vec![subject_user("bob")]);
                index.apply_object(X, &object).unwrap();
                index
                    .apply(X, RbacKind::ClusterRoleBinding, None, &name, None)
                    .unwrap();
            }
        })
    };
    let bob = bob();
    let admin = user("root", &["system:masters"]);
    for _ in 0..200 {
        // Whatever the writer is doing, the bootstrap grant holds and nothing else leaks.
        assert!(allowed(&index, &res(&admin, X, "delete", "secrets", "a")));
        assert!(!allowed(&index, &res(&bob, X, "get", "secrets", "a")));
    }
    writer.join().unwrap();
    assert!(!allowed(&index, &res(&bob, X, "get", "configmaps", "a")));
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// An owned request, so strategies can produce it; [`Req::attrs`] borrows it.
    #[derive(Clone, Debug)]
    struct Req {
        user: UserInfo,
        verb: String,
        resource_request: bool,
        group: String,
        resource: String,
        subresource: String,
        namespace: String,
        name: String,
        path: String,
    }

    impl Req {
        fn attrs<'a>(&'a self, cluster: &'a str) -> Attributes<'a> {
            Attributes {
                user: Some(&self.user),
                cluster,
                verb: &self.verb,
                resource_request: self.resource_request,
                api_group: &self.group,
                api_version: "v1",
                resource: &self.resource,
                subresource: &self.subresource,
                namespace: &self.namespace,
                name: &self.name,
                path: &self.path,
                deep_review: false,
            }
        }
    }

    fn pick(words: &'static [&'static str]) -> impl Strategy<Value = String> + Clone {
        prop::sample::select(words).prop_map(str::to_owned)
    }

    const VERBS: &[&str] = &["get", "list", "create", "delete", "*"];
    const GROUPS: &[&str] = &["", "apps", "*"];
    const RESOURCES: &[&str] = &[
        "configmaps",
        "secrets",
        "configmaps/status",
        "*/status",
        "*",
    ];
    const NAMES: &[&str] = &["a", "b"];
    const URLS: &[&str] = &["/healthz", "/api", "/api/*", "*", "/apis/*"];
    const NAMESPACES: &[&str] = &["n1", "n2"];
    const USERS: &[&str] = &["bob", "alice", "system:serviceaccount:n1:sa"];
    const USER_GROUPS: &[&str] = &["devs", "ops", "system:authenticated"];
    const ROLES: &[&str] = &["r1", "r2", "r1", "r2", "missing"];

    fn req() -> impl Strategy<Value = Req> {
        (
            pick(USERS),
            prop::collection::vec(pick(USER_GROUPS), 1..3),
            pick(&["get", "list", "create", "delete"]),
            any::<bool>(),
            pick(&["", "", "apps", "example.io"]),
            pick(&["configmaps", "secrets"]),
            pick(&["", "", "", "status", "scale"]),
            pick(&["", "n1", "n1", "n2"]),
            pick(&["", "a", "b", "c"]),
            pick(&["/healthz", "/api", "/api/v1", "/apis/apps", "/metrics"]),
        )
            .prop_map(
                |(
                    name,
                    groups,
                    verb,
                    resource_request,
                    group,
                    resource,
                    subresource,
                    namespace,
                    obj,
                    path,
                )| Req {
                    user: UserInfo {
                        name,
                        groups,
                        ..UserInfo::default()
                    },
                    verb,
                    resource_request,
                    group,
                    resource,
                    subresource,
                    namespace,
                    name: obj,
                    path,
                },
            )
    }

    fn rule_json() -> impl Strategy<Value = Value> + Clone {
        // Biased towards rules that match something, so that the properties see grants.
        let list = |words, n: std::ops::Range<usize>| prop::collection::vec(pick(words), n);
        let names = prop_oneof![3 => Just(Vec::new()), 1 => list(NAMES, 1..2)];
        (
            list(VERBS, 1..3),
            list(GROUPS, 1..2),
            list(RESOURCES, 1..3),
            names,
            list(URLS, 0..2),
        )
            .prop_map(|(verbs, groups, resources, names, urls)| {
                json!({"verbs": verbs, "apiGroups": groups, "resources": resources,
                       "resourceNames": names, "nonResourceURLs": urls})
            })
    }

    fn subject_json() -> impl Strategy<Value = Value> + Clone {
        prop_oneof![
            pick(USERS).prop_map(|n| json!({"kind": "User", "name": n})),
            pick(USER_GROUPS).prop_map(|n| json!({"kind": "Group", "name": n})),
            pick(&["", "n1"])
                .prop_map(|ns| json!({"kind": "ServiceAccount", "name": "sa", "namespace": ns})),
        ]
    }

    /// A random RBAC object, named from `roles` or `bindings`.
    fn object(
        roles: &'static [&'static str],
        bindings: &'static [&'static str],
    ) -> impl Strategy<Value = Value> {
        let rules = prop::collection::vec(rule_json(), 1..3);
        let subjects = prop::collection::vec(subject_json(), 0..4);
        prop_oneof![
            (pick(NAMESPACES), pick(roles), rules.clone())
                .prop_map(|(ns, n, rules)| json!({"kind": "Role", "metadata": {"name": n, "namespace": ns}, "rules": rules})),
            (pick(roles), pick(&["x", "y"]), prop::bool::weighted(0.2), rules)
                .prop_map(|(n, label, aggregated, rules)| {
                    let mut role = json!({"kind": "ClusterRole", "metadata": {"name": n, "labels": {"l": label}}, "rules": rules});
                    if aggregated {
                        role["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": {"l": "x"}}]});
                    }
                    role
                }),
            (pick(NAMESPACES), pick(bindings), pick(&["Role", "ClusterRole", "ClusterRole"]), pick(ROLES), subjects.clone())
                .prop_map(|(ns, n, kind, role, subjects)| json!({"kind": "RoleBinding", "metadata": {"name": n, "namespace": ns},
                    "roleRef": {"kind": kind, "name": role}, "subjects": subjects})),
            (pick(bindings), pick(ROLES), subjects)
                .prop_map(|(n, role, subjects)| json!({"kind": "ClusterRoleBinding", "metadata": {"name": n},
                    "roleRef": {"kind": "ClusterRole", "name": role}, "subjects": subjects})),
        ]
    }

    /// Objects for X (`false`) and for the bootstrap LC (`true`).
    fn policy() -> impl Strategy<Value = Vec<(bool, Value)>> {
        prop::collection::vec(
            (
                prop::bool::weighted(0.25),
                object(&["r1", "r2"], &["b1", "b2", "b3"]),
            ),
            0..24,
        )
    }

    fn load(index: &RbacIndex, cluster: &str, objects: &[(bool, Value)]) {
        for (in_bootstrap, object) in objects {
            let target = if *in_bootstrap {
                BOOTSTRAP_CLUSTER
            } else {
                cluster
            };
            index.apply_object(target, object).unwrap();
        }
    }

    fn arbitrary_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            pick(&["", "get", "*", "ClusterRole", "User", "view"]).prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map(
                    pick(&[
                        "rules",
                        "verbs",
                        "roleRef",
                        "kind",
                        "name",
                        "subjects",
                        "aggregationRule",
                        "clusterRoleSelectors",
                        "matchLabels",
                        "metadata",
                        "labels",
                        "resources"
                    ]),
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        // Random policies grant a given random request only now and then (a few percent), so run
        // enough cases for the grant-preserving properties to meet many grants.
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn everything_rule_allows_everything(r in req(), cluster in pick(&["x", "y", BOOTSTRAP_CLUSTER])) {
            let index = index_with(&[
                (X, cluster_role("all", vec![json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "nonResourceURLs": ["*"]})])),
                (X, cluster_binding("all", "all", vec![json!({"kind": "User", "name": r.user.name})])),
            ]);
            prop_assert!(allowed(&index, &r.attrs(X)));
            let rule = PolicyRule::from_json(&json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "nonResourceURLs": ["*"]})).unwrap();
            prop_assert!(rule.allows(&r.attrs(&cluster)));
        }

        #[test]
        fn adding_objects_never_takes_a_grant_away(
            objects in policy(),
            extra in (any::<bool>(), object(&["a0", "zz"], &["a0", "zz"])),
            r in req(),
        ) {
            let index = Arc::new(RbacIndex::new());
            load(&index, X, &objects);
            let before = allowed(&index, &r.attrs(X));
            // New names only: a replaced object, or a role shadowing a bootstrap role of the same
            // name, may of course grant less.
            load(&index, X, &[extra]);
            if before {
                prop_assert!(allowed(&index, &r.attrs(X)));
            }
        }

        #[test]
        fn a_binding_for_the_user_never_takes_a_grant_away(
            objects in policy(),
            r in req(),
            in_bootstrap in any::<bool>(),
            name in pick(&["a0", "zz"]),
            role in pick(&["r1", "r2", "missing"]),
            kind in pick(&["ClusterRole", "Role", "Robot"]),
        ) {
            let index = Arc::new(RbacIndex::new());
            load(&index, X, &objects);
            let before = allowed(&index, &r.attrs(X));
            // A binding that certainly applies to the user, whose role may be missing or unsupported:
            // the walk must go on past it.
            let subjects = vec![json!({"kind": "User", "name": r.user.name})];
            let extra = if r.namespace.is_empty() || kind == "ClusterRole" && name == "zz" {
                json!({"kind": "ClusterRoleBinding", "metadata": {"name": name},
                       "roleRef": {"kind": kind, "name": role}, "subjects": subjects})
            } else {
                binding(&r.namespace, &name, &kind, &role, subjects)
            };
            load(&index, X, &[(in_bootstrap, extra)]);
            if before {
                prop_assert!(allowed(&index, &r.attrs(X)));
            }
        }

        #[test]
        fn rules_for_agrees_with_decisions(objects in policy(), r in req()) {
            let index = Arc::new(RbacIndex::new());
            load(&index, X, &objects);
            let rules = RbacAuthorizer::new(index.clone()).rules_for(&r.user, X, &r.namespace);
            let listed = rules
                .resource_rules
                .iter()
                .map(|rr| PolicyRule {
                    verbs: rr.verbs.clone(),
                    api_groups: rr.api_groups.clone(),
                    resources: rr.resources.clone(),
                    resource_names: rr.resource_names.clone(),
                    ..PolicyRule::default()
                })
                .chain(rules.non_resource_rules.iter().map(|nr| PolicyRule {
                    verbs: nr.verbs.clone(),
                    non_resource_urls: nr.non_resource_urls.clone(),
                    ..PolicyRule::default()
                }))
                .any(|rule| rule.allows(&r.attrs(X)));
            prop_assert_eq!(allowed(&index, &r.attrs(X)), listed);
        }

        #[test]
        fn without_bindings_nothing_is_allowed(objects in policy(), r in req()) {
            let index = Arc::new(RbacIndex::new());
            load(&index, X, &objects);
            for (in_bootstrap, object) in &objects {
                let cluster = if *in_bootstrap { BOOTSTRAP_CLUSTER } else { X };
                let kind = RbacKind::from_kind(object["kind"].as_str().unwrap()).unwrap();
                if matches!(kind, RbacKind::RoleBinding | RbacKind::ClusterRoleBinding) {
                    index.apply(cluster, kind, object["metadata"]["namespace"].as_str(),
                        object["metadata"]["name"].as_str().unwrap(), None).unwrap();
                }
            }
            let d = decide(&index, &r.attrs(X));
            prop_assert!(!d.allowed);
            prop_assert_eq!(d.reason, "");
            let rules = RbacAuthorizer::new(index.clone()).rules_for(&r.user, X, &r.namespace);
            prop_assert!(rules.resource_rules.is_empty() && rules.non_resource_rules.is_empty());
        }

        #[test]
        fn decisions_depend_on_the_cluster_only_through_its_objects(objects in policy(), r in req()) {
            let index = Arc::new(RbacIndex::new());
            load(&index, X, &objects);
            load(&index, Y, &objects);
            let in_x = decide(&index, &r.attrs(X));
            let in_y = decide(&index, &r.attrs(Y));
            prop_assert_eq!(in_x.allowed, in_y.allowed);
            // An LC without objects sees the bootstrap bindings only.
            let bootstrap_only: Vec<(bool, Value)> = objects.iter().filter(|(b, _)| *b).cloned().collect();
            let reference = Arc::new(RbacIndex::new());
            load(&reference, X, &bootstrap_only);
            prop_assert_eq!(
                allowed(&index, &r.attrs("z-empty")),
                allowed(&reference, &r.attrs("z-empty"))
            );
        }

        #[test]
        fn arbitrary_json_never_panics(
            v in arbitrary_json(),
            kind in prop::sample::select(&[RbacKind::Role, RbacKind::ClusterRole, RbacKind::RoleBinding, RbacKind::ClusterRoleBinding][..]),
            r in req(),
        ) {
            let index = Arc::new(RbacIndex::new());
            let _ = index.apply(X, kind, Some("n1"), "obj", Some(&v));
            let _ = index.apply_object(X, &v);
            let _ = decide(&index, &r.attrs(X));
        }
    }
}
