//! The kind-specific rules of the built-in kinds that have any.

use base64::Engine;
use kcp_apimachinery::status::Cause;
use serde_json::{Map, Value, json};

use crate::resource::{Strategy, StrategyContext};

/// ConfigMap and Secret keys: `[-._a-zA-Z0-9]+`, at most 253 characters, not `.` or `..`.
fn config_key_errors(key: &str) -> Option<String> {
    if key.is_empty() || key.len() > 253 {
        return Some("must be no more than 253 characters and not empty".to_string());
    }
    if !key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Some("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".to_string());
    }
    if key == "." || key == ".." || key.starts_with("..") {
        return Some("must not be '.' or '..' and must not start with '..'".to_string());
    }
    None
}

fn validate_keys(obj: &Value, field: &str, causes: &mut Vec<Cause>) {
    if let Some(map) = obj.get(field).and_then(Value::as_object) {
        for key in map.keys() {
            if let Some(msg) = config_key_errors(key) {
                causes.push(Cause::invalid(
                    &format!("{field}[{key}]"),
                    &json!(key),
                    &msg,
                ));
            }
        }
    }
}

/// The bytes of `field`'s values, which are base64 (a Secret's `data`, a ConfigMap's `binaryData`:
/// `[]byte` in Go, whose decoding refuses anything else); each value that is not is a cause.
fn base64_values(obj: &Value, field: &str, causes: &mut Vec<Cause>) -> usize {
    let mut size = 0;
    for (k, v) in obj
        .get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        match v
            .as_str()
            .map(|s| base64::engine::general_purpose::STANDARD.decode(s))
        {
            Some(Ok(bytes)) => size += bytes.len(),
            _ if v.is_null() => {}
            _ => causes.push(Cause::invalid(
                &format!("{field}[{k}]"),
                v,
                "must be a base64-encoded string",
            )),
        }
    }
    size
}

/// Kubernetes' bound on a ConfigMap's or Secret's data (`core.MaxSecretSize`), enforced with its
/// cause at `field`.
const MAX_DATA_SIZE: usize = 1 << 20;

fn data_size_limit(size: usize, field: &str, causes: &mut Vec<Cause>) {
    if size > MAX_DATA_SIZE {
        causes.push(Cause::new(
            "FieldValueTooLong",
            field,
            format!("Too long: may not be more than {MAX_DATA_SIZE} bytes"),
        ));
    }
}

/// Changes forbidden once `immutable: true` is stored.
fn immutable_violations(new: &Value, old: &Value, fields: &[&str]) -> Vec<Cause> {
    let mut causes = Vec::new();
    if old.get("immutable").and_then(Value::as_bool) == Some(true) {
        if new.get("immutable").and_then(Value::as_bool) != Some(true) {
            causes.push(Cause::forbidden(
                "immutable",
                "field is immutable when `immutable` is set",
            ));
        }
        for f in fields {
            if new.get(*f) != old.get(*f) {
                causes.push(Cause::forbidden(
                    f,
                    "field is immutable when `immutable` is set",
                ));
            }
        }
    }
    causes
}

pub struct ConfigMapStrategy;

impl Strategy for ConfigMapStrategy {
    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        validate_keys(obj, "data", &mut causes);
        validate_keys(obj, "binaryData", &mut causes);
        let text: usize = (obj
            .get("data")
            .and_then(Value::as_object)
            .into_iter()
            .flatten())
        .map(|(_, v)| v.as_str().map_or(0, str::len))
        .sum();
        let binary = base64_values(obj, "binaryData", &mut causes);
        data_size_limit(text + binary, "", &mut causes);
        if let (Some(data), Some(binary)) = (
            obj.get("data").and_then(Value::as_object),
            obj.get("binaryData").and_then(Value::as_object),
        ) {
            for key in binary.keys().filter(|k| data.contains_key(*k)) {
                causes.push(Cause::invalid(
                    "data",
                    &json!(key),
                    "duplicate of key present in binaryData",
                ));
            }
        }
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = self.validate(new);
        causes.extend(immutable_violations(new, old, &["data", "binaryData"]));
        causes
    }
}

pub struct SecretStrategy;

