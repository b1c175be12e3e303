//! APIs as a service through the real binary with kubectl, on both stores: a provider publishes
//! an APIResourceSchema in an APIExport, which gets its identity; a consumer binds it and is served
//! the API as its own; the binding's deletion takes the objects with it.

use kcp_e2e::cowboys::{EXPORT, SCHEMA, bind_and_wait, binding, create_ready_workspace, publish};
use kcp_e2e::{Shard, StoreKind, json_str, on_both_stores};
use serde_json::Value;

on_both_stores!(
    export_bind_and_serve,
    identities_conflicts_and_evolution,
    bind_permission_and_maximal_policy,
    permission_claims
);

fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

fn export_bind_and_serve(store: StoreKind) {
    let shard = Shard::start(store);
    create_ready_workspace(&shard, "provider");
    create_ready_workspace(&shard, "consumer");
    let provider = || shard.kubectl_cmd().cluster("root:provider");
    let consumer = || shard.kubectl_cmd().cluster("root:consumer");

    // kcp's name rule for schemas: 403 with its words, nothing written.
    let misnamed = shard.write_file(
        "misnamed.yaml",
        &SCHEMA.replace("today.cowboys.wildwest.dev", "today.horses.wildwest.dev"),
    );
    let refused = provider().fails(&["create", "-f", misnamed.to_str().unwrap_or_default()]);
    assert!(
        refused.contains("is forbidden")
            && refused.contains("metadata.name: Invalid value: \"today.horses.wildwest.dev\": must end in .cowboys.wildwest.dev"),
        "{refused}"
    );
    let schema = shard.write_file("schema.yaml", SCHEMA);
    provider().ok(&["create", "-f", schema.to_str().unwrap_or_default()]);
    // The spec never changes.
    let changed = provider().fails(&[
        "patch",
        "apiresourceschema",
        "today.cowboys.wildwest.dev",
        "--type=merge",
        "-p",
        r#"{"spec":{"scope":"Cluster"}}"#,
    ]);
    assert!(
        changed.contains("spec: Invalid value") && changed.contains("is immutable"),
        "{changed}"
    );

    // The export gets an identity: a Secret in kcp-system, its hash in the status, a slice.
    let export = shard.write_file("export.yaml", EXPORT);
    provider().ok(&["create", "-f", export.to_str().unwrap_or_default()]);
    let export = shard.eventually("the export's identity hash", || {
        let export = provider().json(&["get", "apiexport", "cowboys", "-o", "json"]);
        (!json_str(&export, "/status/identityHash").is_empty()).then_some(export)
    });
    // kubectl's short name resolves to the version kcp prefers, v1alpha2.
    assert_eq!(export["apiVersion"], "apis.kcp.io/v1alpha2", "{export}");
    let identity = json_str(&export, "/status/identityHash").to_string();
    assert_eq!(identity.len(), 64, "{export}");
    assert_eq!(
        json_str(&export, "/spec/identity/secretRef/namespace"),
        "kcp-system"
    );
    assert_eq!(
        condition(&export, "IdentityValid").map(|c| c["status"].clone()),
        Some("True".into()),
        "{export}"
    );
    let secret = provider().json(&["get", "secret", "-n", "kcp-system", "cowboys", "-o", "json"]);
    assert!(!json_str(&secret, "/data/key").is_empty(), "{secret}");
    let slice = shard.eventually("the default endpoint slice", || {
        let out = provider().run(&["get", "apiexportendpointslice", "cowboys", "-o", "json"]);
        out.status
            .success()
            .then(|| serde_json::from_slice::<Value>(&out.stdout).unwrap_or_default())
    });
    assert_eq!(json_str(&slice, "/spec/export/name"), "cowboys");
    assert_eq!(json_str(&slice, "/spec/export/path"), "root:provider");
    // v1alpha1 is served from the same object.
    let v1 = provider().json(&[
        "get",
        "apiexports.v1alpha1.apis.kcp.io",
        "cowboys",
        "-o",
        "json",
    ]);
    assert_eq!(
        v1["spec"]["latestResourceSchemas"][0], "today.cowboys.wildwest.dev",
        "{v1}"
    );
    assert_eq!(json_str(&v1, "/status/identityHash"), identity);

    // A binding to an export that is not there: kcp's 403, the same as a denied one.
    let missing = shard.write_file("missing.yaml", &binding("nope", "root:provider", "nope"));
    let refused = consumer().fails(&["create", "-f", missing.to_str().unwrap_or_default()]);
    assert!(
        refused.contains(
            "unable to create APIBinding: no permission to bind to export root:provider:nope"
        ),
        "{refused}"
    );

    // Bound: the consumer is served Cowboys as its own, stored under the export's identity.
    let bind = shard.write_file(
        "binding.yaml",
        &binding("cowboys", "root:provider", "cowboys"),
    );
    consumer().ok(&["create", "-f", bind.to_str().unwrap_or_default()]);
    let bound = shard.eventually("the binding Bound", || {
        let b = consumer().json(&["get", "apibinding", "cowboys", "-o", "json"]);
        (b["status"]["phase"] == "Bound").then_some(b)
    });
    assert_eq!(
        bound["status"]["boundResources"][0]["schema"]["identityHash"],
        identity.as_str()
    );
    assert_eq!(bound["status"]["boundResources"][0]["resource"], "cowboys");
    assert!(!json_str(&bound, "/status/apiExportClusterName").is_empty());
    assert_eq!(
        condition(&bound, "Ready").map(|c| c["status"].clone()),
        Some("True".into()),
        "{bound}"
    );
    assert!(
        !json_str(&bound, "/metadata/labels/internal.apis.kcp.io~1export").is_empty(),
        "{bound}"
    );
    // kcp's CEL rule: a binding never changes what it points at.
    let moved = consumer().fails(&[
        "patch",
        "apibinding",
        "cowboys",
        "--type=merge",
        "-p",
        r#"{"spec":{"reference":{"export":{"name":"horses"}}}}"#,
    ]);
    assert!(
        moved.contains("is invalid") && moved.contains("APIExport reference must not be changed"),
        "{moved}"
    );
    let resources = shard.eventually("cowboys in discovery", || {
        let out = consumer().ok(&["api-resources", "--api-group=wildwest.dev"]);
        out.contains("cowboys").then_some(out)
    });
    assert!(resources.contains("Cowboy"), "{resources}");
    let cowboy = shard.write_file(
        "cowboy.yaml",
        "apiVersion: wildwest.dev/v1alpha1\nkind: Cowboy\nmetadata:\n  name: lucky\n  namespace: default\nspec:\n  intent: ride\n",
    );
    consumer().ok(&["create", "-f", cowboy.to_str().unwrap_or_default()]);
    let table = consumer().ok(&["get", "cowboys", "-n", "default"]);
    assert!(
        table.contains("INTENT") && table.contains("lucky") && table.contains("ride"),
        "{table}"
    );
    let explain = consumer().ok(&["explain", "cowboy.spec"]);
    assert!(explain.contains("What the cowboy is up to."), "{explain}");
    // The provider's own workspace does not serve what it exports.
    let theirs = provider().run(&["get", "cowboys", "-n", "default"]);
    assert!(!theirs.status.success());

    // Deleting the binding deletes its objects, then the binding; the resource is gone.
    consumer().ok(&["delete", "apibinding", "cowboys", "--wait=true"]);
    shard.eventually("cowboys gone from discovery", || {
        let out = consumer().ok(&["api-resources", "--api-group=wildwest.dev"]);
        (!out.contains("cowboys")).then_some(())
    });
    // Bound again, the old object is not there: it went with the binding.
    consumer().ok(&["create", "-f", bind.to_str().unwrap_or_default()]);
    shard.eventually("bound again", || {
        let out = consumer().run(&["get", "cowboys", "-n", "default", "-o", "name"]);
        (out.status.success()).then(|| String::from_utf8_lossy(&out.stdout).to_string())
    });
    let listed = consumer().ok(&["get", "cowboys", "-n", "default", "-o", "name"]);
    assert_eq!(listed.trim(), "", "{listed}");
}

