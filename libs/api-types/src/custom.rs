//! Custom resources: the [`ResourceDef`]s a CustomResourceDefinition serves, and the strategy that
//! applies its schema (pruning, defaulting, validation) on every write.

use std::sync::Arc;

use kcp_apimachinery::status::Cause;
use kcp_schema::Schema;
use serde_json::{Value, json};

use crate::builtin::{age_column_for_crd, name_column};
use crate::resource::{
    Column, ColumnValue, Conversion, FieldSelectorDef, FieldSource, NameRule, ResourceDef,
    ResourceKind, ScaleDef, SharedStorage, Strategy, StrategyContext,
};

/// The storage-key identity of custom resources defined by a CRD of the logical cluster itself
/// (kcp's layout: `/<group>/<resource>/customresources/<cluster>/...`).
pub const LOCAL_CRD_IDENTITY: &str = "customresources";

/// The annotation of a bound CRD (one kcp-apis makes from an APIResourceSchema for a binding)
/// naming the identity of the APIExport its objects are stored under.
pub const IDENTITY_ANNOTATION: &str = "apis.kcp.io/identity";

/// The identity segment of `crd`'s storage keys: its export's identity when bound, else the
/// logical cluster's own custom resources'.
pub fn storage_identity(crd: &Value) -> &str {
    crd.pointer("/metadata/annotations")
        .and_then(|a| a.get(IDENTITY_ANNOTATION))
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .unwrap_or(LOCAL_CRD_IDENTITY)
}

/// What a CRD version's schema contributes, compiled once and shared by every logical cluster
/// whose CRD has the same version definition.
pub struct CompiledVersion {
    pub schema: Arc<Schema>,
    /// The version's `openAPIV3Schema` as OpenAPI documents publish it.
    pub openapi: Arc<Value>,
    /// The CEL `x-kubernetes-validations` of the schema; `None` when there are none.
    pub rules: Option<Arc<kcp_schema::CelRules>>,
}

/// Prunes, defaults and validates custom resources against their version's schema.
pub struct CustomResourceStrategy {
    version: Arc<CompiledVersion>,
}

impl CustomResourceStrategy {
    pub fn new(version: Arc<CompiledVersion>) -> Self {
        CustomResourceStrategy { version }
    }

    /// Unknown fields dropped and defaults filled, as kube-apiserver does before validating.
    fn normalize(&self, obj: &mut Value) {
        let pruned = kcp_schema::prune(&self.version.schema, std::mem::take(obj));
        *obj = pruned;
        kcp_schema::apply_defaults(&self.version.schema, obj);
    }

    fn check(&self, new: &Value, old: Option<&Value>) -> Vec<Cause> {
        let problems = match old {
            // Values an update leaves unchanged are not held to rules they already broke.
            Some(old) => kcp_schema::validate_value_update(&self.version.schema, new, old),
            None => kcp_schema::validate_value(&self.version.schema, new),
        };
        let mut causes: Vec<Cause> = problems.iter().map(field_cause).collect();
        if let Some(rules) = &self.version.rules {
            // Rules may not run on values of the wrong shape; other schema errors do not stop them.
            if problems.iter().any(|p| blocks_rules(p.reason)) {
                causes.push(Cause::invalid(
                    "<nil>",
                    &json!("null"),
                    "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
                ));
            } else {
                causes.extend(rules.validate(new, old).iter().map(field_cause));
            }
        }
        causes
    }
}

/// The schema errors that keep `x-kubernetes-validations` from being evaluated
/// (apiextensions-apiserver's hasBlockingErr in pkg/registry/customresource/strategy.go).
fn blocks_rules(reason: kcp_schema::validate::CauseReason) -> bool {
    use kcp_schema::validate::CauseReason::*;
    matches!(
        reason,
        FieldValueNotSupported
            | FieldValueRequired
            | FieldValueTooLong
            | FieldValueTooMany
            | FieldValueTypeInvalid
    )
}

/// A schema validator's cause as a Status cause.
pub fn field_cause(cause: &kcp_schema::FieldCause) -> Cause {
    Cause::new(cause.reason.as_str(), &cause.field, cause.message.clone())
}

impl Strategy for CustomResourceStrategy {
    /// Kubernetes decodes a custom resource into float64s first: `2.0` is stored as `2`.
    fn decode(&self, obj: &mut Value) {
        kcp_apimachinery::numbers::integral_floats_to_integers(obj);
    }

    fn allow_unconditional_update(&self) -> bool {
        false
    }

    fn prepare_for_create(&self, _ctx: &StrategyContext<'_>, obj: &mut Value) {
        self.normalize(obj);
    }

    fn prepare_for_update(&self, _ctx: &StrategyContext<'_>, new: &mut Value, _old: &Value) {
        self.normalize(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        self.check(obj, None)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        self.check(new, Some(old))
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        finalizer_warnings(obj, None)
    }

    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        finalizer_warnings(new, Some(old))
    }
}

