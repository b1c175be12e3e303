//! The part of kube-apiserver's type check that needs no type checker: field selections on
//! `self` and `oldSelf` must name fields the schema declares (`self.spce` is refused when the
//! CRD is written, not on every write of its resources).

use kube_cel::cel::common::ast::{Expr, IdedExpr};
use serde_json::Value as Json;

use super::program::{OLD_SELF, SELF};
use super::value::escape;

/// The first selection in `expr` of a field `schema` does not have, as an error detail.
/// `resource_root` when `schema` is the root of a resource (the CRD's or an embedded one).
pub(super) fn undefined_field(
    expr: &IdedExpr,
    schema: &Json,
    resource_root: bool,
) -> Option<String> {
    let mut error = None;
    visit(expr, &mut |e| {
        if error.is_none()
            && let Some(path) = self_path(e)
        {
            error = check(&path, schema, resource_root);
        }
    });
    error
}

fn visit(e: &IdedExpr, f: &mut impl FnMut(&IdedExpr)) {
    f(e);
    match &e.expr {
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                visit(target, f);
            }
            for arg in &call.args {
                visit(arg, f);
            }
        }
        Expr::Select(select) => visit(&select.operand, f),
        Expr::List(list) => list.elements.iter().for_each(|x| visit(x, f)),
        Expr::Map(map) => {
            for entry in &map.entries {
                if let kube_cel::cel::common::ast::EntryExpr::MapEntry(m) = &entry.expr {
                    visit(&m.key, f);
                    visit(&m.value, f);
                }
            }
        }
        Expr::Comprehension(c) => {
            for part in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                visit(part, f);
            }
        }
        _ => {}
    }
}

/// The field names of a selection chain rooted at `self`/`oldSelf`: `self.a.b` is `[a, b]`.
fn self_path(e: &IdedExpr) -> Option<Vec<&str>> {
    let mut names = Vec::new();
    let mut at = e;
    loop {
        match &at.expr {
            Expr::Select(select) => {
                names.push(select.field.as_str());
                at = &select.operand;
            }
            Expr::Ident(name) if (name == SELF || name == OLD_SELF) && !names.is_empty() => {
                names.reverse();
                return Some(names);
            }
            _ => return None,
        }
    }
}

fn check(path: &[&str], schema: &Json, resource_root: bool) -> Option<String> {
    let mut schema = schema;
    let mut resource_root = resource_root;
    for name in path {
        let flag = |key: &str| schema.get(key).and_then(Json::as_bool) == Some(true);
        if resource_root && matches!(*name, "apiVersion" | "kind") {
            return None;
        }
        if resource_root && *name == "metadata" {
            // Only `name` and `generateName` of the metadata are visible.
            static METADATA: std::sync::LazyLock<Json> = std::sync::LazyLock::new(|| {
                serde_json::json!({"type": "object", "properties": {
                    "name": {"type": "string"}, "generateName": {"type": "string"}}})
            });
            schema = &METADATA;
            resource_root = false;
            continue;
        }
        if flag("x-kubernetes-preserve-unknown-fields") || flag("x-kubernetes-int-or-string") {
            return None;
        }
        match schema.get("type").and_then(Json::as_str) {
            Some("object") => {}
            Some(other) => {
                return Some(format!("type '{other}' does not support field selection"));
            }
            None => return None,
        }
        if let Some(property) = schema
            .get("properties")
            .and_then(Json::as_object)
            .and_then(|properties| {
                properties
                    .iter()
                    .find(|(p, _)| escape(p).as_deref() == Some(*name))
            })
            .map(|(_, property)| property)
        {
            resource_root = property
                .get("x-kubernetes-embedded-resource")
                .and_then(Json::as_bool)
                == Some(true);
            schema = property;
            continue;
        }
        return match schema.get("additionalProperties") {
            // A map: any key may be selected; its values are not followed further.
            Some(a) if a.is_object() || a == &Json::Bool(true) => None,
            _ => Some(format!("undefined field '{name}'")),
        };
    }
    None
}
