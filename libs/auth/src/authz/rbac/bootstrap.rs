//! Kubernetes' default ClusterRoles and ClusterRoleBindings, for the bootstrap LC (`system:admin`).
//!
//! Shaped as kube-apiserver's bootstrap policy (names, labels, annotations, aggregation), with the
//! rules cut down to the resources kcp serves: there are no pods, services or workload APIs here, so
//! `admin` / `edit` / `view` cover namespaces, configmaps, secrets, service accounts, events, quotas,
//! limit ranges and, for `admin`, RBAC inside a namespace. Other components extend them with their own
//! `aggregate-to-*` ClusterRoles.

use serde_json::{Value, json};

use crate::authn::AUTHENTICATED_GROUP;
use crate::authz::rbac::authorizer::UNAUTHENTICATED_GROUP;
use crate::authz::rbac::index::RbacIndex;
use crate::authz::rbac::object::RbacObjectError;
use crate::authz::{KCP_ADMIN, SYSTEM_MASTERS};

pub const CLUSTER_ADMIN: &str = "cluster-admin";
pub const ADMIN: &str = "admin";
pub const EDIT: &str = "edit";
pub const VIEW: &str = "view";
pub const DISCOVERY: &str = "system:discovery";
pub const BASIC_USER: &str = "system:basic-user";
pub const PUBLIC_INFO_VIEWER: &str = "system:public-info-viewer";
/// kcp's role for entering a logical cluster: `access` on `/`. `root` binds it to every
/// authenticated user; other logical clusters bind it to whom they let in.
pub const WORKSPACE_ACCESS: &str = "system:kcp:workspace:access";
/// The binding in `root` that lets every authenticated user in.
pub const ROOT_ACCESS_BINDING: &str = "system:kcp:authenticated:access";
/// The role (and its binding in `root`) letting every authenticated user create workspaces of the
/// general-purpose types.
pub const WORKSPACE_TYPE_USE: &str = "system:kcp:universal-workspacetype-use";
/// The role (and its binding in `root`) letting every authenticated user have a home workspace:
/// `get` and `create` of `workspaces/~`.
pub const HOME_WORKSPACE_CREATE: &str = "system:kcp:home-clusterworkspace-create";
/// kcp's role for scraping the shard's `/metrics` (bound in `root`, whose RBAC alone decides).
pub const METRICS_READER: &str = "system:kcp:metrics-reader";
/// The binding that makes kcp's admin group cluster-admin in every LC.
pub const KCP_ADMIN_BINDING: &str = "system:kcp:admin:cluster-admin";

/// The label selecting roles aggregated into `admin`, `edit` and `view`.
pub const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
pub const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
pub const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

const BOOTSTRAPPING_LABEL: &str = "kubernetes.io/bootstrapping";
const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

