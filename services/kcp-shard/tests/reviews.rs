//! The review APIs, TokenRequest and impersonation on a running shard, with static-token users:
//! `root` (system:masters), `admin` (system:kcp:admin) and `alice` (no groups). No binding grants
//! alice anything, so kcp's authorizers refuse her everything; the reviews must say so without
//! failing.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic on unexpected input

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use http::StatusCode;
use serde_json::{Value, json};

const TOKENS: &str = "root-token,root,uid-root,\"system:masters\"\n\
                      admin-token,admin,uid-admin,\"system:kcp:admin\"\n\
                      alice-token,alice,uid-alice\n";
const ROOT: &str = "/clusters/root";
const ISSUER: &str = "https://kcp.default.svc";

struct Shard {
    running: common::Running,
}

impl Shard {
    async fn start(dir: &Path) -> Shard {
        let root = dir.join("kcp");
        let tokens = dir.join("tokens.csv");
        std::fs::write(&tokens, TOKENS).unwrap();
        let running =
            common::Running::start(&root, &["--token-auth-file", tokens.to_str().unwrap()]).await;
        Shard { running }
    }

    async fn stop(self) {
        self.running.stop().await;
    }

    /// Sends one request with `token` and `headers`; the status and the body as JSON (Null if not).
    async fn send(
        &self,
        method: http::Method,
        path: &str,
        token: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = common::Request::get(path).bearer(token);
        request.method = method;
        request.body = body;
        for (name, value) in headers {
            request = request.header(name, *value);
        }
        let (status, body) = request.send(&self.running).await;
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, token: &str, body: Value) -> (StatusCode, Value) {
        self.send(http::Method::POST, path, token, &[], Some(body))
            .await
    }

    async fn get_as(
        &self,
        path: &str,
        token: &str,
        headers: &[(&str, &str)],
    ) -> (StatusCode, Value) {
        self.send(http::Method::GET, path, token, headers, None)
            .await
    }
}

fn ssar(verb: &str, resource: &str, namespace: &str) -> Value {
    json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "namespace": namespace}},
    })
}