/// Kubernetes' warnings for finalizer names a custom resource gains that are not domain-qualified
/// with a path (apiextensions-apiserver's validateKubeFinalizerName), in name order. Names that
/// are not qualified names at all were refused by validation already.
fn finalizer_warnings(new: &Value, old: Option<&Value>) -> Vec<String> {
    const STANDARD: [&str; 3] = ["orphan", "foregroundDeletion", "kubernetes"];
    let names = |obj: &Value| -> std::collections::BTreeSet<String> {
        (obj.pointer("/metadata/finalizers")
            .and_then(Value::as_array))
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_string))
        .collect()
    };
    let before = old.map(names).unwrap_or_default();
    names(new)
        .difference(&before)
        .filter(|name| !name.contains('/') && !STANDARD.contains(&name.as_str()))
        .map(|name| {
            let prefer = match name.contains('.') {
                true => "prefer a domain-qualified finalizer name including a path (/)",
                false => "prefer a domain-qualified finalizer name",
            };
            format!(
                "metadata.finalizers: {name:?}: {prefer} to avoid accidental conflicts with other finalizer writers"
            )
        })
        .collect()
}

/// How a custom resource moves between the served version and the storage version, with
/// conversion strategy `None`, as Kubernetes does it: only `apiVersion` changes, and the object
/// is pruned to the schema of the version it becomes (so a field the other version lacks does
/// not survive the move); on read, the storage version's defaults are applied first, as when
/// Kubernetes decodes from storage (a default added to a schema later shows on objects stored
/// before it).
struct StoredToServed {
    served: String,
    storage: String,
    /// The served version's schema, to prune to on read (when it is not the storage version).
    served_schema: Option<Arc<Schema>>,
    /// The storage version's schema, to prune to on write (when it is not the served version).
    storage_schema: Option<Arc<Schema>>,
    /// The storage version's schema, when it has defaults to apply on read.
    defaults: Option<Arc<Schema>>,
}

impl Conversion for StoredToServed {
    fn to_storage(&self, mut api: Value) -> Value {
        if let Some(m) = api.as_object_mut() {
            m.insert("apiVersion".into(), json!(self.storage));
        }
        match &self.storage_schema {
            Some(schema) => kcp_schema::prune(schema, api),
            None => api,
        }
    }

    fn to_api(&self, mut stored: Value) -> Value {
        if let Some(schema) = &self.defaults {
            kcp_schema::apply_defaults(schema, &mut stored);
        }
        if let Some(m) = stored.as_object_mut() {
            m.insert("apiVersion".into(), json!(self.served));
        }
        match &self.served_schema {
            Some(schema) => kcp_schema::prune(schema, stored),
            None => stored,
        }
    }
}

/// Whether a schema declares a default anywhere.
pub fn has_defaults(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.iter().any(|(k, v)| k == "default" || has_defaults(v)),
        Value::Array(items) => items.iter().any(has_defaults),
        _ => false,
    }
}

fn str_at<'v>(v: &'v Value, pointer: &str) -> &'v str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn strings_at(v: &Value, pointer: &str) -> Vec<String> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The versions of a CRD that are served, each with the pieces that define it (for interning).
pub fn served_versions(crd: &Value) -> Vec<&Value> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("served").and_then(Value::as_bool).unwrap_or(false))
                .collect()
        })
        .unwrap_or_default()
}

