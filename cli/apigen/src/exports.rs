//! The APIExports apigen writes: one per group (kcp's shards have their own, its logical clusters
//! none), its resources sorted, each `{name, group, schema, storage: {crd: {}}}`. An export
//! written before keeps its other fields; its resources are replaced, or with
//! `--preserve-resources` kept and updated.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::error::ApigenError;
use crate::group_resource::GroupResource;

pub const EXPORT_API_VERSION: &str = "apis.kcp.io/v1alpha2";
/// kcp's own group, whose shards and logical clusters apigen treats apart.
const CORE_GROUP: &str = "core.kcp.io";

/// The export `gr` goes to, if any.
pub fn export_name(gr: &GroupResource, ignored: &[GroupResource]) -> Option<String> {
    if gr.group == CORE_GROUP && gr.resource == "logicalclusters" {
        return None;
    }
    if ignored.contains(gr) {
        return None;
    }
    if gr.group == CORE_GROUP && gr.resource == "shards" {
        return Some(format!("shards.{CORE_GROUP}"));
    }
    Some(gr.group.clone())
}

/// The exports of `schemas` (each resource's schema name), by export name. `existing` reads an
/// export's previous manifest, if there is one.
pub fn exports(
    schemas: &BTreeMap<GroupResource, String>,
    ignored: &[GroupResource],
    preserve_resources: bool,
    mut existing: impl FnMut(&str) -> Result<Option<Value>, ApigenError>,
) -> Result<BTreeMap<String, Value>, ApigenError> {
    let mut by_export: BTreeMap<String, Vec<(&GroupResource, &str)>> = BTreeMap::new();
    for (gr, schema) in schemas {
        if let Some(name) = export_name(gr, ignored) {
            by_export
                .entry(name)
                .or_default()
                .push((gr, schema.as_str()));
        }
    }
    let mut out = BTreeMap::new();
    for (name, mut resources) in by_export {
        resources.sort_by(|a, b| a.0.resource.cmp(&b.0.resource));
        let generated = resources
            .iter()
            .map(|(gr, schema)| {
                json!({
                    "name": gr.resource,
                    "group": gr.group,
                    "schema": schema,
                    "storage": {"crd": {}},
                })
            })
            .collect();
        let previous = existing(&name)?;
        let export = export(&name, previous, generated, preserve_resources);
        out.insert(name, export);
    }
    Ok(out)
}