impl SecretStrategy {
    /// `stringData` is a write-only convenience: fold it into `data` (base64), overriding equal keys.
    fn fold_string_data(obj: &mut Value) {
        let Some(map) = obj.as_object_mut() else {
            return;
        };
        let string_data = map.remove("stringData");
        if let Some(Value::Object(sd)) = string_data {
            let data = map
                .entry("data")
                .or_insert_with(|| Value::Object(Map::new()));
            if !data.is_object() {
                *data = Value::Object(Map::new());
            }
            if let Some(data) = data.as_object_mut() {
                for (k, v) in sd {
                    let text = v.as_str().unwrap_or_default();
                    data.insert(
                        k,
                        json!(base64::engine::general_purpose::STANDARD.encode(text)),
                    );
                }
            }
        }
        if map
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            map.insert("type".into(), json!("Opaque"));
        }
    }
}

impl Strategy for SecretStrategy {
    fn decode(&self, obj: &mut Value) {
        Self::fold_string_data(obj);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        validate_keys(obj, "data", &mut causes);
        let size = base64_values(obj, "data", &mut causes);
        data_size_limit(size, "data", &mut causes);
        causes.extend(super::secret_types::type_causes(obj));
        causes
    }

    /// In Kubernetes' order: the fixed type, `immutable`, then the create rules.
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        if new.get("type") != old.get("type") {
            causes.push(Cause::invalid(
                "type",
                new.get("type").unwrap_or(&Value::Null),
                "field is immutable",
            ));
        }
        causes.extend(immutable_violations(new, old, &["data"]));
        causes.extend(self.validate(new));
        causes
    }
}

pub struct NamespaceStrategy;

/// Kubernetes' `kubernetes.io/metadata.name` label of every namespace.
const NAME_LABEL: &str = "kubernetes.io/metadata.name";

impl Strategy for NamespaceStrategy {
    fn prepare_for_create(&self, _ctx: &StrategyContext<'_>, obj: &mut Value) {
        let Some(map) = obj.as_object_mut() else {
            return;
        };
        // The `kubernetes` finalizer lets the namespace controller empty the namespace before it goes.
        let spec = map.entry("spec").or_insert_with(|| json!({}));
        if let Some(spec) = spec.as_object_mut() {
            let has = spec
                .get("finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| f.iter().any(|x| x == "kubernetes"));
            if !has {
                let list = spec.entry("finalizers").or_insert_with(|| json!([]));
                if let Some(list) = list.as_array_mut() {
                    list.push(json!("kubernetes"));
                } else {
                    *list = json!(["kubernetes"]);
                }
            }
        }
        map.insert("status".into(), json!({"phase": "Active"}));
    }

    fn blocks_deletion(&self, obj: &Value) -> bool {
        obj.pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
    }

    fn prepare_for_delete(&self, obj: &mut Value) {
        if let Some(map) = obj.as_object_mut() {
            let status = map.entry("status").or_insert_with(|| json!({}));
            if let Some(status) = status.as_object_mut() {
                status.insert("phase".into(), json!("Terminating"));
            }
        }
    }

    /// Every namespace carries its name as a label, for namespace selectors (webhooks, policies,
    /// NetworkPolicies) to match it by.
    fn canonicalize(&self, obj: &mut Value) {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
            return;
        };
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(NAME_LABEL.into(), json!(name));
        }
    }

    /// The phase is the lifecycle's: Active until deletion starts, Terminating after.
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        let phase = new.pointer("/status/phase").unwrap_or(&Value::Null);
        let deleting = new
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null());
        match (deleting, phase.as_str()) {
            (false, Some("Active")) | (true, Some("Terminating")) => Vec::new(),
            (false, _) => vec![Cause::invalid(
                "status.Phase",
                phase,
                "may only be in active status if it does not have a deletion timestamp.",
            )],
            (true, _) => vec![Cause::invalid(
                "status.Phase",
                phase,
                "may only be in terminating status if it has a deletion timestamp.",
            )],
        }
    }

    fn prepare_for_update(&self, _ctx: &StrategyContext<'_>, new: &mut Value, old: &Value) {
        // spec.finalizers change only through the finalize subresource.
        if let (Some(map), Some(old_fin)) = (new.as_object_mut(), old.pointer("/spec/finalizers")) {
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                spec.insert("finalizers".into(), old_fin.clone());
            }
        }
    }
}

/// kcp's own kinds (tenancy and shards): their rules are the constraints of the schema we publish
/// for them (patterns, enums, required fields), checked on every write. Kubernetes' kinds are
/// checked by hand-written rules instead, as kube-apiserver's are.
/// Defaults in the schema are applied to what is written, as to a custom resource, and its CEL
/// rules (`x-kubernetes-validations`, kcp's for the apis.kcp.io kinds) hold on every write.
pub struct SchemaStrategy {
    schema: std::sync::Arc<kcp_schema::Schema>,
    /// Whether the schema has any `default` (most have none: no walk for them).
    defaults: bool,
    /// The schema's CEL rules, compiled once per kind; `None` when it has none.
    rules: Option<std::sync::Arc<kcp_schema::cel::CelRules>>,
}

