//! RBAC escalation prevention end to end, on both stores: a user allowed to write RBAC objects
//! grants only what they hold, unless allowed to `bind` the role (bindings) or to `escalate`
//! (roles), in Kubernetes' words; `system:masters` is never checked; dry runs are refused alike.
//!
//! Two token users in the root LC (which lets every authenticated user in): `dana` may only create
//! ClusterRoleBindings; `rita` may do anything with configmaps in namespace `esc`, write Roles there
//! and create ClusterRoles.

use std::path::PathBuf;

use kcp_e2e::{Caller, Shard, StoreKind, json_str, on_both_stores};
use serde_json::{Value, json};

on_both_stores!(
    bindings_grant_only_what_is_held,
    roles_grant_only_what_is_held
);

const DANA_TOKEN: &str = "escalation-dana-token-51f0c2";
const RITA_TOKEN: &str = "escalation-rita-token-9a7e44";
const RBAC: &str = "rbac.authorization.k8s.io";

/// The shard with dana and rita, the grants described in the module docs, and a kubeconfig with
/// a context per user (`dana`, `rita`) in the root LC.
fn start(store: StoreKind) -> (Shard, PathBuf) {
    let shard = Shard::start_with_tokens(
        store,
        &format!(
            "{DANA_TOKEN},dana,dana-uid,\"binders\"\n{RITA_TOKEN},rita,rita-uid,\"editors\"\n"
        ),
    );
    apply(
        &shard,
        "grants.yaml",
        r#"apiVersion: v1
kind: Namespace
metadata: {name: esc}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: crb-creator}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [clusterrolebindings], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: dana-crb-creator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: crb-creator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: dana}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: rita-esc, namespace: esc}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: ["*"]}
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles], verbs: [create, get, list, update, patch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rita-esc, namespace: esc}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: rita-esc}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: rita}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: clusterrole-creator}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: rita-clusterrole-creator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: clusterrole-creator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: rita}
"#,
    );
    let ca = shard.root_directory().join("ca.crt");
    let kubeconfig = shard.write_file(
        "users.kubeconfig",
        &format!(
            r#"apiVersion: v1
kind: Config
clusters:
- name: root
  cluster:
    server: {server}
    certificate-authority: {ca}
users:
- name: dana
  user: {{token: {DANA_TOKEN}}}
- name: rita
  user: {{token: {RITA_TOKEN}}}
contexts:
- name: dana
  context: {{cluster: root, user: dana}}
- name: rita
  context: {{cluster: root, user: rita}}
current-context: dana
"#,
            server = shard.cluster_url("root"),
            ca = ca.display(),
        ),
    );
    (shard, kubeconfig)
}

/// `kubectl apply` of a YAML stream as kcp-admin, in the root LC.
fn apply(shard: &Shard, name: &str, yaml: &str) {
    let file = shard.write_file(name, yaml);
    shard.kubectl_ok(&["apply", "-f", file.to_str().unwrap_or_default()]);
}

/// Kubernetes' refusal of `resource` `name` to a user granting `missing` (lines of rules).
fn escalation(resource: &str, name: &str, user: &str, group: &str, missing: &[&str]) -> String {
    format!(
        "{resource}.{RBAC} \"{name}\" is forbidden: user \"{user}\" (groups=[\"{group}\" \
         \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{}",
        missing.join("\n")
    )
}

/// A POST as `who` that must be refused with a 403 Status saying `message`, about `name`.
fn refused_post(shard: &Shard, who: &Caller, path: &str, body: &Value, message: &str, name: &str) {
    let (code, text) = shard.curl_with(
        who,
        "POST",
        path,
        &[],
        Some(("application/json", &body.to_string())),
    );
    assert_eq!(code, 403, "{path}: {text}");
    let status: Value = serde_json::from_str(&text).expect("a Status");
    assert_eq!(json_str(&status, "/kind"), "Status", "{text}");
    assert_eq!(json_str(&status, "/reason"), "Forbidden", "{text}");
    assert_eq!(status["code"], 403, "{text}");
    assert_eq!(json_str(&status, "/message"), message, "{text}");
    assert_eq!(json_str(&status, "/details/group"), RBAC, "{text}");
    assert_eq!(json_str(&status, "/details/name"), name, "{text}");
    let resource = path.rsplit('/').next().unwrap_or_default();
    let resource = resource.split('?').next().unwrap_or_default();
    assert_eq!(json_str(&status, "/details/kind"), resource, "{text}");
}