fn into_map(value: Option<Value>) -> Map<String, Value> {
    match value {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// The export `name` from its previous manifest (or nothing) with the `generated` resources.
fn export(
    name: &str,
    previous: Option<Value>,
    generated: Vec<Value>,
    preserve_resources: bool,
) -> Value {
    let mut previous = into_map(previous);
    let mut metadata = into_map(previous.remove("metadata"));
    metadata.insert("name".into(), json!(name));
    let mut spec = into_map(previous.remove("spec"));
    let resources = if preserve_resources {
        let kept = spec
            .get("resources")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        merge(kept, generated)
    } else {
        generated
    };
    spec.insert("resources".into(), Value::Array(resources));

    let mut out = Map::new();
    out.insert("apiVersion".into(), json!(EXPORT_API_VERSION));
    out.insert("kind".into(), json!("APIExport"));
    out.insert("metadata".into(), Value::Object(metadata));
    out.insert("spec".into(), Value::Object(spec));
    for (key, value) in previous {
        if key != "apiVersion" && key != "kind" {
            out.insert(key, value);
        }
    }
    Value::Object(out)
}

/// A resource's list-map key: group and name.
fn key(resource: &Value) -> (&str, &str) {
    (member(resource, "group"), member(resource, "name"))
}

fn member<'a>(resource: &'a Value, key: &str) -> &'a str {
    resource
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// `--preserve-resources`: the kept resources in their order, each generated one updating the
/// schema of the kept one of its group and name, or appended.
fn merge(mut kept: Vec<Value>, generated: Vec<Value>) -> Vec<Value> {
    for entry in generated {
        match kept.iter_mut().find(|r| key(r) == key(&entry)) {
            Some(resource) => {
                if let Some(fields) = resource.as_object_mut() {
                    fields.insert("schema".into(), entry["schema"].clone());
                }
            }
            None => kept.push(entry),
        }
    }
    kept
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn schemas(list: &[(&str, &str, &str)]) -> BTreeMap<GroupResource, String> {
        list.iter()
            .map(|(g, r, s)| (GroupResource::new(g, r), (*s).to_owned()))
            .collect()
    }

    #[test]
    fn one_export_per_group_sorted() {
        let all = schemas(&[
            ("wildwest.dev", "sheriffs", "p.sheriffs.wildwest.dev"),
            ("wildwest.dev", "cowboys", "p.cowboys.wildwest.dev"),
            (
                "core.kcp.io",
                "logicalclusters",
                "p.logicalclusters.core.kcp.io",
            ),
            ("core.kcp.io", "shards", "p.shards.core.kcp.io"),
            ("example.io", "widgets", "p.widgets.example.io"),
        ]);
        let ignored = [GroupResource::new("example.io", "widgets")];
        let out = exports(&all, &ignored, false, |_| Ok(None)).unwrap();
        assert_eq!(
            out.keys().collect::<Vec<_>>(),
            ["shards.core.kcp.io", "wildwest.dev"]
        );
        assert_eq!(
            out["wildwest.dev"],
            json!({
                "apiVersion": "apis.kcp.io/v1alpha2",
                "kind": "APIExport",
                "metadata": {"name": "wildwest.dev"},
                "spec": {"resources": [
                    {"name": "cowboys", "group": "wildwest.dev",
                     "schema": "p.cowboys.wildwest.dev", "storage": {"crd": {}}},
                    {"name": "sheriffs", "group": "wildwest.dev",
                     "schema": "p.sheriffs.wildwest.dev", "storage": {"crd": {}}},
                ]},
            })
        );
    }

    fn previous() -> Value {
        json!({
            "apiVersion": "apis.kcp.io/v1alpha2",
            "kind": "APIExport",
            "metadata": {"name": "wildwest.dev", "annotations": {"a": "b"}},
            "spec": {
                "permissionClaims": [{"resource": "configmaps", "verbs": ["get"]}],
                "resources": [
                    {"name": "horses", "group": "wildwest.dev", "schema": "old.horses.wildwest.dev",
                     "storage": {"crd": {}}},
                    {"name": "cowboys", "group": "wildwest.dev", "schema": "old.cowboys.wildwest.dev",
                     "storage": {"crd": {}}},
                ],
            },
        })
    }

    #[test]
    fn other_fields_are_kept_and_resources_replaced() {
        let all = schemas(&[("wildwest.dev", "cowboys", "new.cowboys.wildwest.dev")]);
        let out = exports(&all, &[], false, |_| Ok(Some(previous()))).unwrap();
        let export = &out["wildwest.dev"];
        assert_eq!(export["metadata"]["annotations"], json!({"a": "b"}));
        assert_eq!(
            export["spec"]["permissionClaims"],
            previous()["spec"]["permissionClaims"]
        );
        assert_eq!(
            export["spec"]["resources"],
            json!([{"name": "cowboys", "group": "wildwest.dev",
                    "schema": "new.cowboys.wildwest.dev", "storage": {"crd": {}}}])
        );
    }

    #[test]
    fn preserved_resources_are_updated_or_appended() {
        let all = schemas(&[
            ("wildwest.dev", "cowboys", "new.cowboys.wildwest.dev"),
            ("wildwest.dev", "sheriffs", "new.sheriffs.wildwest.dev"),
        ]);
        let out = exports(&all, &[], true, |_| Ok(Some(previous()))).unwrap();
        let names: Vec<(&str, &str)> = out["wildwest.dev"]["spec"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["name"].as_str().unwrap(), r["schema"].as_str().unwrap()))
            .collect();
        assert_eq!(
            names,
            [
                ("horses", "old.horses.wildwest.dev"),
                ("cowboys", "new.cowboys.wildwest.dev"),
                ("sheriffs", "new.sheriffs.wildwest.dev"),
            ]
        );
    }
}
