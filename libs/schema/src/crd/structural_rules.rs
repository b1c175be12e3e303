//! Structural-schema rules (apiextensions' `ValidateStructural`): every specified node has a type,
//! the root is an object, metadata is only restricted in name/generateName, value validations
//! (allOf/anyOf/oneOf/not) add no structure, and whatever they mention exists structurally.

use serde_json::{Value, json};

use super::causes::{Causes, child, index, key, quoted};
use super::json::{Obj, bool_of, list, obj, sorted_props, str_of};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Whether apiextensions can turn the schema into its structural form at all; when it cannot
/// (unsupported keywords, which other rules report), the structural rules are skipped.
pub(crate) fn convertible(schema: &Obj) -> bool {
    const UNSUPPORTED: &[&str] = &[
        "id",
        "$schema",
        "$ref",
        "patternProperties",
        "dependencies",
        "additionalItems",
        "definitions",
    ];
    if UNSUPPORTED.iter().any(|k| match schema.get(*k) {
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(_) => true,
        None => false,
    }) {
        return false;
    }
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false))
        || schema.get("items").is_some_and(Value::is_array)
    {
        return false;
    }
    let mut nested: Vec<&Obj> = sorted_props(schema).into_iter().map(|(_, s)| s).collect();
    for keyword in ["items", "additionalProperties", "not"] {
        if let Some(sub) = obj(schema, keyword) {
            nested.push(sub);
        }
    }
    for keyword in ["allOf", "anyOf", "oneOf"] {
        nested.extend(list(schema, keyword).iter().filter_map(Value::as_object));
    }
    nested.into_iter().all(convertible)
}

/// All structural-rule violations, sorted as Kubernetes sorts them.
pub(crate) fn check(schema: &Obj, path: &str) -> Causes {
    let mut out = Causes::default();
    invariants(schema, Level::Root, path, &mut out);
    completeness(schema, path, &mut out);
    out.sorted()
}

fn int_or_string_any_of(any_of: &[Value]) -> bool {
    any_of == [json!({"type": "integer"}), json!({"type": "string"})]
}

