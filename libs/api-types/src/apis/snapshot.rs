//! A CustomResourceDefinition (`apiextensions.k8s.io/v1`) as an APIResourceSchema
//! (`apis.kcp.io/v1alpha1`): kcp's `CRDToAPIResourceSchema`
//! (`sdk/apis/apis/v1alpha1/crd_to_apiresourceschema.go`), with which `kubectl kcp crd snapshot`
//! and apigen publish a CRD.
//!
//! The schema is named `<prefix>.<plural>.<group>` (`core` for the empty group) and carries the
//! CRD's group, names, scope and conversion, and per version its name, `served`, `storage`,
//! deprecation, OpenAPI schema, subresources, printer columns and selectable fields. Members are
//! written as kcp's Go types write them (`served`, `storage`, `schema` and `subresources` always,
//! the rest when set), so a snapshot reads like kcp's and compares equal to one kcp wrote.
//!
//! The CRD is taken as written, as apigen reads it. kcp's `crd snapshot` decodes its input with the
//! API server's defaulting first; [`crd_defaults`] does the same.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use kcp_apimachinery::field_error::{FieldError, aggregate_message};
use kcp_apimachinery::names::is_dns1123_subdomain;

use super::conversion::{API_VERSION_V1ALPHA1, without_nulls};

/// The only CRD version read.
pub const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";
pub const CRD_KIND: &str = "CustomResourceDefinition";
pub const SCHEMA_KIND: &str = "APIResourceSchema";

