//! The authorization isolation catalogue: who may do what in which logical cluster.
//!
//! One shard per store, started with a static token file and a front-proxy (request-header) CA. The
//! identities:
//! - `alice`: a client certificate signed by the shard's CA (CN=alice, O=some-group);
//! - `bob`: a static token (`--token-auth-file`, group token-group);
//! - `system:serviceaccount:default:robot` of LC A: a ServiceAccount token from the TokenRequest API
//!   (while that answers 404, a token the test signs with the shard's `service-account.key`, so the
//!   authorization of ServiceAccounts is checked either way);
//! - a front proxy (certificate from the request-header CA, an allowed name) asserting alice, and
//!   `mallory`, a certificate from the same CA but not an allowed name, asserting `system:masters`.
//!
//! kcp-admin grants alice and bob, in LC A only: `access` (ClusterRole `system:kcp:workspace:access`
//! from the bootstrap policy), every verb on configmaps in namespace `default` (a Role), get/list on
//! namespaces (a ClusterRole) and every verb on the custom resource `widgets` in `default` (a
//! ClusterRole bound by a RoleBinding). Bindings name users and groups from both authenticators.
//!
//! Then every verb × {configmaps, namespaces, widgets} × {A, B, /clusters/*} must give exactly the
//! granted outcome: 2xx where granted, 403 (Status, reason Forbidden) everywhere else; in B the message
//! says "access not permitted", and an LC that does not exist answers the same. All mismatches are
//! collected and reported together, so one run shows the whole picture.
//!
//! The `kubectl auth can-i` part needs SelfSubjectAccessReview and is skipped, with a message, only
//! when that answers 404.
//!
//! A second scenario, `impersonation`, checks `Impersonate-*` headers: Kubernetes' semantics (the
//! caller needs `impersonate`, then has exactly the impersonated identity's rights) and kcp's
//! gatekeeper (privileged groups only for callers that hold them).

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use kcp_e2e::{Caller, EVENTUALLY, Shard, StoreKind, json_str};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair,
};
use serde_json::{Value, json};

/// The logical cluster where alice and bob are granted rights, and the one where they are not.
const LC_A: &str = "iso-a";
const LC_B: &str = "iso-b";
/// An LC nobody created.
const LC_MISSING: &str = "iso-missing";

const GROUP: &str = "isolation.example.com";
const BOB_TOKEN: &str = "isolation-bob-token-4f1c9e2a7d";
const PROXY_NAME: &str = "kcp-front-proxy";
const SA_NAMESPACE: &str = "default";
const SA_NAME: &str = "robot";

const VERBS: [&str; 8] = [
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
const ALL_VERBS_YAML: &str = "[get, list, watch, create, update, patch, delete, deletecollection]";

/// The headers a forged request adds (a client pretending to be the front proxy).
const FORGED: [(&str, &str); 3] = [
    ("X-Remote-User", "shard-admin"),
    ("X-Remote-Group", "system:masters"),
    ("X-Remote-Group", "system:kcp:admin"),
];

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.isolation.example.com
spec:
  group: isolation.example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    listKind: WidgetList
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"#;

// ---------------------------------------------------------------------------------------------------
// Identities and the shard

/// A user the catalogue runs as.
struct User {
    /// Short id, used in object names (`upd-alice`).
    key: &'static str,
    /// The user name the server should see.
    name: &'static str,
    caller: Caller,
    /// kubectl context of the user's kubeconfig in LC A and in LC B.
    context_a: &'static str,
    context_b: &'static str,
}

struct Fixture {
    shard: Shard,
    /// Token file, request-header CA, client certificates, the users' kubeconfig.
    files: tempfile::TempDir,
    users: Vec<User>,
    /// The front proxy's certificate (request-header CA, allowed name).
    proxy: Caller,
    /// A certificate of the request-header CA whose name is not allowed.
    mallory: Caller,
    kubeconfig: PathBuf,
}

fn write(dir: &Path, name: &str, contents: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, contents).expect("writing a fixture file");
    path
}

fn client_params(cn: &str, org: Option<&str>) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("certificate params");
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    if let Some(org) = org {
        dn.push(DnType::OrganizationName, org);
    }
    params.distinguished_name = dn;
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params
}

/// Signs a client certificate and writes `<stem>.crt|.key` into `dir`.
fn sign_client(
    dir: &Path,
    stem: &str,
    cn: &str,
    org: Option<&str>,
    issuer: &Issuer<'_, KeyPair>,
) -> Caller {
    let key = KeyPair::generate().expect("client key");
    let cert = client_params(cn, org)
        .signed_by(&key, issuer)
        .expect("client certificate");
    Caller::Cert {
        cert: write(dir, &format!("{stem}.crt"), &cert.pem()),
        key: write(dir, &format!("{stem}.key"), &key.serialize_pem()),
    }
}

impl Fixture {
    fn start(store: StoreKind) -> Fixture {
        kcp_e2e::install_crypto_provider();
        let files = tempfile::Builder::new()
            .prefix("kcp-e2e-authz-")
            .tempdir()
            .expect("a temporary directory");
        let dir = files.path();

        let tokens = write(
            dir,
            "tokens.csv",
            &format!("{BOB_TOKEN},bob,uid-bob,\"token-group\"\n"),
        );

        // A front-proxy CA of our own: only its certificate named kcp-front-proxy may assert identities.
        let proxy_ca_key = KeyPair::generate().expect("proxy CA key");
        let mut proxy_ca = CertificateParams::new(Vec::<String>::new()).expect("proxy CA params");
        proxy_ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        proxy_ca
            .distinguished_name
            .push(DnType::CommonName, "isolation-front-proxy-ca");
        let proxy_ca_cert = proxy_ca.self_signed(&proxy_ca_key).expect("proxy CA");
        let proxy_ca_file = write(dir, "front-proxy-ca.crt", &proxy_ca_cert.pem());
        let proxy_issuer = Issuer::new(proxy_ca, proxy_ca_key);
        let proxy = sign_client(dir, "front-proxy", PROXY_NAME, None, &proxy_issuer);
        let mallory = sign_client(dir, "mallory", "mallory", None, &proxy_issuer);

        let shard = Shard::start_with_args(
            store,
            [
                "--token-auth-file".into(),
                tokens.into_os_string(),
                "--requestheader-client-ca-file".into(),
                proxy_ca_file.into_os_string(),
                "--requestheader-allowed-names".into(),
                PROXY_NAME.into(),
            ],
        );

        // alice: signed by the shard's own CA (written by the shard at first start).
        let root = shard.root_directory();
        let ca_pem = fs::read_to_string(root.join("ca.crt")).expect("reading the shard's ca.crt");
        let ca_key = KeyPair::from_pem(
            &fs::read_to_string(root.join("ca.key")).expect("reading the shard's ca.key"),
        )
        .expect("parsing the shard's CA key");
        let shard_issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key).expect("the shard CA issuer");
        let alice = sign_client(dir, "alice", "alice", Some("some-group"), &shard_issuer);