fn invariants(s: &Obj, level: Level, path: &str, out: &mut Causes) {
    let ty = str_of(s, "type");
    if ty == "array" && !s.contains_key("items") {
        out.required(child(path, "items"), "must be specified");
    }
    if let Some(items) = obj(s, "items") {
        invariants(items, Level::Item, &child(path, "items"), out);
    }
    for (name, sub) in sorted_props(s) {
        invariants(
            sub,
            Level::Field,
            &key(&child(path, "properties"), name),
            out,
        );
    }
    if let Some(additional) = s.get("additionalProperties") {
        if level == Level::Root {
            out.forbidden(
                child(path, "additionalProperties"),
                "must not be used at the root",
            );
        }
        if let Some(additional) = additional.as_object() {
            invariants(
                additional,
                Level::Field,
                &child(path, "additionalProperties"),
                out,
            );
        }
    }

    let int_or_string = bool_of(s, "x-kubernetes-int-or-string");
    let preserve = bool_of(s, "x-kubernetes-preserve-unknown-fields");
    let embedded = bool_of(s, "x-kubernetes-embedded-resource");
    if int_or_string && preserve {
        out.invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        );
    }
    if int_or_string && embedded {
        out.invalid(
            child(path, "x-kubernetes-embedded-resource"),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        );
    }

    let skip_any_of = int_or_string_any_of(list(s, "anyOf"));
    let skip_first_all_of_any_of = list(s, "allOf")
        .first()
        .and_then(Value::as_object)
        .is_some_and(|first| int_or_string_any_of(list(first, "anyOf")));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, path, out);

    let check_metadata = level == Level::Root || embedded;
    if embedded && ty != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        if ty.is_empty() {
            out.required(child(path, "type"), detail);
        } else {
            out.invalid(child(path, "type"), &quoted(ty), detail);
        }
    } else if ty.is_empty() && !int_or_string && !preserve {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.required(child(path, "type"), detail);
    }
    if embedded && s.contains_key("additionalProperties") {
        out.forbidden(
            child(path, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        );
    }
    if level == Level::Root && !ty.is_empty() && ty != "object" {
        out.invalid(
            child(path, "type"),
            &quoted(ty),
            "must be object at the root",
        );
    }
    let properties = obj(s, "properties");
    if check_metadata {
        for name in ["kind", "apiVersion"] {
            if let Some(sub) = properties.and_then(|p| obj(p, name)) {
                let sub_ty = str_of(sub, "type");
                if sub_ty != "string" {
                    out.invalid(
                        child(&key(&child(path, "properties"), name), "type"),
                        &quoted(sub_ty),
                        "must be string",
                    );
                }
            }
        }
    }
    if let Some(metadata) = properties.and_then(|p| obj(p, "metadata")) {
        metadata_invariants(
            metadata,
            check_metadata,
            level,
            &key(&child(path, "properties"), "metadata"),
            out,
        );
    }
    if embedded && !preserve && properties.is_none_or(|p| p.is_empty()) {
        out.required(
            child(path, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        );
    }
}

fn metadata_invariants(s: &Obj, check_metadata: bool, level: Level, path: &str, out: &mut Causes) {
    let ty = str_of(s, "type");
    if check_metadata && ty != "object" {
        out.invalid(child(path, "type"), &quoted(ty), "must be object");
    }
    if level == Level::Root {
        // Only a type, name/generateName restrictions and (checked elsewhere) a default may be
        // given; anything else is ObjectMeta's business.
        let names_only = obj(s, "properties")
            .is_none_or(|p| p.keys().all(|k| k == "name" || k == "generateName"));
        // Zero values (false, "", empty lists) count as unset, as in Go.
        let other = s.iter().any(|(k, v)| {
            !matches!(k.as_str(), "type" | "properties" | "default")
                && !super::schema_rules::is_zero(v)
        });
        if !names_only || other {
            out.forbidden(
                path.to_owned(),
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            );
        }
    }
}

/// The allOf/anyOf/oneOf/not of a structural node, and pattern syntax.
fn value_validation(
    v: &Obj,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &str,
    out: &mut Causes,
) {
    if !skip_any_of {
        for (i, branch) in list(v, "anyOf").iter().enumerate() {
            if let Some(branch) = branch.as_object() {
                nested(branch, false, &index(&child(path, "anyOf"), i), out);
            }
        }
    }
    for (i, branch) in list(v, "allOf").iter().enumerate() {
        if let Some(branch) = branch.as_object() {
            let skip = skip_first_all_of_any_of && i == 0;
            nested(branch, skip, &index(&child(path, "allOf"), i), out);
        }
    }
    for (i, branch) in list(v, "oneOf").iter().enumerate() {
        if let Some(branch) = branch.as_object() {
            nested(branch, false, &index(&child(path, "oneOf"), i), out);
        }
    }
    if let Some(not) = obj(v, "not") {
        nested(not, false, &child(path, "not"), out);
    }
    if let Some(pattern) = v.get("pattern").and_then(Value::as_str)
        && !pattern.is_empty()
        && let Err(err) = regex::Regex::new(pattern)
    {
        out.invalid(
            child(path, "pattern"),
            &quoted(pattern),
            &format!(
                "must be a valid regular expression, but isn't: {}",
                go_regexp_error(pattern, &err)
            ),
        );
    }
}

/// Go's `regexp.Compile` error text for the common mistakes (the `regex` crate words them
/// differently); anything else keeps the crate's own description.
fn go_regexp_error(pattern: &str, err: &regex::Error) -> String {
    let text = err.to_string();
    let code = [
        ("unclosed group", "missing closing )"),
        ("unopened group", "unexpected )"),
        ("unclosed character class", "missing closing ]"),
        (
            "repetition operator missing expression",
            "missing argument to repetition operator",
        ),
        ("unrecognized escape sequence", "invalid escape sequence"),
        (
            "invalid character class range",
            "invalid character class range",
        ),
        ("invalid repetition count", "invalid repeat count"),
    ]
    .iter()
    .find(|(rust, _)| text.contains(rust))
    .map(|(_, go)| *go);
    match code {
        Some(code) => format!("error parsing regexp: {code}: `{pattern}`"),
        None => text,
    }
}

/// A schema inside a value validation: it may only validate, never add structure.
fn nested(v: &Obj, skip_any_of: bool, path: &str, out: &mut Causes) {
    value_validation(v, skip_any_of, false, path, out);
    if let Some(items) = obj(v, "items") {
        nested(items, false, &child(path, "items"), out);
    }
    for (name, sub) in sorted_props(v) {
        nested(sub, false, &key(&child(path, "properties"), name), out);
    }
    if !str_of(v, "type").is_empty() {
        out.forbidden(child(path, "type"), "must be empty to be structural");
    }
    if v.contains_key("additionalProperties") {
        out.forbidden(
            child(path, "additionalProperties"),
            "must be undefined to be structural",
        );
    }
    let forbidden: &[(&str, &str)] = &[
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
    ];
    for (keyword, detail) in forbidden {
        let set = match v.get(*keyword) {
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Null) | None => false,
            Some(_) => true,
        };
        if set {
            out.forbidden(child(path, keyword), detail);
        }
    }
    for flag in [
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if bool_of(v, flag) {
            out.forbidden(child(path, flag), "must be false to be structural");
        }
    }
    if !list(v, "x-kubernetes-list-map-keys").is_empty() {
        out.forbidden(
            child(path, "x-kubernetes-list-map-keys"),
            "must be empty to be structural",
        );
    }
    for keyword in ["x-kubernetes-list-type", "x-kubernetes-map-type"] {
        if v.contains_key(keyword) {
            out.forbidden(child(path, keyword), "must be undefined to be structural");
        }
    }
    if !list(v, "x-kubernetes-validations").is_empty() {
        out.forbidden(
            child(path, "x-kubernetes-validations"),
            "must be empty to be structural",
        );
    }
    if obj(v, "properties").is_some_and(|p| p.contains_key("metadata")) {
        out.forbidden(
            key(&child(path, "properties"), "metadata"),
            "must not be specified in a nested context",
        );
    }
}

