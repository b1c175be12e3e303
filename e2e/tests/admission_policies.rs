//! ValidatingAdmissionPolicies and their bindings in a logical cluster, through the real binary
//! with kubectl, on both stores: CEL validations with and without messages, a binding's
//! namespaceSelector, Deny vs Warn (a `Warning` header), failurePolicy on expression errors, and isolation between LCs;
//! params (`paramKind` + a binding's `paramRef`, by name or selector, with parameterNotFoundAction)
//! and `variables`.

use kcp_e2e::{Shard, StoreKind, on_both_stores};
use serde_json::{Value, json};

on_both_stores!(validating_admission_policies, params_and_variables);

fn apply(shard: &Shard, cluster: &str, file: &str, obj: &Value) {
    let path = shard.write_file(file, &obj.to_string());
    shard
        .kubectl_cmd()
        .cluster(cluster)
        .ok(&["apply", "-f", path.to_str().expect("utf-8")]);
}

/// `kubectl create -f` of a ConfigMap; whether it succeeded, and the output.
fn create_configmap(
    shard: &Shard,
    cluster: &str,
    name: &str,
    ns: &str,
    data: Value,
    dry: bool,
) -> (bool, String) {
    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data});
    let path = shard.write_file(&format!("{name}.json"), &obj.to_string());
    let mut args = vec!["create", "-f", path.to_str().expect("utf-8")];
    if dry {
        args.push("--dry-run=server");
    }
    let out = shard.kubectl_cmd().cluster(cluster).run(&args);
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn policy(name: &str, failure_policy: &str, validations: Value) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": failure_policy,
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
            "validations": validations,
        },
    })
}

fn binding(name: &str, policy: &str, actions: &[&str], match_resources: Value) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy, "validationActions": actions, "matchResources": match_resources},
    })
}

