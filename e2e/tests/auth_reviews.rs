//! kubectl's auth commands against a shard, on both stores: `auth whoami`, `auth can-i` (and
//! `--list`), `create token`, `--as` impersonation, and an in-cluster client (a ServiceAccount
//! token against the server's base URL, without `/clusters/<name>`). The admin context is kcp-admin
//! (`system:kcp:admin`); until RBAC lands, everybody else is refused everything.

use kcp_e2e::{Shard, StoreKind, on_both_stores};

on_both_stores!(
    auth_commands,
    create_token,
    impersonation,
    in_cluster_client,
    reviews_in_kcp_words
);

/// `kubectl get --raw` takes the path from the host, past the kubeconfig's `/clusters/root`.
const NAMESPACES: &str = "/clusters/root/api/v1/namespaces";

fn auth_commands(store: StoreKind) {
    let shard = Shard::start(store);

    let whoami = shard.kubectl_ok(&["auth", "whoami"]);
    assert!(whoami.contains("kcp-admin"), "{whoami}");
    let whoami = shard.kubectl_ok(&["auth", "whoami", "-o", "json"]);
    assert!(whoami.contains("\"SelfSubjectReview\""), "{whoami}");

    let can = shard.kubectl_ok(&["auth", "can-i", "create", "configmaps"]);
    assert_eq!(can.trim(), "yes", "{can}");
    let can = shard.kubectl_ok(&["auth", "can-i", "get", "/healthz"]);
    assert_eq!(can.trim(), "yes", "{can}");
    // On behalf of someone else: a SubjectAccessReview-backed answer through impersonation.
    let output = shard.kubectl(&["auth", "can-i", "create", "configmaps", "--as", "alice"]);
    // alice may not even ask until RBAC lets everyone create SelfSubjectAccessReviews; either
    // way the answer is not yes.
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        !output.status.success() && !stdout.contains("yes"),
        "{stdout}"
    );

    // `--list` posts a SelfSubjectRulesReview and prints a table.
    let list = shard.kubectl_ok(&["auth", "can-i", "--list"]);
    assert!(list.contains("Resources"), "{list}");
    let list = shard
        .kubectl_cmd()
        .context("system:admin")
        .cluster("root")
        .ok(&["auth", "can-i", "--list", "-n", "default"]);
    assert!(
        list.contains("*.*"),
        "system:masters may do everything:\n{list}"
    );

    // The review kinds are in discovery, create-only.
    let resources = shard.kubectl_ok(&[
        "api-resources",
        "--api-group",
        "authorization.k8s.io",
        "-o",
        "wide",
    ]);
    for name in [
        "subjectaccessreviews",
        "selfsubjectaccessreviews",
        "localsubjectaccessreviews",
        "selfsubjectrulesreviews",
    ] {
        assert!(resources.contains(name), "{name} missing:\n{resources}");
    }
    let resources = shard.kubectl_ok(&["api-resources", "--api-group", "authentication.k8s.io"]);
    assert!(
        resources.contains("tokenreviews") && resources.contains("selfsubjectreviews"),
        "{resources}"
    );
}

fn create_token(store: StoreKind) {
    let shard = Shard::start(store);
    shard.kubectl_ok(&["create", "namespace", "robots"]);
    shard.kubectl_ok(&["create", "serviceaccount", "r2", "-n", "robots"]);

    let token = shard.kubectl_ok(&["create", "token", "r2", "-n", "robots"]);
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    let token = shard.kubectl_ok(&["create", "token", "r2", "-n", "robots", "--duration", "20m"]);
    assert!(!token.trim().is_empty());
    // The controller's `default` account exists in `default` soon after start.
    shard.eventually("a token for default/default", || {
        let output = shard.kubectl(&["create", "token", "default", "-n", "default"]);
        output.status.success().then_some(())
    });

    let err = shard.kubectl_fails(&["create", "token", "nobody", "-n", "robots"]);
    assert!(err.contains("not found"), "{err}");
    let err = shard.kubectl_fails(&["create", "token", "r2", "-n", "robots", "--duration", "5m"]);
    assert!(err.contains("10 minutes"), "{err}");

    // (That the token authenticates is covered by services/kcp-shard/tests/reviews.rs: kubectl
    // here holds a client certificate, which wins over a bearer token.)
}