/// Whatever the root's value validations mention (properties, items) must exist structurally
/// (Kubernetes checks this for the root node only).
fn completeness(root: &Obj, path: &str, out: &mut Causes) {
    completeness_of_branches(root, root, path, path, out);
}

fn nested_completeness(v: &Obj, s: &Obj, s_path: &str, v_path: &str, out: &mut Causes) {
    completeness_of_branches(v, s, s_path, v_path, out);
    if let Some(items) = obj(v, "items") {
        let s_items = obj(s, "items");
        let sp = child(s_path, "items");
        let vp = child(v_path, "items");
        match s_items {
            Some(s_items) => nested_completeness(items, s_items, &sp, &vp, out),
            None => out.required(sp, &format!("because it is defined in {vp}")),
        }
    }
    for (name, sub) in sorted_props(v) {
        let sp = key(&child(s_path, "properties"), name);
        let vp = key(&child(v_path, "properties"), name);
        match obj(s, "properties").and_then(|p| obj(p, name)) {
            Some(s_sub) => nested_completeness(sub, s_sub, &sp, &vp, out),
            None => out.required(sp, &format!("because it is defined in {vp}")),
        }
    }
}

fn completeness_of_branches(v: &Obj, s: &Obj, s_path: &str, v_path: &str, out: &mut Causes) {
    if let Some(not) = obj(v, "not") {
        nested_completeness(not, s, s_path, &child(v_path, "not"), out);
    }
    for keyword in ["allOf", "anyOf", "oneOf"] {
        for (i, branch) in list(v, keyword).iter().enumerate() {
            if let Some(branch) = branch.as_object() {
                nested_completeness(branch, s, s_path, &index(&child(v_path, keyword), i), out);
            }
        }
    }
}