fn validating_admission_policies(store: StoreKind) {
    let shard = Shard::start(store);
    let k = || shard.kubectl_cmd().cluster("root");
    k().ok(&["create", "namespace", "prod"]);
    k().ok(&["label", "namespace", "prod", "env=prod"]);
    k().ok(&["create", "namespace", "dev"]);

    apply(
        &shard,
        "root",
        "policy.json",
        &policy(
            "cm-rules",
            "Fail",
            json!([
                {"expression": "!has(object.data) || !('forbidden' in object.data)", "message": "no forbidden key"},
                {"expression": "object.metadata.name != 'reserved'"},
            ]),
        ),
    );
    let prod_only = json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}});
    apply(
        &shard,
        "root",
        "binding.json",
        &binding("cm-rules-binding", "cm-rules", &["Deny"], prod_only.clone()),
    );

    let out = shard.eventually("the policy is in effect", || {
        let (ok, out) = create_configmap(
            &shard,
            "root",
            "bad",
            "prod",
            json!({"forbidden": "x"}),
            true,
        );
        (!ok).then_some(out)
    });
    // kubectl renders the 422 with its one cause, as it does for kube-apiserver.
    assert!(
        out.contains(r#"The configmaps "bad" is invalid: : ValidatingAdmissionPolicy 'cm-rules' with binding 'cm-rules-binding' denied request: no forbidden key"#),
        "{out}"
    );
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"}, "data": {"forbidden": "x"}});
    let (code, status) = shard.curl(
        "POST",
        "/clusters/root/api/v1/namespaces/prod/configmaps?dryRun=All",
        Some(("application/json", &body.to_string())),
    );
    let status: Value = serde_json::from_str(&status).unwrap_or_default();
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid", "{status}");
    assert_eq!(
        status["message"],
        "configmaps \"bad\" is forbidden: ValidatingAdmissionPolicy 'cm-rules' with binding 'cm-rules-binding' denied request: no forbidden key"
    );
    let (ok, out) = create_configmap(&shard, "root", "reserved", "prod", json!({}), false);
    assert!(
        !ok && out
            .contains("denied request: failed expression: object.metadata.name != 'reserved'"),
        "{out}"
    );
    k().fails(&["get", "configmap", "reserved", "-n", "prod"]);
    // The binding selects namespaces labelled env=prod only.
    assert!(
        create_configmap(
            &shard,
            "root",
            "bad",
            "dev",
            json!({"forbidden": "x"}),
            false
        )
        .0
    );
    assert!(create_configmap(&shard, "root", "good", "prod", json!({"a": "b"}), false).0);
    // Updates are validated too.
    let out = k().fails(&[
        "patch",
        "configmap",
        "good",
        "-n",
        "prod",
        "--type=merge",
        "-p",
        r#"{"data":{"forbidden":"y"}}"#,
    ]);
    assert!(out.contains("no forbidden key"), "{out}");

    // The same objects in another logical cluster are not subject to root's policies.
    let lc = shard.write_file("lc.json", r#"{"apiVersion":"core.kcp.io/v1alpha1","kind":"LogicalCluster","metadata":{"name":"cluster"}}"#);
    shard
        .kubectl_cmd()
        .context("system:admin")
        .cluster("second")
        .ok(&["create", "-f", lc.to_str().expect("utf-8")]);
    shard.eventually("namespace default in second", || {
        shard
            .kubectl_cmd()
            .cluster("second")
            .run(&["get", "ns", "default"])
            .status
            .success()
            .then_some(())
    });
    let second = || shard.kubectl_cmd().cluster("second");
    second().ok(&["create", "namespace", "prod"]);
    second().ok(&["label", "namespace", "prod", "env=prod"]);
    assert!(
        create_configmap(
            &shard,
            "second",
            "bad",
            "prod",
            json!({"forbidden": "x"}),
            false
        )
        .0
    );

    // Warn only: the write goes through.
    apply(
        &shard,
        "root",
        "binding.json",
        &binding("cm-rules-binding", "cm-rules", &["Warn"], prod_only),
    );
    let out = shard.eventually("the Warn binding is in effect", || {
        let (ok, out) = create_configmap(
            &shard,
            "root",
            "warned",
            "prod",
            json!({"forbidden": "x"}),
            false,
        );
        ok.then_some(out)
    });
    assert!(
        out.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'cm-rules' with binding 'cm-rules-binding': no forbidden key"),
        "{out}"
    );
    k().ok(&[
        "delete",
        "validatingadmissionpolicybinding",
        "cm-rules-binding",
    ]);

    // An expression that fails to evaluate denies under failurePolicy Fail, not under Ignore.
    let broken = |policy_name: &str, failure: &str| {
        policy(
            policy_name,
            failure,
            json!([{"expression": "object.spec.replicas > 1"}]),
        )
    };
    apply(&shard, "root", "broken.json", &broken("broken", "Fail"));
    apply(
        &shard,
        "root",
        "broken-binding.json",
        &binding("broken-binding", "broken", &["Deny"], json!({})),
    );
    let out = shard.eventually("the broken policy is in effect", || {
        let (ok, out) = create_configmap(&shard, "root", "c1", "dev", json!({}), true);
        (!ok).then_some(out)
    });
    assert!(out.contains("ValidatingAdmissionPolicy 'broken' with binding 'broken-binding' denied request: expression 'object.spec.replicas > 1' resulted in error"), "{out}");
    apply(&shard, "root", "broken.json", &broken("broken", "Ignore"));
    shard.eventually("failurePolicy Ignore is in effect", || {
        create_configmap(&shard, "root", "c2", "dev", json!({}), false)
            .0
            .then_some(())
    });

    // Bindings are validated: Deny and Warn together say the same thing twice.
    let both = binding("both", "cm-rules", &["Deny", "Warn"], json!({}));
    let path = shard.write_file("both.json", &both.to_string());
    let out = k().fails(&["create", "-f", path.to_str().expect("utf-8")]);
    assert!(out.contains("must not contain both Deny and Warn"), "{out}");
}

/// Secrets in namespace `limited` may hold at most `params.data.max` keys, read from a ConfigMap
/// param; the count is a variable.
fn params_and_variables(store: StoreKind) {
    let shard = Shard::start(store);
    let k = || shard.kubectl_cmd().cluster("root");
    k().ok(&["create", "namespace", "limited"]);
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "key-limit"},
        "spec": {
            "failurePolicy": "Fail",
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["secrets"]}]},
            "variables": [
                {"name": "keys", "expression": "has(object.data) ? size(object.data) : 0"},
                {"name": "allowed", "expression": "int(params.data.max)"},
            ],
            "validations": [{"expression": "variables.keys <= variables.allowed", "message": "too many keys"}],
        },
    });
    apply(&shard, "root", "policy.json", &policy);
    let binding = |name: &str, param_ref: Value| {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "policyName": "key-limit",
                "validationActions": ["Deny"],
                "paramRef": param_ref,
                "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "limited"}}},
            },
        })
    };
    apply(
        &shard,
        "root",
        "binding.json",
        &binding(
            "by-name",
            json!({"name": "limits", "parameterNotFoundAction": "Deny"}),
        ),
    );
    let secret = |name: &str, keys: &[&str]| {
        let mut args = vec!["-n", "limited", "create", "secret", "generic", name];
        let literals: Vec<String> = keys
            .iter()
            .map(|k| format!("--from-literal={k}=v"))
            .collect();
        args.extend(literals.iter().map(String::as_str));
        let out = k().run(&args);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    // No param yet: Deny says so.
    let (ok, err) = shard.eventually("the binding is in force", || {
        let (ok, err) = secret("s0", &["a"]);
        (!ok).then_some((ok, err))
    });
    assert!(!ok);
    assert!(
        err.contains("no params found for policy binding with `Deny` parameterNotFoundAction"),
        "{err}"
    );
    // With the param (in the request's namespace), the variables decide.
    k().ok(&[
        "-n",
        "limited",
        "create",
        "configmap",
        "limits",
        "--from-literal=max=1",
    ]);
    let (ok, err) = shard.eventually("one key allowed", || {
        let (ok, err) = secret("s1", &["a"]);
        ok.then_some((ok, err))
    });
    assert!(ok, "{err}");
    let (ok, err) = secret("s2", &["a", "b"]);
    assert!(!ok, "two keys must be refused");
    assert!(
        err.contains("ValidatingAdmissionPolicy 'key-limit' with binding 'by-name' denied request: too many keys"),
        "{err}"
    );
    // A selector picks params too; a binding that allows a missing param lets requests through.
    k().ok(&["delete", "validatingadmissionpolicybinding", "by-name"]);
    apply(
        &shard,
        "root",
        "binding2.json",
        &binding(
            "by-label",
            json!({"selector": {"matchLabels": {"role": "limit"}}, "parameterNotFoundAction": "Allow"}),
        ),
    );
    let (ok, err) = shard.eventually("no labelled param: allowed", || {
        let (ok, err) = secret("s3", &["a", "b"]);
        ok.then_some((ok, err))
    });
    assert!(ok, "{err}");
    k().ok(&[
        "-n",
        "limited",
        "label",
        "configmap",
        "limits",
        "role=limit",
    ]);
    let (ok, err) = shard.eventually("the labelled param applies", || {
        let (ok, err) = secret("s4", &["a", "b"]);
        (!ok).then_some((ok, err))
    });
    assert!(!ok);
    assert!(err.contains("too many keys"), "{err}");
}
