//! The per-node rules apiextensions applies to every JSONSchemaProps of a CRD schema
//! (`ValidateCustomResourceDefinitionOpenAPISchema`): forbidden keywords, list and map types,
//! map-list keys, and the shape of `x-kubernetes-validations` (not the CEL itself).

use serde_json::Value;

use super::SchemaOptions;
use super::causes::{Causes, child, index, key, quoted};
use super::json::{Obj, bool_of, go_strings, list, obj, opt_str, sorted_props, str_of, strings};

pub(crate) const OPENAPI_TYPES: &[&str] =
    &["array", "boolean", "integer", "number", "object", "string"];
const META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];
const VALIDATION_REASONS: &[&str] = &[
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// Where in the schema we are, as far as these rules care.
#[derive(Clone)]
struct Context {
    /// Why defaults are forbidden here, if they are.
    forbid_defaults: Option<String>,
    /// Inside the TypeMeta/ObjectMeta of the root or an embedded resource.
    inside_meta: bool,
}

/// Checks `schema` (at `path`) and everything below it.
pub(crate) fn check(schema: &Obj, path: &str, opts: &SchemaOptions, out: &mut Causes) {
    let context = Context {
        forbid_defaults: None,
        inside_meta: false,
    };
    walk(schema, path, &context, true, opts, out);
}

fn walk(
    schema: &Obj,
    path: &str,
    ctx: &Context,
    is_root: bool,
    opts: &SchemaOptions,
    out: &mut Causes,
) {
    standard(schema, path, ctx, opts, out);

    if bool_of(schema, "uniqueItems") {
        out.forbidden(
            child(path, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        );
    }

    if let Some(additional) = schema.get("additionalProperties") {
        let has_properties = obj(schema, "properties").is_some_and(|p| !p.is_empty());
        if has_properties && additional != &Value::Bool(true) {
            out.forbidden(
                child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            );
        }
        if let Some(sub) = additional.as_object() {
            let mut sub_ctx = ctx.clone();
            if ctx.inside_meta {
                // Pruning a default inside a metadata map would be ambiguous.
                sub_ctx.forbid_defaults =
                    Some("inside additionalProperties applying to object metadata".into());
            }
            walk(
                sub,
                &child(path, "additionalProperties"),
                &sub_ctx,
                false,
                opts,
                out,
            );
        }
    }

    let embedded = bool_of(schema, "x-kubernetes-embedded-resource");
    for (name, sub) in sorted_props(schema) {
        let mut sub_ctx = ctx.clone();
        if (is_root || embedded) && META_FIELDS.contains(&name.as_str()) {
            sub_ctx.inside_meta = true;
            if is_root {
                sub_ctx.forbid_defaults = Some(format!("in top-level {name}"));
            }
        }
        walk(
            sub,
            &key(&child(path, "properties"), name),
            &sub_ctx,
            false,
            opts,
            out,
        );
    }

    if let Some(not) = obj(schema, "not") {
        walk(not, &child(path, "not"), ctx, false, opts, out);
    }
    for keyword in ["allOf", "oneOf", "anyOf"] {
        for (i, branch) in list(schema, keyword).iter().enumerate() {
            if let Some(branch) = branch.as_object() {
                walk(
                    branch,
                    &index(&child(path, keyword), i),
                    ctx,
                    false,
                    opts,
                    out,
                );
            }
        }
    }
    if let Some(definitions) = obj(schema, "definitions") {
        for (name, sub) in definitions {
            if let Some(sub) = sub.as_object() {
                walk(
                    sub,
                    &key(&child(path, "definitions"), name),
                    ctx,
                    false,
                    opts,
                    out,
                );
            }
        }
    }
    match schema.get("items") {
        Some(Value::Object(items)) => walk(items, &child(path, "items"), ctx, false, opts, out),
        Some(Value::Array(all)) => {
            for (i, items) in all.iter().enumerate() {
                if let Some(items) = items.as_object() {
                    walk(
                        items,
                        &index(&child(path, "items"), i),
                        ctx,
                        false,
                        opts,
                        out,
                    );
                }
            }
        }
        _ => {}
    }
    if let Some(dependencies) = obj(schema, "dependencies") {
        for (name, sub) in dependencies {
            if let Some(sub) = sub.as_object() {
                walk(
                    sub,
                    &key(&child(path, "dependencies"), name),
                    ctx,
                    false,
                    opts,
                    out,
                );
            }
        }
    }

    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        out.invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            "false",
            "must be true or undefined",
        );
    }
    list_and_map_types(schema, path, opts, out);
    validation_rules(schema, path, out);
}