        let (alice_cert, alice_key) = match &alice {
            Caller::Cert { cert, key } => (cert.clone(), key.clone()),
            _ => unreachable!(),
        };
        let server = shard.base_url().to_string();
        let kubeconfig = write(
            dir,
            "users.kubeconfig",
            &format!(
                r#"apiVersion: v1
kind: Config
clusters:
- name: a
  cluster:
    server: {server}/clusters/{LC_A}
    certificate-authority: {ca}
- name: b
  cluster:
    server: {server}/clusters/{LC_B}
    certificate-authority: {ca}
users:
- name: alice
  user:
    client-certificate: {cert}
    client-key: {key}
- name: bob
  user:
    token: {BOB_TOKEN}
contexts:
- name: alice-a
  context: {{cluster: a, user: alice}}
- name: alice-b
  context: {{cluster: b, user: alice}}
- name: bob-a
  context: {{cluster: a, user: bob}}
- name: bob-b
  context: {{cluster: b, user: bob}}
current-context: alice-a
"#,
                ca = root.join("ca.crt").display(),
                cert = alice_cert.display(),
                key = alice_key.display(),
            ),
        );

        let users = vec![
            User {
                key: "alice",
                name: "alice",
                caller: alice,
                context_a: "alice-a",
                context_b: "alice-b",
            },
            User {
                key: "bob",
                name: "bob",
                caller: Caller::Token(BOB_TOKEN.to_string()),
                context_a: "bob-a",
                context_b: "bob-b",
            },
        ];
        Fixture {
            shard,
            files,
            users,
            proxy,
            mallory,
            kubeconfig,
        }
    }

    fn admin_kubectl(&self, cluster: &str) -> kcp_e2e::Kubectl<'_> {
        self.shard.kubectl_cmd().cluster(cluster)
    }

    /// `kubectl apply` of a YAML document (stream) in `cluster`, as kcp-admin.
    fn apply(&self, cluster: &str, name: &str, yaml: &str) {
        let path = write(self.files.path(), name, yaml);
        self.admin_kubectl(cluster)
            .ok(&["apply", "-f", path.to_str().expect("utf-8")]);
    }

    fn create_logical_cluster(&self, name: &str) {
        let lc = write(
            self.files.path(),
            "lc.json",
            r#"{"apiVersion":"core.kcp.io/v1alpha1","kind":"LogicalCluster","metadata":{"name":"cluster"}}"#,
        );
        self.shard
            .kubectl_cmd()
            .context("system:admin")
            .cluster(name)
            .ok(&["create", "-f", lc.to_str().expect("utf-8")]);
        self.shard
            .eventually(&format!("namespace default in LC {name}"), || {
                self.admin_kubectl(name)
                    .run(&["get", "ns", "default"])
                    .status
                    .success()
                    .then_some(())
            });
    }

    fn request(
        &self,
        caller: &Caller,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<(&str, &str)>,
    ) -> Outcome {
        let (code, body) = self.shard.curl_with(caller, method, path, headers, body);
        Outcome { code, body }
    }

    fn admin(&self, method: &str, path: &str, body: Option<(&str, &str)>) -> Outcome {
        let (code, body) = self.shard.curl(method, path, body);
        Outcome { code, body }
    }
}

// ---------------------------------------------------------------------------------------------------
// Requests and outcomes

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Res {
    ConfigMaps,
    Namespaces,
    Widgets,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Loc {
    A,
    B,
    Wildcard,
}

impl Loc {
    fn cluster(self) -> &'static str {
        match self {
            Loc::A => LC_A,
            Loc::B => LC_B,
            Loc::Wildcard => "*",
        }
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Loc::A => write!(f, "LC {LC_A}"),
            Loc::B => write!(f, "LC {LC_B}"),
            Loc::Wildcard => f.write_str("/clusters/*"),
        }
    }
}

fn collection(res: Res, cluster: &str, namespace: &str) -> String {
    match res {
        Res::ConfigMaps => {
            format!("/clusters/{cluster}/api/v1/namespaces/{namespace}/configmaps")
        }
        Res::Namespaces => format!("/clusters/{cluster}/api/v1/namespaces"),
        Res::Widgets => {
            format!("/clusters/{cluster}/apis/{GROUP}/v1/namespaces/{namespace}/widgets")
        }
    }
}

fn resource_name(res: Res) -> &'static str {
    match res {
        Res::ConfigMaps => "configmaps",
        Res::Namespaces => "namespaces",
        Res::Widgets => "widgets",
    }
}

/// The resource as kube-apiserver names it at the start of a Forbidden message: `configmaps`,
/// `widgets.isolation.example.com`.
fn qualified_resource(res: Res) -> String {
    match api_group(res) {
        "" => resource_name(res).to_string(),
        group => format!("{}.{group}", resource_name(res)),
    }
}

fn api_group(res: Res) -> &'static str {
    match res {
        Res::ConfigMaps | Res::Namespaces => "",
        Res::Widgets => GROUP,
    }
}

/// What the contract grants alice and bob.
fn granted(res: Res, loc: Loc, verb: &str) -> bool {
    loc == Loc::A
        && match res {
            Res::ConfigMaps | Res::Widgets => true,
            Res::Namespaces => verb == "get" || verb == "list",
        }
}

#[derive(Clone, Debug)]
struct Outcome {
    code: u16,
    body: String,
}

impl Outcome {
    fn ok(&self) -> bool {
        (200..300).contains(&self.code)
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    fn message(&self) -> String {
        json_str(&self.json(), "/message").to_string()
    }

    /// A 403 as kube-apiserver writes it: a Status with reason Forbidden and code 403.
    fn is_forbidden_status(&self) -> bool {
        let v = self.json();
        self.code == 403
            && json_str(&v, "/kind") == "Status"
            && json_str(&v, "/reason") == "Forbidden"
            && v.pointer("/code").and_then(Value::as_u64) == Some(403)
    }

    fn short(&self) -> String {
        let body: String = self.body.chars().take(300).collect();
        format!("{} {}", self.code, body.replace('\n', " "))
    }
}

/// Mismatches, collected so that one run reports all of them.
#[derive(Default)]
struct Report {
    failures: Mutex<Vec<String>>,
    skipped: Mutex<Vec<String>>,
}

impl Report {
    fn check(&self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failures.lock().expect("report lock").push(what());
        }
    }

    fn skip(&self, what: &str) {
        self.skipped
            .lock()
            .expect("report lock")
            .push(what.to_string());
    }

