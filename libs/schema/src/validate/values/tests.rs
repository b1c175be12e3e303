use serde_json::json;

use super::*;

fn cron_tab() -> Schema {
    Schema::compile(&json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["cronSpec"],
                "properties": {
                    "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                    "image": {"type": "string", "minLength": 2, "maxLength": 5},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                    "ratio": {"type": "number", "maximum": 1.5, "exclusiveMaximum": true, "multipleOf": 0.5},
                    "policy": {"type": "string", "enum": ["Allow", "Forbid"]},
                    "when": {"type": "string", "format": "date-time"},
                    "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"},
                             "x-kubernetes-list-type": "set"},
                    "ports": {"type": "array", "x-kubernetes-list-type": "map",
                              "x-kubernetes-list-map-keys": ["name"],
                              "items": {"type": "object", "required": ["name"], "properties": {
                                  "name": {"type": "string"}, "port": {"type": "integer", "format": "int32"}}}},
                    "labels": {"type": "object", "maxProperties": 1,
                               "additionalProperties": {"type": "string", "maxLength": 3}},
                    "size": {"x-kubernetes-int-or-string": true},
                    "note": {"type": "string", "nullable": true},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                 "x-kubernetes-preserve-unknown-fields": true},
                    "unique": {"type": "array", "uniqueItems": true, "items": {"type": "integer"}}
                }
            }
        }
    }))
    .expect("compiles")
}

fn messages(causes: &[FieldCause]) -> Vec<(String, String)> {
    causes
        .iter()
        .map(|c| (c.field.clone(), c.message.clone()))
        .collect()
}

#[test]
fn valid_object_has_no_causes() {
    let body = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "x", "labels": {"a": 1}},
        "spec": {"cronSpec": "* * * * */5", "image": "nginx", "replicas": 3, "ratio": 1.0,
                 "policy": "Allow", "when": "2024-01-01T00:00:00Z", "tags": ["a", "b"],
                 "ports": [{"name": "http", "port": 80}, {"name": "https"}],
                 "labels": {"k": "v"}, "size": "10%", "note": null,
                 "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}},
                 "unique": [1, 2]}});
    assert_eq!(validate_value(&cron_tab(), &body), vec![]);
    // kube-openapi checks formats of strings only: int32 does not bound integers.
    let body = json!({"spec": {"cronSpec": "* * * * *", "ports": [{"name": "a", "port": 4_294_967_296_i64}]}});
    assert_eq!(validate_value(&cron_tab(), &body), vec![]);
}

#[test]
fn bounds_lengths_patterns_and_enums() {
    let body = json!({"spec": {"cronSpec": "nope", "image": "a", "replicas": 11, "ratio": 1.5,
                               "policy": "Maybe", "when": "yesterday"}});
    let causes = validate_value(&cron_tab(), &body);
    let expect = [
        (
            "spec.cronSpec",
            CauseReason::FieldValueInvalid,
            r#"Invalid value: "nope": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"#,
        ),
        (
            "spec.image",
            CauseReason::FieldValueInvalid,
            r#"Invalid value: "a": spec.image in body should be at least 2 chars long"#,
        ),
        (
            "spec.policy",
            CauseReason::FieldValueNotSupported,
            r#"Unsupported value: "Maybe": supported values: "Allow", "Forbid""#,
        ),
        (
            "spec.ratio",
            CauseReason::FieldValueInvalid,
            "Invalid value: 1.5: spec.ratio in body should be less than 1.5",
        ),
        (
            "spec.replicas",
            CauseReason::FieldValueInvalid,
            "Invalid value: 11: spec.replicas in body should be less than or equal to 10",
        ),
        (
            "spec.when",
            CauseReason::FieldValueTypeInvalid,
            r#"Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday""#,
        ),
    ];
    let mut got: Vec<_> = causes
        .iter()
        .map(|c| (c.field.as_str(), c.reason, c.message.as_str()))
        .collect();
    got.sort_by_key(|(field, _, message)| (*field, *message));
    assert_eq!(got, expect.to_vec());
}