/// The name of the storage version.
pub fn storage_version(crd: &Value) -> Option<&str> {
    crd.pointer("/spec/versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool).unwrap_or(false))?
        .get("name")?
        .as_str()
}

/// `com.example.stable.v1.CronTab`: the OpenAPI component name kube-apiserver gives a CRD kind.
pub fn component_name(group: &str, version: &str, kind: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').filter(|p| !p.is_empty()).collect();
    parts.reverse();
    parts.push(version);
    parts.push(kind);
    parts.join(".")
}

/// The resource definition of one served version of an established CRD. `names` is the CRD's
/// accepted names (`status.acceptedNames`, falling back to `spec.names`).
/// The resource of one served `version` of `crd`; `stored_as` is the storage version's compiled
/// schema when that is another version (objects move between the two on every write and read).
pub fn version_def(
    crd: &Value,
    version: &Value,
    compiled: Arc<CompiledVersion>,
    stored_as: Option<Arc<CompiledVersion>>,
) -> ResourceDef {
    let group = str_at(crd, "/spec/group").to_string();
    let names = match crd.pointer("/status/acceptedNames/plural") {
        Some(Value::String(p)) if !p.is_empty() => "/status/acceptedNames",
        _ => "/spec/names",
    };
    let kind = str_at(crd, &format!("{names}/kind")).to_string();
    let plural = str_at(crd, &format!("{names}/plural")).to_string();
    let singular = match str_at(crd, &format!("{names}/singular")) {
        "" => kind.to_lowercase(),
        s => s.to_string(),
    };
    let list_kind = match str_at(crd, &format!("{names}/listKind")) {
        "" => format!("{kind}List"),
        s => s.to_string(),
    };
    let name = str_at(version, "/name").to_string();
    let status_subresource = version.pointer("/subresources/status").is_some();
    let mut columns = vec![name_column()];
    match version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
    {
        Some(defs) if !defs.is_empty() => columns.extend(defs.iter().map(printer_column)),
        _ => columns.push(age_column_for_crd()),
    }
    let field_selectors = version
        .get("selectableFields")
        .and_then(Value::as_array)
        .map(|fields| {
            fields
                .iter()
                .map(|f| {
                    let path = str_at(f, "/jsonPath").to_string();
                    FieldSelectorDef {
                        field: path.trim_start_matches('.').to_string().into(),
                        value: FieldSource::Path(path.into()),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let storage = storage_version(crd).unwrap_or_default().to_string();
    let api_version = |v: &str| {
        if group.is_empty() {
            v.to_string()
        } else {
            format!("{group}/{v}")
        }
    };
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    // Objects may still be stored in a version no longer served (status.storedVersions).
    let stored_elsewhere = (crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array))
    .is_some_and(|stored| stored.iter().any(|v| v.as_str() != Some(storage.as_str())));
    // Reads go through a conversion only when there is something to do: another version, or
    // defaults; plain single-version CRDs serve the cached JSON as it is.
    let storage_compiled = stored_as.as_ref().unwrap_or(&compiled);
    let defaults = has_defaults(&storage_compiled.openapi).then(|| storage_compiled.schema.clone());
    let shared_storage =
        (versions > 1 || defaults.is_some() || stored_elsewhere).then(|| SharedStorage {
            group: group.clone(),
            plural: plural.clone(),
            conversion: Arc::new(StoredToServed {
                served: api_version(&name),
                storage: api_version(&storage),
                served_schema: stored_as.as_ref().map(|_| compiled.schema.clone()),
                storage_schema: stored_as.as_ref().map(|s| s.schema.clone()),
                defaults,
            }),
        });
    ResourceDef {
        schema_name: component_name(&group, &name, &kind),
        group,
        version: name,
        list_kind,
        plural,
        singular,
        namespaced: str_at(crd, "/spec/scope") == "Namespaced",
        short_names: strings_at(crd, &format!("{names}/shortNames")),
        categories: strings_at(crd, &format!("{names}/categories")),
        verbs: crate::builtin::STANDARD_VERBS
            .iter()
            .map(|v| v.to_string())
            .collect(),
        status_subresource,
        name_rule: NameRule::Dns1123Subdomain,
        columns,
        field_selectors,
        strategy: Arc::new(CustomResourceStrategy::new(compiled.clone())),
        backing: ResourceKind::Stored,
        shared_storage,
        storage_identity: Some(storage_identity(crd).to_string()),
        custom_schema: Some(compiled.schema.clone()),
        openapi_component: Some(compiled.openapi.clone()),
        scale: version.pointer("/subresources/scale").map(|s| ScaleDef {
            spec_replicas_path: str_at(s, "/specReplicasPath").to_string(),
            status_replicas_path: str_at(s, "/statusReplicasPath").to_string(),
            label_selector_path: s
                .get("labelSelectorPath")
                .and_then(Value::as_str)
                .map(str::to_string),
        }),
        // Set by the caller, which knows how versions are ordered.
        deprecation_warning: None,
        kind,
    }
}

fn printer_column(def: &Value) -> Column {
    Column {
        name: str_at(def, "/name").to_string().into(),
        type_: str_at(def, "/type").to_string().into(),
        format: str_at(def, "/format").to_string().into(),
        description: match str_at(def, "/description") {
            "" => format!(
                "Custom resource definition column (in JSONPath format): {}",
                str_at(def, "/jsonPath")
            ),
            described => described.to_string(),
        }
        .into(),
        priority: def
            .get("priority")
            .and_then(Value::as_i64)
            .and_then(|p| i32::try_from(p).ok())
            .unwrap_or(0),
        value: ColumnValue::Path(str_at(def, "/jsonPath").to_string().into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printer_columns_are_described_by_default() {
        let column =
            printer_column(&json!({"name": "Size", "type": "integer", "jsonPath": ".spec.size"}));
        assert_eq!(
            column.description,
            "Custom resource definition column (in JSONPath format): .spec.size"
        );
        let column =
            printer_column(&json!({"name": "Size", "jsonPath": ".s", "description": "How big"}));
        assert_eq!(column.description, "How big");
    }

    #[test]
    fn new_finalizers_without_a_domain_and_path_warn() {
        let obj = |finalizers: Value| json!({"metadata": {"finalizers": finalizers}});
        let created = finalizer_warnings(
            &obj(json!(["hold", "a.b", "example.com/x", "orphan", "hold"])),
            None,
        );
        assert_eq!(
            created,
            [
                r#"metadata.finalizers: "a.b": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"#,
                r#"metadata.finalizers: "hold": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"#,
            ]
        );
        // Only what an update adds.
        let updated =
            finalizer_warnings(&obj(json!(["hold", "keep"])), Some(&obj(json!(["hold"]))));
        assert_eq!(updated.len(), 1, "{updated:?}");
        assert!(updated[0].contains(r#""keep""#), "{updated:?}");
    }
}
