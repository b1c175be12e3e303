use std::collections::BTreeMap;

use proptest::prelude::*;
use prost::Message as _;
use serde_json::json;

use super::types::*;
use super::*;

mod kinds;

/// `kubectl create namespace x` (kubectl 1.32), written out from the proto definitions: Go's
/// generated marshallers always write non-pointer fields, so every empty string of ObjectMeta,
/// `generation` 0, an empty `creationTimestamp`, an empty spec and a status with an empty phase
/// are on the wire.
const KUBECTL_CREATE_NAMESPACE_X: &[u8] = &[
    0x6b, 0x38, 0x73, 0x00, // magic "k8s\0"
    0x0a, 0x0f, // Unknown.typeMeta, 15 bytes
    0x0a, 0x02, b'v', b'1', // apiVersion "v1"
    0x12, 0x09, b'N', b'a', b'm', b'e', b's', b'p', b'a', b'c', b'e', // kind "Namespace"
    0x12, 0x19, // Unknown.raw, 25 bytes: Namespace
    0x0a, 0x11, // metadata, 17 bytes
    0x0a, 0x01, b'x', // name "x"
    0x12, 0x00, // generateName ""
    0x1a, 0x00, // namespace ""
    0x22, 0x00, // selfLink ""
    0x2a, 0x00, // uid ""
    0x32, 0x00, // resourceVersion ""
    0x38, 0x00, // generation 0
    0x42, 0x00, // creationTimestamp: zero time, empty message
    0x12, 0x00, // spec: no finalizers
    0x1a, 0x02, 0x0a, 0x00, // status: phase ""
    0x1a, 0x00, // Unknown.contentEncoding ""
    0x22, 0x00, // Unknown.contentType ""
];

/// `kubectl create configmap c --from-literal=a=b` (no `-n`, so no namespace in the object).
const KUBECTL_CREATE_CONFIGMAP_C: &[u8] = &[
    0x6b, 0x38, 0x73, 0x00, // magic
    0x0a, 0x0f, // typeMeta
    0x0a, 0x02, b'v', b'1', // apiVersion "v1"
    0x12, 0x09, b'C', b'o', b'n', b'f', b'i', b'g', b'M', b'a', b'p', // kind "ConfigMap"
    0x12, 0x1b, // raw, 27 bytes: ConfigMap
    0x0a, 0x11, // metadata
    0x0a, 0x01, b'c', 0x12, 0x00, 0x1a, 0x00, 0x22, 0x00, 0x2a, 0x00, 0x32, 0x00, 0x38, 0x00, 0x42,
    0x00, 0x12, 0x06, // data entry, 6 bytes
    0x0a, 0x01, b'a', // key "a"
    0x12, 0x01, b'b', // value "b"
    0x1a, 0x00, 0x22, 0x00, // contentEncoding, contentType
];

#[test]
fn kubectl_create_namespace() {
    let got = decode(KUBECTL_CREATE_NAMESPACE_X, Some(("v1", "Namespace"))).unwrap();
    let want = json!({"kind": "Namespace", "apiVersion": "v1",
        "metadata": {"name": "x", "creationTimestamp": null}, "spec": {}, "status": {}});
    assert_eq!(got, want);
    // Same key order as kubectl's JSON.
    assert_eq!(
        serde_json::to_string(&got).unwrap(),
        r#"{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"x","creationTimestamp":null},"spec":{},"status":{}}"#
    );
}

#[test]
fn kubectl_create_configmap() {
    let got = decode(KUBECTL_CREATE_CONFIGMAP_C, None).unwrap();
    assert_eq!(
        serde_json::to_string(&got).unwrap(),
        r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c","creationTimestamp":null},"data":{"a":"b"}}"#
    );
}

#[test]
fn fixtures_match_our_encoder() {
    // The hand-written bytes are what the prost structs produce with Go's always-written fields.
    let meta = |name: &str| ObjectMeta {
        name: Some(name.into()),
        generate_name: Some(String::new()),
        namespace: Some(String::new()),
        self_link: Some(String::new()),
        uid: Some(String::new()),
        resource_version: Some(String::new()),
        generation: Some(0),
        creation_timestamp: Some(Time::default()),
        ..Default::default()
    };
    let ns = Namespace {
        metadata: Some(meta("x")),
        spec: Some(NamespaceSpec::default()),
        status: Some(NamespaceStatus {
            phase: Some(String::new()),
            conditions: vec![],
        }),
    };
    assert_eq!(
        encode_envelope("v1", "Namespace", &ns.encode_to_vec()),
        KUBECTL_CREATE_NAMESPACE_X
    );
    let cm = ConfigMap {
        metadata: Some(meta("c")),
        data: BTreeMap::from([("a".into(), "b".into())]),
        ..Default::default()
    };
    assert_eq!(
        encode_envelope("v1", "ConfigMap", &cm.encode_to_vec()),
        KUBECTL_CREATE_CONFIGMAP_C
    );
}

