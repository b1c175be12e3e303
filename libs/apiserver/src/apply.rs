//! Server-side apply and `metadata.managedFields` on every write, over
//! [`kcp_apimachinery::managed_fields`]: this module supplies the schema view (list and map
//! semantics from a kind's compiled schema, falling back to the built-in patch tags) and the
//! request's field manager, and maps the outcomes to API errors.

use kcp_api_types::ResourceDef;
use kcp_apimachinery::managed_fields::{
    self as mf, ApplyError, FieldSet, ListType, Request, Shape, TypeView,
};
use kcp_apimachinery::patch::{FieldPatchMeta, PatchMeta, PatchStrategy, builtin_patch_meta};
use kcp_apimachinery::status::{ApiError, Cause};
use kcp_schema::{AdditionalProperties, MapType, SchemaNode, SchemaType};
use serde_json::Value;

use crate::registry::UpdateKind;
use crate::registry::metadata::now_rfc3339;

/// A position in a kind's schema, as the managed-fields code walks it.
#[derive(Clone)]
pub struct SchemaView<'a> {
    node: Option<SchemaNode<'a>>,
    /// Field names from the root (list items unnamed), to look up built-in patch tags.
    path: Vec<String>,
    meta: &'a PatchMeta,
}

impl<'a> SchemaView<'a> {
    pub fn new(root: Option<SchemaNode<'a>>, meta: &'a PatchMeta) -> Self {
        SchemaView {
            node: root,
            path: Vec::new(),
            meta,
        }
    }

    fn child(&self, node: Option<SchemaNode<'a>>, name: Option<&str>) -> Self {
        let mut path = self.path.clone();
        if let Some(name) = name {
            path.push(name.to_string());
        }
        SchemaView {
            node,
            path,
            meta: self.meta,
        }
    }

    /// The list type the built-in kinds' Go tags give this field (their OpenAPI carries none).
    fn tagged_list_type(&self) -> ListType {
        let tag: FieldPatchMeta = self.meta.lookup(&self.path);
        match (tag.strategy, tag.merge_key) {
            (PatchStrategy::Merge, Some(key)) => ListType::Map {
                keys: vec![key.to_string()],
            },
            (PatchStrategy::Merge, None) => ListType::Set,
            _ => ListType::Atomic,
        }
    }
}

impl TypeView for SchemaView<'_> {
    fn shape(&self, _value: &Value) -> Shape {
        let Some(node) = self.node.map(SchemaNode::resolved) else {
            return Shape::Untyped;
        };
        if node.int_or_string() {
            return Shape::Scalar;
        }
        match node.schema_type() {
            Some(SchemaType::Object) => {
                let atomic = node.map_type() == Some(MapType::Atomic);
                if node.has_properties() {
                    if atomic {
                        Shape::Map { atomic: true }
                    } else {
                        Shape::Struct
                    }
                } else {
                    match node.additional_properties() {
                        AdditionalProperties::Schema(_) | AdditionalProperties::Allowed(true) => {
                            Shape::Map { atomic }
                        }
                        _ if node.preserve_unknown_fields() || node.is_opaque() => Shape::Untyped,
                        _ => Shape::Map { atomic },
                    }
                }
            }
            Some(SchemaType::Array) => Shape::List(match node.list_type() {
                Some(kcp_schema::ListType::Map) => ListType::Map {
                    keys: node.list_map_keys().to_vec(),
                },
                Some(kcp_schema::ListType::Set) => ListType::Set,
                Some(kcp_schema::ListType::Atomic) => ListType::Atomic,
                None => self.tagged_list_type(),
            }),
            Some(_) => Shape::Scalar,
            None => Shape::Untyped,
        }
    }

    fn field(&self, name: &str) -> Self {
        let Some(node) = self.node.map(SchemaNode::resolved) else {
            return self.child(None, Some(name));
        };
        if let Some(prop) = node.property(name) {
            return self.child(Some(prop), Some(name));
        }
        match node.additional_properties() {
            AdditionalProperties::Schema(values) => self.child(Some(values), Some(name)),
            _ => self.child(None, Some(name)),
        }
    }

    fn item(&self) -> Self {
        let item = self.node.and_then(|n| n.resolved().items());
        self.child(item, None)
    }

    fn default_value(&self) -> Option<Value> {
        self.node.and_then(|n| n.resolved().default().cloned())
    }
}

/// The manager a write is recorded under: `fieldManager`, else the client's user agent. An
/// invalid `fieldManager` comes back as the 422 cause to report.
pub fn field_manager(query_value: Option<&str>, user_agent: Option<&str>) -> Result<String, Cause> {
    match query_value {
        Some(name) if !name.is_empty() => {
            mf::validate_field_manager(name).map_err(|detail| {
                Cause::invalid("fieldManager", &Value::String(name.to_string()), &detail)
            })?;
            Ok(name.to_string())
        }
        _ => Ok(mf::manager_from_user_agent(user_agent.unwrap_or_default())),
    }
}