#[test]
fn too_long_too_many_and_multiples() {
    let body = json!({"spec": {"cronSpec": "* * * * *", "image": "ünïcödé", "ratio": 0.7,
                               "tags": ["a", "b", "c"], "labels": {"a": "b", "c": "d"},
                               "replicas": 0}});
    let got = messages(&validate_value(&cron_tab(), &body));
    assert!(got.contains(&(
        "spec.image".into(),
        "Too long: may not be more than 5 bytes".into()
    )));
    assert!(got.contains(&(
        "spec.ratio".into(),
        "Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5".into()
    )));
    assert!(got.contains(&(
        "spec.tags".into(),
        "Too many: 3: must have at most 2 items".into()
    )));
    assert!(got.contains(&(
        "spec.labels".into(),
        "Too many: 1: must have at most 1 item".into()
    )));
    assert!(got.contains(&(
        "spec.replicas".into(),
        "Invalid value: 0: spec.replicas in body should be greater than or equal to 1".into()
    )));
    // Four code points fit a maxLength of 5 even though they take more bytes.
    let body = json!({"spec": {"cronSpec": "* * * * *", "image": "ünï"}});
    assert!(validate_value(&cron_tab(), &body).is_empty());
}

#[test]
fn required_null_and_types() {
    let body = json!({"spec": {"image": null, "note": null, "size": 1.5, "replicas": "3",
                               "ports": [{"port": 1}]}});
    let mut got = messages(&validate_value(&cron_tab(), &body));
    got.sort();
    assert_eq!(
        got,
        vec![
            ("spec.cronSpec".into(), "Required value".into()),
            (
                "spec.image".into(),
                r#"Invalid value: "null": spec.image in body must be of type string: "null""#
                    .into()
            ),
            ("spec.ports[0].name".into(), "Required value".into()),
            (
                "spec.replicas".into(),
                r#"Invalid value: "string": spec.replicas in body must be of type integer: "string""#
                    .into()
            ),
            (
                "spec.size".into(),
                r#"Invalid value: "number": spec.size in body must be of type integer,string: "number""#
                    .into()
            ),
        ]
    );
}

#[test]
fn list_sets_and_maps_report_duplicates() {
    let body = json!({"spec": {"cronSpec": "* * * * *", "tags": ["a", "a"],
        "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}, {"name": "http"}],
        "unique": [1, 1]}});
    let causes = validate_value(&cron_tab(), &body);
    let mut got: Vec<_> = causes
        .iter()
        .map(|c| (c.field.as_str(), c.reason, c.message.as_str()))
        .collect();
    got.sort_by_key(|(field, _, _)| *field);
    assert_eq!(
        got,
        vec![
            (
                "spec.ports[1]",
                CauseReason::FieldValueDuplicate,
                r#"Duplicate value: map[string]interface {}{"name":"http"}"#
            ),
            (
                "spec.tags[1]",
                CauseReason::FieldValueDuplicate,
                r#"Duplicate value: "a""#
            ),
            (
                "spec.unique",
                CauseReason::FieldValueInvalid,
                r#"Invalid value: "": spec.unique in body shouldn't contain duplicates"#
            ),
        ]
    );
}