fn full_meta() -> ObjectMeta {
    ObjectMeta {
        name: Some("n".into()),
        generate_name: Some("n-".into()),
        namespace: Some("default".into()),
        self_link: None,
        uid: Some("0b1c".into()),
        resource_version: Some("42".into()),
        generation: Some(3),
        creation_timestamp: Some(Time {
            seconds: Some(1_700_000_000),
            nanos: Some(999),
        }),
        deletion_timestamp: Some(Time {
            seconds: Some(0),
            nanos: None,
        }),
        deletion_grace_period_seconds: Some(0),
        labels: BTreeMap::from([("b".into(), "2".into()), ("a".into(), "1".into())]),
        annotations: BTreeMap::from([("k".into(), "v".into())]),
        owner_references: vec![OwnerReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            name: Some("owner".into()),
            uid: Some("u1".into()),
            controller: Some(true),
            block_owner_deletion: None,
        }],
        finalizers: vec!["f1".into(), "example.com/f2".into()],
        managed_fields: vec![ManagedFieldsEntry {
            manager: Some("kubectl".into()),
            operation: Some("Update".into()),
            api_version: Some("v1".into()),
            time: Some(Time {
                seconds: Some(86_400),
                nanos: None,
            }),
            fields_type: Some("FieldsV1".into()),
            fields_v1: Some(FieldsV1 {
                raw: Some(br#"{"f:data":{".":{}}}"#.to_vec()),
            }),
            subresource: None,
        }],
    }
}

#[test]
fn object_meta_in_full() {
    let cm = ConfigMap {
        metadata: Some(full_meta()),
        ..Default::default()
    };
    let got = decode(
        &encode_envelope("v1", "ConfigMap", &cm.encode_to_vec()),
        None,
    )
    .unwrap();
    assert_eq!(
        got["metadata"],
        json!({
            "name": "n", "generateName": "n-", "namespace": "default", "uid": "0b1c", "resourceVersion": "42",
            "generation": 3,
            "creationTimestamp": "2023-11-14T22:13:20Z",
            "deletionTimestamp": "1970-01-01T00:00:00Z",
            "deletionGracePeriodSeconds": 0,
            "labels": {"a": "1", "b": "2"},
            "annotations": {"k": "v"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "u1", "controller": true}],
            "finalizers": ["f1", "example.com/f2"],
            "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                "time": "1970-01-02T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}}}}]
        })
    );
}

#[test]
fn configmap_and_secret_bytes_are_base64() {
    let cm = ConfigMap {
        metadata: Some(ObjectMeta {
            name: Some("c".into()),
            namespace: Some("ns".into()),
            ..Default::default()
        }),
        data: BTreeMap::from([("a".into(), "b".into())]),
        binary_data: BTreeMap::from([("bin".into(), vec![0, 255, 1])]),
        immutable: Some(false),
    };
    let got = decode(
        &encode_envelope("v1", "ConfigMap", &cm.encode_to_vec()),
        None,
    )
    .unwrap();
    assert_eq!(
        got,
        json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "c", "namespace": "ns", "creationTimestamp": null},
            "immutable": false, "data": {"a": "b"}, "binaryData": {"bin": "AP8B"}})
    );

    let secret = Secret {
        metadata: Some(ObjectMeta {
            name: Some("s".into()),
            ..Default::default()
        }),
        data: BTreeMap::from([("password".into(), b"hunter2".to_vec())]),
        r#type: Some("Opaque".into()),
        string_data: BTreeMap::from([("user".into(), "admin".into())]),
        immutable: None,
    };
    let got = decode(
        &encode_envelope("v1", "Secret", &secret.encode_to_vec()),
        None,
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&got).unwrap(),
        r#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","creationTimestamp":null},"data":{"password":"aHVudGVyMg=="},"stringData":{"user":"admin"},"type":"Opaque"}"#
    );
}

