//! Defaults in a CRD schema must be valid values of their own schema and must survive pruning
//! unchanged (apiextensions' `ValidateDefaults`).

use serde_json::Value;

use super::causes::{Causes, child, key, shown};
use super::json::{Obj, bool_of, obj, sorted_props};
use crate::FieldCause;
use crate::structural::Schema;
use crate::validate::{prune_node, validate_node};

/// Checks every `default` reachable through properties and items (not additionalProperties,
/// as Kubernetes does). The root is treated as a resource, so its apiVersion, kind and metadata
/// are resource meta.
pub(crate) fn check(schema: &Obj, path: &str, require_pruned: bool, out: &mut Causes) {
    walk(schema, path, true, false, require_pruned, out);
}

fn walk(
    s: &Obj,
    path: &str,
    resource: bool,
    inside_meta: bool,
    require_pruned: bool,
    out: &mut Causes,
) {
    let resource = resource || bool_of(s, "x-kubernetes-embedded-resource");
    let inside_meta = inside_meta && !bool_of(s, "x-kubernetes-embedded-resource");
    if let Some(default) = s.get("default") {
        check_default(s, default, path, inside_meta, require_pruned, out);
    }
    if let Some(items) = obj(s, "items") {
        walk(
            items,
            &child(path, "items"),
            false,
            inside_meta,
            require_pruned,
            out,
        );
    }
    for (name, sub) in sorted_props(s) {
        let meta = inside_meta
            || (resource && matches!(name.as_str(), "metadata" | "apiVersion" | "kind"));
        walk(
            sub,
            &key(&child(path, "properties"), name),
            false,
            meta,
            require_pruned,
            out,
        );
    }
}

fn check_default(
    s: &Obj,
    default: &Value,
    path: &str,
    inside_meta: bool,
    require_pruned: bool,
    out: &mut Causes,
) {
    let Ok(schema) = Schema::compile(&Value::Object(s.clone())) else {
        return;
    };
    let at = child(path, "default");
    let node = schema.root();
    if !inside_meta && require_pruned {
        let mut pruned = default.clone();
        prune_node(node, &mut pruned, node.embedded_resource());
        if &pruned != default {
            out.invalid(at.clone(), &shown(default), "must not have unknown fields");
        }
    }
    for cause in validate_node(node, default) {
        out.0.push(FieldCause {
            field: join(&at, &cause.field),
            ..cause
        });
    }
}

/// `at` followed by a path relative to the default value.
fn join(at: &str, relative: &str) -> String {
    if relative.is_empty() || relative == "<nil>" {
        at.to_owned()
    } else if relative.starts_with('[') {
        format!("{at}{relative}")
    } else {
        format!("{at}.{relative}")
    }
}