#[test]
fn embedded_resources_need_api_version_and_kind() {
    let body = json!({"spec": {"cronSpec": "* * * * *", "template": {"metadata": {"name": 5}}}});
    let got = messages(&validate_value(&cron_tab(), &body));
    assert_eq!(
        got,
        // Schema errors come before the embedded resource's own checks, as in Kubernetes.
        vec![
            (
                "spec.template.metadata.name".into(),
                r#"Invalid value: "integer": spec.template.metadata.name in body must be of type string: "integer""#
                    .into()
            ),
            ("spec.template.apiVersion".into(), "Required value".into()),
            ("spec.template.kind".into(), "Required value".into()),
        ]
    );
    let body = json!({"spec": {"cronSpec": "* * * * *", "template": {
        "apiVersion": "a/b/c", "kind": "Pod_", "metadata": {"name": "a/b"}}}});
    let got = messages(&validate_value(&cron_tab(), &body));
    assert_eq!(got.len(), 3);
    assert_eq!(
        got[0],
        (
            "spec.template.apiVersion".into(),
            r#"Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#.into()
        )
    );
    assert!(got[1].1.starts_with(
        r#"Invalid value: "Pod_": may have mixed case, but should otherwise match: a DNS-1035 label"#
    ));
    assert_eq!(
        got[2],
        (
            "spec.template.metadata.name".into(),
            r#"Invalid value: "a/b": may not contain '/'"#.into()
        )
    );
}

#[test]
fn root_metadata_is_not_checked_here() {
    let body = json!({"metadata": {"name": 5, "labels": "x"},
                      "spec": {"cronSpec": "* * * * *"}});
    assert!(validate_value(&cron_tab(), &body).is_empty());
}

#[test]
fn compositions() {
    let schema = Schema::compile(&json!({"type": "object", "properties": {
        "a": {"type": "integer", "not": {"enum": [13]}},
        "b": {"type": "string", "anyOf": [{"maxLength": 1}, {"pattern": "^x"}]},
        "c": {"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]},
        "d": {"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]}
    }}))
    .expect("compiles");
    assert!(validate_value(&schema, &json!({"a": 1, "b": "xyz", "c": 20, "d": "ab"})).is_empty());
    let got = messages(&validate_value(
        &schema,
        &json!({"a": 13, "b": "abc", "c": 5, "d": "a"}),
    ));
    assert_eq!(
        got,
        vec![
            (
                "<nil>".into(),
                r#"Invalid value: "": "a" must not validate the schema (not)"#.into()
            ),
            (
                "<nil>".into(),
                r#"Invalid value: "": "b" must validate at least one schema (anyOf)"#.into()
            ),
            ("b".into(), "Too long: may not be more than 1 byte".into()),
            (
                "<nil>".into(),
                r#"Invalid value: "": "c" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
                    .into()
            ),
            (
                "d".into(),
                r#"Invalid value: "a": d in body should be at least 2 chars long"#.into()
            ),
            (
                "<nil>".into(),
                r#"Invalid value: "": "d" must validate all the schemas (allOf)"#.into()
            ),
        ]
    );
}

#[test]
fn updates_ratchet_unchanged_values() {
    let old = json!({"spec": {"cronSpec": "nope", "image": "far-too-long",
        "ports": [{"name": "a", "port": "x"}, {"name": "b", "port": 1}],
        "tags": ["a", "a"]}});
    // Unchanged invalid values are not reported again.
    let mut new = old.clone();
    new["spec"]["replicas"] = json!(3);
    assert_eq!(
        messages(&validate_value_update(&cron_tab(), &new, &old)),
        // List uniqueness is not ratcheted.
        vec![("spec.tags[1]".into(), r#"Duplicate value: "a""#.into())]
    );
    // A changed value is validated; map-list items are matched by key, not position.
    new["spec"]["image"] = json!("still-too-long");
    new["spec"]["ports"] = json!([{"name": "b", "port": 1}, {"name": "a", "port": "x"},
                                  {"name": "c", "port": "y"}]);
    new["spec"]["tags"] = json!(["a"]);
    let got = messages(&validate_value_update(&cron_tab(), &new, &old));
    assert_eq!(
        got,
        vec![
            ("spec.image".into(), "Too long: may not be more than 5 bytes".into()),
            (
                "spec.ports[2].port".into(),
                r#"Invalid value: "string": spec.ports[2].port in body must be of type integer: "string""#
                    .into()
            ),
        ]
    );
    // Without an old object everything is reported.
    assert_eq!(validate_value(&cron_tab(), &new).len(), 4);
}
