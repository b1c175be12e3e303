use serde_json::{Value, json};

use super::*;
use crate::validate::CauseReason;

fn cron_tab() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
                      "shortNames": ["ct"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "cronSpec": {"type": "string"},
                            "image": {"type": "string"},
                            "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1}
                        }},
                        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                    }
                }},
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                "additionalPrinterColumns": [
                    {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}
                ]
            }]
        }
    })
}

fn causes(list: &[FieldCause]) -> Vec<(String, String)> {
    list.iter()
        .map(|c| (c.field.clone(), c.message.clone()))
        .collect()
}

fn schema_of(crd: &mut Value) -> &mut Value {
    crd.pointer_mut("/spec/versions/0/schema/openAPIV3Schema")
        .expect("schema")
}

#[test]
fn a_valid_crd_passes() {
    assert_eq!(causes(&validate_crd(&cron_tab())), vec![]);
}

/// The single version's schema is reported at the top level (Kubernetes hoists identical
/// per-version schemas to `spec.validation`).
const TOP: &str = "spec.validation.openAPIV3Schema";

#[test]
fn metadata_name_must_be_plural_dot_group() {
    let mut crd = cron_tab();
    crd["metadata"]["name"] = json!("crontab.stable.example.com");
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![(
            "metadata.name".into(),
            r#"Invalid value: "crontab.stable.example.com": must be spec.names.plural+"."+spec.group"#
                .into()
        )]
    );
    crd["metadata"]["annotations"] = json!({"apis.kcp.io/bound-crd": ""});
    assert!(validate_crd(&crd).is_empty());
    crd["metadata"] = json!({});
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![(
            "metadata.name".into(),
            "Required value: name or generateName is required".into()
        )]
    );
}

#[test]
fn kcp_accepts_the_core_group() {
    let mut crd = cron_tab();
    crd["spec"]["group"] = json!("");
    crd["metadata"]["name"] = json!("crontabs.core");
    assert_eq!(causes(&validate_crd(&crd)), vec![]);
    crd["spec"]["group"] = json!("apps");
    crd["metadata"]["name"] = json!("crontabs.apps");
    assert_eq!(causes(&validate_crd(&crd)), vec![]);
}

#[test]
fn group_and_scope() {
    let mut crd = cron_tab();
    crd["spec"]["group"] = json!("example");
    crd["spec"]["scope"] = json!("Global");
    crd["metadata"]["name"] = json!("crontabs.example");
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![
            (
                "spec.group".into(),
                r#"Invalid value: "example": should be a domain with at least one dot"#.into()
            ),
            (
                "spec.scope".into(),
                r#"Unsupported value: "Global": supported values: "Cluster", "Namespaced""#.into()
            ),
        ]
    );
    crd["spec"]["group"] = json!("Ex_ample.com");
    crd["spec"]["scope"] = json!("");
    crd["metadata"]["name"] = json!("crontabs.Ex_ample.com");
    let found = validate_crd(&crd);
    let group = found
        .iter()
        .find(|c| c.field == "spec.group")
        .expect("group error");
    assert!(
        group
            .message
            .starts_with(r#"Invalid value: "Ex_ample.com": a lowercase RFC 1123 subdomain"#)
    );
    assert!(found.iter().any(|c| c.field == "spec.scope"
        && c.reason == CauseReason::FieldValueRequired
        && c.message == "Required value"));
}

#[test]
fn names_are_checked_and_defaulted() {
    let mut crd = cron_tab();
    // singular and listKind are defaulted from kind.
    crd["spec"]["names"] = json!({"plural": "crontabs", "kind": "CronTab"});
    assert!(validate_crd(&crd).is_empty());
    crd["spec"]["names"] = json!({"plural": "CronTabs", "kind": "Cron_Tab", "listKind": "Cron_Tab",
                                  "shortNames": ["c t"], "categories": ["all"]});
    crd["metadata"]["name"] = json!("CronTabs.stable.example.com");
    let got = causes(&validate_crd(&crd));
    let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "metadata.name",
            "spec.names.plural",
            "spec.names.singular",
            "spec.names.kind",
            "spec.names.listKind",
            "spec.names.shortNames[0]",
            "spec.names.listKind",
        ]
    );
    assert!(got[3].1.starts_with(
        r#"Invalid value: "Cron_Tab": may have mixed case, but should otherwise match: a DNS-1035 label"#
    ));
    assert_eq!(
        got[6].1,
        r#"Invalid value: "Cron_Tab": kind and listKind may not be the same"#
    );
}