#[test]
fn namespace_with_finalizers_and_conditions() {
    let ns = Namespace {
        metadata: Some(ObjectMeta {
            name: Some("x".into()),
            ..Default::default()
        }),
        spec: Some(NamespaceSpec {
            finalizers: vec!["kubernetes".into()],
        }),
        status: Some(NamespaceStatus {
            phase: Some("Active".into()),
            conditions: vec![NamespaceCondition {
                r#type: Some("NamespaceDeletionContentFailure".into()),
                status: Some("False".into()),
                last_transition_time: None,
                reason: Some(String::new()),
                message: Some("m".into()),
            }],
        }),
    };
    let got = decode(
        &encode_envelope("v1", "Namespace", &ns.encode_to_vec()),
        None,
    )
    .unwrap();
    assert_eq!(got["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(
        got["status"],
        json!({"phase": "Active", "conditions": [{"type": "NamespaceDeletionContentFailure", "status": "False",
            "lastTransitionTime": null, "message": "m"}]})
    );
}

#[test]
fn kubectl_auth_can_i() {
    // kubectl writes every string of ResourceAttributes and the whole (zero) status.
    let review = SelfSubjectAccessReview {
        metadata: Some(ObjectMeta {
            creation_timestamp: Some(Time::default()),
            ..Default::default()
        }),
        spec: Some(SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some("default".into()),
                verb: Some("create".into()),
                group: Some(String::new()),
                version: Some(String::new()),
                resource: Some("configmaps".into()),
                subresource: Some(String::new()),
                name: Some(String::new()),
                field_selector: None,
                label_selector: Some(SelectorAttributes {
                    raw_selector: Some("app=web".into()),
                    requirements: vec![SelectorRequirement {
                        key: Some("app".into()),
                        operator: Some("In".into()),
                        values: vec!["web".into()],
                    }],
                }),
            }),
            non_resource_attributes: None,
        }),
        status: Some(SubjectAccessReviewStatus {
            allowed: Some(false),
            reason: Some(String::new()),
            evaluation_error: Some(String::new()),
            denied: Some(false),
        }),
    };
    let body = encode_envelope(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        &review.encode_to_vec(),
    );
    assert_eq!(
        decode(&body, None).unwrap(),
        json!({"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": null},
            "spec": {"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "configmaps",
                "labelSelector": {"rawSelector": "app=web",
                    "requirements": [{"key": "app", "operator": "In", "values": ["web"]}]}}},
            "status": {"allowed": false}})
    );

    let non_resource = SelfSubjectAccessReview {
        spec: Some(SelfSubjectAccessReviewSpec {
            resource_attributes: None,
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some("/healthz".into()),
                verb: Some("get".into()),
            }),
        }),
        ..Default::default()
    };
    let body = encode_envelope(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        &non_resource.encode_to_vec(),
    );
    assert_eq!(
        decode(&body, None).unwrap()["spec"],
        json!({"nonResourceAttributes": {"path": "/healthz", "verb": "get"}})
    );
}

#[test]
fn kubectl_auth_whoami() {
    let review = SelfSubjectReview {
        metadata: Some(ObjectMeta::default()),
        status: Some(SelfSubjectReviewStatus::default()),
    };
    let body = encode_envelope(
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
        &review.encode_to_vec(),
    );
    assert_eq!(
        serde_json::to_string(&decode(&body, None).unwrap()).unwrap(),
        r#"{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","metadata":{"creationTimestamp":null},"status":{"userInfo":{}}}"#
    );
    let filled = SelfSubjectReview {
        metadata: None,
        status: Some(SelfSubjectReviewStatus {
            user_info: Some(UserInfo {
                username: Some("alice".into()),
                uid: None,
                groups: vec!["system:authenticated".into()],
                extra: BTreeMap::from([(
                    "scopes".into(),
                    ExtraValue {
                        items: vec!["a".into(), "b".into()],
                    },
                )]),
            }),
        }),
    };
    let body = encode_envelope(
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
        &filled.encode_to_vec(),
    );
    assert_eq!(
        decode(&body, None).unwrap()["status"],
        json!({"userInfo": {"username": "alice", "groups": ["system:authenticated"], "extra": {"scopes": ["a", "b"]}}})
    );
}

