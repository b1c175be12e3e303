//! CustomResourceDefinition: status reset on create, the cleanup finalizer, and the checks that
//! must hold before the API server tries to serve it.

use kcp_apimachinery::status::Cause;
use serde_json::{Value, json};

use crate::custom::storage_version;
use crate::resource::{Strategy, StrategyContext};

/// Holds a deleted CRD until its custom resources are gone (Kubernetes' name for it).
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

pub struct CrdStrategy;

impl Strategy for CrdStrategy {
    fn prepare_for_create(&self, _ctx: &StrategyContext<'_>, obj: &mut Value) {
        set_defaults(obj);
        let stored: Vec<&str> = storage_version(obj).into_iter().collect();
        let status = json!({
            "conditions": [],
            "acceptedNames": {"plural": "", "kind": ""},
            "storedVersions": stored,
        });
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), status);
        }
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
            if let Some(list) = finalizers.as_array_mut()
                && !list.iter().any(|f| f == CLEANUP_FINALIZER)
            {
                list.push(json!(CLEANUP_FINALIZER));
            }
        }
    }

    fn prepare_for_update(&self, _ctx: &StrategyContext<'_>, new: &mut Value, _old: &Value) {
        set_defaults(new);
        // A new storage version is remembered, so its objects are known to need migration later.
        let Some(storage) = storage_version(new).map(str::to_string) else {
            return;
        };
        if let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) {
            let stored = status.entry("storedVersions").or_insert_with(|| json!([]));
            if let Some(list) = stored.as_array_mut()
                && !list.iter().any(|v| v == storage.as_str())
            {
                list.push(json!(storage));
            }
        }
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        interim_validate(obj)
    }

    fn tracks_generation(&self) -> bool {
        true
    }
}

// Interim: the name and storage-version rules, until kcp-schema's full CRD validation lands.
fn interim_validate(obj: &Value) -> Vec<Cause> {
    let text = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let mut causes = Vec::new();
    let (group, plural) = (text("/spec/group"), text("/spec/names/plural"));
    let name = text("/metadata/name");
    if plural.is_empty() {
        causes.push(Cause::required("spec.names.plural", ""));
    }
    if text("/spec/names/kind").is_empty() {
        causes.push(Cause::required("spec.names.kind", ""));
    }
    // kcp serves CRDs in the core group too; those are named `<plural>.core`.
    let want = if group.is_empty() {
        format!("{plural}.core")
    } else {
        format!("{plural}.{group}")
    };
    if name != want {
        causes.push(Cause::invalid(
            "metadata.name",
            &json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if storage_version(obj).is_none() {
        causes.push(Cause::invalid(
            "spec.versions",
            &obj.pointer("/spec/versions").cloned().unwrap_or_default(),
            "must have exactly one version marked as storage version",
        ));
    }
    causes
}

/// Kubernetes' CRD defaults: `singular` and `listKind` from the kind, conversion `None`.
fn set_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let empty = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
        if !kind.is_empty() && empty(names.get("singular")) {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if !kind.is_empty() && empty(names.get("listKind")) {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    let conversion = spec
        .entry("conversion")
        .or_insert_with(|| json!({"strategy": "None"}));
    if let Some(c) = conversion.as_object_mut() {
        c.entry("strategy").or_insert_with(|| json!("None"));
    }
}