#[test]
fn versions_storage_and_names() {
    let mut crd = cron_tab();
    let mut second = crd["spec"]["versions"][0].clone();
    second["name"] = json!("v1");
    crd["spec"]["versions"]
        .as_array_mut()
        .expect("versions")
        .push(second);
    let got = causes(&validate_crd(&crd));
    let messages: Vec<&str> = got
        .iter()
        .filter(|(f, _)| f == "spec.versions")
        .map(|(_, m)| m.rsplit(": ").next().unwrap_or(""))
        .collect();
    assert_eq!(
        messages,
        vec![
            "must contain unique version names",
            "must have exactly one version marked as storage version"
        ]
    );

    let mut crd = cron_tab();
    crd["spec"]["versions"] = json!([]);
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![
            (
                "spec.versions".into(),
                "Invalid value: []apiextensions.CustomResourceDefinitionVersion(nil): must have exactly one version marked as storage version".into()
            ),
            (
                "status.storedVersions".into(),
                "Invalid value: []string(nil): must have at least one stored version".into()
            ),
        ]
    );

    let mut crd = cron_tab();
    crd["spec"]["versions"][0]["name"] = json!("V1");
    let got = causes(&validate_crd(&crd));
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].0, "spec.versions[0].name");
    assert_eq!(got[1].0, "spec.version");
    assert!(
        got[0]
            .1
            .starts_with(r#"Invalid value: "V1": a DNS-1035 label must consist"#)
    );
}

#[test]
fn a_schema_is_required() {
    let mut crd = cron_tab();
    if let Some(version) = crd["spec"]["versions"][0].as_object_mut() {
        version.remove("schema");
    }
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![(
            "spec.versions[0].schema.openAPIV3Schema".into(),
            "Required value".into()
        )]
    );
}

#[test]
fn structural_rules_with_kubernetes_paths() {
    let mut crd = cron_tab();
    schema_of(&mut crd)["properties"]["spec"]["properties"]["cronSpec"] =
        json!({"description": "x"});
    schema_of(&mut crd)["properties"]["spec"]["properties"]["list"] = json!({"type": "array"});
    let got = validate_crd(&crd);
    assert_eq!(
        causes(&got),
        vec![
            (
                format!("{TOP}.properties[spec].properties[cronSpec].type"),
                "Required value: must not be empty for specified object fields".into()
            ),
            (
                format!("{TOP}.properties[spec].properties[list].items"),
                "Required value: must be specified".into()
            ),
        ]
    );
    assert!(
        got.iter()
            .all(|c| c.reason == CauseReason::FieldValueRequired)
    );

    // Versions with different schemas keep per-version paths.
    let mut crd = cron_tab();
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    v2["schema"]["openAPIV3Schema"]["properties"]["spec"] = json!({"properties": {}});
    crd["spec"]["versions"]
        .as_array_mut()
        .expect("versions")
        .push(v2);
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![(
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].type".into(),
            "Required value: must not be empty for specified object fields".into()
        )]
    );
}

#[test]
fn root_and_metadata_rules() {
    let mut crd = cron_tab();
    if let Some(version) = crd["spec"]["versions"][0].as_object_mut() {
        version.remove("subresources");
    }
    *schema_of(&mut crd) = json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 20}, "labels": {"type": "object"}}},
        "kind": {"type": "integer"}
    }});
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![
            (
                format!("{TOP}.properties[kind].type"),
                r#"Invalid value: "integer": must be string"#.into()
            ),
            (
                format!("{TOP}.properties[metadata]"),
                "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified".into()
            ),
        ]
    );
    *schema_of(&mut crd) = json!({"type": "string"});
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![(
            format!("{TOP}.type"),
            r#"Invalid value: "string": must be object at the root"#.into()
        )]
    );
}