#[test]
fn envelope_defaults_come_from_the_request() {
    let ns = Namespace {
        metadata: Some(ObjectMeta {
            name: Some("x".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let unknown = Unknown {
        type_meta: None,
        raw: Some(ns.encode_to_vec()),
        content_encoding: None,
        content_type: None,
    };
    let mut body = MAGIC.to_vec();
    body.extend(unknown.encode_to_vec());
    assert_eq!(decode(&body, None), Err(ProtobufError::MissingKind));
    assert_eq!(
        decode(&body, Some(("v1", "Namespace"))).unwrap()["metadata"]["name"],
        "x"
    );
    let envelope = decode_envelope(&body).unwrap();
    assert_eq!(envelope.kind, "");
    assert_eq!(envelope.raw, ns.encode_to_vec());
}

#[test]
fn errors() {
    assert_eq!(decode(b"", None), Err(ProtobufError::EmptyData));
    assert_eq!(decode(b"k8s\0", None), Err(ProtobufError::EmptyBody));
    assert_eq!(
        decode(b"{\"kind\":\"Namespace\"}", None),
        Err(ProtobufError::MissingMagic)
    );
    assert!(matches!(
        decode(b"k8s\0\x0a\xff", None),
        Err(ProtobufError::MalformedEnvelope(_))
    ));

    let widget = encode_envelope("example.com/v1", "Widget", b"");
    let err = decode(&widget, None).unwrap_err();
    assert_eq!(
        err,
        ProtobufError::UnsupportedKind {
            api_version: "example.com/v1".into(),
            kind: "Widget".into()
        }
    );
    assert_eq!(
        err.to_string(),
        r#"no kind "Widget" is registered for version "example.com/v1" in protobuf decoding"#
    );
    assert!(!is_supported("v1", "Pod"));
    assert!(is_supported(
        "authentication.k8s.io/v1",
        "SelfSubjectReview"
    ));

    // Truncated object, wrong wire type, invalid UTF-8, a field set that is not JSON.
    for raw in [
        &[0x0a, 0x05, 0x0a][..],
        &[0x0d, 0, 0, 0, 0][..],
        &[0x0a, 0x03, 0x0a, 0x01, 0xff][..],
    ] {
        let err = decode(&encode_envelope("v1", "Namespace", raw), None).unwrap_err();
        assert!(
            matches!(err, ProtobufError::Malformed { ref kind, .. } if kind == "Namespace"),
            "{err:?}"
        );
    }
    let bad_fields = ConfigMap {
        metadata: Some(ObjectMeta {
            managed_fields: vec![ManagedFieldsEntry {
                fields_v1: Some(FieldsV1 {
                    raw: Some(b"{not json".to_vec()),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let err = decode(
        &encode_envelope("v1", "ConfigMap", &bad_fields.encode_to_vec()),
        None,
    )
    .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "unable to decode ConfigMap from protobuf: managedFields fieldsV1 is not JSON"
        ),
        "{err}"
    );
    let far_future = Namespace {
        metadata: Some(ObjectMeta {
            creation_timestamp: Some(Time {
                seconds: Some(i64::MAX),
                nanos: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(matches!(
        decode(
            &encode_envelope("v1", "Namespace", &far_future.encode_to_vec()),
            None
        ),
        Err(ProtobufError::Malformed { .. })
    ));
}

#[test]
fn timestamps() {
    let cases = [
        (
            Time {
                seconds: None,
                nanos: None,
            },
            json!(null),
        ),
        (
            Time {
                seconds: Some(-62_135_596_800),
                nanos: None,
            },
            json!(null),
        ),
        (
            Time {
                seconds: Some(0),
                nanos: None,
            },
            json!("1970-01-01T00:00:00Z"),
        ),
        (
            Time {
                seconds: None,
                nanos: Some(5),
            },
            json!("1970-01-01T00:00:00Z"),
        ),
        (
            Time {
                seconds: Some(951_782_400),
                nanos: None,
            },
            json!("2000-02-29T00:00:00Z"),
        ),
        (
            Time {
                seconds: Some(4_107_542_399),
                nanos: None,
            },
            json!("2100-02-28T23:59:59Z"),
        ),
        (
            Time {
                seconds: Some(-1),
                nanos: None,
            },
            json!("1969-12-31T23:59:59Z"),
        ),
        (
            Time {
                seconds: Some(253_402_300_799),
                nanos: None,
            },
            json!("9999-12-31T23:59:59Z"),
        ),
    ];
    for (t, want) in cases {
        assert_eq!(json::time(&t).unwrap(), want, "{t:?}");
    }
    assert!(
        json::time(&Time {
            seconds: Some(253_402_300_800),
            nanos: None
        })
        .is_err()
    );
    assert!(
        json::time(&Time {
            seconds: Some(i64::MIN),
            nanos: None
        })
        .is_err()
    );
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(raw in prop::collection::vec(any::<u8>(), 0..64)) {
        for (v, k) in kinds::KINDS {
            let _ = decode(&encode_envelope(v, k, &raw), None);
        }
        let mut body = MAGIC.to_vec();
        body.extend(&raw);
        let _ = decode(&body, Some(("v1", "Namespace")));
    }

    #[test]
    fn configmap_round_trip(
        name in "[a-z0-9]{1,10}",
        data in prop::collection::btree_map("[a-zA-Z0-9._-]{1,8}", ".{0,12}", 0..4),
        binary in prop::collection::btree_map("[a-z]{1,8}", prop::collection::vec(any::<u8>(), 0..8), 0..3),
        labels in prop::collection::btree_map("[a-z]{1,5}", "[a-z0-9]{0,5}", 0..3),
        created in prop::option::of(0i64..4_000_000_000),
    ) {
        let cm = ConfigMap {
            metadata: Some(ObjectMeta {
                name: Some(name.clone()),
                labels: labels.clone(),
                creation_timestamp: created.map(|s| Time { seconds: Some(s), nanos: None }),
                ..Default::default()
            }),
            data: data.clone(),
            binary_data: binary.clone(),
            immutable: None,
        };
        let got = decode(&encode_envelope("v1", "ConfigMap", &cm.encode_to_vec()), None).unwrap();
        prop_assert_eq!(got["metadata"]["name"].as_str(), Some(name.as_str()));
        prop_assert_eq!(got["metadata"]["creationTimestamp"].is_string(), created.is_some());
        for (k, v) in &data {
            prop_assert_eq!(got["data"][k].as_str(), Some(v.as_str()));
        }
        prop_assert_eq!(got.get("data").is_some(), !data.is_empty());
        let engine = base64::engine::general_purpose::STANDARD;
        for (k, v) in &binary {
            let decoded = base64::Engine::decode(&engine, got["binaryData"][k].as_str().unwrap()).unwrap();
            prop_assert_eq!(&decoded, v);
        }
        for (k, v) in &labels {
            prop_assert_eq!(got["metadata"]["labels"][k].as_str(), Some(v.as_str()));
        }
    }
}

#[test]
fn kubectl_auth_can_i_list_and_create_token() {
    let rules = SelfSubjectRulesReview {
        metadata: Some(ObjectMeta::default()),
        spec: Some(SelfSubjectRulesReviewSpec {
            namespace: Some("default".into()),
        }),
    };
    let body = encode_envelope(
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        &rules.encode_to_vec(),
    );
    let decoded = decode(&body, None).unwrap();
    assert_eq!(decoded["kind"], "SelfSubjectRulesReview");
    assert_eq!(decoded["spec"], json!({"namespace": "default"}));

    let token = TokenRequest {
        metadata: Some(ObjectMeta::default()),
        spec: Some(TokenRequestSpec {
            audiences: vec!["a".into()],
            bound_object_ref: None,
            expiration_seconds: Some(600),
        }),
    };
    let body = encode_envelope(
        "authentication.k8s.io/v1",
        "TokenRequest",
        &token.encode_to_vec(),
    );
    let decoded = decode(&body, None).unwrap();
    assert_eq!(decoded["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(
        decoded["spec"],
        json!({"audiences": ["a"], "expirationSeconds": 600})
    );
}

#[test]
fn subject_access_and_token_reviews() {
    let review = SubjectAccessReview {
        metadata: Some(ObjectMeta {
            namespace: Some("ns".into()),
            ..Default::default()
        }),
        spec: Some(SubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: Some("ns".into()),
                verb: Some("get".into()),
                resource: Some("pods".into()),
                ..Default::default()
            }),
            non_resource_attributes: None,
            user: Some("alice".into()),
            groups: vec!["team".into()],
            extra: BTreeMap::from([(
                "k".into(),
                ExtraValue {
                    items: vec!["v".into()],
                },
            )]),
            uid: Some("u".into()),
        }),
    };
    let body = encode_envelope(
        "authorization.k8s.io/v1",
        "LocalSubjectAccessReview",
        &review.encode_to_vec(),
    );
    let decoded = decode(&body, None).unwrap();
    assert_eq!(decoded["kind"], "LocalSubjectAccessReview");
    assert_eq!(decoded["metadata"]["namespace"], "ns");
    assert_eq!(
        decoded["spec"],
        json!({"resourceAttributes": {"namespace": "ns", "verb": "get", "resource": "pods"},
            "user": "alice", "groups": ["team"], "extra": {"k": ["v"]}, "uid": "u"})
    );

    let review = TokenReview {
        metadata: None,
        spec: Some(TokenReviewSpec {
            token: Some("t".into()),
            audiences: vec!["a".into()],
        }),
    };
    let body = encode_envelope(
        "authentication.k8s.io/v1",
        "TokenReview",
        &review.encode_to_vec(),
    );
    assert_eq!(
        decode(&body, None).unwrap()["spec"],
        json!({"token": "t", "audiences": ["a"]})
    );
}