impl SchemaStrategy {
    /// The strategy of a kind whose schema is in [`kcp_schema::builtin_schema`].
    pub fn of(group: &str, version: &str, kind: &str) -> Option<SchemaStrategy> {
        let schema = kcp_schema::builtin_schema(group, version, kind)?;
        let component = (kcp_schema::builtin_kinds().iter())
            .find(|k| k.group == group && k.version == version && k.kind == kind)
            .and_then(|k| kcp_schema::builtin::component_schema(&k.schema_name));
        let defaults = component.is_some_and(crate::custom::has_defaults);
        // Our own schemas' rules always compile (a test walks every kind); a schema whose rules
        // did not would be served without them rather than not at all.
        let rules = component
            .and_then(|c| kcp_schema::cel::CelRules::compile(c, "").ok())
            .filter(|r| !r.is_empty())
            .map(std::sync::Arc::new);
        Some(SchemaStrategy {
            schema,
            defaults,
            rules,
        })
    }

    fn rule_causes(&self, new: &Value, old: Option<&Value>) -> Vec<Cause> {
        match &self.rules {
            Some(rules) => rules
                .validate(new, old)
                .iter()
                .map(crate::custom::field_cause)
                .collect(),
            None => Vec::new(),
        }
    }

    fn default(&self, obj: &mut Value) {
        if self.defaults {
            kcp_schema::apply_defaults(&self.schema, obj);
        }
    }
}

impl Strategy for SchemaStrategy {
    fn prepare_for_create(&self, _ctx: &StrategyContext<'_>, obj: &mut Value) {
        self.default(obj);
    }

    fn prepare_for_update(&self, _ctx: &StrategyContext<'_>, new: &mut Value, _old: &Value) {
        self.default(new);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes: Vec<Cause> = kcp_schema::validate_value(&self.schema, obj)
            .iter()
            .map(crate::custom::field_cause)
            .collect();
        causes.extend(self.rule_causes(obj, None));
        causes
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        let mut causes: Vec<Cause> = kcp_schema::validate_value_update(&self.schema, new, old)
            .iter()
            .map(crate::custom::field_cause)
            .collect();
        causes.extend(self.rule_causes(new, Some(old)));
        causes
    }