    fn finish(self, shard: &Shard) {
        let skipped = self.skipped.into_inner().expect("report lock");
        let failures = self.failures.into_inner().expect("report lock");
        for s in &skipped {
            eprintln!("SKIPPED ({}): {s}", shard.store());
        }
        if !failures.is_empty() {
            panic!(
                "{} isolation check(s) failed on {}:\n  - {}",
                failures.len(),
                shard.store(),
                failures.join("\n  - ")
            );
        }
    }
}

/// Runs `work` over `items` on a few threads; results in the order of `items`.
fn parallel<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(item) = items.get(i) else { break };
                    let result = work(item);
                    results.lock().expect("results lock")[i] = Some(result);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("results lock")
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}

/// Polls `check` until it is true or [`EVENTUALLY`] passes; returns whether it became true. (Soft:
/// the catalogue goes on either way and reports what it finds.)
fn wait_until(mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + EVENTUALLY;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

// ---------------------------------------------------------------------------------------------------
// Setup

fn seed_objects(lc: &str, with_widgets: bool, users: &[User]) -> String {
    let mut docs = Vec::new();
    let mut names = vec![("probe".to_string(), String::new())];
    for user in users {
        let u = user.key;
        names.push((format!("upd-{u}"), String::new()));
        names.push((format!("pat-{u}"), String::new()));
        names.push((format!("del-{u}"), String::new()));
        names.push((format!("dc-{u}-1"), format!("victim: {u}")));
        names.push((format!("dc-{u}-2"), format!("victim: {u}")));
    }
    for (name, label) in &names {
        let labels = if label.is_empty() {
            String::new()
        } else {
            format!("\n  labels:\n    {label}")
        };
        docs.push(format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default{labels}\ndata:\n  lc: {lc}\n"
        ));
        if with_widgets {
            docs.push(format!(
                "apiVersion: {GROUP}/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: default{labels}\nspec:\n  size: 1\n"
            ));
        }
    }
    for ns in ["other", "victim-ns"] {
        docs.push(format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n"
        ));
    }
    docs.join("---\n")
}

/// alice's and bob's rights in LC A. Subjects mix user names and groups from both authenticators.
fn grants_in_a() -> String {
    format!(
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: isolation-access
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:kcp:workspace:access
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}}
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: configmaps-all
  namespace: default
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: {ALL_VERBS_YAML}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: configmaps-all
  namespace: default
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: configmaps-all
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}}
- {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: token-group}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: namespaces-read
rules:
- apiGroups: [""]
  resources: [namespaces]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: namespaces-read
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: namespaces-read
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: some-group}}
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: widgets-all
rules:
- apiGroups: ["{GROUP}"]
  resources: [widgets]
  verbs: {ALL_VERBS_YAML}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: widgets-all
  namespace: default
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: widgets-all
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: some-group}}
- {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: token-group}}
"#
    )
}

fn setup(fx: &Fixture) {
    fx.create_logical_cluster(LC_A);
    fx.create_logical_cluster(LC_B);
    fx.apply(LC_A, "widget-crd.yaml", WIDGET_CRD);
    fx.admin_kubectl(LC_A).ok(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        "crd/widgets.isolation.example.com",
    ]);
    // Namespaces first (the seed objects' namespaces), then everything.
    let seed_a = seed_objects(LC_A, true, &fx.users);
    let seed_b = seed_objects(LC_B, false, &fx.users);
    fx.apply(LC_A, "seed-a.yaml", &seed_a);
    fx.apply(LC_B, "seed-b.yaml", &seed_b);
    fx.apply(LC_A, "grants-a.yaml", &grants_in_a());
}

// ---------------------------------------------------------------------------------------------------
// The verb matrix

#[derive(Clone, Debug)]
struct Job {
    user: usize,
    res: Res,
    loc: Loc,
    verb: &'static str,
}

fn object_body(res: Res, name: &str, extra: &str) -> String {
    match res {
        Res::ConfigMaps => json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
            "data": {"note": extra},
        }),
        Res::Namespaces => json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
        }),
        Res::Widgets => json!({
            "apiVersion": format!("{GROUP}/v1"), "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"size": 2, "note": extra},
        }),
    }
    .to_string()
}

/// The body of an update: in LC A the stored object (with its resourceVersion) changed; elsewhere a
/// fresh object (authorization comes before any look-up).
fn update_body(fx: &Fixture, res: Res, loc: Loc, name: &str) -> String {
    if loc == Loc::A && res != Res::Namespaces {
        let current = fx.admin(
            "GET",
            &format!("{}/{name}", collection(res, LC_A, "default")),
            None,
        );
        let mut object = current.json();
        if current.ok() && object.is_object() {
            match res {
                Res::ConfigMaps => object["data"]["updated"] = json!("yes"),
                _ => object["spec"]["updated"] = json!("yes"),
            }
            return object.to_string();
        }
    }
    object_body(res, name, "updated")
}

fn run_job(fx: &Fixture, job: &Job) -> Outcome {
    let user = &fx.users[job.user];
    let u = user.key;
    let base = collection(job.res, job.loc.cluster(), "default");
    let named = |object: &str, namespace_name: &str| match job.res {
        Res::Namespaces => format!("{base}/{namespace_name}"),
        _ => format!("{base}/{object}"),
    };
    let call = |method: &str, path: &str, body: Option<(&str, &str)>| {
        fx.request(&user.caller, method, path, &[], body)
    };
    match job.verb {
        "get" => call("GET", &named("probe", "default"), None),
        "list" => call("GET", &base, None),
        "watch" => call("GET", &format!("{base}?watch=true&timeoutSeconds=1"), None),
        "create" => {
            let name = format!("new-{u}");
            let body = object_body(job.res, &name, "created");
            call("POST", &base, Some(("application/json", &body)))
        }
        "update" => {
            let path = named(&format!("upd-{u}"), "default");
            let name = path.rsplit('/').next().unwrap_or_default().to_string();
            let body = update_body(fx, job.res, job.loc, &name);
            call("PUT", &path, Some(("application/json", &body)))
        }
        "patch" => call(
            "PATCH",
            &named(&format!("pat-{u}"), "default"),
            Some((
                "application/merge-patch+json",
                r#"{"metadata":{"labels":{"patched":"yes"}}}"#,
            )),
        ),
        "delete" => call("DELETE", &named(&format!("del-{u}"), "victim-ns"), None),
        "deletecollection" => {
            let victim = if job.res == Res::Namespaces {
                "nobody"
            } else {
                u
            };
            call(
                "DELETE",
                &format!("{base}?labelSelector=victim%3D{victim}"),
                None,
            )
        }
        other => unreachable!("verb {other}"),
    }
}