/// Patches the provider's `cowboys` export in its stored version (v1alpha2), where `spec.resources`
/// and claims' verbs live.
fn patch_export(shard: &Shard, kind: &str, patch: &str) {
    let provider = shard.kubectl_cmd().cluster("root:provider");
    provider.ok(&[
        "patch",
        "apiexports.v1alpha2.apis.kcp.io",
        "cowboys",
        &format!("--type={kind}"),
        "-p",
        patch,
    ]);
}

const LOCAL_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: cowboys.wildwest.dev
spec:
  group: wildwest.dev
  names: {kind: Cowboy, listKind: CowboyList, plural: cowboys, singular: cowboy}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

/// Two exports of one group/resource keep their objects apart, listed across clusters by
/// identity; a bound resource refuses a CRD of its name and a CRD refuses a binding; the lock
/// annotation says who holds what; an export that gains a resource reaches its bindings, and a
/// schema deleted while bound keeps serving.
fn identities_conflicts_and_evolution(store: StoreKind) {
    let shard = Shard::start(store);
    for ws in [
        "provider",
        "other-provider",
        "consumer",
        "other-consumer",
        "local",
    ] {
        create_ready_workspace(&shard, ws);
    }
    let first = publish(&shard, "root:provider", "today.cowboys.wildwest.dev");
    let second = publish(&shard, "root:other-provider", "other.cowboys.wildwest.dev");
    assert_ne!(first, second);
    bind_and_wait(&shard, "root:consumer", "root:provider");
    bind_and_wait(&shard, "root:other-consumer", "root:other-provider");
    let cowboy = shard.write_file(
        "lucky.yaml",
        "apiVersion: wildwest.dev/v1alpha1\nkind: Cowboy\nmetadata:\n  name: lucky\n  namespace: default\nspec:\n  intent: ride\n",
    );
    for ws in ["root:consumer", "root:other-consumer"] {
        let consumer = shard.kubectl_cmd().cluster(ws);
        shard.eventually("cowboys served", || {
            let out = consumer.run(&["create", "-f", cowboy.to_str().unwrap_or_default()]);
            out.status.success().then_some(())
        });
    }

    // Across clusters, each identity lists its own export's objects only.
    let consumer_lc = shard.kubectl_cmd().cluster("root:consumer").json(&[
        "get",
        "logicalcluster",
        "cluster",
        "-o",
        "json",
    ]);
    let consumer_name = json_str(&consumer_lc, "/metadata/annotations/kcp.io~1cluster").to_string();
    // Only privileged users list across clusters (shard-admin is in system:masters).
    let privileged = || shard.kubectl_cmd().context("system:admin");
    let across = |identity: &str| {
        privileged().json(&[
            "get",
            "--raw",
            &format!("/clusters/*/apis/wildwest.dev/v1alpha1/cowboys:{identity}"),
        ])
    };
    let listed = across(&first);
    let items = listed["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1, "{listed}");
    assert_eq!(
        json_str(&items[0], "/metadata/annotations/kcp.io~1cluster"),
        consumer_name,
        "{listed}"
    );
    assert_eq!(across(&second)["items"].as_array().map(Vec::len), Some(1));
    let unknown = privileged().fails(&[
        "get",
        "--raw",
        &format!(
            "/clusters/*/apis/wildwest.dev/v1alpha1/cowboys:{}",
            "0".repeat(64)
        ),
    ]);
    assert!(unknown.contains("NotFound"), "{unknown}");

    // A CRD over the bound resource: kcp's refusal; the lock annotation names the binding.
    let crd = shard.write_file("crd.yaml", LOCAL_CRD);
    let consumer = || shard.kubectl_cmd().cluster("root:consumer");
    let refused = consumer().fails(&["create", "-f", crd.to_str().unwrap_or_default()]);
    assert!(
        refused.contains("cannot create because resource is bound by APIBinding \"cowboys\""),
        "{refused}"
    );
    shard.eventually("the lock annotation", || {
        let lc = consumer().json(&["get", "logicalcluster", "cluster", "-o", "json"]);
        let locks = json_str(
            &lc,
            "/metadata/annotations/internal.apis.kcp.io~1resource-bindings",
        );
        let locks: Value = serde_json::from_str(locks).ok()?;
        (locks["cowboys.wildwest.dev"]["n"] == "cowboys").then_some(())
    });

    // A CRD first: the binding skips the resource with kcp's reason, the CRD keeps serving.
    let local = || shard.kubectl_cmd().cluster("root:local");
    local().ok(&["create", "-f", crd.to_str().unwrap_or_default()]);
    shard.eventually("the local CRD established", || {
        let out = local().run(&["get", "cowboys", "-n", "default"]);
        out.status.success().then_some(())
    });
    let file = shard.write_file(
        "bind-local.yaml",
        &binding("cowboys", "root:provider", "cowboys"),
    );
    local().ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    let conflicted = shard.eventually("the binding's naming conflict", || {
        let b = local().json(&["get", "apibinding", "cowboys", "-o", "json"]);
        let c = condition(&b, "BindingUpToDate")?;
        (c["reason"] == "NamingConflicts").then(|| (b.clone(), c.clone()))
    });
    let (b, c) = conflicted;
    assert_eq!(b["status"]["phase"], "Binding", "{b}");
    assert!(
        json_str(&c, "/message").contains("cowboys.wildwest.dev"),
        "{c}"
    );
    let lc = local().json(&["get", "logicalcluster", "cluster", "-o", "json"]);
    let locks = json_str(
        &lc,
        "/metadata/annotations/internal.apis.kcp.io~1resource-bindings",
    );
    assert!(
        locks.contains(r#""cowboys.wildwest.dev":{"c":true"#),
        "{lc}"
    );

    // The export gains a resource: its bindings bind it too.
    let horses = SCHEMA
        .replace("today.cowboys.wildwest.dev", "today.horses.wildwest.dev")
        .replace("Cowboy", "Horse")
        .replace("cowboys", "horses")
        .replace("cowboy", "horse");
    let provider = || shard.kubectl_cmd().cluster("root:provider");
    let file = shard.write_file("horses.yaml", &horses);
    provider().ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    patch_export(
        &shard,
        "json",
        r#"[{"op":"add","path":"/spec/resources/-","value":{"name":"horses","group":"wildwest.dev","schema":"today.horses.wildwest.dev","storage":{"crd":{}}}}]"#,
    );
    shard.eventually("horses bound and served", || {
        let out = consumer().run(&["get", "horses", "-n", "default"]);
        out.status.success().then_some(())
    });
    let b = consumer().json(&["get", "apibinding", "cowboys", "-o", "json"]);
    assert_eq!(
        b["status"]["boundResources"].as_array().map(Vec::len),
        Some(2),
        "{b}"
    );

    // The schema deleted while bound: still served, and the binding says what is wrong.
    provider().ok(&["delete", "apiresourceschema", "today.horses.wildwest.dev"]);
    let b = shard.eventually("the binding reports the missing schema", || {
        let b = consumer().json(&["get", "apibinding", "cowboys", "-o", "json"]);
        let c = condition(&b, "APIExportValid")?;
        (c["status"] == "False").then_some(b)
    });
    assert_eq!(
        condition(&b, "APIExportValid").map(|c| c["reason"].clone()),
        Some("InternalError".into()),
        "{b}"
    );
    assert_eq!(b["status"]["phase"], "Bound", "{b}");
    let horse = shard.write_file(
        "horse.yaml",
        "apiVersion: wildwest.dev/v1alpha1\nkind: Horse\nmetadata:\n  name: silver\n  namespace: default\n",
    );
    consumer().ok(&["create", "-f", horse.to_str().unwrap_or_default()]);
    let listed = consumer().ok(&["get", "horses", "-n", "default", "-o", "name"]);
    assert!(listed.contains("silver"), "{listed}");
}

const ALICE_TOKEN: &str = "apis-alice-token-7c21d9";

/// The shard with alice (a token user) and a kubeconfig for her.
fn start_with_alice(store: StoreKind) -> (Shard, std::path::PathBuf) {
    let shard = Shard::start_with_tokens(
        store,
        &format!("{ALICE_TOKEN},alice,alice-uid,\"riders\"\n"),
    );
    let ca = shard.root_directory().join("ca.crt");
    let kubeconfig = shard.write_file(
        "alice.kubeconfig",
        &format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: root\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: alice\n  user: {{token: {ALICE_TOKEN}}}\ncontexts:\n- name: alice\n  context: {{cluster: root, user: alice}}\ncurrent-context: alice\n",
            shard.cluster_url("root"),
            ca.display()
        ),
    );
    (shard, kubeconfig)
}

fn grant(shard: &Shard, cluster: &str, name: &str, user: &str, rules: &str) {
    let file = shard.write_file(
        &format!("grant-{name}.yaml"),
        &format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {{name: {name}}}\nrules:\n{rules}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: {name}}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {name}}}\nsubjects:\n- {{apiGroup: rbac.authorization.k8s.io, kind: User, name: \"{user}\"}}\n"
        ),
    );
    (shard.kubectl_cmd().cluster(cluster)).ok(&["apply", "-f", file.to_str().unwrap_or_default()]);
}