    fn tracks_generation(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::resource::TEST_CONTEXT as CTX;

    #[test]
    fn every_built_in_kinds_cel_rules_compile() {
        for k in kcp_schema::builtin_kinds() {
            let Some(component) = kcp_schema::builtin::component_schema(&k.schema_name) else {
                continue;
            };
            if let Err(causes) = kcp_schema::cel::CelRules::compile(component, "") {
                panic!("{}/{} {}: {causes:?}", k.group, k.version, k.kind);
            }
        }
    }

    #[test]
    fn kcps_cel_rules_hold_on_apis_kinds() {
        let binding =
            SchemaStrategy::of("apis.kcp.io", "v1alpha2", "APIBinding").expect("APIBinding");
        let old = json!({
            "apiVersion": "apis.kcp.io/v1alpha2",
            "kind": "APIBinding",
            "metadata": {"name": "b"},
            "spec": {"reference": {"export": {"path": "root:a", "name": "e"}}},
        });
        assert!(binding.validate(&old).is_empty());
        assert!(binding.validate_update(&old, &old).is_empty());
        let mut moved = old.clone();
        moved["spec"]["reference"]["export"]["name"] = json!("other");
        let causes = binding.validate_update(&moved, &old);
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(causes[0].field, "spec.reference");
        assert!(
            causes[0]
                .message
                .contains("APIExport reference must not be changed"),
            "{causes:?}"
        );

        let export = SchemaStrategy::of("apis.kcp.io", "v1alpha2", "APIExport").expect("APIExport");
        let both = json!({
            "apiVersion": "apis.kcp.io/v1alpha2",
            "kind": "APIExport",
            "metadata": {"name": "e"},
            "spec": {"resources": [{"name": "widgets", "group": "g", "schema": "v1.widgets.g",
                                    "storage": {"crd": {}, "virtual": {"reference": {"kind": "K"}}}}]},
        });
        let causes = export.validate(&both);
        assert!(
            causes.iter().any(|c| c
                .message
                .contains("Exactly one of crd or virtual must be set")),
            "{causes:?}"
        );
    }

    #[test]
    fn secret_string_data_is_folded() {
        let mut s =
            json!({"metadata": {"name": "s"}, "stringData": {"p": "q"}, "data": {"a": "Yg=="}});
        SecretStrategy.decode(&mut s);
        assert_eq!(s["data"]["p"], "cQ==");
        assert_eq!(s["data"]["a"], "Yg==");
        assert_eq!(s["type"], "Opaque");
        assert!(s.get("stringData").is_none());
        assert!(SecretStrategy.validate(&s).is_empty());
        let bad = json!({"data": {"x": "not base64!"}});
        assert_eq!(SecretStrategy.validate(&bad).len(), 1);
    }

    #[test]
    fn secret_types_are_checked_on_create_and_update() {
        let tls = json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "Yg=="}});
        let causes = SecretStrategy.validate(&tls);
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(causes[0].full_message(), "data[tls.key]: Required value");
        let old = json!({"type": "Opaque"});
        let fields: Vec<String> = (SecretStrategy.validate_update(&tls, &old).iter())
            .map(|c| c.field.clone())
            .collect();
        assert_eq!(fields, ["type", "data[tls.key]"]);
    }

    #[test]
    fn configmap_keys_are_checked() {
        assert!(
            ConfigMapStrategy
                .validate(&json!({"data": {"a.b_C-1": "x"}}))
                .is_empty()
        );
        assert_eq!(
            ConfigMapStrategy
                .validate(&json!({"data": {"a b": "x"}}))
                .len(),
            1
        );
        assert_eq!(
            ConfigMapStrategy
                .validate(&json!({"data": {"": "x"}}))
                .len(),
            1
        );
        let old = json!({"immutable": true, "data": {"a": "1"}});
        let new = json!({"immutable": true, "data": {"a": "2"}});
        assert_eq!(ConfigMapStrategy.validate_update(&new, &old).len(), 1);
        // binaryData is base64 (Go's []byte), which typed clients decode.
        let bad = ConfigMapStrategy.validate(&json!({"binaryData": {"z": "@@"}}));
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].field, "binaryData[z]");
        assert!(
            ConfigMapStrategy
                .validate(&json!({"binaryData": {"z": "aGk="}}))
                .is_empty()
        );
        // At most 1 MiB of data, text and bytes together; a Secret's counted decoded.
        let half = "a".repeat(600 << 10);
        let big = json!({"data": {"a": half}, "binaryData": {"b": base64::engine::general_purpose::STANDARD.encode(&half)}});
        let too_long = ConfigMapStrategy.validate(&big);
        assert_eq!(too_long.len(), 1, "{too_long:?}");
        assert_eq!(too_long[0].reason, "FieldValueTooLong");
        let secret =
            json!({"data": {"a": base64::engine::general_purpose::STANDARD.encode(&half)}});
        assert!(SecretStrategy.validate(&secret).is_empty());
        let secret = json!({"data": {
            "a": base64::engine::general_purpose::STANDARD.encode(&half),
            "b": base64::engine::general_purpose::STANDARD.encode(&half),
        }});
        assert_eq!(SecretStrategy.validate(&secret)[0].field, "data");
    }

    #[test]
    fn namespaces_get_phase_and_finalizer() {
        let mut ns = json!({"metadata": {"name": "x"}});
        NamespaceStrategy.prepare_for_create(&CTX, &mut ns);
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    }

    #[test]
    fn workspace_types_default_their_children_to_universal() {
        let strategy =
            SchemaStrategy::of("tenancy.kcp.io", "v1alpha1", "WorkspaceType").expect("a schema");
        let mut wt = json!({"metadata": {"name": "custom"}, "spec": {}});
        strategy.prepare_for_create(&CTX, &mut wt);
        let universal = json!({"name": "universal", "path": "root"});
        assert_eq!(wt["spec"]["defaultChildWorkspaceType"], universal);
        let own = json!({"name": "team", "path": "root"});
        let mut wt = json!({"spec": {"defaultChildWorkspaceType": own}});
        strategy.prepare_for_update(&CTX, &mut wt, &json!({}));
        assert_eq!(wt["spec"]["defaultChildWorkspaceType"], own);
        // Workspaces' schema has no defaults: left alone.
        let ws = SchemaStrategy::of("tenancy.kcp.io", "v1alpha1", "Workspace").expect("a schema");
        assert!(!ws.defaults);
    }
}