#[test]
fn status_subresource_restricts_the_root() {
    let mut crd = cron_tab();
    schema_of(&mut crd)["minProperties"] = json!(1);
    let got = causes(&validate_crd(&crd));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, TOP);
    assert!(got[0].1.ends_with("only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"));
}

#[test]
fn per_node_openapi_rules() {
    let mut crd = cron_tab();
    let spec = &mut schema_of(&mut crd)["properties"]["spec"];
    spec["additionalProperties"] = json!({"type": "string"});
    spec["properties"]["tags"] = json!({"type": "string", "x-kubernetes-list-type": "set"});
    spec["properties"]["ports"] = json!({"type": "array", "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name", "missing"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}}}});
    spec["properties"]["ref"] = json!({"type": "string", "$ref": "#/definitions/x"});
    let got = causes(&validate_crd(&crd));
    let p = format!("{TOP}.properties[spec]");
    assert_eq!(
        got,
        vec![
            (
                format!("{p}.additionalProperties"),
                "Forbidden: additionalProperties and properties are mutual exclusive".into()
            ),
            (
                format!("{p}.properties[ports].x-kubernetes-list-map-keys"),
                r#"Invalid value: []string{"name", "missing"}: entries must all be names of item properties"#
                    .into()
            ),
            (
                format!("{p}.properties[ports].items.properties[name].default"),
                "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property".into()
            ),
            (
                format!("{p}.properties[ref].$ref"),
                "Forbidden: $ref is not supported".into()
            ),
            (
                format!("{p}.properties[tags].type"),
                r#"Invalid value: "string": must be array if x-kubernetes-list-type is specified"#
                    .into()
            ),
        ]
    );
}

#[test]
fn defaults_must_validate_and_be_pruned() {
    let mut crd = cron_tab();
    let spec = &mut schema_of(&mut crd)["properties"]["spec"];
    spec["properties"]["replicas"]["default"] = json!(20);
    spec["properties"]["policy"] = json!({"type": "object", "default": {"kind": "x", "extra": 1},
        "properties": {"kind": {"type": "string", "enum": ["Allow"]}}});
    let got = causes(&validate_crd(&crd));
    let p = format!("{TOP}.properties[spec].properties");
    assert_eq!(
        got,
        vec![
            (
                format!("{p}[policy].default"),
                r#"Invalid value: map[string]interface {}{"extra":1, "kind":"x"}: must not have unknown fields"#
                    .into()
            ),
            (
                format!("{p}[policy].default.kind"),
                r#"Unsupported value: "x": supported values: "Allow""#.into()
            ),
            (
                format!("{p}[replicas].default"),
                "Invalid value: 20:  in body should be less than or equal to 10".into()
            ),
        ]
    );
    // Defaults are not allowed in the root metadata.
    let mut crd = cron_tab();
    schema_of(&mut crd)["properties"]["metadata"] =
        json!({"type": "object", "properties": {"name": {"type": "string", "default": "x"}}});
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![(
            format!("{TOP}.properties[metadata].properties[name].default"),
            "Forbidden: must not be set in top-level metadata".into()
        )]
    );
}

