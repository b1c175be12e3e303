//! The kinds beyond Namespace, ConfigMap, Secret and the reviews: each encoded with the prost
//! structs the way Go writes it, decoded, and compared with the JSON Go's encoder gives (for
//! kubectl's generators, byte for byte what `kubectl create ... --dry-run=client -o json`
//! prints, minus indentation).

use std::collections::BTreeMap;

use prost::Message as _;
use serde_json::{Value, json};

use super::super::types::*;
use super::super::*;

/// ObjectMeta as Go's marshaller writes it for a new object: every non-pointer field.
fn go_meta(name: &str, namespace: &str) -> Option<ObjectMeta> {
    Some(ObjectMeta {
        name: Some(name.into()),
        generate_name: Some(String::new()),
        namespace: Some(namespace.into()),
        self_link: Some(String::new()),
        uid: Some(String::new()),
        resource_version: Some(String::new()),
        generation: Some(0),
        creation_timestamp: Some(Time::default()),
        ..Default::default()
    })
}

fn roundtrip(api_version: &str, kind: &str, message: &impl prost::Message) -> Value {
    decode(
        &encode_envelope(api_version, kind, &message.encode_to_vec()),
        None,
    )
    .unwrap()
}

fn text(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

fn quantity(s: &str) -> Quantity {
    Quantity {
        string: Some(s.into()),
    }
}

fn s(v: &str) -> Option<String> {
    Some(v.into())
}

const RBAC: &str = "rbac.authorization.k8s.io/v1";

#[test]
fn kubectl_create_serviceaccount() {
    let sa = ServiceAccount {
        metadata: go_meta("x", ""),
        ..Default::default()
    };
    assert_eq!(
        text(&roundtrip("v1", "ServiceAccount", &sa)),
        r#"{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"name":"x","creationTimestamp":null}}"#
    );

    let full = ServiceAccount {
        metadata: go_meta("robot", "ns"),
        secrets: vec![ObjectReference {
            kind: s("Secret"),
            name: s("robot-token"),
            namespace: s(""),
            ..Default::default()
        }],
        image_pull_secrets: vec![LocalObjectReference { name: s("pull") }],
        automount_service_account_token: Some(false),
    };
    assert_eq!(
        roundtrip("v1", "ServiceAccount", &full),
        json!({"kind": "ServiceAccount", "apiVersion": "v1",
            "metadata": {"name": "robot", "namespace": "ns", "creationTimestamp": null},
            "secrets": [{"kind": "Secret", "name": "robot-token"}],
            "imagePullSecrets": [{"name": "pull"}],
            "automountServiceAccountToken": false})
    );
}

#[test]
fn kubectl_create_quota() {
    // `kubectl create quota q --hard=count/configmaps=3,secrets=2 --scopes=BestEffort`
    let quota = ResourceQuota {
        metadata: go_meta("q", ""),
        spec: Some(ResourceQuotaSpec {
            hard: BTreeMap::from([
                ("count/configmaps".into(), quantity("3")),
                ("secrets".into(), quantity("2")),
            ]),
            scopes: vec!["BestEffort".into()],
            scope_selector: None,
        }),
        status: Some(ResourceQuotaStatus::default()),
    };
    assert_eq!(
        text(&roundtrip("v1", "ResourceQuota", &quota)),
        r#"{"kind":"ResourceQuota","apiVersion":"v1","metadata":{"name":"q","creationTimestamp":null},"spec":{"hard":{"count/configmaps":"3","secrets":"2"},"scopes":["BestEffort"]},"status":{}}"#
    );
}

#[test]
fn quota_scope_selector_status_and_quantities() {
    let quota = ResourceQuota {
        metadata: None,
        spec: Some(ResourceQuotaSpec {
            hard: BTreeMap::from([
                ("requests.cpu".into(), quantity("500m")),
                // A Quantity message without its string is Go's zero Quantity.
                ("pods".into(), Quantity { string: None }),
            ]),
            scopes: vec![],
            scope_selector: Some(ScopeSelector {
                match_expressions: vec![ScopedResourceSelectorRequirement {
                    scope_name: s("PriorityClass"),
                    operator: s("In"),
                    values: vec!["high".into()],
                }],
            }),
        }),
        status: Some(ResourceQuotaStatus {
            hard: BTreeMap::from([("pods".into(), quantity("10"))]),
            used: BTreeMap::from([("pods".into(), quantity("1Ki"))]),
        }),
    };
    assert_eq!(
        roundtrip("v1", "ResourceQuota", &quota),
        json!({"kind": "ResourceQuota", "apiVersion": "v1", "metadata": {"creationTimestamp": null},
            "spec": {"hard": {"pods": "0", "requests.cpu": "500m"},
                "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}},
            "status": {"hard": {"pods": "10"}, "used": {"pods": "1Ki"}}})
    );

    // An empty quantity string does not parse in Go either.
    let bad = ResourceQuota {
        spec: Some(ResourceQuotaSpec {
            hard: BTreeMap::from([("pods".into(), quantity(""))]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let err = decode(
        &encode_envelope("v1", "ResourceQuota", &bad.encode_to_vec()),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(err, ProtobufError::Malformed { ref kind, ref message }
            if kind == "ResourceQuota" && message.contains("pods")),
        "{err:?}"
    );
}

#[test]
fn limit_range() {
    let empty = LimitRange {
        metadata: go_meta("l", "ns"),
        spec: Some(LimitRangeSpec::default()),
    };
    assert_eq!(
        text(&roundtrip("v1", "LimitRange", &empty)),
        r#"{"kind":"LimitRange","apiVersion":"v1","metadata":{"name":"l","namespace":"ns","creationTimestamp":null},"spec":{"limits":null}}"#
    );
    let limits = LimitRange {
        metadata: go_meta("l", ""),
        spec: Some(LimitRangeSpec {
            limits: vec![LimitRangeItem {
                r#type: s("Container"),
                max: BTreeMap::from([("memory".into(), quantity("1Gi"))]),
                default: BTreeMap::from([("cpu".into(), quantity("100m"))]),
                ..Default::default()
            }],
        }),
    };
    assert_eq!(
        text(&roundtrip("v1", "LimitRange", &limits)["spec"]),
        r#"{"limits":[{"type":"Container","max":{"memory":"1Gi"},"default":{"cpu":"100m"}}]}"#
    );
}

#[test]
fn core_event() {
    let event = Event {
        metadata: go_meta("e.1", "default"),
        involved_object: Some(ObjectReference {
            kind: s("ConfigMap"),
            namespace: s("default"),
            name: s("c"),
            uid: s(""),
            api_version: s("v1"),
            resource_version: s(""),
            field_path: s(""),
        }),
        reason: s("Created"),
        message: s(""),
        source: Some(EventSource {
            component: s("test"),
            host: s(""),
        }),
        first_timestamp: Some(Time {
            seconds: Some(86_400),
            nanos: Some(0),
        }),
        last_timestamp: Some(Time::default()),
        count: Some(0),
        r#type: s("Normal"),
        event_time: Some(Time::default()),
        series: Some(EventSeries {
            count: Some(0),
            last_observed_time: None,
        }),
        action: s(""),
        related: None,
        reporting_component: s(""),
        reporting_instance: s(""),
    };
    assert_eq!(
        text(&roundtrip("v1", "Event", &event)),
        concat!(
            r#"{"kind":"Event","apiVersion":"v1","metadata":{"name":"e.1","namespace":"default","creationTimestamp":null},"#,
            r#""involvedObject":{"kind":"ConfigMap","namespace":"default","name":"c","apiVersion":"v1"},"#,
            r#""reason":"Created","source":{"component":"test"},"firstTimestamp":"1970-01-02T00:00:00Z","lastTimestamp":null,"#,
            r#""type":"Normal","eventTime":null,"series":{"lastObservedTime":null},"reportingComponent":"","reportingInstance":""}"#
        )
    );
}

#[test]
fn events_v1_event() {
    let event = EventsEvent {
        metadata: go_meta("e.2", "default"),
        event_time: Some(Time {
            seconds: Some(1_700_000_000),
            nanos: Some(123_456_789),
        }),
        series: Some(EventSeries {
            count: Some(0),
            last_observed_time: Some(Time::default()),
        }),
        reporting_controller: s("example.com/ctrl"),
        reporting_instance: s("ctrl-1"),
        action: s("Sync"),
        reason: s("Synced"),
        regarding: Some(ObjectReference {
            kind: s("Lease"),
            name: s("l"),
            ..Default::default()
        }),
        related: Some(ObjectReference::default()),
        note: s(""),
        r#type: s("Normal"),
        deprecated_source: None,
        deprecated_first_timestamp: None,
        deprecated_last_timestamp: Some(Time::default()),
        deprecated_count: Some(2),
    };
    assert_eq!(
        roundtrip("events.k8s.io/v1", "Event", &event),
        json!({"kind": "Event", "apiVersion": "events.k8s.io/v1",
            "metadata": {"name": "e.2", "namespace": "default", "creationTimestamp": null},
            "eventTime": "2023-11-14T22:13:20.123456Z",
            "series": {"count": 0, "lastObservedTime": null},
            "reportingController": "example.com/ctrl", "reportingInstance": "ctrl-1",
            "action": "Sync", "reason": "Synced",
            "regarding": {"kind": "Lease", "name": "l"}, "related": {},
            "type": "Normal", "deprecatedSource": {},
            "deprecatedFirstTimestamp": null, "deprecatedLastTimestamp": null,
            "deprecatedCount": 2})
    );
}

#[test]
fn lease_pointers_and_micro_times() {
    let lease = Lease {
        metadata: go_meta("holder", "kube-system"),
        spec: Some(LeaseSpec {
            holder_identity: s(""),
            lease_duration_seconds: Some(15),
            acquire_time: Some(Time {
                seconds: Some(0),
                nanos: Some(999),
            }),
            renew_time: Some(Time::default()),
            lease_transitions: Some(0),
            strategy: None,
            preferred_holder: None,
        }),
    };
    assert_eq!(
        text(&roundtrip("coordination.k8s.io/v1", "Lease", &lease)),
        concat!(
            r#"{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"holder","namespace":"kube-system","creationTimestamp":null},"#,
            r#""spec":{"holderIdentity":"","leaseDurationSeconds":15,"acquireTime":"1970-01-01T00:00:00.000000Z","renewTime":null,"leaseTransitions":0}}"#
        )
    );
    let bare = Lease::default();
    assert_eq!(
        roundtrip("coordination.k8s.io/v1", "Lease", &bare)["spec"],
        json!({})
    );
}

#[test]
fn micro_time_normalises_like_go() {
    let cases = [
        (None, None, json!(null)),
        (Some(-62_135_596_800), Some(0), json!(null)),
        (Some(-62_135_596_801), Some(1_000_000_000), json!(null)),
        (
            Some(0),
            Some(1_500_000_000),
            json!("1970-01-01T00:00:01.500000Z"),
        ),
        (Some(1), Some(-1), json!("1970-01-01T00:00:00.999999Z")),
        (None, Some(1_000), json!("1970-01-01T00:00:00.000001Z")),
    ];
    for (seconds, nanos, want) in cases {
        assert_eq!(
            super::super::json::micro_time(&Time { seconds, nanos }).unwrap(),
            want,
            "{seconds:?} {nanos:?}"
        );
    }
    assert!(
        super::super::json::micro_time(&Time {
            seconds: Some(i64::MAX),
            nanos: Some(1_000_000_000),
        })
        .is_err()
    );
}

#[test]
fn kubectl_create_role() {
    // `kubectl create role r --verb=get,list --resource=configmaps,deployments.apps --resource-name=a`
    let role = Role {
        metadata: go_meta("r", ""),
        rules: vec![
            PolicyRule {
                verbs: vec!["get".into(), "list".into()],
                api_groups: vec![String::new()],
                resources: vec!["configmaps".into()],
                resource_names: vec!["a".into()],
                non_resource_urls: vec![],
            },
            PolicyRule {
                verbs: vec!["get".into(), "list".into()],
                api_groups: vec!["apps".into()],
                resources: vec!["deployments".into()],
                resource_names: vec!["a".into()],
                non_resource_urls: vec![],
            },
        ],
    };
    assert_eq!(
        text(&roundtrip(RBAC, "Role", &role)),
        concat!(
            r#"{"kind":"Role","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"r","creationTimestamp":null},"rules":["#,
            r#"{"verbs":["get","list"],"apiGroups":[""],"resources":["configmaps"],"resourceNames":["a"]},"#,
            r#"{"verbs":["get","list"],"apiGroups":["apps"],"resources":["deployments"],"resourceNames":["a"]}]}"#
        )
    );
    // No rules and a rule without verbs: both fields lack `omitempty`.
    let empty = Role {
        metadata: go_meta("e", ""),
        rules: vec![],
    };
    assert_eq!(roundtrip(RBAC, "Role", &empty)["rules"], Value::Null);
    let no_verbs = Role {
        metadata: None,
        rules: vec![PolicyRule {
            non_resource_urls: vec!["/healthz".into()],
            ..Default::default()
        }],
    };
    assert_eq!(
        roundtrip(RBAC, "Role", &no_verbs)["rules"],
        json!([{"verbs": null, "nonResourceURLs": ["/healthz"]}])
    );
}

#[test]
fn kubectl_create_clusterrole_with_aggregation_rule() {
    // `kubectl create clusterrole c --aggregation-rule=a=b,c=d`
    let role = ClusterRole {
        metadata: go_meta("c", ""),
        rules: vec![],
        aggregation_rule: Some(AggregationRule {
            cluster_role_selectors: vec![LabelSelector {
                match_labels: BTreeMap::from([("a".into(), "b".into()), ("c".into(), "d".into())]),
                match_expressions: vec![],
            }],
        }),
    };
    assert_eq!(
        text(&roundtrip(RBAC, "ClusterRole", &role)),
        r#"{"kind":"ClusterRole","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":"c","creationTimestamp":null},"rules":null,"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"a":"b","c":"d"}}]}}"#
    );
    let expressions = ClusterRole {
        metadata: None,
        rules: vec![PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/metrics".into()],
            ..Default::default()
        }],
        aggregation_rule: Some(AggregationRule {
            cluster_role_selectors: vec![
                LabelSelector {
                    match_labels: BTreeMap::new(),
                    match_expressions: vec![SelectorRequirement {
                        key: s("tier"),
                        operator: s("Exists"),
                        values: vec![],
                    }],
                },
                LabelSelector::default(),
            ],
        }),
    };
    let got = roundtrip(RBAC, "ClusterRole", &expressions);
    assert_eq!(
        got["rules"],
        json!([{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}])
    );
    assert_eq!(
        got["aggregationRule"],
        json!({"clusterRoleSelectors": [{"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {}]})
    );
    let no_rule = ClusterRole {
        aggregation_rule: None,
        ..expressions
    };
    assert!(
        roundtrip(RBAC, "ClusterRole", &no_rule)
            .get("aggregationRule")
            .is_none()
    );
}

fn subject(kind: &str, api_group: &str, name: &str, namespace: &str) -> Subject {
    Subject {
        kind: s(kind),
        api_group: s(api_group),
        name: s(name),
        namespace: s(namespace),
    }
}

#[test]
fn kubectl_create_bindings() {
    // `kubectl create clusterrolebinding b --clusterrole=c --user=u --group=g --serviceaccount=ns:sa`
    let binding = RoleBinding {
        metadata: go_meta("b", ""),
        subjects: vec![
            subject("User", "rbac.authorization.k8s.io", "u", ""),
            subject("Group", "rbac.authorization.k8s.io", "g", ""),
            subject("ServiceAccount", "", "sa", "ns"),
        ],
        role_ref: Some(RoleRef {
            api_group: s("rbac.authorization.k8s.io"),
            kind: s("ClusterRole"),
            name: s("c"),
        }),
    };
    let subjects = concat!(
        r#""subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"u"},"#,
        r#"{"kind":"Group","apiGroup":"rbac.authorization.k8s.io","name":"g"},"#,
        r#"{"kind":"ServiceAccount","name":"sa","namespace":"ns"}],"#,
        r#""roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"c"}}"#
    );
    assert_eq!(
        text(&roundtrip(RBAC, "ClusterRoleBinding", &binding)),
        format!(
            r#"{{"kind":"ClusterRoleBinding","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{{"name":"b","creationTimestamp":null}},{subjects}"#
        )
    );
    // The same message is a RoleBinding when the envelope says so.
    assert_eq!(
        text(&roundtrip(RBAC, "RoleBinding", &binding)),
        format!(
            r#"{{"kind":"RoleBinding","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{{"name":"b","creationTimestamp":null}},{subjects}"#
        )
    );
    let bare = RoleBinding::default();
    assert_eq!(
        roundtrip(RBAC, "RoleBinding", &bare),
        json!({"kind": "RoleBinding", "apiVersion": RBAC, "metadata": {"creationTimestamp": null},
            "roleRef": {"apiGroup": "", "kind": "", "name": ""}})
    );
}

#[test]
fn certificate_signing_request() {
    let csr = CertificateSigningRequest {
        metadata: go_meta("csr", ""),
        spec: Some(CertificateSigningRequestSpec {
            request: Some(b"-----BEGIN".to_vec()),
            username: s(""),
            uid: s(""),
            groups: vec![],
            usages: vec!["client auth".into()],
            extra: BTreeMap::from([(
                "scopes".into(),
                ExtraValue {
                    items: vec!["x".into()],
                },
            )]),
            signer_name: s("kubernetes.io/kube-apiserver-client"),
            expiration_seconds: Some(600),
        }),
        status: Some(CertificateSigningRequestStatus {
            conditions: vec![CertificateSigningRequestCondition {
                r#type: s("Approved"),
                reason: s("ok"),
                message: s(""),
                last_update_time: Some(Time {
                    seconds: Some(0),
                    nanos: None,
                }),
                last_transition_time: None,
                status: s("True"),
            }],
            certificate: Some(vec![]),
        }),
    };
    assert_eq!(
        text(&roundtrip(
            "certificates.k8s.io/v1",
            "CertificateSigningRequest",
            &csr
        )),
        concat!(
            r#"{"kind":"CertificateSigningRequest","apiVersion":"certificates.k8s.io/v1","metadata":{"name":"csr","creationTimestamp":null},"#,
            r#""spec":{"request":"LS0tLS1CRUdJTg==","signerName":"kubernetes.io/kube-apiserver-client","expirationSeconds":600,"#,
            r#""usages":["client auth"],"extra":{"scopes":["x"]}},"#,
            r#""status":{"conditions":[{"type":"Approved","status":"True","reason":"ok","lastUpdateTime":"1970-01-01T00:00:00Z","lastTransitionTime":null}]}}"#
        )
    );
    // `request` lacks `omitempty`: absent is null, empty is "".
    let mut bare = CertificateSigningRequest::default();
    let got = roundtrip("certificates.k8s.io/v1", "CertificateSigningRequest", &bare);
    assert_eq!(got["spec"], json!({"request": null, "signerName": ""}));
    assert_eq!(got["status"], json!({}));
    bare.spec = Some(CertificateSigningRequestSpec {
        request: Some(vec![]),
        ..Default::default()
    });
    assert_eq!(
        roundtrip("certificates.k8s.io/v1", "CertificateSigningRequest", &bare)["spec"]["request"],
        ""
    );
}

const ADMISSION: &str = "admissionregistration.k8s.io/v1";

#[test]
fn validating_webhook_configuration() {
    let config = ValidatingWebhookConfiguration {
        metadata: go_meta("v", ""),
        webhooks: vec![ValidatingWebhook {
            name: s("v.example.com"),
            client_config: Some(WebhookClientConfig {
                service: Some(ServiceReference {
                    namespace: s("ns"),
                    name: s("svc"),
                    path: s("/validate"),
                    port: Some(443),
                }),
                ca_bundle: Some(b"CA".to_vec()),
                url: None,
            }),
            rules: vec![RuleWithOperations {
                operations: vec!["CREATE".into(), "UPDATE".into()],
                rule: Some(Rule {
                    api_groups: vec![String::new()],
                    api_versions: vec!["v1".into()],
                    resources: vec!["configmaps".into()],
                    scope: s("*"),
                }),
            }],
            failure_policy: s("Fail"),
            namespace_selector: Some(LabelSelector::default()),
            side_effects: s("None"),
            timeout_seconds: Some(10),
            admission_review_versions: vec!["v1".into()],
            match_policy: s("Equivalent"),
            object_selector: Some(LabelSelector {
                match_labels: BTreeMap::from([("app".into(), "web".into())]),
                match_expressions: vec![],
            }),
            match_conditions: vec![MatchCondition {
                name: s("not-system"),
                expression: s("true"),
            }],
        }],
    };
    assert_eq!(
        text(&roundtrip(
            ADMISSION,
            "ValidatingWebhookConfiguration",
            &config
        )),
        concat!(
            r#"{"kind":"ValidatingWebhookConfiguration","apiVersion":"admissionregistration.k8s.io/v1","metadata":{"name":"v","creationTimestamp":null},"#,
            r#""webhooks":[{"name":"v.example.com","clientConfig":{"service":{"namespace":"ns","name":"svc","path":"/validate","port":443},"caBundle":"Q0E="},"#,
            r#""rules":[{"operations":["CREATE","UPDATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"],"scope":"*"}],"#,
            r#""failurePolicy":"Fail","matchPolicy":"Equivalent","namespaceSelector":{},"objectSelector":{"matchLabels":{"app":"web"}},"#,
            r#""sideEffects":"None","timeoutSeconds":10,"admissionReviewVersions":["v1"],"#,
            r#""matchConditions":[{"name":"not-system","expression":"true"}]}]}"#
        )
    );
}

#[test]
fn mutating_webhook_configuration() {
    let config = MutatingWebhookConfiguration {
        metadata: go_meta("m", ""),
        webhooks: vec![MutatingWebhook {
            name: s("m.example.com"),
            client_config: Some(WebhookClientConfig {
                service: None,
                ca_bundle: None,
                url: s("https://hook.example.com/mutate"),
            }),
            reinvocation_policy: s("IfNeeded"),
            ..Default::default()
        }],
    };
    // `sideEffects` and `admissionReviewVersions` lack `omitempty`.
    assert_eq!(
        roundtrip(ADMISSION, "MutatingWebhookConfiguration", &config),
        json!({"kind": "MutatingWebhookConfiguration", "apiVersion": ADMISSION,
            "metadata": {"name": "m", "creationTimestamp": null},
            "webhooks": [{"name": "m.example.com",
                "clientConfig": {"url": "https://hook.example.com/mutate"},
                "sideEffects": null, "admissionReviewVersions": null,
                "reinvocationPolicy": "IfNeeded"}]})
    );
    let bare = MutatingWebhookConfiguration::default();
    assert!(
        roundtrip(ADMISSION, "MutatingWebhookConfiguration", &bare)
            .get("webhooks")
            .is_none()
    );
}

#[test]
fn other_versions_and_kinds_stay_unsupported() {
    for (api_version, kind) in [
        ("v1", "Pod"),
        ("v1", "Role"),
        ("rbac.authorization.k8s.io/v1beta1", "Role"),
        ("rbac.authorization.k8s.io/v1", "ServiceAccount"),
        ("authorization.k8s.io/v1beta1", "SubjectAccessReview"),
        ("coordination.k8s.io/v1beta1", "Lease"),
        ("events.k8s.io/v1beta1", "Event"),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy",
        ),
    ] {
        assert!(!is_supported(api_version, kind), "{api_version} {kind}");
        assert_eq!(
            decode(&encode_envelope(api_version, kind, b""), None),
            Err(ProtobufError::UnsupportedKind {
                api_version: api_version.into(),
                kind: kind.into()
            })
        );
    }
    for (api_version, kind) in KINDS {
        assert!(is_supported(api_version, kind), "{api_version} {kind}");
        // An empty message is a valid (empty) object of every kind.
        let got = decode(&encode_envelope(api_version, kind, b""), None).unwrap();
        assert_eq!(got["kind"], *kind);
        assert_eq!(got["apiVersion"], *api_version);
        assert_eq!(got["metadata"], json!({"creationTimestamp": null}));
    }
}

/// Every kind [`decode`] knows.
pub(super) const KINDS: &[(&str, &str)] = &[
    ("v1", "Namespace"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "ServiceAccount"),
    ("v1", "ResourceQuota"),
    ("v1", "LimitRange"),
    ("v1", "Event"),
    ("events.k8s.io/v1", "Event"),
    ("coordination.k8s.io/v1", "Lease"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("certificates.k8s.io/v1", "CertificateSigningRequest"),
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
    ),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SubjectAccessReview"),
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
    ("authentication.k8s.io/v1", "SelfSubjectReview"),
    ("authentication.k8s.io/v1", "TokenReview"),
    ("authentication.k8s.io/v1", "TokenRequest"),
];
