//! `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` on the built-in schemas, from
//! the same table the shard's strategic merge patch follows. kube-apiserver publishes them from
//! the Go struct tags; kubectl reads them from `/openapi/v2` to compute the patches of
//! `kubectl apply` (without them a merged list such as `metadata.finalizers` would be sent whole
//! and merged into the stored one, so an entry removed from the file would stay).

use kcp_apimachinery::patch::{PatchStrategy, builtin_patch_meta};
use serde_json::{Map, Value, json};

use super::BuiltinKind;

const STRATEGY: &str = "x-kubernetes-patch-strategy";
const MERGE_KEY: &str = "x-kubernetes-patch-merge-key";
const REF_PREFIX: &str = "#/components/schemas/";

/// The component a schema refers to, directly or through `allOf: [{$ref}]`.
fn referenced(schema: &Value) -> Option<String> {
    let reference = schema
        .get("$ref")
        .or_else(|| schema.pointer("/allOf/0/$ref"))?;
    reference
        .as_str()?
        .strip_prefix(REF_PREFIX)
        .map(str::to_string)
}

/// Where field `path` of component `name` is described: (component, property), following
/// references and list items along the way.
fn locate(components: &Map<String, Value>, name: &str, path: &[&str]) -> Option<(String, String)> {
    let (last, parents) = path.split_last()?;
    let mut component = name.to_string();
    for segment in parents {
        let mut node = components
            .get(&component)?
            .pointer(&format!("/properties/{segment}"))?;
        if let Some(items) = node.get("items") {
            node = items;
        }
        component = referenced(node)?;
    }
    Some((component, (*last).to_string()))
}

/// Adds the extensions to every field of `kinds` whose strategic-merge-patch metadata merges.
pub(super) fn annotate(components: &mut Map<String, Value>, kinds: &[BuiltinKind]) {
    for kind in kinds {
        for entry in builtin_patch_meta(kind.group, kind.kind).entries() {
            let strategy = match (entry.meta.strategy, entry.meta.retain_keys) {
                (PatchStrategy::Merge, true) => "merge,retainKeys",
                (PatchStrategy::Merge, false) => "merge",
                (_, true) => "retainKeys",
                // Upstream has no tag for these: nothing to publish.
                (_, false) => continue,
            };
            let path: Vec<&str> = entry.path.split('.').collect();
            let Some((component, property)) = locate(components, &kind.schema_name, &path) else {
                continue;
            };
            let field = components
                .get_mut(&component)
                .and_then(|c| c.get_mut("properties"))
                .and_then(|p| p.get_mut(&property))
                .and_then(Value::as_object_mut);
            if let Some(field) = field {
                field.insert(STRATEGY.into(), json!(strategy));
                if let Some(key) = entry.meta.merge_key {
                    field.insert(MERGE_KEY.into(), json!(key));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::builtin::component_schema;

    fn extensions(component: &str, property: &str) -> (String, String) {
        let field = component_schema(component)
            .and_then(|c| c.pointer(&format!("/properties/{property}")))
            .cloned()
            .unwrap_or_default();
        let text = |k: &str| {
            field
                .get(k)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        (text(super::STRATEGY), text(super::MERGE_KEY))
    }

    #[test]
    fn merged_fields_are_published() {
        let meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
        assert_eq!(
            extensions(meta, "finalizers"),
            ("merge".into(), String::new())
        );
        assert_eq!(
            extensions(meta, "ownerReferences"),
            ("merge".into(), "uid".into())
        );
        assert_eq!(
            extensions("io.k8s.api.core.v1.ServiceAccount", "secrets"),
            ("merge".into(), "name".into())
        );
        assert_eq!(
            extensions("io.k8s.api.core.v1.NamespaceStatus", "conditions"),
            ("merge".into(), "type".into())
        );
        // Through the list items of `webhooks`.
        assert_eq!(
            extensions(
                "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
                "matchConditions"
            ),
            ("merge".into(), "name".into())
        );
        // Replaced lists carry nothing, as upstream.
        assert_eq!(
            extensions("io.k8s.api.rbac.v1.ClusterRole", "rules"),
            (String::new(), String::new())
        );
    }
}