/// Binding takes `bind` on the export in its workspace; requests on a resource bound from an
/// export with a local maximal permission policy need the export's RBAC for the prefixed user
/// as well as the consumer's own.
fn bind_permission_and_maximal_policy(store: StoreKind) {
    let (shard, alice) = start_with_alice(store);
    create_ready_workspace(&shard, "provider");
    create_ready_workspace(&shard, "consumer");
    publish(&shard, "root:provider", "today.cowboys.wildwest.dev");
    patch_export(
        &shard,
        "merge",
        r#"{"spec":{"maximalPermissionPolicy":{"local":{}}}}"#,
    );
    // Alice administers the consumer workspace, but may not bind the export yet.
    grant(
        &shard,
        "root:consumer",
        "alice-admin",
        "alice",
        "- {apiGroups: ['*'], resources: ['*'], verbs: ['*']}\n- {nonResourceURLs: ['*'], verbs: ['*']}",
    );
    let as_alice = || {
        shard
            .kubectl_cmd()
            .kubeconfig(&alice)
            .cluster("root:consumer")
    };
    let file = shard.write_file(
        "alice-binding.yaml",
        &binding("cowboys", "root:provider", "cowboys"),
    );
    let refused = shard.eventually("alice admin in the consumer", || {
        let out = as_alice().run(&["create", "-f", file.to_str().unwrap_or_default()]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        err.contains("unable to create APIBinding").then_some(err)
    });
    assert!(
        refused.contains("no permission to bind to export root:provider:cowboys"),
        "{refused}"
    );
    grant(
        &shard,
        "root:provider",
        "alice-binds",
        "alice",
        "- {apiGroups: [apis.kcp.io], resources: [apiexports], resourceNames: [cowboys], verbs: [bind]}",
    );
    shard.eventually("alice may bind", || {
        let out = as_alice().run(&["create", "-f", file.to_str().unwrap_or_default()]);
        out.status.success().then_some(())
    });
    shard.eventually("the binding Bound", || {
        let b = as_alice().json(&["get", "apibinding", "cowboys", "-o", "json"]);
        (b["status"]["phase"] == "Bound").then_some(())
    });

    // Bound, but the provider's policy grants alice nothing on cowboys yet.
    let denied = shard.eventually("cowboys served and bounded", || {
        let out = as_alice().run(&["get", "cowboys", "-n", "default"]);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        err.contains("Forbidden").then_some(err)
    });
    assert!(
        denied.contains("cannot list resource \"cowboys\"")
            && denied.contains("policy does not allow it"),
        "{denied}"
    );
    // The policy grants reading, to the prefixed user: alice reads, but still may not create.
    grant(
        &shard,
        "root:provider",
        "riders-read",
        "apis.kcp.io:binding:alice",
        "- {apiGroups: [wildwest.dev], resources: [cowboys], verbs: [get, list, watch]}",
    );
    shard.eventually("alice reads cowboys", || {
        as_alice()
            .run(&["get", "cowboys", "-n", "default"])
            .status
            .success()
            .then_some(())
    });
    let cowboy = shard.write_file(
        "alice-cowboy.yaml",
        "apiVersion: wildwest.dev/v1alpha1\nkind: Cowboy\nmetadata:\n  name: lucky\n  namespace: default\n",
    );
    let refused = as_alice().fails(&["create", "-f", cowboy.to_str().unwrap_or_default()]);
    assert!(refused.contains("policy does not allow it"), "{refused}");
    // Outside the bound resource, only the consumer's RBAC counts.
    as_alice().ok(&["create", "configmap", "plain", "-n", "default"]);
}

/// Go's big-int base-62 text of `bytes` (kcp's `Base62`), written here again so the test checks
/// the shard's labels against kcp's definition rather than the shard's own code.
fn base62(bytes: &[u8]) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut number: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
    let mut out = Vec::new();
    while !number.is_empty() {
        let mut rest = 0u32;
        let mut next = Vec::new();
        for b in &number {
            let acc = rest * 256 + u32::from(*b);
            let q = (acc / 62) as u8;
            rest = acc % 62;
            if !(next.is_empty() && q == 0) {
                next.push(q);
            }
        }
        out.push(DIGITS[rest as usize]);
        number = next;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

fn base62_sha224(text: &str) -> String {
    use sha2::Digest as _;
    base62(&sha2::Sha224::digest(text.as_bytes()))
}

const CLAIMING_BINDING: &str = r#"
apiVersion: apis.kcp.io/v1alpha2
kind: APIBinding
metadata:
  name: cowboys
spec:
  reference:
    export:
      path: root:provider
      name: cowboys
  permissionClaims:
  - {group: "", resource: configmaps, verbs: [get, list, watch], selector: {matchAll: true}, state: Accepted}
  - {group: "", resource: secrets, verbs: [get], selector: {matchAll: true}, state: Accepted}
"#;

/// A provider claims configmaps; the consumer accepts (and claims secrets the export never
/// asked for): existing and new configmaps carry kcp's claim label, forged claim labels are
/// dropped, the binding reports the applied and the invalid claims; rejecting takes the labels
/// away.
fn permission_claims(store: StoreKind) {
    let shard = Shard::start(store);
    create_ready_workspace(&shard, "provider");
    create_ready_workspace(&shard, "consumer");
    publish(&shard, "root:provider", "today.cowboys.wildwest.dev");
    patch_export(
        &shard,
        "merge",
        r#"{"spec":{"permissionClaims":[{"group":"","resource":"configmaps","verbs":["get","list","watch"]}]}}"#,
    );
    let consumer = || shard.kubectl_cmd().cluster("root:consumer");
    consumer().ok(&["create", "configmap", "before", "-n", "default"]);
    let file = shard.write_file("claiming.yaml", CLAIMING_BINDING);
    consumer().ok(&["create", "-f", file.to_str().unwrap_or_default()]);
    let bound = shard.eventually("the claims applied", || {
        let b = consumer().json(&["get", "apibinding", "cowboys", "-o", "json"]);
        let applied = b["status"]["appliedPermissionClaims"].as_array()?;
        (b["status"]["phase"] == "Bound" && applied.len() == 1).then_some(b)
    });
    assert_eq!(
        bound["status"]["appliedPermissionClaims"][0]["resource"],
        "configmaps"
    );
    let valid = condition(&bound, "PermissionClaimsValid")
        .cloned()
        .unwrap_or_default();
    assert_eq!(valid["reason"], "InvalidPermissionClaims", "{bound}");
    assert!(
        json_str(&valid, "/message")
            .contains("unexpected/invalid claim for secrets. (identity \"\")"),
        "{valid}"
    );
    assert_eq!(
        condition(&bound, "PermissionClaimsApplied").map(|c| c["status"].clone()),
        Some("True".into()),
        "{bound}"
    );

    // kcp's label: the export's hash as key, the claim's (without verbs) as value.
    let export_cluster = json_str(&bound, "/status/apiExportClusterName");
    let key = format!(
        "claimed.internal.apis.kcp.io/{}",
        base62_sha224(&format!("{export_cluster}:cowboys"))
    );
    let value = base62_sha224(r#"{"resource":"configmaps","verbs":null}"#);
    let label_of = |name: &str| {
        let cm = consumer().json(&["get", "configmap", name, "-n", "default", "-o", "json"]);
        cm["metadata"]["labels"][&key].as_str().map(str::to_string)
    };
    shard.eventually("the existing configmap labelled", || {
        (label_of("before").as_deref() == Some(value.as_str())).then_some(())
    });
    let forged = shard.write_file(
        "forged.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n  namespace: default\n  labels:\n    claimed.internal.apis.kcp.io/forged: x\n",
    );
    consumer().ok(&["create", "-f", forged.to_str().unwrap_or_default()]);
    let after = consumer().json(&["get", "configmap", "after", "-n", "default", "-o", "json"]);
    assert_eq!(after["metadata"]["labels"][&key], value.as_str(), "{after}");
    assert!(
        after["metadata"]["labels"]
            .get("claimed.internal.apis.kcp.io/forged")
            .is_none(),
        "{after}"
    );
    // Unclaimed resources carry no claim label.
    consumer().ok(&["create", "secret", "generic", "s", "-n", "default"]);
    let secret = consumer().json(&["get", "secret", "s", "-n", "default", "-o", "json"]);
    assert!(secret["metadata"]["labels"].get(&key).is_none(), "{secret}");

    // Through the export's virtual workspace: the claimed configmaps of the consumer, read-only as
    // the claim's verbs say; unclaimed secrets are not served.
    let provider = || shard.kubectl_cmd().cluster("root:provider");
    let url = shard.eventually("the endpoint slice's URL", || {
        let slice = provider().json(&["get", "apiexportendpointslice", "cowboys", "-o", "json"]);
        let url = json_str(&slice, "/status/endpoints/0/url").to_string();
        (!url.is_empty()).then_some(url)
    });
    let consumer_lc = json_str(&bound, "/metadata/annotations/kcp.io~1cluster").to_string();
    let vw = || shard.kubectl_cmd().server(&format!("{url}/clusters/*"));
    let resources = vw().ok(&["api-resources", "-o", "name"]);
    assert!(
        resources.contains("configmaps\n") || resources.lines().any(|l| l == "configmaps"),
        "{resources}"
    );
    assert!(!resources.lines().any(|l| l == "secrets"), "{resources}");
    let listed = vw().json(&["get", "configmaps", "-A", "-o", "json"]);
    let items = listed["items"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = items
        .iter()
        .map(|i| json_str(i, "/metadata/name"))
        .collect();
    assert!(
        names.contains(&"before") && names.contains(&"after"),
        "{listed}"
    );
    assert!(
        items
            .iter()
            .all(|i| json_str(i, "/metadata/annotations/kcp.io~1cluster") == consumer_lc),
        "only the consumer's configmaps: {listed}"
    );
    let in_consumer = || {
        shard
            .kubectl_cmd()
            .server(&format!("{url}/clusters/{consumer_lc}"))
    };
    in_consumer().ok(&["get", "configmap", "before", "-n", "default"]);
    let refused = in_consumer().fails(&["create", "configmap", "made", "-n", "default"]);
    assert!(
        refused.contains("failed to find suitable reason to allow access in APIBinding"),
        "{refused}"
    );

    // Rejected: the labels go, nothing is applied.
    consumer().ok(&[
        "patch",
        "apibindings.v1alpha2.apis.kcp.io",
        "cowboys",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/permissionClaims/0/state","value":"Rejected"}]"#,
    ]);
    shard.eventually("the labels removed", || {
        (label_of("before").is_none() && label_of("after").is_none()).then_some(())
    });
    let b = consumer().json(&[
        "get",
        "apibindings.v1alpha2.apis.kcp.io",
        "cowboys",
        "-o",
        "json",
    ]);
    assert_eq!(
        b["status"]["appliedPermissionClaims"]
            .as_array()
            .map(Vec::len),
        Some(0),
        "{b}"
    );
    // And the provider reads them no more.
    let refused = in_consumer().fails(&["get", "configmap", "before", "-n", "default"]);
    assert!(
        refused.contains("failed to find suitable reason to allow access in APIBinding"),
        "{refused}"
    );
}

on_both_stores!(async kube_client_and_restart);

/// The wildwest Cowboy as a Rust user writes it: a type derived with kube, not a dynamic object.
mod cowboy {
    use kube::CustomResource;
    use serde::{Deserialize, Serialize};

    #[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize)]
    #[kube(
        group = "wildwest.dev",
        version = "v1alpha1",
        kind = "Cowboy",
        namespaced,
        status = "CowboyStatus",
        schema = "disabled"
    )]
    pub struct CowboySpec {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub intent: Option<String>,
    }

    #[derive(Clone, Debug, Default, Deserialize, Serialize)]
    pub struct CowboyStatus {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub result: Option<String>,
    }
}

/// The kube crate reads and writes a bound resource through a derived type (create, get, list,
/// merge patch, status, server-side apply, watch, delete); a SIGKILLed shard comes back with every
/// binding still Bound, its objects, its locks and its discovery.
async fn kube_client_and_restart(store: StoreKind) {
    use cowboy::{Cowboy, CowboySpec, CowboyStatus};
    use futures::StreamExt as _;
    use kube::api::{
        Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
    };

    let mut shard = Shard::start(store);
    for ws in ["provider", "consumer", "second-consumer"] {
        create_ready_workspace(&shard, ws);
    }
    publish(&shard, "root:provider", "today.cowboys.wildwest.dev");
    for consumer in ["root:consumer", "root:second-consumer"] {
        bind_and_wait(&shard, consumer, "root:provider");
    }

    let cowboys: Api<Cowboy> = Api::namespaced(
        shard.kube_client_at("root", "root:consumer").await,
        "default",
    );
    let lucky = Cowboy::new(
        "lucky",
        CowboySpec {
            intent: Some("ride".into()),
        },
    );
    let created = cowboys
        .create(&PostParams::default(), &lucky)
        .await
        .unwrap_or_else(|e| panic!("create a Cowboy: {e}\n{}", shard.logs()));
    assert!(created.metadata.uid.is_some() && created.metadata.resource_version.is_some());
    let got = cowboys.get("lucky").await.expect("get the Cowboy");
    assert_eq!(got.spec.intent.as_deref(), Some("ride"));

    // A watch from the list's revision sees the next change.
    let listed = cowboys
        .list(&ListParams::default())
        .await
        .expect("list Cowboys");
    assert_eq!(listed.items.len(), 1);
    let revision = listed.metadata.resource_version.clone().unwrap_or_default();
    let mut events = cowboys
        .watch(&WatchParams::default().timeout(30), &revision)
        .await
        .expect("watch Cowboys")
        .boxed();

    let patched = cowboys
        .patch(
            "lucky",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"intent": "rope"}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(patched.spec.intent.as_deref(), Some("rope"));
    match events.next().await {
        Some(Ok(WatchEvent::Modified(seen))) => {
            assert_eq!(seen.spec.intent.as_deref(), Some("rope"))
        }
        other => panic!("expected the patch as MODIFIED, got {other:?}"),
    }
    drop(events);

    // The status subresource: its own writes, and the spec ignored there.
    let mut with_status = cowboys.get("lucky").await.expect("get");
    with_status.status = Some(CowboyStatus {
        result: Some("won".into()),
    });
    with_status.spec.intent = Some("ignored".into());
    let stored = cowboys
        .replace_status("lucky", &PostParams::default(), &with_status)
        .await
        .expect("replace status");
    assert_eq!(stored.status.and_then(|s| s.result).as_deref(), Some("won"));
    assert_eq!(stored.spec.intent.as_deref(), Some("rope"));

    // Server-side apply of a second Cowboy with a field manager.
    let apply = serde_json::json!({
        "apiVersion": "wildwest.dev/v1alpha1",
        "kind": "Cowboy",
        "metadata": {"name": "dusty"},
        "spec": {"intent": "herd"},
    });
    let applied = cowboys
        .patch(
            "dusty",
            &PatchParams::apply("kube-e2e"),
            &Patch::Apply(&apply),
        )
        .await
        .expect("server-side apply");
    assert_eq!(applied.spec.intent.as_deref(), Some("herd"));
    let managers: Vec<_> = applied
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert!(managers.iter().any(|m| m == "kube-e2e"), "{managers:?}");
    let second: Api<Cowboy> = Api::namespaced(
        shard.kube_client_at("root", "root:second-consumer").await,
        "default",
    );
    second
        .create(
            &PostParams::default(),
            &Cowboy::new("slim", CowboySpec::default()),
        )
        .await
        .expect("a Cowboy in the second consumer");
    cowboys
        .delete("dusty", &DeleteParams::default())
        .await
        .expect("delete");

    // SIGKILL and start again on the same data.
    shard.kill9();
    shard.start_again();

    for consumer in ["root:consumer", "root:second-consumer"] {
        let b = shard.kubectl_cmd().cluster(consumer).json(&[
            "get",
            "apibinding",
            "cowboys",
            "-o",
            "json",
        ]);
        assert_eq!(b["status"]["phase"], "Bound", "{consumer}: {b}");
        assert_eq!(
            condition(&b, "Ready").map(|c| c["status"].clone()),
            Some("True".into()),
            "{consumer}: {b}"
        );
    }
    let cowboys: Api<Cowboy> = Api::namespaced(
        shard.kube_client_at("root", "root:consumer").await,
        "default",
    );
    let names: Vec<String> = cowboys
        .list(&ListParams::default())
        .await
        .unwrap_or_else(|e| panic!("list after the restart: {e}\n{}", shard.logs()))
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(names, ["lucky"]);
    let lucky = cowboys.get("lucky").await.expect("get after the restart");
    assert_eq!(lucky.spec.intent.as_deref(), Some("rope"));
    assert_eq!(lucky.status.and_then(|s| s.result).as_deref(), Some("won"));
    let second: Api<Cowboy> = Api::namespaced(
        shard.kube_client_at("root", "root:second-consumer").await,
        "default",
    );
    assert!(second.get("slim").await.is_ok());
    cowboys
        .create(
            &PostParams::default(),
            &Cowboy::new("kid", CowboySpec::default()),
        )
        .await
        .expect("create after the restart");

    // The locks came back with the bindings: a CRD over the bound resource is still refused.
    let consumer = shard.kubectl_cmd().cluster("root:consumer");
    let crd = shard.write_file("crd.yaml", LOCAL_CRD);
    let refused = consumer.fails(&["create", "-f", crd.to_str().unwrap_or_default()]);
    assert!(
        refused.contains("cannot create because resource is bound by APIBinding \"cowboys\""),
        "{refused}"
    );
    let resources = consumer.ok(&["api-resources", "--api-group=wildwest.dev"]);
    assert!(resources.contains("cowboys"), "{resources}");
}