#[test]
fn subresources_columns_and_selectable_fields() {
    let mut crd = cron_tab();
    let version = &mut crd["spec"]["versions"][0];
    version["subresources"]["scale"] = json!({"specReplicasPath": "spec.replicas",
        "statusReplicasPath": ".spec.replicas", "labelSelectorPath": ".selector"});
    version["additionalPrinterColumns"] = json!([{"name": "", "type": "time", "format": "big"}]);
    version["selectableFields"] = json!([{"jsonPath": ".spec.cronSpec"}, {"jsonPath": ".spec"},
        {"jsonPath": ".spec.cronSpec"}, {"jsonPath": ".nope"}]);
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![
            (
                "spec.subresources.scale.specReplicasPath".into(),
                r#"Invalid value: "spec.replicas": must be a simple json path starting with ."#
                    .into()
            ),
            (
                "spec.subresources.scale.statusReplicasPath".into(),
                r#"Invalid value: ".spec.replicas": should be a json path under .status"#.into()
            ),
            (
                "spec.subresources.scale.labelSelectorPath".into(),
                r#"Invalid value: ".selector": should be a json path under either .spec or .status"#
                    .into()
            ),
            ("spec.additionalPrinterColumns[0].name".into(), "Required value".into()),
            (
                "spec.additionalPrinterColumns[0].type".into(),
                r#"Invalid value: "time": must be one of boolean,date,integer,number,string"#
                    .into()
            ),
            (
                "spec.additionalPrinterColumns[0].format".into(),
                r#"Invalid value: "big": must be one of byte,date,date-time,double,float,int32,int64,password"#
                    .into()
            ),
            (
                "spec.additionalPrinterColumns[0].JSONPath".into(),
                "Required value".into()
            ),
            (
                "spec.selectableFields[1].jsonPath".into(),
                r#"Invalid value: ".spec": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."#
                    .into()
            ),
            (
                "spec.selectableFields[2].jsonPath".into(),
                r#"Duplicate value: ".spec.cronSpec""#.into()
            ),
            (
                "spec.selectableFields[3].jsonPath".into(),
                r#"Invalid value: ".nope": is an invalid path: does not refer to a valid field: "nope""#
                    .into()
            ),
        ]
    );
    let mut crd = cron_tab();
    let props: serde_json::Map<String, Value> = (0..9)
        .map(|i| (format!("f{i}"), json!({"type": "string"})))
        .collect();
    schema_of(&mut crd)["properties"]["spec"]["properties"] = Value::Object(props);
    crd["spec"]["versions"][0]["selectableFields"] = Value::Array(
        (0..9)
            .map(|i| json!({"jsonPath": format!(".spec.f{i}")}))
            .collect(),
    );
    if let Some(version) = crd["spec"]["versions"][0].as_object_mut() {
        version.remove("subresources");
        version.remove("additionalPrinterColumns");
    }
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![(
            "spec.selectableFields".into(),
            "Too many: 9: must have at most 8 items".into()
        )]
    );
}

#[test]
fn conversion_and_preserve_unknown_fields() {
    let mut crd = cron_tab();
    crd["spec"]["conversion"] = json!({"strategy": "Magic"});
    crd["spec"]["preserveUnknownFields"] = json!(true);
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![
            (
                "spec.preserveUnknownFields".into(),
                "Invalid value: true: must be false in order to use defaults in the schema".into()
            ),
            (
                "spec.conversion.strategy".into(),
                r#"Invalid value: "Magic": must be None if spec.preserveUnknownFields is true"#
                    .into()
            ),
            (
                "spec.conversion.strategy".into(),
                r#"Unsupported value: "Magic": supported values: "None", "Webhook""#.into()
            ),
            (
                "spec.preserveUnknownFields".into(),
                "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead".into()
            ),
        ]
    );
    let mut crd = cron_tab();
    crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": "http://conv.example.com/convert?x=1"},
        "conversionReviewVersions": ["v2"]}});
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![
            (
                "spec.conversion.webhookClientConfig.url".into(),
                r#"Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#.into()
            ),
            (
                "spec.conversion.webhookClientConfig.url".into(),
                r#"Invalid value: "x=1": query parameters are not permitted in the URL"#.into()
            ),
            (
                "spec.conversion.conversionReviewVersions".into(),
                r#"Invalid value: []string{"v2"}: must include at least one of v1, v1beta1"#.into()
            ),
        ]
    );
    crd["spec"]["conversion"] = json!({"strategy": "Webhook"});
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![
            (
                "spec.conversion.webhookClientConfig".into(),
                "Required value: required when strategy is set to Webhook".into()
            ),
            (
                "spec.conversion.conversionReviewVersions".into(),
                "Required value".into()
            ),
        ]
    );
}