const READ: &[&str] = &["get", "list", "watch"];
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// The default ClusterRoles.
pub fn cluster_roles() -> Vec<Value> {
    vec![
        cluster_role(
            CLUSTER_ADMIN,
            &[],
            vec![rule(&["*"], &["*"], &["*"]), url_rule(&["*"], &["*"])],
        ),
        aggregated(ADMIN, &[], AGGREGATE_TO_ADMIN),
        aggregated(EDIT, &[AGGREGATE_TO_ADMIN], AGGREGATE_TO_EDIT),
        aggregated(VIEW, &[AGGREGATE_TO_EDIT], AGGREGATE_TO_VIEW),
        cluster_role(
            "system:aggregate-to-admin",
            &[AGGREGATE_TO_ADMIN],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                ),
                rule(READ_WRITE, &[RBAC_GROUP], &["roles", "rolebindings"]),
            ],
        ),
        cluster_role(
            "system:aggregate-to-edit",
            &[AGGREGATE_TO_EDIT],
            vec![
                rule(&["impersonate"], &[""], &["serviceaccounts"]),
                rule(
                    READ_WRITE,
                    &[""],
                    &["configmaps", "secrets", "serviceaccounts"],
                ),
                rule(&["create"], &[""], &["serviceaccounts/token"]),
            ],
        ),
        cluster_role(
            "system:aggregate-to-view",
            &[AGGREGATE_TO_VIEW],
            vec![
                rule(READ, &[""], &["configmaps", "serviceaccounts"]),
                rule(
                    READ,
                    &[""],
                    &[
                        "events",
                        "limitranges",
                        "namespaces/status",
                        "resourcequotas",
                        "resourcequotas/status",
                    ],
                ),
                rule(READ, &[""], &["namespaces"]),
            ],
        ),
        cluster_role(
            DISCOVERY,
            &[],
            vec![url_rule(
                &["get"],
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
            )],
        ),
        cluster_role(
            BASIC_USER,
            &[],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        cluster_role(
            PUBLIC_INFO_VIEWER,
            &[],
            vec![url_rule(
                &["get"],
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
        ),
        cluster_role(WORKSPACE_ACCESS, &[], vec![url_rule(&["access"], &["/"])]),
        cluster_role(METRICS_READER, &[], vec![url_rule(&["get"], &["/metrics"])]),
    ]
}

/// What `root` holds besides: every authenticated user may enter it, use the general-purpose
/// workspace types and have a home workspace, as in kcp.
pub fn root_objects() -> Vec<Value> {
    let mut use_types = cluster_role(WORKSPACE_TYPE_USE, &[], Vec::new());
    use_types["rules"] = json!([{
        "apiGroups": ["tenancy.kcp.io"],
        "resources": ["workspacetypes"],
        "resourceNames": ["universal", "organization", "team"],
        "verbs": ["use"],
    }]);
    let mut home = cluster_role(HOME_WORKSPACE_CREATE, &[], Vec::new());
    home["rules"] = json!([{
        "apiGroups": ["tenancy.kcp.io"],
        "resources": ["workspaces"],
        "resourceNames": ["~"],
        "verbs": ["get", "create"],
    }]);
    vec![
        binding(
            ROOT_ACCESS_BINDING,
            WORKSPACE_ACCESS,
            &[AUTHENTICATED_GROUP],
        ),
        use_types,
        binding(
            WORKSPACE_TYPE_USE,
            WORKSPACE_TYPE_USE,
            &[AUTHENTICATED_GROUP],
        ),
        home,
        binding(
            HOME_WORKSPACE_CREATE,
            HOME_WORKSPACE_CREATE,
            &[AUTHENTICATED_GROUP],
        ),
    ]
}

/// The default ClusterRoleBindings, including kcp's `system:kcp:admin` → `cluster-admin`.
pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding(CLUSTER_ADMIN, CLUSTER_ADMIN, &[SYSTEM_MASTERS]),
        binding(KCP_ADMIN_BINDING, CLUSTER_ADMIN, &[KCP_ADMIN]),
        binding(DISCOVERY, DISCOVERY, &[AUTHENTICATED_GROUP]),
        binding(BASIC_USER, BASIC_USER, &[AUTHENTICATED_GROUP]),
        binding(
            PUBLIC_INFO_VIEWER,
            PUBLIC_INFO_VIEWER,
            &[AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP],
        ),
    ]
}

/// Roles first, then bindings: the order to create them in.
pub fn objects() -> Vec<Value> {
    let mut objects = cluster_roles();
    objects.extend(cluster_role_bindings());
    objects
}

/// Puts the default policy into the index's bootstrap LC, for tests and for a shard that has not
/// written it to its store yet.
pub fn load(index: &RbacIndex) -> Result<(), RbacObjectError> {
    let cluster = index.bootstrap_cluster().to_owned();
    objects()
        .iter()
        .try_for_each(|object| index.apply_object(&cluster, object))
}

fn metadata(name: &str, aggregate_to: &[&str]) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert(BOOTSTRAPPING_LABEL.into(), json!("rbac-defaults"));
    for label in aggregate_to {
        labels.insert((*label).into(), json!("true"));
    }
    json!({
        "name": name,
        "labels": labels,
        "annotations": {AUTOUPDATE_ANNOTATION: "true"},
    })
}

fn cluster_role(name: &str, aggregate_to: &[&str], rules: Vec<Value>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, aggregate_to),
        "rules": rules,
    })
}

/// An aggregated role starts without rules; its rules come from the roles labelled `selector_label`.
fn aggregated(name: &str, aggregate_to: &[&str], selector_label: &str) -> Value {
    let mut role = cluster_role(name, aggregate_to, Vec::new());
    role["aggregationRule"] = json!({
        "clusterRoleSelectors": [{"matchLabels": {selector_label: "true"}}],
    });
    role
}

fn binding(name: &str, role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": RBAC_GROUP, "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": metadata(name, &[]),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": groups, "resources": resources})
}

fn url_rule(verbs: &[&str], urls: &[&str]) -> Value {
    json!({"verbs": verbs, "nonResourceURLs": urls})
}