/// The fields an endpoint never owns: `status` on the main resource of a kind with a status
/// subresource, `spec` on `/status`.
fn reset_fields(def: &ResourceDef, kind: UpdateKind) -> FieldSet {
    match kind {
        UpdateKind::Main if def.status_subresource => {
            FieldSet::from_paths([mf::field_path(&["status"])])
        }
        UpdateKind::Status => FieldSet::from_paths([mf::field_path(&["spec"])]),
        // Kubernetes' reset fields of a CertificateSigningRequest's approval.
        UpdateKind::Approval => FieldSet::from_paths([
            mf::field_path(&["spec"]),
            mf::field_path(&["status", "certificate"]),
        ]),
        _ => FieldSet::new(),
    }
}

/// Runs the managed-fields code for a write by `manager` to `def` (through `kind`), with the
/// request's parameters and `def`'s schema.
fn with_request<R>(
    def: &ResourceDef,
    kind: UpdateKind,
    manager: &str,
    f: impl FnOnce(&Request<'_>, &SchemaView<'_>) -> R,
) -> R {
    let reset = reset_fields(def, kind);
    let subresource = kind.subresource().unwrap_or_default();
    with_subresource(def, subresource, &reset, manager, f)
}

/// [`with_request`] for a write through `subresource`, which owns no `reset` fields.
fn with_subresource<R>(
    def: &ResourceDef,
    subresource: &str,
    reset: &FieldSet,
    manager: &str,
    f: impl FnOnce(&Request<'_>, &SchemaView<'_>) -> R,
) -> R {
    let time = now_rfc3339();
    let api_version = def.api_version();
    let request = Request {
        manager,
        api_version: &api_version,
        subresource,
        time: &time,
        reset_fields: reset,
    };
    let schema = def.schema();
    let meta = builtin_patch_meta(&def.group, &def.kind);
    let view = SchemaView::new(schema.as_ref().map(|s| s.root()), &meta);
    f(&request, &view)
}

/// Records a create or update by `manager` in `new`'s managedFields.
pub fn track_write(
    def: &ResourceDef,
    kind: UpdateKind,
    manager: &str,
    old: Option<&Value>,
    mut new: Value,
) -> Value {
    // Decoded first, so duplicate owner references are not tracked as fields (Kubernetes dedups
    // them before its field manager runs).
    crate::registry::decoded(def, &mut new, false);
    let base = mf::managed_fields_for_update(old, &new, kind != UpdateKind::Main);
    // Replaced below anyway; without them the tracker need not copy `new` to ignore them.
    mf::strip_managed_fields(&mut new);
    let entries = with_request(def, kind, manager, |request, view| {
        mf::update(old, &new, base, request, view)
    });
    mf::set_managed_fields(&mut new, &entries);
    new
}

/// Records a write through `/scale` by `manager` in `new`'s managedFields. Kubernetes tracks it on
/// the object itself: an entry of subresource `scale` owning the replicas field it changed.
pub fn track_scale_write(def: &ResourceDef, manager: &str, old: &Value, mut new: Value) -> Value {
    let base = mf::managed_fields_for_update(Some(old), &new, true);
    mf::strip_managed_fields(&mut new);
    let entries = with_subresource(def, "scale", &FieldSet::new(), manager, |request, view| {
        mf::update(Some(old), &new, base, request, view)
    });
    mf::set_managed_fields(&mut new, &entries);
    new
}

/// Applies `config` for `manager` to the live object (`None`: apply creates it).
pub fn apply(
    def: &ResourceDef,
    kind: UpdateKind,
    manager: &str,
    force: bool,
    live: Option<&Value>,
    config: &Value,
) -> Result<Value, ApiError> {
    let managed = live
        .and_then(|l| mf::managed_fields_of(l).ok())
        .unwrap_or_default();
    let result = with_request(def, kind, manager, |request, view| {
        mf::apply(live, config, force, managed, request, view)
    });
    match result {
        Ok(applied) => Ok(applied.object),
        Err(ApplyError::Conflicts(conflicts)) => Err(conflicts.to_api_error()),
        Err(ApplyError::ManagedFieldsInConfig) => Err(ApiError::bad_request(
            "metadata.managedFields must be nil".to_string(),
        )),
        Err(ApplyError::InvalidConfig(message)) => Err(ApiError::bad_request(message)),
        Err(ApplyError::InvalidLive(message)) => Err(ApiError::internal(message)),
    }
}