type Matrix = BTreeMap<(usize, Res, Loc, &'static str), Outcome>;

fn verb_matrix(fx: &Fixture, report: &Report) -> Matrix {
    let mut jobs = Vec::new();
    for user in 0..fx.users.len() {
        for res in [Res::ConfigMaps, Res::Namespaces, Res::Widgets] {
            for loc in [Loc::A, Loc::B, Loc::Wildcard] {
                for verb in VERBS {
                    jobs.push(Job {
                        user,
                        res,
                        loc,
                        verb,
                    });
                }
            }
        }
    }
    let outcomes = parallel(&jobs, 6, |job| run_job(fx, job));
    let mut matrix = Matrix::new();
    for (job, outcome) in jobs.iter().zip(outcomes) {
        let user = &fx.users[job.user];
        let what = || {
            format!(
                "{} {} {} in {}",
                user.name,
                job.verb,
                resource_name(job.res),
                job.loc
            )
        };
        if granted(job.res, job.loc, job.verb) {
            report.check(outcome.ok(), || {
                format!("{}: want 2xx, got {}", what(), outcome.short())
            });
        } else {
            report.check(outcome.is_forbidden_status(), || {
                format!(
                    "{}: want 403 Forbidden Status, got {}",
                    what(),
                    outcome.short()
                )
            });
            if outcome.code == 403 {
                let message = outcome.message();
                match job.loc {
                    Loc::B => report.check(message.contains("access not permitted"), || {
                        format!(
                            "{}: message lacks \"access not permitted\": {message}",
                            what()
                        )
                    }),
                    Loc::A => {
                        let wanted = format!(
                            "User \"{}\" cannot {} resource \"{}\" in API group \"{}\"",
                            user.name,
                            job.verb,
                            resource_name(job.res),
                            api_group(job.res)
                        );
                        report.check(message.contains(&wanted), || {
                            format!("{}: message lacks `{wanted}`: {message}", what())
                        });
                    }
                    Loc::Wildcard => {}
                }
            }
        }
        // What A serves comes from A: the seed objects carry their LC in `data.lc`.
        if job.loc == Loc::A && outcome.ok() {
            report.check(!outcome.body.contains(LC_B), || {
                format!(
                    "{}: the answer mentions {LC_B}: {}",
                    what(),
                    outcome.short()
                )
            });
        }
        matrix.insert((job.user, job.res, job.loc, job.verb), outcome);
    }
    matrix
}

/// What the matrix did, seen by kcp-admin: granted writes happened, refused ones did not.
fn check_effects(fx: &Fixture, report: &Report) {
    let names = |lc: &str, res: Res| -> Vec<String> {
        let out = fx.admin("GET", &collection(res, lc, "default"), None);
        report.check(out.ok(), || {
            format!(
                "kcp-admin list {} in {lc}: {}",
                resource_name(res),
                out.short()
            )
        });
        out.json()["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .map(|i| json_str(i, "/metadata/name").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    for res in [Res::ConfigMaps, Res::Widgets] {
        let in_a = names(LC_A, res);
        for user in &fx.users {
            let u = user.key;
            let r = resource_name(res);
            report.check(in_a.contains(&format!("new-{u}")), || {
                format!("{r} new-{u} was not created in {LC_A}: {in_a:?}")
            });
            for gone in [format!("del-{u}"), format!("dc-{u}-1"), format!("dc-{u}-2")] {
                report.check(!in_a.contains(&gone), || {
                    format!("{r} {gone} still exists in {LC_A} after a granted delete")
                });
            }
        }
    }
    let in_b = names(LC_B, Res::ConfigMaps);
    for user in &fx.users {
        let u = user.key;
        for kept in [format!("del-{u}"), format!("dc-{u}-1"), format!("upd-{u}")] {
            report.check(in_b.contains(&kept), || {
                format!("configmap {kept} in {LC_B} disappeared after refused requests: {in_b:?}")
            });
        }
        report.check(!in_b.contains(&format!("new-{u}")), || {
            format!("configmap new-{u} appeared in {LC_B}")
        });
    }
    for lc in [LC_A, LC_B] {
        let namespaces = names(lc, Res::Namespaces);
        report.check(namespaces.iter().any(|n| n == "victim-ns"), || {
            format!("namespace victim-ns vanished from {lc}: {namespaces:?}")
        });
        report.check(!namespaces.iter().any(|n| n.starts_with("new-")), || {
            format!("a refused namespace create happened in {lc}: {namespaces:?}")
        });
    }
}

// ---------------------------------------------------------------------------------------------------
// The other parts of the catalogue

fn list_cm(lc: &str) -> String {
    collection(Res::ConfigMaps, lc, "default")
}

/// kcp-admin, shard-admin and the wildcard; root's access grant; other namespaces in A.
fn admins_and_scopes(fx: &Fixture, report: &Report) {
    for lc in [LC_A, LC_B] {
        let out = fx.admin("GET", &list_cm(lc), None);
        report.check(out.ok(), || {
            format!(
                "kcp-admin list configmaps in {lc}: want 2xx, got {}",
                out.short()
            )
        });
    }
    let wildcard = "/clusters/*/api/v1/configmaps";
    let out = fx.admin("GET", wildcard, None);
    report.check(out.is_forbidden_status(), || {
        format!(
            "kcp-admin list configmaps in /clusters/*: want 403, got {}",
            out.short()
        )
    });
    let out = fx.request(
        &Caller::KubeconfigUser("shard-admin".into()),
        "GET",
        wildcard,
        &[],
        None,
    );
    report.check(out.ok(), || {
        format!(
            "shard-admin (system:masters) list configmaps in /clusters/*: want 2xx, got {}",
            out.short()
        )
    });

    for user in &fx.users {
        // root grants access to every authenticated user; RBAC then refuses.
        let out = fx.request(&user.caller, "GET", &list_cm("root"), &[], None);
        report.check(
            out.is_forbidden_status() && !out.message().contains("access not permitted"),
            || {
                format!(
                    "{} list configmaps in root: want 403 from RBAC (root grants access to system:authenticated), got {}",
                    user.name,
                    out.short()
                )
            },
        );
        // The Role is in `default` only.
        for res in [Res::ConfigMaps, Res::Widgets] {
            let out = fx.request(
                &user.caller,
                "GET",
                &collection(res, LC_A, "other"),
                &[],
                None,
            );
            let wanted = format!(
                "{} is forbidden: User \"{}\" cannot list resource \"{}\" in API group \"{}\" in the namespace \"other\"",
                qualified_resource(res),
                user.name,
                resource_name(res),
                api_group(res),
            );
            report.check(
                out.is_forbidden_status() && out.message().contains(&wanted),
                || {
                    format!(
                        "{} list {} in namespace other of {LC_A}: want 403 `{wanted}`, got {}",
                        user.name,
                        resource_name(res),
                        out.short()
                    )
                },
            );
        }
        // An LC that does not exist answers exactly like one that exists without access.
        let in_b = fx.request(&user.caller, "GET", &list_cm(LC_B), &[], None);
        let missing = fx.request(&user.caller, "GET", &list_cm(LC_MISSING), &[], None);
        report.check(missing.is_forbidden_status(), || {
            format!(
                "{} list configmaps in missing LC {LC_MISSING}: want 403, got {}",
                user.name,
                missing.short()
            )
        });
        report.check(
            missing.message().contains("access not permitted")
                && missing.message().replace(LC_MISSING, "<lc>")
                    == in_b.message().replace(LC_B, "<lc>"),
            || {
                format!(
                    "{}: a missing LC must answer like {LC_B}: missing {:?} vs {LC_B} {:?}",
                    user.name,
                    missing.message(),
                    in_b.message()
                )
            },
        );
        let missing_get = fx.request(
            &user.caller,
            "GET",
            &format!("{}/probe", list_cm(LC_MISSING)),
            &[],
            None,
        );
        report.check(
            missing_get.is_forbidden_status()
                && missing_get.message().contains("access not permitted"),
            || {
                format!(
                    "{} get configmap in missing LC: want 403 access not permitted, got {}",
                    user.name,
                    missing_get.short()
                )
            },
        );
    }
}

/// A namespace is in itself, as kube-apiserver sees `/api/v1/namespaces/<name>`: a Role in namespace
/// N may grant verbs on the Namespace object N, and the denial says "in the namespace N".
fn namespace_is_its_own_scope(fx: &Fixture, report: &Report) {
    fx.apply(
        LC_A,
        "ns-self.yaml",
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: patch-own-namespace
  namespace: other
rules:
- apiGroups: [""]
  resources: [namespaces]
  verbs: [patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: alice-patches-other
  namespace: other
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: patch-own-namespace}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
"#,
    );
    let alice = &fx.users[0];
    let patch = |ns: &str| {
        fx.request(
            &alice.caller,
            "PATCH",
            &format!("/clusters/{LC_A}/api/v1/namespaces/{ns}"),
            &[],
            Some((
                "application/merge-patch+json",
                r#"{"metadata":{"labels":{"patched-by":"alice"}}}"#,
            )),
        )
    };
    let out = patch("other");
    report.check(out.ok(), || {
        format!(
            "alice patch namespace other of {LC_A} with a Role in namespace other granting patch on namespaces: want 2xx (kube-apiserver puts /api/v1/namespaces/other in namespace other), got {}",
            out.short()
        )
    });
    let out = patch("victim-ns");
    let wanted = "namespaces \"victim-ns\" is forbidden: User \"alice\" cannot patch resource \"namespaces\" in API group \"\" in the namespace \"victim-ns\"";
    report.check(out.is_forbidden_status() && out.message().contains(wanted), || {
        format!(
            "alice patch namespace victim-ns of {LC_A}: want 403 `{wanted}` (as kube-apiserver words it), got {}",
            out.short()
        )
    });
}

/// X-Remote-* headers from an ordinary certificate or token are ignored; the real proxy's are used;
/// a certificate of the proxy CA with a name that is not allowed asserts nothing.
fn forged_headers(fx: &Fixture, report: &Report) {
    for user in &fx.users {
        let cases: [(&str, &str, String, bool); 5] = [
            ("list configmaps in A", "GET", list_cm(LC_A), true),
            ("list configmaps in B", "GET", list_cm(LC_B), false),
            (
                "list configmaps in /clusters/*",
                "GET",
                "/clusters/*/api/v1/configmaps".into(),
                false,
            ),
            (
                "delete namespace victim-ns in A",
                "DELETE",
                format!("/clusters/{LC_A}/api/v1/namespaces/victim-ns"),
                false,
            ),
            (
                "list secrets in A",
                "GET",
                format!("/clusters/{LC_A}/api/v1/namespaces/default/secrets"),
                false,
            ),
        ];
        for (what, method, path, allowed) in cases {
            let out = fx.request(&user.caller, method, &path, &FORGED, None);
            if allowed {
                report.check(out.ok(), || {
                    format!(
                        "{} with forged X-Remote-*: {what}: want 2xx (own rights), got {}",
                        user.name,
                        out.short()
                    )
                });
            } else {
                report.check(out.is_forbidden_status(), || {
                    format!(
                        "{} with forged X-Remote-*: {what}: want 403, got {}",
                        user.name,
                        out.short()
                    )
                });
                if path.contains(LC_A) {
                    let named = format!("User \"{}\"", user.name);
                    report.check(out.message().contains(&named), || {
                        format!(
                            "{} with forged X-Remote-*: {what}: the denial should name {named}: {}",
                            user.name,
                            out.message()
                        )
                    });
                }
            }
        }
        // Impersonating system:masters without the right to impersonate gets nowhere.
        let out = fx.request(
            &user.caller,
            "GET",
            "/clusters/*/api/v1/configmaps",
            &[
                ("Impersonate-User", "shard-admin"),
                ("Impersonate-Group", "system:masters"),
            ],
            None,
        );
        report.check(!out.ok(), || {
            format!(
                "{} impersonating system:masters listed /clusters/*: {}",
                user.name,
                out.short()
            )
        });
    }

    // The real front proxy asserting alice: exactly alice's rights.
    let as_alice = [("X-Remote-User", "alice"), ("X-Remote-Group", "some-group")];
    let proxy_cases: [(&str, String, bool); 4] = [
        ("list configmaps in A", list_cm(LC_A), true),
        (
            "list namespaces in A (via group some-group)",
            collection(Res::Namespaces, LC_A, ""),
            true,
        ),
        ("list configmaps in B", list_cm(LC_B), false),
        (
            "list configmaps in /clusters/*",
            "/clusters/*/api/v1/configmaps".into(),
            false,
        ),
    ];
    for (what, path, allowed) in proxy_cases {
        let out = fx.request(&fx.proxy, "GET", &path, &as_alice, None);
        let ok = if allowed {
            out.ok()
        } else {
            out.is_forbidden_status()
        };
        report.check(ok, || {
            format!(
                "front proxy asserting alice: {what}: want {}, got {}",
                if allowed { "2xx" } else { "403" },
                out.short()
            )
        });
    }
    // A certificate of the proxy CA that is not an allowed name asserts nothing.
    for path in [
        "/clusters/*/api/v1/configmaps".to_string(),
        collection(Res::Namespaces, LC_A, ""),
        list_cm(LC_B),
    ] {
        let out = fx.request(&fx.mallory, "GET", &path, &FORGED, None);
        report.check(!out.ok() && (out.code == 401 || out.code == 403), || {
            format!("mallory (proxy CA, not an allowed name) with forged headers GET {path}: want 401/403, got {}", out.short())
        });
    }
}

/// A bound ServiceAccount token for `robot` of LC A as the shard issues them: ES256 with the shard's
/// `service-account.key`, issuer and audience the default `--service-account-issuer`, kcp's
/// `clusterName` in the `kubernetes.io` claim, and the account's current uid.
fn mint_service_account_token(fx: &Fixture) -> String {
    const ISSUER: &str = "https://kcp.default.svc";
    let account = fx.admin(
        "GET",
        &format!("/clusters/{LC_A}/api/v1/namespaces/{SA_NAMESPACE}/serviceaccounts/{SA_NAME}"),
        None,
    );
    let uid = json_str(&account.json(), "/metadata/uid").to_string();
    assert!(
        !uid.is_empty(),
        "ServiceAccount {SA_NAME} has no uid: {}",
        account.short()
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs();
    let claims = json!({
        "iss": ISSUER,
        "sub": format!("system:serviceaccount:{SA_NAMESPACE}:{SA_NAME}"),
        "aud": [ISSUER],
        "exp": now + 3600,
        "iat": now,
        "nbf": now,
        "jti": format!("authz-isolation-{now}"),
        "kubernetes.io": {
            "clusterName": LC_A,
            "namespace": SA_NAMESPACE,
            "serviceaccount": {"name": SA_NAME, "uid": uid},
        },
    });
    let pem = fs::read(fx.shard.root_directory().join("service-account.key"))
        .expect("reading the shard's service-account.key");
    let key = jsonwebtoken::EncodingKey::from_ec_pem(&pem).expect("an ES256 key");
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256),
        &claims,
        &key,
    )
    .expect("signing a ServiceAccount token")
}

fn foreign_sa_user() -> String {
    format!("system:kcp:serviceaccount:{LC_A}:{SA_NAMESPACE}:{SA_NAME}")
}

/// A ServiceAccount of LC A: itself in A, a stranger in B until B binds it.
fn service_accounts(fx: &Fixture, report: &Report) {
    fx.admin_kubectl(LC_A)
        .ok(&["create", "serviceaccount", SA_NAME, "-n", SA_NAMESPACE]);
    let token_path = format!(
        "/clusters/{LC_A}/api/v1/namespaces/{SA_NAMESPACE}/serviceaccounts/{SA_NAME}/token"
    );
    let request = r#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}"#;
    let out = fx.admin("POST", &token_path, Some(("application/json", request)));
    let token = if out.code == 404 {
        // Not served yet: sign the token the TokenRequest API would hand out with the shard's own
        // ServiceAccount key, so that the authorization side of ServiceAccounts is still checked.
        report.skip(&format!(
            "TokenRequest API: POST {token_path} answered 404 ({}); the ServiceAccount checks ran with a token signed by the test with <root>/service-account.key",
            out.short()
        ));
        mint_service_account_token(fx)
    } else {
        let token = json_str(&out.json(), "/status/token").to_string();
        if !out.ok() || token.is_empty() {
            report.check(false, || {
                format!(
                    "TokenRequest for {SA_NAME} in {LC_A}: want 201 with status.token, got {}",
                    out.short()
                )
            });
            return;
        }
        token
    };
    let sa = Caller::Token(token);
    let get = |path: &str| fx.request(&sa, "GET", path, &[], None);

    // Own LC: past the access gate without a binding, then plain RBAC (no rights yet).
    let own_name = format!("system:serviceaccount:{SA_NAMESPACE}:{SA_NAME}");
    let out = get(&list_cm(LC_A));
    report.check(
        out.is_forbidden_status()
            && !out.message().contains("access not permitted")
            && out.message().contains(&format!("User \"{own_name}\"")),
        || {
            format!(
                "SA in its own LC, no RBAC: want an RBAC 403 naming {own_name}, got {}",
                out.short()
            )
        },
    );
    // Other LC: not even access.
    let out = get(&list_cm(LC_B));
    report.check(
        out.is_forbidden_status() && out.message().contains("access not permitted"),
        || format!("SA of {LC_A} list configmaps in {LC_B} before any binding: want 403 access not permitted, got {}", out.short()),
    );
    let out = get("/clusters/*/api/v1/configmaps");
    report.check(out.is_forbidden_status(), || {
        format!(
            "SA list configmaps in /clusters/*: want 403, got {}",
            out.short()
        )
    });

    // Own LC, with a Role: works.
    fx.apply(
        LC_A,
        "sa-grants-a.yaml",
        &format!(
            r#"apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: robot-view
  namespace: default
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}}
subjects:
- {{kind: ServiceAccount, name: {SA_NAME}, namespace: {SA_NAMESPACE}}}
"#
        ),
    );
    let own_ok = wait_until(|| get(&list_cm(LC_A)).ok());
    report.check(own_ok, || {
        format!(
            "SA bound to view in its own LC never could list configmaps: {}",
            get(&list_cm(LC_A)).short()
        )
    });
    // The same binding, in B, names a local SA of B: it does not match A's robot.
    fx.apply(
        LC_B,
        "sa-local-b.yaml",
        &format!(
            r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: local-robot-admin
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}
subjects:
- {{kind: ServiceAccount, name: {SA_NAME}, namespace: {SA_NAMESPACE}}}
"#
        ),
    );
    std::thread::sleep(Duration::from_secs(1));
    let out = get(&list_cm(LC_B));
    report.check(
        out.is_forbidden_status() && out.message().contains("access not permitted"),
        || {
            format!(
                "a binding of B's own SA {SA_NAMESPACE}/{SA_NAME} must not admit A's SA: got {}",
                out.short()
            )
        },
    );

    // B binds A's robot by its foreign user name: access and reading configmaps in default.
    let foreign = foreign_sa_user();
    fx.apply(
        LC_B,
        "sa-grants-b.yaml",
        &format!(
            r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: foreign-robot-access
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:kcp:workspace:access"}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: "{foreign}"}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: configmaps-read
  namespace: default
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: foreign-robot-configmaps
  namespace: default
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmaps-read}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: "{foreign}"}}
"#
        ),
    );
    let bound = wait_until(|| get(&list_cm(LC_B)).ok());
    report.check(bound, || {
        format!(
            "SA of {LC_A} bound in {LC_B} as {foreign} never could list configmaps there: {}",
            get(&list_cm(LC_B)).short()
        )
    });
    let out = get(&format!("{}/probe", list_cm(LC_B)));
    report.check(out.ok(), || {
        format!(
            "bound foreign SA get configmap probe in {LC_B}: want 2xx, got {}",
            out.short()
        )
    });
    // ...and exactly those rights.
    let body = object_body(Res::ConfigMaps, "from-robot", "x");
    // (what, method, path, body)
    type Refused<'a> = (&'a str, &'a str, String, Option<(&'a str, &'a str)>);
    let refused: [Refused<'_>; 5] = [
        (
            "create configmaps",
            "POST",
            list_cm(LC_B),
            Some(("application/json", body.as_str())),
        ),
        (
            "delete configmaps",
            "DELETE",
            format!("{}/probe", list_cm(LC_B)),
            None,
        ),
        (
            "list namespaces",
            "GET",
            collection(Res::Namespaces, LC_B, ""),
            None,
        ),
        (
            "list secrets",
            "GET",
            format!("/clusters/{LC_B}/api/v1/namespaces/default/secrets"),
            None,
        ),
        (
            "list configmaps",
            "GET",
            "/clusters/*/api/v1/configmaps".into(),
            None,
        ),
    ];
    for (what, method, path, body) in refused {
        let out = fx.request(&sa, method, &path, &[], body);
        report.check(out.is_forbidden_status(), || {
            format!(
                "bound foreign SA {what} ({method} {path}): want 403, got {}",
                out.short()
            )
        });
        if out.code == 403 && path.contains(LC_B) {
            report.check(
                out.message().contains(&format!("User \"{foreign}\"")),
                || {
                    format!(
                        "bound foreign SA {what}: the denial should name {foreign}: {}",
                        out.message()
                    )
                },
            );
        }
    }
    // The group system:cluster:<A> covers every identity from A.
    fx.apply(
        LC_B,
        "sa-group-b.yaml",
        &format!(
            r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: everyone-from-a-reads-namespaces
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}}
subjects:
- {{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:cluster:{LC_A}"}}
"#
        ),
    );
    let via_group = wait_until(|| get(&collection(Res::Namespaces, LC_B, "")).ok());
    report.check(via_group, || {
        format!(
            "view bound to group system:cluster:{LC_A} in {LC_B}: A's SA never could list namespaces there: {}",
            get(&collection(Res::Namespaces, LC_B, "")).short()
        )
    });
    // A's SA still cannot touch B's namespaces in writing, nor anything in a third LC.
    let out = fx.request(
        &sa,
        "DELETE",
        &format!("/clusters/{LC_B}/api/v1/namespaces/victim-ns"),
        &[],
        None,
    );
    report.check(out.is_forbidden_status(), || {
        format!(
            "foreign SA with view in {LC_B} delete namespace: want 403, got {}",
            out.short()
        )
    });
    let out = get(&list_cm(LC_MISSING));
    report.check(
        out.is_forbidden_status() && out.message().contains("access not permitted"),
        || {
            format!(
                "SA list configmaps in missing LC: want 403 access not permitted, got {}",
                out.short()
            )
        },
    );
}

