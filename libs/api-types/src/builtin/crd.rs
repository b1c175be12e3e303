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
    fn allow_unconditional_update(&self) -> bool {
        false
    }

    fn prepare_for_create(&self, _ctx: &StrategyContext<'_>, obj: &mut Value) {
        kcp_schema::crd::apply_crd_defaults(obj);
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
        kcp_schema::crd::apply_crd_defaults(new);
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
        with_rule_errors(obj, kcp_schema::crd::validate_crd(obj))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        // A write that leaves the spec alone (the controller's status updates, a label) cannot
        // make it invalid: the spec was validated when it was written, and Kubernetes ratchets
        // rules an unchanged spec already broke.
        if new.get("spec") == old.get("spec") {
            return Vec::new();
        }
        with_rule_errors(new, kcp_schema::crd::validate_crd_update(new, old))
    }

    fn tracks_generation(&self) -> bool {
        true
    }
}

/// The structural problems of a CRD, or else the compile errors of its CEL rules: rules are
/// compiled once the schema they live in is sound, as Kubernetes does.
fn with_rule_errors(crd: &Value, problems: Vec<kcp_schema::FieldCause>) -> Vec<Cause> {
    let mut causes: Vec<Cause> = problems.iter().map(crate::custom::field_cause).collect();
    if !causes.is_empty() {
        return causes;
    }
    // Serving objects unconverted under another version would hand clients wrong data, so a
    // conversion webhook is refused until this server can call one.
    let strategy = crd
        .pointer("/spec/conversion/strategy")
        .and_then(Value::as_str)
        .unwrap_or("None");
    if strategy == "Webhook" {
        causes.push(Cause::not_supported(
            "spec.conversion.strategy",
            &Value::String(strategy.to_string()),
            &["None"],
        ));
        return causes;
    }
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let schemas: Vec<Option<&Value>> = versions
        .iter()
        .map(|v| v.pointer("/schema/openAPIV3Schema"))
        .collect();
    // Kubernetes reports a schema all versions share under `spec.validation`.
    let shared = schemas.windows(2).all(|w| w[0] == w[1]);
    for (i, schema) in schemas.iter().enumerate() {
        let Some(schema) = schema else { continue };
        let path = if shared {
            "spec.validation.openAPIV3Schema".to_string()
        } else {
            format!("spec.versions[{i}].schema.openAPIV3Schema")
        };
        if let Err(errors) = kcp_schema::CelRules::compile(schema, &path) {
            causes.extend(errors.iter().map(crate::custom::field_cause));
        }
        if shared {
            break;
        }
    }
    causes
}