/// `specStandardValidatorV3.validate`.
fn standard(schema: &Obj, path: &str, ctx: &Context, opts: &SchemaOptions, out: &mut Causes) {
    let ty = str_of(schema, "type");
    if opts.valid_property_type && !ty.is_empty() && !OPENAPI_TYPES.contains(&ty) {
        out.not_supported(child(path, "type"), ty, OPENAPI_TYPES);
    }
    if schema.contains_key("default")
        && let Some(reason) = &ctx.forbid_defaults
    {
        out.forbidden(child(path, "default"), &format!("must not be set {reason}"));
    }
    if !str_of(schema, "id").is_empty() {
        out.forbidden(child(path, "id"), "id is not supported");
    }
    if schema.contains_key("additionalItems") {
        out.forbidden(
            child(path, "additionalItems"),
            "additionalItems is not supported",
        );
    }
    if obj(schema, "patternProperties").is_some_and(|p| !p.is_empty()) {
        out.forbidden(
            child(path, "patternProperties"),
            "patternProperties is not supported",
        );
    }
    if obj(schema, "definitions").is_some_and(|p| !p.is_empty()) {
        out.forbidden(child(path, "definitions"), "definitions is not supported");
    }
    if schema.contains_key("dependencies") {
        out.forbidden(child(path, "dependencies"), "dependencies is not supported");
    }
    if schema.contains_key("$ref") {
        out.forbidden(child(path, "$ref"), "$ref is not supported");
    }
    if ty == "null" {
        out.forbidden(
            child(path, "type"),
            "type cannot be set to null, use nullable as an alternative",
        );
    }
    if schema.get("items").is_some_and(Value::is_array) {
        out.forbidden(
            child(path, "items"),
            "items must be a schema object and not an array",
        );
    }
    if ctx.inside_meta && bool_of(schema, "x-kubernetes-embedded-resource") {
        out.forbidden(
            child(path, "x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        );
    }
}

fn list_and_map_types(schema: &Obj, path: &str, opts: &SchemaOptions, out: &mut Causes) {
    let ty = str_of(schema, "type");
    let map_type = opt_str(schema, "x-kubernetes-map-type");
    let list_type = opt_str(schema, "x-kubernetes-list-type");
    let keys = strings(schema, "x-kubernetes-list-map-keys");
    let items = obj(schema, "items");

    if map_type.is_some() && ty != "object" {
        let detail = "must be object if x-kubernetes-map-type is specified";
        if ty.is_empty() {
            out.required(child(path, "type"), detail);
        } else {
            out.invalid(child(path, "type"), &quoted(ty), detail);
        }
    }
    if let Some(map_type) = map_type
        && map_type != "atomic"
        && map_type != "granular"
    {
        out.not_supported(
            child(path, "x-kubernetes-map-type"),
            map_type,
            &["atomic", "granular"],
        );
    }

    if list_type.is_some() && ty != "array" {
        let detail = "must be array if x-kubernetes-list-type is specified";
        if ty.is_empty() {
            out.required(child(path, "type"), detail);
        } else {
            out.invalid(child(path, "type"), &quoted(ty), detail);
        }
    } else if opts.atomic_set_type
        && list_type == Some("set")
        && let Some(items) = items
    {
        let detail = "must be atomic as item of a list with x-kubernetes-list-type=set";
        let items_path = child(path, "items");
        // Kubernetes shows the items' list type as the bad value in both cases.
        let shown = opt_str(items, "x-kubernetes-list-type").map_or("\"null\"".to_owned(), quoted);
        match str_of(items, "type") {
            "array" if opt_str(items, "x-kubernetes-list-type").is_some_and(|t| t != "atomic") => {
                out.invalid(child(&items_path, "x-kubernetes-list-type"), &shown, detail);
            }
            "object" if opt_str(items, "x-kubernetes-map-type") != Some("atomic") => {
                out.invalid(child(&items_path, "x-kubernetes-map-type"), &shown, detail);
            }
            _ => {}
        }
    }

    if let Some(list_type) = list_type
        && !["atomic", "set", "map"].contains(&list_type)
    {
        out.not_supported(
            child(path, "x-kubernetes-list-type"),
            list_type,
            &["atomic", "set", "map"],
        );
    }

    if !keys.is_empty() {
        let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => out.required(child(path, "x-kubernetes-list-type"), detail),
            Some("map") => {}
            Some(other) => out.invalid(
                child(path, "x-kubernetes-list-type"),
                &quoted(other),
                detail,
            ),
        }
    }

    if list_type == Some("map") {
        if keys.is_empty() {
            out.required(
                child(path, "x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            );
        }
        match schema.get("items") {
            None => out.required(
                child(path, "items"),
                "must have a schema if x-kubernetes-list-type is map",
            ),
            Some(all @ Value::Array(_)) => out.invalid(
                child(path, "items"),
                &super::causes::shown(all),
                "must only have a single schema if x-kubernetes-list-type is map",
            ),
            _ => {}
        }
        if let Some(items) = items {
            let item_type = str_of(items, "type");
            let items_path = child(path, "items");
            if item_type != "object" {
                out.invalid(
                    child(&items_path, "type"),
                    &quoted(item_type),
                    "must be object if parent array's x-kubernetes-list-type is map",
                );
            } else {
                let properties = obj(items, "properties");
                let mut seen: Vec<&str> = Vec::new();
                for k in &keys {
                    match properties
                        .and_then(|p| p.get(*k))
                        .and_then(Value::as_object)
                    {
                        Some(property) => {
                            let pt = str_of(property, "type");
                            if pt == "array" || pt == "object" {
                                out.invalid(
                                    child(&key(&child(&items_path, "properties"), k), "type"),
                                    &quoted(item_type),
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                );
                            }
                        }
                        None => out.invalid(
                            child(path, "x-kubernetes-list-map-keys"),
                            &go_strings(&keys),
                            "entries must all be names of item properties",
                        ),
                    }
                    if seen.contains(k) {
                        out.invalid(
                            child(path, "x-kubernetes-list-map-keys"),
                            &go_strings(&keys),
                            "must not contain duplicate entries",
                        );
                    }
                    seen.push(k);
                }
            }
        }
    }

    if opts.map_list_keys {
        map_list_keys(schema, path, out);
    }
}

/// `validateMapListKeysMapSet`: set/map items are never null, map keys always present.
pub(crate) fn map_list_keys(schema: &Obj, path: &str, out: &mut Causes) {
    let Some(items) = obj(schema, "items") else {
        return;
    };
    let Some(list_type) = opt_str(schema, "x-kubernetes-list-type") else {
        return;
    };
    if list_type != "set" && list_type != "map" {
        return;
    }
    let items_path = child(path, "items");
    if bool_of(items, "nullable") {
        out.forbidden(
            child(&items_path, "nullable"),
            &format!("cannot be nullable when x-kubernetes-list-type is {list_type}"),
        );
    }
    if list_type != "map" {
        return;
    }
    let required = strings(items, "required");
    for k in strings(schema, "x-kubernetes-list-map-keys") {
        let Some(property) = obj(items, "properties").and_then(|p| obj(p, k)) else {
            continue;
        };
        let property_path = key(&child(&items_path, "properties"), k);
        if !required.contains(&k) && !property.contains_key("default") {
            out.required(
                child(&property_path, "default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            );
        }
        if bool_of(property, "nullable") {
            out.forbidden(
                child(&property_path, "nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            );
        }
    }
}

fn has_newlines(text: &str) -> bool {
    text.contains(['\n', '\r'])
}

/// The shape of `x-kubernetes-validations` rules (their CEL is compiled elsewhere).
fn validation_rules(schema: &Obj, path: &str, out: &mut Causes) {
    let rules_path = child(path, "x-kubernetes-validations");
    for (i, rule) in list(schema, "x-kubernetes-validations").iter().enumerate() {
        let Some(rule) = rule.as_object() else {
            continue;
        };
        let at = index(&rules_path, i);
        let expression = str_of(rule, "rule");
        let message = str_of(rule, "message");
        let trimmed_rule = expression.trim();
        let trimmed_message = message.trim();
        if trimmed_rule.is_empty() {
            out.required(child(&at, "rule"), "rule is not specified");
        } else if !message.is_empty() && trimmed_message.is_empty() {
            out.invalid(
                child(&at, "message"),
                &quoted(message),
                "must be non-empty if specified",
            );
        } else if has_newlines(trimmed_message) {
            out.invalid(
                child(&at, "message"),
                &quoted(message),
                "must not contain line breaks",
            );
        } else if has_newlines(trimmed_rule) && trimmed_message.is_empty() {
            out.required(
                child(&at, "message"),
                "message must be specified if rule contains line breaks",
            );
        }
        let message_expression = str_of(rule, "messageExpression");
        if !message_expression.is_empty() && message_expression.trim().is_empty() {
            out.required(
                child(&at, "messageExpression"),
                "messageExpression must be non-empty if specified",
            );
        }
        if let Some(reason) = opt_str(rule, "reason")
            && !VALIDATION_REASONS.contains(&reason)
        {
            out.not_supported(child(&at, "reason"), reason, VALIDATION_REASONS);
        }
        let field_path = str_of(rule, "fieldPath");
        if !field_path.is_empty() && field_path.trim().is_empty() {
            out.invalid(
                child(&at, "fieldPath"),
                &quoted(field_path),
                "must be non-empty if specified",
            );
        }
        if has_newlines(field_path) {
            out.invalid(
                child(&at, "fieldPath"),
                &quoted(field_path),
                "must not contain line breaks",
            );
        }
    }
}