fn impersonation(store: StoreKind) {
    let shard = Shard::start(store);

    // The admin may impersonate alice; alice may not list namespaces (nor, until RBAC grants
    // discovery to everyone, discover them: kubectl then reports a bare Forbidden).
    let err = shard.kubectl_fails(&["get", "ns", "--as", "alice"]);
    assert!(
        err.contains("Forbidden") && !err.contains("impersonat"),
        "{err}"
    );
    let err = shard.kubectl_fails(&["get", "--raw", NAMESPACES, "--as", "alice"]);
    assert!(err.contains("User \"alice\" cannot list"), "{err}");
    // With the admin's own group, alice gets through, scoped to the cluster.
    let whoami = shard.kubectl_ok(&[
        "auth",
        "whoami",
        "--as",
        "alice",
        "--as-group",
        "system:kcp:admin",
        "-o",
        "json",
    ]);
    assert!(whoami.contains("\"alice\""), "{whoami}");
    assert!(whoami.contains("cluster:root"), "{whoami}");
    // system:masters is beyond the kcp admin.
    let err = shard.kubectl_fails(&[
        "get",
        "--raw",
        NAMESPACES,
        "--as",
        "mallory",
        "--as-group",
        "system:masters",
    ]);
    assert!(err.contains("impersonation is not allowed"), "{err}");
    // A group without a user: kubectl refuses locally or the server answers 400.
    let output = shard.kubectl(&["get", "ns", "--as-group", "team"]);
    assert!(!output.status.success());
}

/// kubectl configured as client-go's in-cluster configuration is: the server's base URL (no
/// `/clusters/<name>`) and a ServiceAccount token. The shard serves it in the account's own LC,
/// discovery included, as that account.
fn in_cluster_client(store: StoreKind) {
    const LC: &str = "in-cluster-e2e";
    let shard = Shard::start(store);
    let lc = shard.write_file(
        "lc.json",
        r#"{"apiVersion":"core.kcp.io/v1alpha1","kind":"LogicalCluster","metadata":{"name":"cluster"}}"#,
    );
    shard
        .kubectl_cmd()
        .context("system:admin")
        .cluster(LC)
        .ok(&["create", "-f", lc.to_str().expect("utf-8")]);
    let admin = || shard.kubectl_cmd().cluster(LC);
    shard.eventually("namespace default in the new LC", || {
        admin()
            .run(&["get", "ns", "default"])
            .status
            .success()
            .then_some(())
    });
    admin().ok(&["create", "configmap", "mine", "-n", "default"]);
    shard.kubectl_ok(&["create", "configmap", "theirs", "-n", "default"]);
    admin().ok(&["create", "serviceaccount", "robot", "-n", "default"]);
    admin().ok(&[
        "create",
        "clusterrolebinding",
        "robot-view",
        "--clusterrole=view",
        "--serviceaccount=default:robot",
    ]);
    let token = admin().ok(&["create", "token", "robot", "-n", "default"]);
    let ca = shard.root_directory().join("ca.crt");
    let kubeconfig = shard.write_file(
        "in-cluster.kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: in-cluster\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: robot\n  user:\n    token: {}\ncontexts:\n- name: in-cluster\n  context: {{cluster: in-cluster, user: robot}}\ncurrent-context: in-cluster\n",
            shard.base_url(),
            ca.display(),
            token.trim()
        ),
    );
    let robot = || shard.kubectl_cmd().kubeconfig(&kubeconfig);
    // The account reaches the authenticator through the watch cache: wait for it.
    let listed = shard.eventually("the ServiceAccount's token to work", || {
        let output = robot().run(&["get", "configmaps", "-n", "default", "-o", "name"]);
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
    });
    assert!(
        listed.contains("configmap/mine") && !listed.contains("configmap/theirs"),
        "{listed}"
    );
    let whoami = robot().ok(&["auth", "whoami", "-o", "json"]);
    assert!(
        whoami.contains("system:serviceaccount:default:robot") && whoami.contains(LC),
        "{whoami}"
    );
    // What the account may not do is refused as itself.
    let err = robot().fails(&["create", "configmap", "nope", "-n", "default"]);
    assert!(
        err.contains("User \"system:serviceaccount:default:robot\" cannot create"),
        "{err}"
    );
}

/// A rules review names its namespace (Kubernetes' 400 otherwise); a caller kcp's content
/// authorizer keeps out of a workspace is not allowed there, but not denied either (it has no
/// opinion, as kcp's has).
fn reviews_in_kcp_words(store: StoreKind) {
    let shard = Shard::start(store);
    let (code, body) = shard.curl(
        "POST",
        "/clusters/root/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        Some((
            "application/json",
            r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{}}"#,
        )),
    );
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("no namespace on request"), "{body}");
    let (code, body) = shard.curl(
        "POST",
        "/clusters/root/apis/authorization.k8s.io/v1/subjectaccessreviews",
        Some((
            "application/json",
            r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"stranger","resourceAttributes":{"verb":"list","resource":"configmaps","namespace":"default"}}}"#,
        )),
    );
    assert_eq!(code, 201, "{body}");
    let review: serde_json::Value = serde_json::from_str(&body).expect("a review");
    assert_eq!(
        (
            &review["status"]["allowed"],
            review["status"].get("denied"),
            &review["status"]["reason"]
        ),
        (
            &serde_json::json!(false),
            None,
            &serde_json::json!("workspace access not permitted")
        ),
        "{body}"
    );
}
