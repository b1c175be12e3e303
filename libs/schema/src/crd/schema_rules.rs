//! Validation of one `CustomResourceValidation` (`{openAPIV3Schema: ...}`), in Kubernetes'
//! order: status-subresource root restrictions, root nullability, structural rules (or, when
//! those pass, defaults), then the per-node OpenAPI rules.

use serde_json::Value;

use super::SchemaOptions;
use super::causes::{Causes, child, quoted, shown};
use super::json::{Obj, bool_of, obj, str_of};
use super::{default_rules, openapi_rules, structural_rules};

/// JSONSchemaProps fields in Go declaration order, with whether they may be set at the root
/// when the status subresource is enabled.
const ROOT_FIELDS: &[(&str, bool)] = &[
    ("id", false),
    ("$schema", false),
    ("$ref", false),
    ("description", true),
    ("type", true),
    ("format", true),
    ("title", true),
    ("default", false),
    ("maximum", true),
    ("exclusiveMaximum", true),
    ("minimum", true),
    ("exclusiveMinimum", true),
    ("maxLength", true),
    ("minLength", true),
    ("pattern", true),
    ("maxItems", true),
    ("minItems", true),
    ("uniqueItems", true),
    ("multipleOf", true),
    ("enum", false),
    ("maxProperties", false),
    ("minProperties", false),
    ("required", true),
    ("items", true),
    ("allOf", false),
    ("oneOf", false),
    ("anyOf", false),
    ("not", false),
    ("properties", true),
    ("additionalProperties", false),
    ("patternProperties", false),
    ("dependencies", false),
    ("additionalItems", false),
    ("definitions", false),
    ("externalDocs", true),
    ("example", true),
    ("nullable", false),
    ("x-kubernetes-preserve-unknown-fields", true),
    ("x-kubernetes-embedded-resource", false),
    ("x-kubernetes-int-or-string", false),
    ("x-kubernetes-list-map-keys", false),
    ("x-kubernetes-list-type", false),
    ("x-kubernetes-map-type", false),
    ("x-kubernetes-validations", true),
];

const ALLOWED_AT_ROOT: &str = "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations]";

/// Go's zero value test for a JSON field (unset, false, "", 0, empty list or map).
pub(crate) fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// Checks `validation` found at `parent` (`spec.versions[i].schema` or `spec.validation`).
pub(crate) fn check(
    validation: Option<&Obj>,
    status_enabled: bool,
    opts: &SchemaOptions,
    parent: &str,
    out: &mut Causes,
) {
    let Some(schema) = validation.and_then(|v| obj(v, "openAPIV3Schema")) else {
        return;
    };
    let path = child(parent, "openAPIV3Schema");
    let mut found = Causes::default();

    if status_enabled {
        for (name, allowed) in ROOT_FIELDS {
            let Some(value) = schema.get(*name) else {
                continue;
            };
            if is_zero(value) {
                continue;
            }
            if *name == "type" {
                let ty = str_of(schema, "type");
                if ty != "object" {
                    found.invalid(
                        child(parent, "openAPIV3Schema.type"),
                        &quoted(ty),
                        r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                    );
                    break;
                }
                continue;
            }
            if !allowed {
                found.invalid(
                    path.clone(),
                    &shown(&Value::Object(schema.clone())),
                    &format!(
                        "only {ALLOWED_AT_ROOT} fields are allowed at the root of the schema if the status subresource is enabled"
                    ),
                );
                break;
            }
        }
    }

    if bool_of(schema, "nullable") {
        found.forbidden(
            child(parent, "openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        );
    }

    if opts.structural && structural_rules::convertible(schema) {
        let structural = structural_rules::check(schema, &path);
        if structural.is_empty() {
            default_rules::check(schema, &path, opts.pruned_defaults, &mut found);
        } else {
            found.extend(structural);
        }
    }

    openapi_rules::check(schema, &path, opts, &mut found);
    out.extend(found);
}