#[test]
fn protected_groups_need_approval() {
    let mut crd = cron_tab();
    crd["spec"]["group"] = json!("widgets.x-k8s.io");
    crd["metadata"]["name"] = json!("crontabs.widgets.x-k8s.io");
    assert!(validate_crd(&crd).is_empty());
    crd["spec"]["group"] = json!("widgets.k8s.io");
    crd["metadata"]["name"] = json!("crontabs.widgets.k8s.io");
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![(
            "metadata.annotations[api-approved.kubernetes.io]".into(),
            r#"Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111"#.into()
        )]
    );
    crd["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "unapproved, testing"});
    assert!(validate_crd(&crd).is_empty());
}

#[test]
fn updates_keep_identity_and_stored_versions() {
    let old = {
        let mut crd = cron_tab();
        crd["status"] = json!({"storedVersions": ["v1"],
            "conditions": [{"type": "Established", "status": "True"}]});
        crd
    };
    assert!(validate_crd_update(&old, &old).is_empty());

    let mut new = old.clone();
    new["spec"]["scope"] = json!("Cluster");
    new["spec"]["group"] = json!("other.example.com");
    new["metadata"]["name"] = json!("crontabs.other.example.com");
    assert_eq!(
        causes(&validate_crd_update(&new, &old)),
        vec![
            (
                "spec.scope".into(),
                r#"Invalid value: "Cluster": field is immutable"#.into()
            ),
            (
                "spec.group".into(),
                r#"Invalid value: "other.example.com": field is immutable"#.into()
            ),
        ]
    );

    // Not yet established: the scope may still change.
    let mut fresh = old.clone();
    fresh["status"]["conditions"] = json!([]);
    let mut new = fresh.clone();
    new["spec"]["scope"] = json!("Cluster");
    assert!(validate_crd_update(&new, &fresh).is_empty());

    // v1 was stored; replacing it by v2 drops it from spec.versions.
    let mut new = old.clone();
    new["spec"]["versions"][0]["name"] = json!("v2");
    assert_eq!(
        causes(&validate_crd_update(&new, &old)),
        vec![(
            "status.storedVersions[0]".into(),
            r#"Invalid value: "v1": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"#.into()
        )]
    );
}

#[test]
fn updates_relax_rules_the_old_object_broke() {
    let mut old = cron_tab();
    old["status"] = json!({"storedVersions": ["v1"]});
    schema_of(&mut old)["properties"]["spec"]["properties"]["tags"] = json!({"type": "array",
        "x-kubernetes-list-type": "set", "items": {"type": "object"}});
    assert_eq!(
        causes(&validate_crd(&old)),
        vec![(
            format!("{TOP}.properties[spec].properties[tags].items.x-kubernetes-map-type"),
            r#"Invalid value: "null": must be atomic as item of a list with x-kubernetes-list-type=set"#.into()
        )]
    );
    assert!(validate_crd_update(&old, &old).is_empty());
}

#[test]
fn compiled_version_schema_serves_custom_resources() {
    let crd = cron_tab();
    let schema = compile_version_schema(&crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
        .expect("compiles");
    let body = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "c", "labels": {"a": "b"}, "bogus": 1},
        "spec": {"cronSpec": "* * * * */5", "unknown": true}, "extra": 1});
    let pruned = crate::prune(&schema, body);
    assert_eq!(
        pruned,
        json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
               "metadata": {"name": "c", "labels": {"a": "b"}},
               "spec": {"cronSpec": "* * * * */5"}})
    );
    let mut defaulted = pruned.clone();
    crate::apply_defaults(&schema, &mut defaulted);
    assert_eq!(defaulted["spec"]["replicas"], json!(1));
    let invalid = json!({"spec": {"replicas": 11}});
    assert_eq!(
        causes(&crate::validate_value(&schema, &invalid)),
        vec![(
            "spec.replicas".into(),
            "Invalid value: 11: spec.replicas in body should be less than or equal to 10".into()
        )]
    );
    let restricted = compile_version_schema(&json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}}}))
    .expect("compiles");
    assert_eq!(
        causes(&crate::validate_value(
            &restricted,
            &json!({"metadata": {"name": "too-long", "labels": {"a": "b"}}})
        )),
        vec![(
            "metadata.name".into(),
            "Too long: may not be more than 5 bytes".into()
        )]
    );
    let root = schema.root();
    assert_eq!(
        root.property("metadata").and_then(|m| m.name()),
        Some(crate::builtin::OBJECT_META)
    );
    assert_eq!(
        root.property("kind").and_then(|k| k.schema_type()),
        Some(crate::SchemaType::String)
    );
}