fn sar(kind: &str, spec: Value) -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": kind, "spec": spec})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_and_rules_reviews() {
    let dir = tempfile::tempdir().unwrap();
    let shard = Shard::start(dir.path()).await;
    let ssars = format!("{ROOT}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews");

    // `kubectl auth can-i`: yes for the admin, no for alice (no binding grants her that).
    let (status, body) = shard
        .post(
            &ssars,
            "admin-token",
            ssar("create", "configmaps", "default"),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["kind"], "SelfSubjectAccessReview");
    assert_eq!(body["status"]["allowed"], true, "{body}");
    // Alice may not even ask until RBAC grants everyone `system:basic-user`; once it does, the
    // answer must be no.
    let (status, body) = shard
        .post(
            &ssars,
            "alice-token",
            ssar("create", "configmaps", "default"),
        )
        .await;
    assert!(
        status == StatusCode::FORBIDDEN
            || (status == StatusCode::CREATED && body["status"]["allowed"] == false),
        "{status}: {body}"
    );
    // Neither kind of attributes, or both: invalid.
    let (status, body) = shard
        .post(
            &ssars,
            "admin-token",
            sar("SelfSubjectAccessReview", json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let both = json!({"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"verb": "get", "path": "/x"}});
    let (status, _) = shard
        .post(&ssars, "admin-token", sar("SelfSubjectAccessReview", both))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // SubjectAccessReview: about someone else, evaluated in this cluster's chain.
    let sars = format!("{ROOT}/apis/authorization.k8s.io/v1/subjectaccessreviews");
    let about_alice =
        json!({"user": "alice", "resourceAttributes": {"verb": "list", "resource": "namespaces"}});
    let (status, body) = shard
        .post(
            &sars,
            "admin-token",
            sar("SubjectAccessReview", about_alice.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"]["allowed"], false, "{body}");
    // Without system:authenticated alice may not even enter root.
    assert_eq!(
        body["status"]["reason"], "workspace access not permitted",
        "{body}"
    );
    // Authenticated, she enters root, but no RBAC grants her namespaces: not allowed, not denied.
    let authenticated = json!({"user": "alice", "groups": ["system:authenticated"], "resourceAttributes": {"verb": "list", "resource": "namespaces"}});
    let (status, body) = shard
        .post(
            &sars,
            "admin-token",
            sar("SubjectAccessReview", authenticated),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"]["allowed"], false, "{body}");
    assert!(body["status"].get("denied").is_none(), "{body}");
    let about_admins = json!({"user": "x", "groups": ["system:kcp:admin"], "nonResourceAttributes": {"verb": "get", "path": "/healthz"}});
    let (status, body) = shard
        .post(
            &sars,
            "root-token",
            sar("SubjectAccessReview", about_admins),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"]["allowed"], true, "{body}");
    let (status, body) = shard
        .post(
            &sars,
            "root-token",
            sar(
                "SubjectAccessReview",
                json!({"resourceAttributes": {"verb": "get"}}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("at least one of user or group"),
        "{body}"
    );
    // Alice may not ask about others (creating SubjectAccessReviews is itself authorized).
    let (status, _) = shard
        .post(
            &sars,
            "alice-token",
            sar("SubjectAccessReview", about_alice),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // LocalSubjectAccessReview: the spec's namespace must be the object's, which is the path's.
    let lsars =
        format!("{ROOT}/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews");
    let local = |ns: &str| json!({"user": "alice", "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": ns}});
    let (status, body) = shard
        .post(
            &lsars,
            "admin-token",
            sar("LocalSubjectAccessReview", local("default")),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["metadata"]["namespace"], "default", "{body}");
    assert_eq!(body["status"]["allowed"], false, "{body}");
    let (status, body) = shard
        .post(
            &lsars,
            "admin-token",
            sar("LocalSubjectAccessReview", local("other")),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let mut elsewhere = sar("LocalSubjectAccessReview", local("other"));
    elsewhere["metadata"] = json!({"namespace": "other"});
    let (status, body) = shard.post(&lsars, "admin-token", elsewhere).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    // Cluster-scoped path: no such resource.
    let (status, _) = shard
        .post(
            &format!("{ROOT}/apis/authorization.k8s.io/v1/localsubjectaccessreviews"),
            "admin-token",
            sar("LocalSubjectAccessReview", local("default")),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // SelfSubjectRulesReview (`kubectl auth can-i --list`): everything for system:masters.
    let ssrr = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}});
    let rules = format!("{ROOT}/apis/authorization.k8s.io/v1/selfsubjectrulesreviews");
    let (status, body) = shard.post(&rules, "root-token", ssrr.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(
        body["status"]["resourceRules"][0]["resources"],
        json!(["*"]),
        "{body}"
    );
    assert_eq!(body["status"]["incomplete"], false, "{body}");
    let (status, body) = shard.post(&rules, "admin-token", ssrr).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(body["status"]["resourceRules"].is_array(), "{body}");

    // Nothing was stored: the kinds cannot be read back.
    let (status, _) = shard.get_as(&ssars, "root-token", &[]).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);

    shard.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_request_and_token_review() {
    let dir = tempfile::tempdir().unwrap();
    let shard = Shard::start(dir.path()).await;
    let (status, body) = shard
        .post(
            &format!("{ROOT}/api/v1/namespaces"),
            "root-token",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "robots"}}),
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");
    let (status, body) = shard
        .post(
            &format!("{ROOT}/api/v1/namespaces/robots/serviceaccounts"),
            "root-token",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "r2"}}),
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");

    let token_path = format!("{ROOT}/api/v1/namespaces/robots/serviceaccounts/r2/token");
    let request = |spec: Value| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
    let (status, body) = shard
        .post(&token_path, "admin-token", request(json!({})))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["kind"], "TokenRequest");
    assert_eq!(body["spec"]["expirationSeconds"], 3600, "{body}");
    assert_eq!(body["spec"]["audiences"], json!([ISSUER]), "{body}");
    assert!(
        body["status"]["expirationTimestamp"]
            .as_str()
            .unwrap()
            .ends_with('Z'),
        "{body}"
    );
    let token = body["status"]["token"].as_str().unwrap().to_string();

    let (status, body) = shard
        .post(
            &token_path,
            "admin-token",
            request(json!({"expirationSeconds": 599})),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("less than 10 minutes"),
        "{body}"
    );
    let (status, body) = shard
        .post(
            &format!("{ROOT}/api/v1/namespaces/robots/serviceaccounts/nobody/token"),
            "admin-token",
            request(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let mut other = request(json!({}));
    other["metadata"] = json!({"name": "c3po"});
    let (status, body) = shard.post(&token_path, "admin-token", other).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, _) = shard
        .post(&token_path, "alice-token", request(json!({})))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The token authenticates as the account (403: a ServiceAccount is no admin); the account
    // reaches the authenticator through the watch cache, so give it a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (status, body) = loop {
        let (status, body) = shard
            .get_as(&format!("{ROOT}/api/v1/namespaces"), &token, &[])
            .await;
        if status != StatusCode::UNAUTHORIZED || Instant::now() > deadline {
            break (status, body);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("system:serviceaccount:robots:r2"),
        "{body}"
    );

    // TokenReview.
    let reviews = format!("{ROOT}/apis/authentication.k8s.io/v1/tokenreviews");
    let review = |token: &str, audiences: &[&str]| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token, "audiences": audiences}});
    let (status, body) = shard
        .post(&reviews, "root-token", review(&token, &[]))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"]["authenticated"], true, "{body}");
    assert_eq!(
        body["status"]["user"]["username"], "system:serviceaccount:robots:r2",
        "{body}"
    );
    assert_eq!(
        body["status"]["user"]["extra"]["authentication.kcp.io/cluster-name"],
        json!(["root"]),
        "{body}"
    );
    assert_eq!(body["status"]["audiences"], json!([ISSUER]), "{body}");
    // A review for an audience the token was not minted for: answered (201), not authenticated.
    let (status, body) = shard
        .post(&reviews, "root-token", review(&token, &["vault"]))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"]["authenticated"], false, "{body}");
    assert!(
        body["status"]["error"]
            .as_str()
            .unwrap()
            .contains("is invalid for the target audiences"),
        "{body}"
    );
    let (_, body) = shard
        .post(&reviews, "root-token", review("alice-token", &[]))
        .await;
    assert_eq!(body["status"]["authenticated"], true, "{body}");
    assert_eq!(body["status"]["user"]["username"], "alice", "{body}");
    assert_eq!(body["status"]["audiences"], json!([ISSUER]), "{body}");
    // A static token is good for the server's own audience only.
    let (_, body) = shard
        .post(&reviews, "root-token", review("alice-token", &["vault"]))
        .await;
    assert_eq!(body["status"]["authenticated"], false, "{body}");

    // A token minted for another audience (vault) is valid for vault's review, and only there.
    let (status, body) = shard
        .post(
            &token_path,
            "admin-token",
            request(json!({"audiences": ["vault"]})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let vault_token = body["status"]["token"].as_str().unwrap().to_string();
    let (status, body) = shard
        .post(&reviews, "root-token", review(&vault_token, &["vault"]))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"]["authenticated"], true, "{body}");
    assert_eq!(body["status"]["audiences"], json!(["vault"]), "{body}");
    assert_eq!(
        body["status"]["user"]["username"], "system:serviceaccount:robots:r2",
        "{body}"
    );
    let (status, body) = shard
        .post(&reviews, "root-token", review(&vault_token, &[]))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"]["authenticated"], false, "{body}");
    assert!(body["status"]["error"].is_string(), "{body}");
    let (status, _) = shard
        .get_as(&format!("{ROOT}/api/v1/namespaces"), &vault_token, &[])
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Several audiences: the review reports the ones asked for that the token names.
    let (_, body) = shard
        .post(
            &token_path,
            "admin-token",
            request(json!({"audiences": ["vault", ISSUER]})),
        )
        .await;
    let both = body["status"]["token"].as_str().unwrap().to_string();
    let (_, body) = shard
        .post(&reviews, "root-token", review(&both, &["other", "vault"]))
        .await;
    assert_eq!(body["status"]["authenticated"], true, "{body}");
    assert_eq!(body["status"]["audiences"], json!(["vault"]), "{body}");
    let (_, body) = shard
        .post(&reviews, "root-token", review("guessed", &[]))
        .await;
    assert_eq!(body["status"]["authenticated"], false, "{body}");
    let (status, _) = shard.post(&reviews, "root-token", review("", &[])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    shard.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impersonation() {
    let dir = tempfile::tempdir().unwrap();
    let shard = Shard::start(dir.path()).await;
    let namespaces = format!("{ROOT}/api/v1/namespaces");
    let whoami = format!("{ROOT}/apis/authentication.k8s.io/v1/selfsubjectreviews");
    let ssr = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});

    // Without impersonation, whoami reports the caller.
    let (status, body) = shard.post(&whoami, "admin-token", ssr.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"]["userInfo"]["username"], "admin", "{body}");
    assert_eq!(
        body["status"]["userInfo"]["groups"],
        json!(["system:kcp:admin", "system:authenticated"]),
        "{body}"
    );

    // The admin may impersonate alice, who then may not list namespaces.
    let (status, body) = shard
        .get_as(&namespaces, "admin-token", &[("Impersonate-User", "alice")])
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("User \"alice\" cannot list"),
        "{body}"
    );
    // ...and as alice with groups (the admin may pass on its own admin group, which also lets
    // alice ask): scoped to this cluster, authenticated.
    let (status, body) = shard
        .send(
            http::Method::POST,
            &whoami,
            "admin-token",
            &[
                ("Impersonate-User", "alice"),
                ("Impersonate-Group", "system:kcp:admin"),
                ("Impersonate-Group", "team"),
                ("Impersonate-Uid", "u-1"),
                ("Impersonate-Extra-Example.com%2FColor", "blue"),
            ],
            Some(ssr.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let info = &body["status"]["userInfo"];
    assert_eq!(info["username"], "alice", "{body}");
    assert_eq!(info["uid"], "u-1", "{body}");
    assert_eq!(
        info["groups"],
        json!(["system:kcp:admin", "team", "system:authenticated"]),
        "{body}"
    );
    assert_eq!(
        info["extra"]["example.com/color"],
        json!(["blue"]),
        "{body}"
    );
    assert_eq!(
        info["extra"]["authentication.kcp.io/scopes"],
        json!(["cluster:root"]),
        "{body}"
    );

    // Alice may not impersonate anyone.
    let (status, body) = shard
        .get_as(&namespaces, "alice-token", &[("Impersonate-User", "bob")])
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        body["message"],
        "users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope",
    );
    // A group without a user is a bad request.
    let (status, body) = shard
        .get_as(&namespaces, "admin-token", &[("Impersonate-Group", "team")])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    // Gatekeeper: system:masters is out of the kcp admin's reach, not of system:masters itself.
    let masters = [
        ("Impersonate-User", "mallory"),
        ("Impersonate-Group", "system:masters"),
    ];
    let (status, body) = shard.get_as(&namespaces, "admin-token", &masters).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = shard.get_as(&namespaces, "root-token", &masters).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let scopes = [
        ("Impersonate-User", "alice"),
        (
            "Impersonate-Extra-Authentication.kcp.io%2Fscopes",
            "cluster:other",
        ),
    ];
    let (status, body) = shard.get_as(&namespaces, "admin-token", &scopes).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // Impersonation needs a cluster to scope to.
    let (status, body) = shard
        .get_as(
            "/clusters/*/api/v1/namespaces",
            "admin-token",
            &[("Impersonate-User", "alice")],
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    shard.stop().await;
}

/// Creates logical cluster `name` (as `root`, who may address clusters that do not exist yet).
async fn create_logical_cluster(shard: &Shard, name: &str) {
    let (status, body) = shard
        .post(
            &format!("/clusters/{name}/apis/core.kcp.io/v1alpha1/logicalclusters"),
            "root-token",
            json!({"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster", "metadata": {"name": "cluster"}}),
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");
}

/// Binds ClusterRole `role` to `subject` across logical cluster `cluster`.
async fn bind_cluster_role(shard: &Shard, cluster: &str, name: &str, role: &str, subject: Value) {
    let (status, body) = shard
        .post(
            &format!("/clusters/{cluster}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"),
            "root-token",
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [subject],
            }),
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_cluster_service_accounts() {
    const LC: &str = "in-cluster-a";
    let dir = tempfile::tempdir().unwrap();
    let shard = Shard::start(dir.path()).await;
    let lc = format!("/clusters/{LC}");
    create_logical_cluster(&shard, LC).await;
    // A ConfigMap in the LC and one in root, each in `default`.
    for (prefix, name) in [(lc.as_str(), "mine"), (ROOT, "theirs")] {
        let (status, body) = shard
            .post(
                &format!("{prefix}/api/v1/namespaces"),
                "root-token",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
            )
            .await;
        assert!(
            status.is_success() || status == StatusCode::CONFLICT,
            "{status}: {body}"
        );
        let (status, body) = shard
            .post(
                &format!("{prefix}/api/v1/namespaces/default/configmaps"),
                "root-token",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}),
            )
            .await;
        assert!(status.is_success(), "{status}: {body}");
    }
    let (status, body) = shard
        .post(
            &format!("{lc}/api/v1/namespaces/default/serviceaccounts"),
            "root-token",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
        )
        .await;
    assert!(status.is_success(), "{status}: {body}");
    let (status, body) = shard
        .post(
            &format!("{lc}/api/v1/namespaces/default/serviceaccounts/robot/token"),
            "root-token",
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let token = body["status"]["token"].as_str().unwrap().to_string();

    // The path an in-cluster client uses: no `/clusters/<name>`. Without a grant the account is
    // refused as itself (its own LC, no foreign name); the account reaches the authenticator
    // through the watch cache, so give it a moment.
    let bare = "/api/v1/namespaces/default/configmaps";
    let deadline = Instant::now() + Duration::from_secs(10);
    let (status, body) = loop {
        let (status, body) = shard.get_as(bare, &token, &[]).await;
        if status != StatusCode::UNAUTHORIZED || Instant::now() > deadline {
            break (status, body);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("User \"system:serviceaccount:default:robot\""),
        "{message}"
    );

    bind_cluster_role(
        &shard,
        LC,
        "robot-view",
        "view",
        json!({"kind": "ServiceAccount", "name": "robot", "namespace": "default"}),
    )
    .await;
    let (status, body) = shard.get_as(bare, &token, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let names: Vec<&str> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|cm| cm["metadata"]["name"].as_str())
        .collect();
    assert!(
        names.contains(&"mine") && !names.contains(&"theirs"),
        "{names:?}"
    );
    // Reading one object and discovery work the same way.
    let (status, body) = shard.get_as(&format!("{bare}/mine"), &token, &[]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["metadata"]["name"], "mine", "{body}");

    // Anyone else on a path without a cluster keeps the top-level view (no resources there).
    let (status, body) = shard.get_as(bare, "root-token", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    // The account addressing root explicitly is a foreigner there, as before.
    let (status, body) = shard.get_as(&format!("{ROOT}{bare}"), &token, &[]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("system:kcp:serviceaccount:in-cluster-a:default:robot"),
        "{body}"
    );

    shard.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_subject_access_reviews() {
    const LC: &str = "deep-a";
    const DEEP: &str = "X-Kcp-Internal-Deep-SubjectAccessReview";
    let dir = tempfile::tempdir().unwrap();
    let shard = Shard::start(dir.path()).await;
    create_logical_cluster(&shard, LC).await;
    // alice may read everything in the LC, but may not enter it (no `access`).
    bind_cluster_role(
        &shard,
        LC,
        "alice-view",
        "view",
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}),
    )
    .await;
    let sars = format!("/clusters/{LC}/apis/authorization.k8s.io/v1/subjectaccessreviews");
    // An ordinary review goes through the access gate.
    let status = ask(&shard, &sars, "root-token", "list", &[]).await;
    assert_eq!(status["allowed"], false, "{status}");
    assert!(
        status["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("workspace access not permitted"),
        "{status}"
    );
    // Deep, from system:masters: the LC's RBAC alone decides.
    let status = ask(&shard, &sars, "root-token", "list", &[(DEEP, "true")]).await;
    assert_eq!(status["allowed"], true, "{status}");
    let status = ask(&shard, &sars, "root-token", "create", &[(DEEP, "true")]).await;
    assert_eq!(status["allowed"], false, "{status}");
    // Only the exact value counts.
    let status = ask(&shard, &sars, "root-token", "list", &[(DEEP, "1")]).await;
    assert_eq!(status["allowed"], false, "{status}");
    // A caller outside system:masters (kcp-admin is cluster-admin here) cannot make it deep.
    let status = ask(&shard, &sars, "admin-token", "list", &[(DEEP, "true")]).await;
    assert_eq!(status["allowed"], false, "{status}");

    shard.stop().await;
}

/// Posts a SubjectAccessReview to `path` asking whether alice may `verb` configmaps in `default`;
/// the review's status.
async fn ask(
    shard: &Shard,
    path: &str,
    token: &str,
    verb: &str,
    headers: &[(&str, &str)],
) -> Value {
    let review = sar(
        "SubjectAccessReview",
        json!({"user": "alice", "groups": ["system:authenticated"],
            "resourceAttributes": {"verb": verb, "resource": "configmaps", "namespace": "default"}}),
    );
    let (status, body) = shard
        .send(http::Method::POST, path, token, headers, Some(review))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["status"].clone()
}