/// Deleting the access binding shuts alice and bob out of A again, though their Roles remain.
fn revocation(fx: &Fixture, report: &Report) {
    let out = fx.admin(
        "DELETE",
        &format!("/clusters/{LC_A}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/isolation-access"),
        None,
    );
    report.check(out.ok(), || {
        format!(
            "kcp-admin delete ClusterRoleBinding isolation-access: {}",
            out.short()
        )
    });
    for user in &fx.users {
        let shut_out = wait_until(|| {
            let out = fx.request(&user.caller, "GET", &list_cm(LC_A), &[], None);
            out.is_forbidden_status() && out.message().contains("access not permitted")
        });
        report.check(shut_out, || {
            format!(
                "{} still enters {LC_A} after its access binding was deleted: {}",
                user.name,
                fx.request(&user.caller, "GET", &list_cm(LC_A), &[], None)
                    .short()
            )
        });
    }
}

/// `kubectl auth can-i` as alice (certificate) and bob (token) agrees with what the requests did.
fn can_i(fx: &Fixture, matrix: &Matrix, report: &Report) {
    let review = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "list", "resource": "configmaps", "namespace": "default"}},
    })
    .to_string();
    let ssar = fx.request(
        &fx.users[0].caller,
        "POST",
        &format!("/clusters/{LC_A}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"),
        &[],
        Some(("application/json", &review)),
    );
    if ssar.code == 404 {
        report.skip(&format!(
            "kubectl auth can-i: SelfSubjectAccessReview answered 404: {}",
            ssar.short()
        ));
        return;
    }
    report.check(
        ssar.ok() && ssar.json().pointer("/status/allowed") == Some(&json!(true)),
        || format!("alice's SelfSubjectAccessReview for list configmaps in {LC_A}: want allowed, got {}", ssar.short()),
    );

    let widgets = format!("widgets.{GROUP}");
    // (args, resource, location, verb) — the answer must match the matrix's real outcome.
    let questions: [(&[&str], Res, Loc, &str); 6] = [
        (
            &["list", "configmaps", "-n", "default"],
            Res::ConfigMaps,
            Loc::A,
            "list",
        ),
        (
            &["delete", "configmaps", "-n", "default"],
            Res::ConfigMaps,
            Loc::A,
            "delete",
        ),
        (&["get", "namespaces"], Res::Namespaces, Loc::A, "get"),
        (&["delete", "namespaces"], Res::Namespaces, Loc::A, "delete"),
        (
            &["create", widgets.as_str(), "-n", "default"],
            Res::Widgets,
            Loc::A,
            "create",
        ),
        (
            &["list", "configmaps", "-n", "default"],
            Res::ConfigMaps,
            Loc::B,
            "list",
        ),
    ];
    for (index, user) in fx.users.iter().enumerate() {
        for (question, res, loc, verb) in &questions {
            let context = if *loc == Loc::A {
                user.context_a
            } else {
                user.context_b
            };
            let mut args = vec!["auth", "can-i"];
            args.extend_from_slice(question);
            let output = fx
                .shard
                .kubectl_cmd()
                .kubeconfig(&fx.kubeconfig)
                .context(context)
                .run(&args);
            let stdout = String::from_utf8_lossy(&output.stdout).trim().to_string();
            let answer = output.status.success() && stdout == "yes";
            let real = matrix
                .get(&(index, *res, *loc, *verb))
                .is_some_and(Outcome::ok);
            let contract = granted(*res, *loc, verb);
            report.check(answer == real && answer == contract, || {
                format!(
                    "kubectl --context {context} auth can-i {}: answered {stdout:?} (stderr {:?}); the request itself {} (contract: {})",
                    question.join(" "),
                    String::from_utf8_lossy(&output.stderr).trim(),
                    if real { "succeeded" } else { "was refused" },
                    if contract { "yes" } else { "no" },
                )
            });
        }
    }
}