#[test]
fn v1_defaults() {
    let mut crd = cron_tab();
    crd["spec"]["names"] = json!({"plural": "crontabs", "kind": "CronTab"});
    crd["spec"]["conversion"] = Value::Null;
    if let Some(spec) = crd["spec"].as_object_mut() {
        spec.remove("conversion");
    }
    apply_crd_defaults(&mut crd);
    assert_eq!(crd["spec"]["names"]["singular"], json!("crontab"));
    assert_eq!(crd["spec"]["names"]["listKind"], json!("CronTabList"));
    assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));

    let mut crd = cron_tab();
    crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"service": {"name": "conv", "namespace": "system"}},
        "conversionReviewVersions": ["v1"]}});
    apply_crd_defaults(&mut crd);
    assert_eq!(
        crd.pointer("/spec/conversion/webhook/clientConfig/service/port"),
        Some(&json!(443))
    );
    assert!(validate_crd(&crd).is_empty());
    crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] = json!(0);
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![(
            "spec.conversion.webhookClientConfig.service.port".into(),
            "Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive".into()
        )]
    );
}

#[test]
fn value_validations_add_no_structure() {
    let mut crd = cron_tab();
    let root = schema_of(&mut crd);
    root["properties"]["spec"]["properties"]["size"] = json!({
        "x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string"}]
    });
    root["properties"]["spec"]["properties"]["mode"] = json!({
        "type": "string",
        "oneOf": [{"type": "string", "enum": ["a"]}, {"description": "b", "pattern": "("}]
    });
    root["properties"]["spec"]["properties"]["rules"] = json!({
        "type": "string",
        "x-kubernetes-validations": [{"rule": " "}, {"rule": "self.size() >\n 1", "message": ""},
                                      {"rule": "true", "reason": "Nope"}]
    });
    let got = causes(&validate_crd(&crd));
    let p = format!("{TOP}.properties[spec].properties");
    assert_eq!(
        got,
        vec![
            (
                format!("{p}[mode].oneOf[0].type"),
                "Forbidden: must be empty to be structural".into()
            ),
            (
                format!("{p}[mode].oneOf[1].description"),
                "Forbidden: must be empty to be structural".into()
            ),
            (
                format!("{p}[mode].oneOf[1].pattern"),
                "Invalid value: \"(\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ): `(`".into()
            ),
            (
                format!("{p}[rules].x-kubernetes-validations[0].rule"),
                "Required value: rule is not specified".into()
            ),
            (
                format!("{p}[rules].x-kubernetes-validations[1].message"),
                "Required value: message must be specified if rule contains line breaks".into()
            ),
            (
                format!("{p}[rules].x-kubernetes-validations[2].reason"),
                r#"Unsupported value: "Nope": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired""#.into()
            ),
        ]
    );

    // Properties a root value validation mentions must exist structurally.
    let mut crd = cron_tab();
    if let Some(version) = crd["spec"]["versions"][0].as_object_mut() {
        version.remove("subresources");
    }
    schema_of(&mut crd)["anyOf"] = json!([{"required": ["spec"]}, {"properties": {"other": {}}}]);
    assert_eq!(
        causes(&validate_crd(&crd)),
        vec![(
            format!("{TOP}.properties[other]"),
            format!("Required value: because it is defined in {TOP}.anyOf[1].properties[other]")
        )]
    );
}