/// dana may create ClusterRoleBindings but not bind cluster-admin to herself, until she may
/// `bind` it; shard-admin (system:masters) binds anything.
fn bindings_grant_only_what_is_held(store: StoreKind) {
    let (shard, kubeconfig) = start(store);
    let dana = || shard.kubectl_cmd().kubeconfig(&kubeconfig).context("dana");
    let bind_admin = [
        "create",
        "clusterrolebinding",
        "dana-admin",
        "--clusterrole=cluster-admin",
        "--user=dana",
    ];
    let message = escalation(
        "clusterrolebindings",
        "dana-admin",
        "dana",
        "binders",
        &[
            r#"{APIGroups:["*"], Resources:["*"], Verbs:["*"]}"#,
            r#"{NonResourceURLs:["*"], Verbs:["*"]}"#,
        ],
    );
    let stderr = dana().fails(&bind_admin);
    assert!(stderr.contains(&message), "wanted {message:?}: {stderr}");
    // A server-side dry run is refused the same way.
    let mut dry = bind_admin.to_vec();
    dry.push("--dry-run=server");
    let stderr = dana().fails(&dry);
    assert!(stderr.contains(&message), "wanted {message:?}: {stderr}");

    // The Status, over HTTP, for a real write and a dry run.
    let caller = Caller::Token(DANA_TOKEN.to_string());
    let body = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "dana-admin"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "dana"}],
    });
    let collection = "/clusters/root/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
    for path in [collection.to_string(), format!("{collection}?dryRun=All")] {
        refused_post(&shard, &caller, &path, &body, &message, "dana-admin");
    }
    // A role that is not there is not found.
    let mut missing = body.clone();
    missing["roleRef"]["name"] = json!("no-such-role");
    let (code, text) = shard.curl_with(
        &caller,
        "POST",
        collection,
        &[],
        Some(("application/json", &missing.to_string())),
    );
    assert_eq!(code, 404, "{text}");
    assert!(
        text.contains(r#"clusterroles.rbac.authorization.k8s.io \"no-such-role\" not found"#),
        "{text}"
    );
    shard.kubectl_fails(&["get", "clusterrolebinding", "dana-admin"]);

    // Binding a role she holds entirely needs no `bind`.
    dana().ok(&[
        "create",
        "clusterrolebinding",
        "dana-creator-again",
        "--clusterrole=crb-creator",
        "--user=dana",
    ]);

    // `bind` on cluster-admin, by name, lets her.
    apply(
        &shard,
        "bind.yaml",
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: bind-cluster-admin}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [clusterroles], verbs: [bind], resourceNames: [cluster-admin]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: dana-bind-cluster-admin}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bind-cluster-admin}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: dana}
"#,
    );
    dana().ok(&dry);
    dana().ok(&bind_admin);
    // ... and so she is cluster-admin now.
    dana().ok(&["get", "secrets", "-A"]);

    // system:masters is never checked.
    shard
        .kubectl_cmd()
        .context("system:admin")
        .cluster("root")
        .ok(&[
            "create",
            "clusterrolebinding",
            "nobody-admin",
            "--clusterrole=cluster-admin",
            "--user=nobody",
        ]);
}

/// rita may make Roles of what she holds in `esc`, not more, unless she may `escalate`; an
/// aggregationRule takes cluster-admin's rights or `escalate`.
fn roles_grant_only_what_is_held(store: StoreKind) {
    let (shard, kubeconfig) = start(store);
    let rita = || shard.kubectl_cmd().kubeconfig(&kubeconfig).context("rita");
    rita().ok(&[
        "create",
        "role",
        "cm-reader",
        "-n",
        "esc",
        "--verb=get,list",
        "--resource=configmaps",
    ]);
    let secret_reader = [
        "create",
        "role",
        "secret-reader",
        "-n",
        "esc",
        "--verb=get",
        "--resource=secrets",
    ];
    let message = escalation(
        "roles",
        "secret-reader",
        "rita",
        "editors",
        &[r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}"#],
    );
    for dry_run in [false, true] {
        let mut args = secret_reader.to_vec();
        if dry_run {
            args.push("--dry-run=server");
        }
        let stderr = rita().fails(&args);
        assert!(stderr.contains(&message), "wanted {message:?}: {stderr}");
    }
    let caller = Caller::Token(RITA_TOKEN.to_string());
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "secret-reader", "namespace": "esc"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
    });
    let roles = "/clusters/root/apis/rbac.authorization.k8s.io/v1/namespaces/esc/roles";
    refused_post(
        &shard,
        &caller,
        &format!("{roles}?dryRun=All"),
        &role,
        &message,
        "secret-reader",
    );

    // Nor may she widen her own Role; a change within her rights passes.
    let widen = r#"[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["secrets"],"verbs":["get","watch"]}}]"#;
    let patch = [
        "patch",
        "role",
        "cm-reader",
        "-n",
        "esc",
        "--type=json",
        "-p",
        widen,
    ];
    let stderr = rita().fails(&patch);
    let wanted = escalation(
        "roles",
        "cm-reader",
        "rita",
        "editors",
        &[r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "watch"]}"#],
    );
    assert!(stderr.contains(&wanted), "wanted {wanted:?}: {stderr}");
    rita().ok(&["label", "role", "cm-reader", "-n", "esc", "reviewed=yes"]);
    rita().ok(&[
        "patch",
        "role",
        "cm-reader",
        "-n",
        "esc",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/rules/0/verbs/-","value":"watch"}]"#,
    ]);

    // A ClusterRole gathering others takes cluster-admin's rights.
    let aggregated = shard.write_file(
        "aggregated.yaml",
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: gatherer}\n\
         aggregationRule:\n  clusterRoleSelectors:\n  - matchLabels: {gather: \"yes\"}\n",
    );
    let aggregated = aggregated.to_str().unwrap_or_default();
    let stderr = rita().fails(&["create", "-f", aggregated]);
    let wanted = "clusterroles.rbac.authorization.k8s.io \"gatherer\" is forbidden: must have \
                  cluster-admin privileges to use the aggregationRule";
    assert!(stderr.contains(wanted), "wanted {wanted:?}: {stderr}");

    // `escalate` lets everything through.
    apply(
        &shard,
        "escalate.yaml",
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: escalator}
rules:
- {apiGroups: [rbac.authorization.k8s.io], resources: [roles, clusterroles], verbs: [escalate]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: rita-escalator}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: escalator}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: rita}
"#,
    );
    rita().ok(&secret_reader);
    rita().ok(&patch);
    rita().ok(&["create", "-f", aggregated]);
    let rules = shard.kubectl_json(&["get", "role", "cm-reader", "-n", "esc", "-o", "json"]);
    assert_eq!(rules["rules"].as_array().map(Vec::len), Some(2), "{rules}");
    // Holding `escalate` is not holding the rights: she still cannot read secrets.
    rita().fails(&["get", "secrets", "-n", "esc"]);
}