fn isolation_catalogue(store: StoreKind) {
    let fx = Fixture::start(store);
    let report = Report::default();
    setup(&fx);

    // RBAC reaches the authorizer through a watch: wait until alice's and bob's grants are in force.
    for user in &fx.users {
        let ready = wait_until(|| {
            fx.request(&user.caller, "GET", &list_cm(LC_A), &[], None)
                .ok()
                && fx
                    .request(
                        &user.caller,
                        "GET",
                        &collection(Res::Widgets, LC_A, "default"),
                        &[],
                        None,
                    )
                    .ok()
        });
        if !ready {
            let out = fx.request(&user.caller, "GET", &list_cm(LC_A), &[], None);
            eprintln!(
                "{}'s grants in {LC_A} were not in force after {EVENTUALLY:?} (last: {}); running the catalogue anyway",
                user.name,
                out.short()
            );
        }
    }

    let matrix = verb_matrix(&fx, &report);
    check_effects(&fx, &report);
    admins_and_scopes(&fx, &report);
    forged_headers(&fx, &report);
    namespace_is_its_own_scope(&fx, &report);
    can_i(&fx, &matrix, &report);
    service_accounts(&fx, &report);
    revocation(&fx, &report);
    report.finish(&fx.shard);
}

/// Impersonation as Kubernetes does it, with kcp's gatekeeper: privileged groups can only be
/// impersonated by callers that hold them (`system:masters` may impersonate anything).
fn impersonation(store: StoreKind) {
    let fx = Fixture::start(store);
    let report = Report::default();
    setup(&fx);
    wait_until(|| {
        fx.request(&fx.users[0].caller, "GET", &list_cm(LC_A), &[], None)
            .ok()
    });
    let kcp_admin = Caller::KubeconfigUser("kcp-admin".into());
    let shard_admin = Caller::KubeconfigUser("shard-admin".into());
    let as_alice = [
        ("Impersonate-User", "alice"),
        ("Impersonate-Group", "some-group"),
    ];
    let delete_victim = format!("/clusters/{LC_A}/api/v1/namespaces/victim-ns");
    let wildcard = "/clusters/*/api/v1/configmaps".to_string();
    // alice is cluster-admin of B in this scenario: she may impersonate inside B, but not into the
    // privileged groups, and not in A.
    fx.apply(
        LC_B,
        "alice-admin-b.yaml",
        r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: alice-cluster-admin
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
"#,
    );
    let alice_admin_of_b = wait_until(|| {
        fx.request(&fx.users[0].caller, "GET", &list_cm(LC_B), &[], None)
            .ok()
    });
    report.check(alice_admin_of_b, || {
        format!("alice bound to cluster-admin in {LC_B} never could list configmaps there")
    });
    let alice = &fx.users[0].caller;
    let as_bob = [("Impersonate-User", "bob")];
    let as_kcp_admin_group = [
        ("Impersonate-User", "someone"),
        ("Impersonate-Group", "system:kcp:admin"),
    ];
    let as_kcp_admin_name = [("Impersonate-User", "kcp-admin")];
    // (who, caller, headers, method, path, want 2xx (else 403 Forbidden), text the message contains)
    type Case<'a> = (
        &'a str,
        &'a Caller,
        &'a [(&'a str, &'a str)],
        &'a str,
        String,
        bool,
        &'a str,
    );
    let cases: Vec<Case<'_>> = vec![
        // alice, cluster-admin of B, impersonating there.
        (
            "alice (cluster-admin of B) as bob in B",
            alice,
            &as_bob,
            "GET",
            list_cm(LC_B),
            false,
            "access not permitted",
        ),
        (
            "alice (cluster-admin of B) as someone in system:kcp:admin in B",
            alice,
            &as_kcp_admin_group,
            "GET",
            list_cm(LC_B),
            false,
            "not allowed",
        ),
        (
            "alice (cluster-admin of B) as the user name kcp-admin (no groups) in A",
            alice,
            &as_kcp_admin_name,
            "GET",
            list_cm(LC_A),
            false,
            "impersonate",
        ),
        (
            "alice (cluster-admin of B) as the user name kcp-admin (no groups) in B",
            alice,
            &as_kcp_admin_name,
            "DELETE",
            format!("/clusters/{LC_B}/api/v1/namespaces/victim-ns"),
            false,
            "access not permitted",
        ),
        (
            "kcp-admin as alice on /clusters/*",
            &kcp_admin,
            &as_alice,
            "GET",
            wildcard.clone(),
            false,
            "",
        ),
        // kcp-admin (cluster-admin in every LC, so allowed to impersonate there) acting as alice has
        // exactly alice's rights.
        (
            "kcp-admin as alice",
            &kcp_admin,
            &as_alice,
            "GET",
            list_cm(LC_A),
            true,
            "",
        ),
        (
            "kcp-admin as alice",
            &kcp_admin,
            &as_alice,
            "DELETE",
            delete_victim.clone(),
            false,
            "User \"alice\"",
        ),
        // ...including her cluster-admin of B (this scenario's binding).
        (
            "kcp-admin as alice (cluster-admin of B) in B",
            &kcp_admin,
            &as_alice,
            "DELETE",
            format!("/clusters/{LC_B}/api/v1/namespaces/default/configmaps/probe"),
            true,
            "",
        ),
        // alice may not impersonate outside B.
        (
            "alice as bob in A",
            &fx.users[0].caller,
            &[("Impersonate-User", "bob")],
            "GET",
            list_cm(LC_A),
            false,
            "impersonate",
        ),
        // The gatekeeper: kcp-admin does not hold system:masters, so it cannot take it on.
        (
            "kcp-admin as system:masters",
            &kcp_admin,
            &[
                ("Impersonate-User", "someone"),
                ("Impersonate-Group", "system:masters"),
            ],
            "GET",
            list_cm(LC_A),
            false,
            "",
        ),
        (
            "kcp-admin as system:masters",
            &kcp_admin,
            &[
                ("Impersonate-User", "someone"),
                ("Impersonate-Group", "system:masters"),
            ],
            "GET",
            wildcard.clone(),
            false,
            "",
        ),
        // ...but a group it holds is fine.
        (
            "kcp-admin as someone in system:kcp:admin",
            &kcp_admin,
            &[
                ("Impersonate-User", "someone"),
                ("Impersonate-Group", "system:kcp:admin"),
            ],
            "GET",
            list_cm(LC_B),
            true,
            "",
        ),
        // system:masters may impersonate anything, and then is what it impersonates.
        (
            "shard-admin as system:masters",
            &shard_admin,
            &[
                ("Impersonate-User", "someone"),
                ("Impersonate-Group", "system:masters"),
            ],
            "GET",
            wildcard.clone(),
            true,
            "",
        ),
        (
            "shard-admin as alice",
            &shard_admin,
            &as_alice,
            "GET",
            wildcard.clone(),
            false,
            "",
        ),
    ];
    for (who, caller, headers, method, path, want_ok, text) in cases {
        let out = fx.request(caller, method, &path, headers, None);
        let ok = if want_ok {
            out.ok()
        } else {
            out.is_forbidden_status()
        };
        report.check(ok && out.message().contains(text), || {
            format!(
                "{who}: {method} {path}: want {}{}, got {}",
                if want_ok { "2xx" } else { "403" },
                if text.is_empty() {
                    String::new()
                } else {
                    format!(" mentioning {text:?}")
                },
                out.short()
            )
        });
    }
    report.finish(&fx.shard);
}

kcp_e2e::on_both_stores!(isolation_catalogue, impersonation);
