//! The description of one served resource.

use std::borrow::Cow;
use std::sync::Arc;

use kcp_apimachinery::status::Cause;
use serde_json::Value;

/// Which name validation a kind applies to `metadata.name` (and so to `generateName` results).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// RFC 1123 subdomain: most kinds.
    Dns1123Subdomain,
    /// RFC 1123 label: namespaces.
    Dns1123Label,
    /// Anything that is a safe path segment: RBAC kinds (their names may contain `:`).
    PathSegment,
    /// Exactly this name: kcp's singletons such as `LogicalCluster` `cluster`.
    Fixed(&'static str),
}

/// How a resource is backed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceKind {
    /// Objects kept in the store.
    Stored,
    /// Create-only review resources answered from the request (SelfSubjectAccessReview, ...).
    Review,
}

/// Text that is usually a literal of the catalogue but may come from a CRD.
pub type Text = Cow<'static, str>;

/// Where a printer column's cell comes from.
#[derive(Clone)]
pub enum ColumnValue {
    Name,
    /// Time since `metadata.creationTimestamp`, as kubectl shows it (`5m`, `3d`).
    Age,
    /// A Kubernetes JSONPath into the object, e.g. `.status.phase` (missing → `<none>`).
    Path(Text),
    /// Computed from the object.
    Computed(fn(&Value) -> Value),
}

/// One column of Table output, as kube-apiserver prints it for the kind.
#[derive(Clone)]
pub struct Column {
    pub name: Text,
    pub type_: Text,
    pub format: Text,
    pub description: Text,
    pub priority: i32,
    pub value: ColumnValue,
}

/// A kind-specific field selector (beyond `metadata.name` and `metadata.namespace`).
#[derive(Clone)]
pub struct FieldSelectorDef {
    pub field: Text,
    pub value: FieldSource,
}

/// How a selectable field's value is read from an object.
#[derive(Clone)]
pub enum FieldSource {
    Computed(fn(&Value) -> Option<String>),
    /// A CRD's `selectableFields[].jsonPath`; a missing field selects as the empty string.
    Path(Text),
}

impl FieldSource {
    pub fn value(&self, obj: &Value) -> Option<String> {
        match self {
            FieldSource::Computed(f) => f(obj),
            FieldSource::Path(path) => Some(match crate::jsonpath::first(obj, path) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            }),
        }
    }
}

/// Where a write happens, for strategies that derive fields from it.
#[derive(Clone, Copy, Debug)]
pub struct StrategyContext<'a> {
    /// The logical cluster written to.
    pub cluster: &'a str,
    /// The shard's external URL, e.g. `https://localhost:6443`.
    pub external_url: &'a str,
    /// Who writes: `None` for the shard's own writes.
    pub requester: Option<Requester<'a>>,
}

/// The user of a request, for kinds that record it (a CertificateSigningRequest's requester).
#[derive(Clone, Copy, Debug)]
pub struct Requester<'a> {
    pub name: &'a str,
    pub uid: &'a str,
    pub groups: &'a [String],
    pub extra: &'a std::collections::BTreeMap<String, Vec<String>>,
}

/// The context of the strategies' unit tests: `root` on a shard at localhost.
#[cfg(test)]
pub(crate) const TEST_CONTEXT: StrategyContext<'static> = StrategyContext {
    cluster: "root",
    external_url: "https://localhost:6443",
    requester: None,
};

