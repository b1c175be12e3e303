//! The `components.schemas` of a group-version document: every schema the operations refer
//! to, transitively, with the kinds' GVK extensions.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::OpenApiResource;
use crate::builtin;

pub(crate) const REF_PREFIX: &str = "#/components/schemas/";
const GVK_EXTENSION: &str = "x-kubernetes-group-version-kind";
const SELECTABLE_FIELDS_EXTENSION: &str = "x-kubernetes-selectable-fields";

/// Finds component schemas: extra ones first, then the built-ins.
pub(crate) struct Lookup<'e> {
    extra: &'e Map<String, Value>,
}

impl<'e> Lookup<'e> {
    pub(crate) fn new(extra: &'e Map<String, Value>) -> Self {
        Lookup { extra }
    }

    fn get(&self, name: &str) -> Option<&'e Value> {
        self.extra
            .get(name)
            .or_else(|| builtin::component_schema(name))
    }

    /// Whether the schema is a built-in Go type, which (unlike custom resources) also accepts
    /// strategic merge patches.
    pub(crate) fn is_builtin_go_type(&self, name: &str) -> bool {
        !self.extra.contains_key(name)
            && name.starts_with("io.k8s.")
            && builtin::component_schema(name).is_some()
    }
}

/// `{"$ref": "#/components/schemas/<name>"}`.
pub(crate) fn reference(name: &str) -> Value {
    json!({ "$ref": format!("{REF_PREFIX}{name}") })
}

/// Name of the list kind's component.
pub(crate) fn list_name(schema_name: &str) -> String {
    format!("{schema_name}List")
}

/// All schemas reachable from the operations, sorted by name, kinds marked with their GVK.
pub(crate) fn schemas(
    resources: &[OpenApiResource],
    paths: &Map<String, Value>,
    lookup: &Lookup<'_>,
) -> Map<String, Value> {
    // Schemas generated here rather than looked up: the list kinds.
    let mut synthesized: BTreeMap<String, Value> = BTreeMap::new();
    let mut gvks: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    // The kind and its list, as apiextensions-apiserver's OpenAPI builder marks them.
    let mut selectable: BTreeMap<String, Value> = BTreeMap::new();
    for resource in resources {
        let list = list_name(&resource.schema_name);
        if !resource.selectable_fields.is_empty() {
            let fields: Vec<Value> = (resource.selectable_fields.iter())
                .map(|f| json!({"fieldPath": f}))
                .collect();
            selectable.insert(resource.schema_name.clone(), Value::Array(fields.clone()));
            selectable.insert(list.clone(), Value::Array(fields));
        }
        if lookup.get(&list).is_none() {
            synthesized.insert(list.clone(), list_schema(resource));
        }
        add_gvk(&mut gvks, &resource.schema_name, resource, &resource.kind);
        add_gvk(
            &mut gvks,
            &list,
            resource,
            &format!("{}List", resource.kind),
        );
    }

    let mut pending: Vec<String> = Vec::new();
    for item in paths.values() {
        collect_refs(item, &mut pending);
    }
    let mut found: BTreeMap<String, Value> = BTreeMap::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    while let Some(name) = pending.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let schema = synthesized
            .get(&name)
            .or_else(|| lookup.get(&name))
            .cloned();
        // A dangling reference stays dangling; the document is still useful.
        if let Some(schema) = schema {
            collect_refs(&schema, &mut pending);
            found.insert(name, schema);
        }
    }

    let mut out = Map::new();
    for (name, mut schema) in found {
        if let (Some(list), Value::Object(map)) = (gvks.get(&name), &mut schema) {
            map.insert(GVK_EXTENSION.to_owned(), Value::Array(list.clone()));
        }
        if let (Some(fields), Value::Object(map)) = (selectable.get(&name), &mut schema) {
            map.insert(SELECTABLE_FIELDS_EXTENSION.to_owned(), fields.clone());
        }
        out.insert(name, schema);
    }
    out
}

fn add_gvk(
    gvks: &mut BTreeMap<String, Vec<Value>>,
    name: &str,
    resource: &OpenApiResource,
    kind: &str,
) {
    let gvk = json!({"group": resource.group, "version": resource.version, "kind": kind});
    let list = gvks.entry(name.to_owned()).or_default();
    if !list.contains(&gvk) {
        list.push(gvk);
    }
}

/// Adds the names of every `#/components/schemas/...` reference inside `value`.
pub(crate) fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                if key == "$ref"
                    && let Some(name) = item.as_str().and_then(|r| r.strip_prefix(REF_PREFIX))
                {
                    out.push(name.replace("~1", "/").replace("~0", "~"));
                } else {
                    collect_refs(item, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_refs(item, out)),
        _ => {}
    }
}

/// `<Kind>List`, shaped like every Kubernetes list.
fn list_schema(resource: &OpenApiResource) -> Value {
    let kind = &resource.kind;
    json!({
        "description": format!("{kind}List is a list of {kind} objects."),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation of an object.",
                "type": "string",
            },
            "items": {
                "description": format!("List of {kind} objects."),
                "type": "array",
                "items": reference(&resource.schema_name),
            },
            "kind": {
                "description": "Kind is a string value representing the REST resource this object represents.",
                "type": "string",
            },
            "metadata": {
                "description": "Standard list metadata.",
                "allOf": [reference(builtin::LIST_META)],
            },
        },
    })
}