/// Why a CRD has no APIResourceSchema. The texts after the first are kcp's.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// Another kind, or another version of CRDs (kcp decodes into `apiextensions.k8s.io/v1`).
    #[error(
        "expected a CustomResourceDefinition of apiextensions.k8s.io/v1, got kind {kind:?} of {api_version:?}"
    )]
    NotACrd { api_version: String, kind: String },
    /// The CRD's members do not have the types of a CRD.
    #[error("invalid CustomResourceDefinition: {0}")]
    Malformed(#[source] serde_json::Error),
    /// `<prefix>.<plural>.<group>` is no DNS-1123 subdomain: the field errors, aggregated.
    #[error("{0}")]
    InvalidName(String),
    #[error("multiple versions specified for {0} but no conversion strategy")]
    NoConversion(String),
    #[error("webhooks that refer to services are not supported, please use URL instead")]
    WebhookService,
    #[error("webhooks URL must be set")]
    WebhookUrl,
    /// Strategy `Webhook` without `webhook` (a CRD the API server would refuse; kcp's code assumes it).
    #[error("conversion strategy Webhook requires spec.conversion.webhook")]
    WebhookMissing,
    /// Not expected: the output types always encode.
    #[error("encoding the APIResourceSchema: {0}")]
    Encode(#[source] serde_json::Error),
}

// What is read of the CRD. Every struct takes absent members (and, through `without_nulls`, null
// ones) as their zero value, as Go does.

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Crd {
    api_version: String,
    kind: String,
    spec: CrdSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CrdSpec {
    group: String,
    names: Names,
    scope: String,
    versions: Vec<CrdVersion>,
    conversion: Option<CrdConversion>,
}

/// `CustomResourceDefinitionNames`, which both kinds share; its Go field order and omissions.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default, rename_all = "camelCase")]
struct Names {
    plural: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    singular: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    short_names: Vec<String>,
    kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    list_kind: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    categories: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct CrdVersion {
    name: String,
    served: bool,
    storage: bool,
    deprecated: bool,
    deprecation_warning: Option<String>,
    schema: Option<CrdValidation>,
    subresources: Option<Value>,
    additional_printer_columns: Vec<Value>,
    selectable_fields: Vec<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CrdValidation {
    #[serde(rename = "openAPIV3Schema")]
    open_api_v3_schema: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CrdConversion {
    strategy: String,
    webhook: Option<CrdWebhook>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct CrdWebhook {
    client_config: Option<CrdClientConfig>,
    conversion_review_versions: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct CrdClientConfig {
    url: Option<String>,
    service: Option<Value>,
    ca_bundle: String,
}

// What is written: kcp's APIResourceSchemaSpec and its parts, in their Go field order.

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SchemaSpec {
    group: String,
    names: Names,
    scope: String,
    versions: Vec<SchemaVersion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    conversion: Option<SchemaConversion>,
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SchemaVersion {
    name: String,
    served: bool,
    storage: bool,
    #[serde(skip_serializing_if = "is_false")]
    deprecated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    deprecation_warning: Option<String>,
    /// A `RawExtension` in Go: `null` when the CRD version has no schema.
    schema: Value,
    /// A struct in Go, so `{}` when the CRD version has none.
    subresources: Value,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    additional_printer_columns: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    selectable_fields: Vec<Value>,
}

#[derive(Debug, Serialize)]
struct SchemaConversion {
    strategy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    webhook: Option<SchemaWebhook>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SchemaWebhook {
    #[serde(skip_serializing_if = "Option::is_none")]
    client_config: Option<SchemaClientConfig>,
    conversion_review_versions: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct SchemaClientConfig {
    #[serde(skip_serializing_if = "String::is_empty")]
    url: String,
    /// Base64 in both kinds, so copied as it is.
    #[serde(skip_serializing_if = "String::is_empty")]
    ca_bundle: String,
}

/// The APIResourceSchema of `crd`, named `<prefix>.<plural>.<group>` (`core` for the empty group).
pub fn schema_from_crd(crd: &Value, prefix: &str) -> Result<Value, SnapshotError> {
    let crd: Crd = serde_json::from_value(without_nulls(crd)).map_err(SnapshotError::Malformed)?;
    let wrong_version = !crd.api_version.is_empty() && crd.api_version != CRD_API_VERSION;
    let wrong_kind = !crd.kind.is_empty() && crd.kind != CRD_KIND;
    if wrong_version || wrong_kind {
        return Err(SnapshotError::NotACrd {
            api_version: crd.api_version,
            kind: crd.kind,
        });
    }
    let spec = crd.spec;

    // kcp names it `<prefix>.<crd name>`, which for any valid CRD is `<plural>.<group>`.
    let group_segment = if spec.group.is_empty() {
        "core"
    } else {
        spec.group.as_str()
    };
    let crd_name = format!("{}.{group_segment}", spec.names.plural);
    let name = format!("{prefix}.{crd_name}");
    let problems = is_dns1123_subdomain(&name);
    if !problems.is_empty() {
        let errors: Vec<FieldError> = problems
            .into_iter()
            .map(|detail| FieldError::invalid("metadata.name", name.as_str(), detail))
            .collect();
        return Err(SnapshotError::InvalidName(aggregate_message(&errors)));
    }

    if spec.versions.len() > 1 && spec.conversion.is_none() {
        return Err(SnapshotError::NoConversion(crd_name));
    }
    let conversion = spec.conversion.map(conversion).transpose()?;

    let versions = spec
        .versions
        .into_iter()
        .map(|v| SchemaVersion {
            name: v.name,
            served: v.served,
            storage: v.storage,
            deprecated: v.deprecated,
            deprecation_warning: v.deprecation_warning,
            schema: v
                .schema
                .and_then(|s| s.open_api_v3_schema)
                .unwrap_or(Value::Null),
            subresources: v.subresources.unwrap_or_else(|| Value::Object(Map::new())),
            additional_printer_columns: v.additional_printer_columns,
            selectable_fields: v.selectable_fields,
        })
        .collect();

    let spec = SchemaSpec {
        group: spec.group,
        names: spec.names,
        scope: spec.scope,
        versions,
        conversion,
    };
    let spec = serde_json::to_value(spec).map_err(SnapshotError::Encode)?;
    Ok(json!({
        "apiVersion": API_VERSION_V1ALPHA1,
        "kind": SCHEMA_KIND,
        "metadata": {"name": name},
        "spec": spec,
    }))
}

/// The schema's conversion: the strategy, and for webhooks their URL (a service cannot be reached
/// from every workspace's point of view, so kcp refuses it), CA bundle and review versions.
fn conversion(crd: CrdConversion) -> Result<SchemaConversion, SnapshotError> {
    let webhook = if crd.strategy == "Webhook" {
        let hook = crd.webhook.ok_or(SnapshotError::WebhookMissing)?;
        let client_config = match hook.client_config {
            None => None,
            Some(config) => {
                if config.service.is_some() {
                    return Err(SnapshotError::WebhookService);
                }
                let url = config.url.ok_or(SnapshotError::WebhookUrl)?;
                Some(SchemaClientConfig {
                    url,
                    ca_bundle: config.ca_bundle,
                })
            }
        };
        Some(SchemaWebhook {
            client_config,
            conversion_review_versions: hook.conversion_review_versions,
        })
    } else {
        None
    };
    Ok(SchemaConversion {
        strategy: crd.strategy,
        webhook,
    })
}

/// The API server's defaults of a CRD's spec (`SetDefaults_CustomResourceDefinitionSpec`), which
/// kcp's `crd snapshot` gets by decoding its input: `names.singular` the lowercased kind,
/// `names.listKind` the kind and `List`, `conversion` the strategy `None`. Anything that is not
/// shaped like a CRD is left for [`schema_from_crd`] to report.
pub fn crd_defaults(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let unset = |names: &Map<String, Value>, key: &str| {
            names
                .get(key)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        };
        if unset(names, "singular") && !kind.is_empty() {
            names.insert("singular".into(), Value::String(kind.to_lowercase()));
        }
        if unset(names, "listKind") && !kind.is_empty() {
            names.insert("listKind".into(), Value::String(format!("{kind}List")));
        }
    }
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn cowboys() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "cowboys.wildwest.dev"},
            "spec": {
                "group": "wildwest.dev",
                "names": {"kind": "Cowboy", "listKind": "CowboyList", "plural": "cowboys",
                          "singular": "cowboy", "shortNames": ["cb"]},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1alpha1",
                    "served": true,
                    "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {"spec": {"type": "object",
                            "properties": {"intent": {"type": "string"}}}},
                    }},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Intent", "type": "string", "jsonPath": ".spec.intent"},
                    ],
                }],
            },
            "status": {"storedVersions": ["v1alpha1"]},
        })
    }

    #[test]
    fn copies_what_kcp_copies() {
        let schema = schema_from_crd(&cowboys(), "today").unwrap();
        assert_eq!(
            schema,
            json!({
                "apiVersion": "apis.kcp.io/v1alpha1",
                "kind": "APIResourceSchema",
                "metadata": {"name": "today.cowboys.wildwest.dev"},
                "spec": {
                    "group": "wildwest.dev",
                    "names": {"plural": "cowboys", "singular": "cowboy", "shortNames": ["cb"],
                              "kind": "Cowboy", "listKind": "CowboyList"},
                    "scope": "Namespaced",
                    "versions": [{
                        "name": "v1alpha1",
                        "served": true,
                        "storage": true,
                        "schema": {"type": "object", "properties": {"spec": {"type": "object",
                            "properties": {"intent": {"type": "string"}}}}},
                        "subresources": {"status": {}},
                        "additionalPrinterColumns": [
                            {"name": "Intent", "type": "string", "jsonPath": ".spec.intent"},
                        ],
                    }],
                },
            })
        );
    }

    #[test]
    fn version_fields_and_go_omissions() {
        let mut crd = cowboys();
        crd["spec"]["versions"] = json!([
            {"name": "v1", "served": true, "storage": true, "deprecated": true,
             "deprecationWarning": "use v2", "selectableFields": [{"jsonPath": ".spec.intent"}],
             "additionalPrinterColumns": null},
            {"name": "v2", "served": false},
        ]);
        crd["spec"]["conversion"] = json!({"strategy": "None"});
        let schema = schema_from_crd(&crd, "p").unwrap();
        assert_eq!(
            schema["spec"]["versions"],
            json!([
                {"name": "v1", "served": true, "storage": true, "deprecated": true,
                 "deprecationWarning": "use v2", "schema": null, "subresources": {},
                 "selectableFields": [{"jsonPath": ".spec.intent"}]},
                {"name": "v2", "served": false, "storage": false, "schema": null,
                 "subresources": {}},
            ])
        );
        assert_eq!(schema["spec"]["conversion"], json!({"strategy": "None"}));
    }

    #[test]
    fn the_core_group_is_named_core() {
        let mut crd = cowboys();
        crd["spec"]["group"] = json!("");
        let schema = schema_from_crd(&crd, "p").unwrap();
        assert_eq!(schema["metadata"]["name"], "p.cowboys.core");
        assert_eq!(schema["spec"]["group"], "");
    }

    #[test]
    fn the_name_must_be_a_subdomain() {
        let err = schema_from_crd(&cowboys(), "Bad_Prefix").unwrap_err();
        assert!(matches!(err, SnapshotError::InvalidName(_)), "{err:?}");
        let text = err.to_string();
        assert!(
            text.starts_with(
                "metadata.name: Invalid value: \"Bad_Prefix.cowboys.wildwest.dev\": a lowercase RFC 1123 subdomain"
            ),
            "{text}"
        );
    }

    #[test]
    fn several_versions_need_a_conversion() {
        let mut crd = cowboys();
        crd["spec"]["versions"] = json!([{"name": "v1"}, {"name": "v2"}]);
        let err = schema_from_crd(&crd, "p").unwrap_err();
        assert_eq!(
            err.to_string(),
            "multiple versions specified for cowboys.wildwest.dev but no conversion strategy"
        );
    }

    #[test]
    fn webhooks_need_a_url() {
        let mut crd = cowboys();
        crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"name": "s", "namespace": "n"}},
            "conversionReviewVersions": ["v1"],
        }});
        assert!(matches!(
            schema_from_crd(&crd, "p"),
            Err(SnapshotError::WebhookService)
        ));
        crd["spec"]["conversion"]["webhook"]["clientConfig"] = json!({"caBundle": "Q0E="});
        assert!(matches!(
            schema_from_crd(&crd, "p"),
            Err(SnapshotError::WebhookUrl)
        ));
        crd["spec"]["conversion"]["webhook"]["clientConfig"] =
            json!({"url": "https://hook.example/convert", "caBundle": "Q0E="});
        let schema = schema_from_crd(&crd, "p").unwrap();
        assert_eq!(
            schema["spec"]["conversion"],
            json!({"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": "https://hook.example/convert", "caBundle": "Q0E="},
                "conversionReviewVersions": ["v1"],
            }})
        );
        crd["spec"]["conversion"] = json!({"strategy": "Webhook"});
        assert!(matches!(
            schema_from_crd(&crd, "p"),
            Err(SnapshotError::WebhookMissing)
        ));
    }

    #[test]
    fn only_v1_crds() {
        let mut crd = cowboys();
        crd["apiVersion"] = json!("apiextensions.k8s.io/v1beta1");
        assert!(matches!(
            schema_from_crd(&crd, "p"),
            Err(SnapshotError::NotACrd { .. })
        ));
        let err = schema_from_crd(&json!({"kind": "ConfigMap"}), "p").unwrap_err();
        assert!(err.to_string().contains("got kind \"ConfigMap\""), "{err}");
        let err = schema_from_crd(&json!({"spec": {"versions": "v1"}}), "p").unwrap_err();
        assert!(matches!(err, SnapshotError::Malformed(_)), "{err:?}");
    }

    #[test]
    fn defaults_as_the_api_server() {
        let mut crd = json!({"spec": {"names": {"kind": "Cowboy", "plural": "cowboys"}}});
        crd_defaults(&mut crd);
        assert_eq!(
            crd,
            json!({"spec": {
                "names": {"kind": "Cowboy", "plural": "cowboys", "singular": "cowboy",
                          "listKind": "CowboyList"},
                "conversion": {"strategy": "None"},
            }})
        );
        // What is set stays.
        let mut crd = cowboys();
        crd["spec"]["names"]["singular"] = json!("cb");
        crd["spec"]["conversion"] = json!({"strategy": "Webhook"});
        let before = crd.clone();
        crd_defaults(&mut crd);
        assert_eq!(crd, before);
        let mut odd = json!("not a CRD");
        crd_defaults(&mut odd);
        assert_eq!(odd, json!("not a CRD"));
    }
}