/// A kind's own rules, called by the generic registry around every write.
pub trait Strategy: Send + Sync + 'static {
    /// What decoding a request's body into the kind's Go type does, before its fields are
    /// tracked (a Secret's `stringData` lands in `data`, so its owner is recorded there). The
    /// registry calls it on every write it prepares, so preparations need not repeat it.
    fn decode(&self, _obj: &mut Value) {}
    /// Fills defaults and system fields on create (e.g. Namespace phase, Secret `stringData` folding).
    fn prepare_for_create(&self, _ctx: &StrategyContext<'_>, _obj: &mut Value) {}
    /// Same on update; `old` is the stored object.
    fn prepare_for_update(&self, _ctx: &StrategyContext<'_>, _new: &mut Value, _old: &Value) {}
    /// Kind-specific validation on create (metadata is validated by the registry).
    fn validate(&self, _obj: &Value) -> Vec<Cause> {
        Vec::new()
    }
    /// Kind-specific validation on update; by default the create rules.
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<Cause> {
        self.validate(new)
    }
    /// Warnings for a create that passed validation (Kubernetes' `WarningsOnCreate`).
    fn warnings_on_create(&self, _obj: &Value) -> Vec<String> {
        Vec::new()
    }
    /// Warnings for an update of the main resource that passed validation (`WarningsOnUpdate`;
    /// Kubernetes' status strategies warn of nothing).
    fn warnings_on_update(&self, _new: &Value, _old: &Value) -> Vec<String> {
        Vec::new()
    }
    /// An update through one of the kind's own subresources (`status`, `approval`), after the
    /// registry kept of `old` what the subresource may not change: what the kind's strategy for
    /// that subresource does besides (Kubernetes' status and approval strategies).
    fn prepare_for_subresource_update(&self, _subresource: &str, _new: &mut Value, _old: &Value) {}
    /// The causes to refuse an update through `subresource`; by default those of any update.
    fn validate_subresource_update(
        &self,
        _subresource: &str,
        new: &Value,
        old: &Value,
    ) -> Vec<Cause> {
        self.validate_update(new, old)
    }
    /// Whether a kind-specific finalizer (beyond `metadata.finalizers`) still holds the object back from
    /// deletion, e.g. a Namespace's `spec.finalizers`.
    fn blocks_deletion(&self, _obj: &Value) -> bool {
        false
    }
    /// Called when deletion starts on an object that cannot go at once (finalizers pending).
    fn prepare_for_delete(&self, _obj: &mut Value) {}
    /// Called once the object's name is final (a generated name included) on create, and after
    /// [`Strategy::prepare_for_update`]: fields derived from the name (Kubernetes' Canonicalize).
    fn canonicalize(&self, _obj: &mut Value) {}
    /// Called last in every write's preparation, status writes and the start of a deletion
    /// included: metadata the kind keeps in step with its status (kcp's LogicalCluster labels).
    fn follow_status(&self, _obj: &mut Value) {}
    /// Whether a PUT may leave `metadata.resourceVersion` out (Kubernetes'
    /// `AllowUnconditionalUpdate`): false for kinds whose writers must say which version they
    /// replace (custom resources, CRDs, Leases).
    fn allow_unconditional_update(&self) -> bool {
        true
    }
    /// Whether a PUT of a missing object creates it (Kubernetes' `AllowCreateOnUpdate`: Leases and
    /// Events).
    fn allow_create_on_update(&self) -> bool {
        false
    }
    /// Whether `metadata.generation` is maintained (bumped when anything but metadata and status changes).
    fn tracks_generation(&self) -> bool {
        false
    }
}

/// A strategy with no kind-specific rules.
pub struct DefaultStrategy;

impl Strategy for DefaultStrategy {}

/// Everything the registry needs to serve one resource in one version.
#[derive(Clone)]
pub struct ResourceDef {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub verbs: Vec<String>,
    /// Has a `status` subresource: the main resource ignores status changes and `/status` ignores the rest.
    pub status_subresource: bool,
    pub name_rule: NameRule,
    pub columns: Vec<Column>,
    pub field_selectors: Vec<FieldSelectorDef>,
    pub strategy: Arc<dyn Strategy>,
    /// The OpenAPI component schema name of the kind, e.g. `io.k8s.api.core.v1.ConfigMap`.
    pub schema_name: String,
    pub backing: ResourceKind,
    /// Set when this resource is another API's view of objects stored under a different resource
    /// (events.k8s.io/v1 Events are core/v1 Events in storage).
    pub shared_storage: Option<SharedStorage>,
    /// The identity segment of the storage keys: `None` for built-ins, `customresources` for a
    /// CRD of the logical cluster, an APIExport's identity hash for bound APIs.
    pub storage_identity: Option<String>,
    /// The compiled schema when it does not come from the built-in catalogue (CRDs).
    pub custom_schema: Option<Arc<kcp_schema::Schema>>,
    /// The OpenAPI component schema of a kind that is not built in (CRDs), for OpenAPI documents.
    pub openapi_component: Option<Arc<Value>>,
    /// A `scale` subresource (CRDs): where replicas and the selector live in the object.
    pub scale: Option<ScaleDef>,
    /// The `Warning` every request through this version gets (a CRD version marked deprecated).
    pub deprecation_warning: Option<String>,
}

/// A CRD's `subresources.scale`: JSON paths (`.spec.replicas`) into its objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleDef {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    pub label_selector_path: Option<String>,
}

/// Where a resource's objects are stored when it is a view of another resource, and how they convert.
#[derive(Clone)]
pub struct SharedStorage {
    pub group: String,
    pub plural: String,
    pub conversion: Arc<dyn Conversion>,
}

/// Converts objects between the form an API serves and the form the store keeps.
pub trait Conversion: Send + Sync + 'static {
    fn to_storage(&self, api: Value) -> Value;
    fn to_api(&self, stored: Value) -> Value;
}

impl ResourceDef {
    /// Whether this is resource `plural` of `group` (`""` for the core group).
    pub fn is(&self, group: &str, plural: &str) -> bool {
        self.group == group && self.plural == plural
    }

    /// `v1` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `configmaps` or `roles.rbac.authorization.k8s.io`.
    pub fn qualified_resource(&self) -> String {
        kcp_apimachinery::status::qualified_resource(&self.group, &self.plural)
    }

    /// `(group, plural)` of the resource whose keys hold this resource's objects.
    pub fn storage_resource(&self) -> (&str, &str) {
        match &self.shared_storage {
            Some(s) => (&s.group, &s.plural),
            None => (&self.group, &self.plural),
        }
    }

    /// The schema objects of this resource are checked against, when there is one.
    pub fn schema(&self) -> Option<Arc<kcp_schema::Schema>> {
        match &self.custom_schema {
            Some(schema) => Some(schema.clone()),
            None => kcp_schema::builtin_schema(&self.group, &self.version, &self.kind),
        }
    }

    pub fn is_stored(&self) -> bool {
        self.backing == ResourceKind::Stored
    }

    /// The value of a selectable field of `obj`, or `None` if the field is not selectable for this kind.
    pub fn field_value(&self, obj: &Value, field: &str) -> Option<String> {
        match field {
            "metadata.name" => Some(
                obj.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            ),
            "metadata.namespace" if self.namespaced => Some(
                obj.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            ),
            _ => self
                .field_selectors
                .iter()
                .find(|f| f.field == field)
                .and_then(|f| f.value.value(obj)),
        }
    }

    /// Every field this kind can select on, for error messages and validation.
    pub fn selectable_fields(&self) -> Vec<&str> {
        let mut fields = vec!["metadata.name"];
        if self.namespaced {
            fields.push("metadata.namespace");
        }
        fields.extend(self.field_selectors.iter().map(|f| f.field.as_ref()));
        fields
    }
}
