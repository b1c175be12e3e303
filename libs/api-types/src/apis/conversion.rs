//! Conversion of APIExport and APIBinding between `apis.kcp.io/v1alpha2`, the version kcp stores,
//! and `apis.kcp.io/v1alpha1`, which kcp also serves.
//!
//! This follows kcp's hand-written conversions (`sdk/apis/apis/v1alpha2/`
//! `types_apiexport_conversion.go`, `types_apibinding_conversion.go`) and the generated ones they
//! call. What one version cannot hold is kept in annotations as JSON, in that version's field
//! shapes, so that a round trip gives it back:
//!
//! - APIExport v1alpha2 → v1alpha1: resources not stored as CRDs go to
//!   [`RESOURCE_SCHEMAS_ANNOTATION`], claims whose verbs are not exactly `["*"]` to
//!   [`PERMISSION_CLAIMS_ANNOTATION`]; `all` and `resourceSelector` come back from
//!   [`V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION`]. As in kcp, a claim gets `all` only from there.
//! - APIExport v1alpha1 → v1alpha2: `latestResourceSchemas` (`<prefix>.<resource>.<group>`,
//!   `core` for the core group) become CRD-stored resources; the v1alpha1 claims are kept in
//!   [`V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION`]; claims without verbs get `["*"]`.
//! - APIBinding: the same for `spec.permissionClaims` (with `selector.matchAll` ↔ `all`),
//!   `status.exportPermissionClaims` and `status.appliedPermissionClaims`, with their own
//!   annotations.
//!
//! Like kcp, the conversion decodes spec and status into the version's types: fields those types
//! do not have are dropped, `null` counts as absent, and fields Go omits when empty are omitted.
//! Sub-objects whose type is the same in both versions (identity, maximalPermissionPolicy,
//! reference.export, boundResources, conditions, virtualWorkspaces) are copied as they are.
//! `kind` and `metadata` are kept, apart from the annotations above; `metadata.annotations` is
//! dropped when it ends up empty. `spec` and `status` are written when the input had them or when
//! they are not empty.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::resource::Conversion;

/// The served version.
pub const API_VERSION_V1ALPHA1: &str = "apis.kcp.io/v1alpha1";
/// The stored version.
pub const API_VERSION_V1ALPHA2: &str = "apis.kcp.io/v1alpha2";

/// On a v1alpha1 APIExport: the v1alpha2 resources that are not stored as CRDs.
pub const RESOURCE_SCHEMAS_ANNOTATION: &str = "apis.v1alpha2.kcp.io/resource-schemas";
/// On a v1alpha1 APIExport: the v1alpha2 claims whose verbs are not `["*"]`.
pub const PERMISSION_CLAIMS_ANNOTATION: &str = "apis.v1alpha2.kcp.io/permission-claims";
/// On a v1alpha2 APIExport or APIBinding: the v1alpha1 claims, for `all` and `resourceSelector`.
pub const V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION: &str =
    "apis.v1alpha2.kcp.io/v1alpha1-permission-claims";
/// On a v1alpha1 APIBinding: the v1alpha2 `spec.permissionClaims` v1alpha1 cannot hold.
pub const ACCEPTABLE_PERMISSION_CLAIMS_ANNOTATION: &str =
    "apis.v1alpha2.kcp.io/acceptable-permission-claims";
/// On a v1alpha1 APIBinding: the v1alpha2 `status.exportPermissionClaims` v1alpha1 cannot hold.
pub const STATUS_PERMISSION_CLAIMS_ANNOTATION: &str =
    "apis.v1alpha2.kcp.io/status-export-permission-claims";
/// On a v1alpha1 APIBinding: the v1alpha2 `status.appliedPermissionClaims` v1alpha1 cannot hold.
pub const STATUS_APPLIED_CLAIMS_ANNOTATION: &str =
    "apis.v1alpha2.kcp.io/status-applied-permission-claims";
/// On a v1alpha2 APIBinding: the v1alpha1 `status.exportPermissionClaims`.
pub const STATUS_PERMISSION_CLAIMS_V1ALPHA1_ANNOTATION: &str =
    "apis.v1alpha2.kcp.io/v1alpha1-status-export-permission-claims";
/// On a v1alpha2 APIBinding: the v1alpha1 `status.appliedPermissionClaims` that have a
/// `resourceSelector`.
pub const STATUS_APPLIED_CLAIMS_V1ALPHA1_ANNOTATION: &str =
    "apis.v1alpha2.kcp.io/v1alpha1-status-applied-permission-claims";

/// Why an object could not be converted.
#[derive(Debug, thiserror::Error)]
pub enum ConversionError {
    /// The object, its `metadata` or its `metadata.annotations` is not a JSON object.
    #[error("{0} must be a JSON object")]
    NotAnObject(&'static str),
    /// A `spec.latestResourceSchemas` entry that does not name a resource and a group.
    #[error("invalid schema {0:?}: must have at least 3 dot-separated segments")]
    InvalidSchema(String),
    /// One of the conversion annotations is not a string.
    #[error("annotation {0} must be a string")]
    AnnotationNotString(&'static str),
    /// One of the conversion annotations does not decode.
    #[error("failed to decode annotation {0} from JSON: {1}")]
    Annotation(&'static str, #[source] serde_json::Error),
    /// `spec` or `status` does not fit the version's types.
    #[error("{0}: {1}")]
    Malformed(&'static str, #[source] serde_json::Error),
    /// Encoding an annotation, the spec or the status failed (not expected with these types).
    #[error("failed to encode {0} as JSON: {1}")]
    Encode(&'static str, #[source] serde_json::Error),
}

// The two versions' types, as far as the conversion needs them. Field order, names and omission
// follow the Go types' json tags, so that the annotations hold what kcp would write. Every struct
// takes absent members as their zero value, as Go does.

fn is_false(value: &bool) -> bool {
    !*value
}

/// A struct without fields (`storage.crd`): `{}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Empty {}

/// v1alpha1 `PermissionClaim`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct V1Claim {
    #[serde(skip_serializing_if = "String::is_empty")]
    group: String,
    resource: String,
    #[serde(skip_serializing_if = "is_false")]
    all: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    resource_selector: Vec<V1ResourceSelector>,
    #[serde(skip_serializing_if = "String::is_empty")]
    identity_hash: String,
}

/// v1alpha1 `ResourceSelector`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct V1ResourceSelector {
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    namespace: String,
}

/// v1alpha1 `AcceptablePermissionClaim`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct V1AcceptableClaim {
    #[serde(flatten)]
    claim: V1Claim,
    state: String,
}

/// v1alpha2 `PermissionClaim`. `verbs` has no `omitempty`: Go writes `null` for no verbs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct V2Claim {
    #[serde(skip_serializing_if = "String::is_empty")]
    group: String,
    resource: String,
    verbs: Option<Vec<String>>,
    #[serde(skip_serializing_if = "String::is_empty")]
    identity_hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_selector: Option<Selector>,
}

/// v1alpha2 `PermissionClaimSelector`: a label selector and `matchAll`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Selector {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    match_labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    match_expressions: Vec<LabelSelectorRequirement>,
    #[serde(skip_serializing_if = "is_false")]
    match_all: bool,
}

/// metav1 `LabelSelectorRequirement`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct LabelSelectorRequirement {
    key: String,
    operator: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    values: Vec<String>,
}

/// v1alpha2 `ScopedPermissionClaim`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct V2ScopedClaim {
    #[serde(flatten)]
    claim: V2Claim,
    selector: Selector,
}

/// v1alpha2 `AcceptablePermissionClaim`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct V2AcceptableClaim {
    #[serde(flatten)]
    scoped: V2ScopedClaim,
    state: String,
}

/// v1alpha2 `ResourceSchema`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct ResourceSchema {
    name: String,
    group: String,
    schema: String,
    storage: ResourceSchemaStorage,
}

/// v1alpha2 `ResourceSchemaStorage`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct ResourceSchemaStorage {
    #[serde(skip_serializing_if = "Option::is_none")]
    crd: Option<Empty>,
    #[serde(rename = "virtual", skip_serializing_if = "Option::is_none")]
    virtual_storage: Option<VirtualStorage>,
}

/// v1alpha2 `ResourceSchemaStorageVirtual`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct VirtualStorage {
    reference: TypedLocalObjectReference,
    identity_hash: String,
}

/// core/v1 `TypedLocalObjectReference`; `apiGroup` has no `omitempty` (`null` when unset).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct TypedLocalObjectReference {
    api_group: Option<String>,
    kind: String,
    name: String,
}

/// v1alpha1 `APIExportSpec`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct V1ExportSpec {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    latest_resource_schemas: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    identity: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    maximal_permission_policy: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    permission_claims: Vec<V1Claim>,
}

/// v1alpha2 `APIExportSpec`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct V2ExportSpec {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    resources: Vec<ResourceSchema>,
    #[serde(skip_serializing_if = "Option::is_none")]
    identity: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    maximal_permission_policy: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    permission_claims: Vec<V2Claim>,
}

/// `APIExportStatus`, the same in both versions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct ExportStatus {
    #[serde(skip_serializing_if = "String::is_empty")]
    identity_hash: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    conditions: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    virtual_workspaces: Vec<Value>,
}

/// `BindingReference`, the same in both versions; always written (`{}` at least).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
struct BindingReference {
    #[serde(skip_serializing_if = "Option::is_none")]
    export: Option<Value>,
}

/// v1alpha1 `APIBindingSpec`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct V1BindingSpec {
    reference: BindingReference,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    permission_claims: Vec<V1AcceptableClaim>,
}

/// v1alpha2 `APIBindingSpec`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct V2BindingSpec {
    reference: BindingReference,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    permission_claims: Vec<V2AcceptableClaim>,
}

/// v1alpha1 `APIBindingStatus`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct V1BindingStatus {
    #[serde(skip_serializing_if = "String::is_empty")]
    api_export_cluster_name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    bound_resources: Vec<Value>,
    #[serde(skip_serializing_if = "String::is_empty")]
    phase: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    conditions: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    applied_permission_claims: Vec<V1Claim>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    export_permission_claims: Vec<V1Claim>,
}

/// v1alpha2 `APIBindingStatus`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct V2BindingStatus {
    #[serde(skip_serializing_if = "String::is_empty")]
    api_export_cluster_name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    bound_resources: Vec<Value>,
    #[serde(skip_serializing_if = "String::is_empty")]
    phase: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    conditions: Vec<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    applied_permission_claims: Vec<V2ScopedClaim>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    export_permission_claims: Vec<V2Claim>,
}

// Claims.

/// kcp's `EqualGRI`: what claims kept in an annotation are matched on.
trait Gri {
    fn gri(&self) -> (&str, &str, &str);
}

impl Gri for V1Claim {
    fn gri(&self) -> (&str, &str, &str) {
        (&self.group, &self.resource, &self.identity_hash)
    }
}

impl Gri for V2Claim {
    fn gri(&self) -> (&str, &str, &str) {
        (&self.group, &self.resource, &self.identity_hash)
    }
}

impl Gri for V2ScopedClaim {
    fn gri(&self) -> (&str, &str, &str) {
        self.claim.gri()
    }
}

impl Gri for V2AcceptableClaim {
    fn gri(&self) -> (&str, &str, &str) {
        self.scoped.gri()
    }
}

/// The annotated claim `claim` is restored from. kcp applies every match in turn, so the last wins.
fn original_of<'o, T: Gri>(originals: &'o [T], claim: &impl Gri) -> Option<&'o T> {
    originals.iter().rev().find(|o| o.gri() == claim.gri())
}

impl V1Claim {
    /// The generated conversion: group, resource and identity hash; no verbs.
    fn to_v2(&self) -> V2Claim {
        V2Claim {
            group: self.group.clone(),
            resource: self.resource.clone(),
            identity_hash: self.identity_hash.clone(),
            ..V2Claim::default()
        }
    }

    /// A v1alpha1 claim as a `ScopedPermissionClaim`: `all` becomes `selector.matchAll`.
    fn to_v2_scoped(&self) -> V2ScopedClaim {
        V2ScopedClaim {
            claim: self.to_v2(),
            selector: Selector {
                match_all: self.all,
                ..Selector::default()
            },
        }
    }

    /// `all` and `resourceSelector` as the v1alpha1 claim kept in an annotation had them.
    fn restore(&mut self, originals: &[V1Claim]) {
        if let Some(original) = original_of(originals, self) {
            self.all = original.all;
            self.resource_selector = original.resource_selector.clone();
        }
    }
}

impl V1AcceptableClaim {
    fn to_v2(&self) -> V2AcceptableClaim {
        V2AcceptableClaim {
            scoped: self.claim.to_v2_scoped(),
            state: self.state.clone(),
        }
    }
}

impl V2Claim {
    /// The generated conversion: group, resource and identity hash; `all` stays false.
    fn to_v1(&self) -> V1Claim {
        V1Claim {
            group: self.group.clone(),
            resource: self.resource.clone(),
            identity_hash: self.identity_hash.clone(),
            ..V1Claim::default()
        }
    }

    /// Verbs exactly `["*"]`.
    fn is_wildcard(&self) -> bool {
        matches!(self.verbs.as_deref(), Some([only]) if only == "*")
    }

    /// No verbs means `["*"]`.
    fn default_verbs(&mut self) {
        if matches!(self.verbs.as_deref(), None | Some([])) {
            self.verbs = Some(vec!["*".to_string()]);
        }
    }
}

impl V2ScopedClaim {
    /// A `ScopedPermissionClaim` as a v1alpha1 claim: `selector.matchAll` becomes `all`.
    fn to_v1(&self) -> V1Claim {
        V1Claim {
            all: self.selector.match_all,
            ..self.claim.to_v1()
        }
    }

    /// Verbs `["*"]` and `matchAll`: what a v1alpha1 claim can say.
    fn fits_v1alpha1(&self) -> bool {
        self.claim.is_wildcard() && self.selector.match_all
    }

    /// No verbs means `["*"]`; an empty selector means `matchAll` (what v1alpha1 claims did).
    fn apply_defaults(&mut self) {
        self.claim.default_verbs();
        let selector = &mut self.selector;
        if selector.match_labels.is_empty() && selector.match_expressions.is_empty() {
            selector.match_all = true;
        }
    }
}

impl V2AcceptableClaim {
    fn to_v1(&self) -> V1AcceptableClaim {
        V1AcceptableClaim {
            claim: self.scoped.to_v1(),
            state: self.state.clone(),
        }
    }

    fn fits_v1alpha1(&self) -> bool {
        self.scoped.fits_v1alpha1()
    }
}

/// The items that do not fit.
fn overhanging<T>(items: &[T], fits: impl Fn(&T) -> bool) -> Vec<&T> {
    items.iter().filter(|item| !fits(item)).collect()
}

fn map_all<T, U>(items: &[T], convert: impl Fn(&T) -> U) -> Vec<U> {
    items.iter().map(convert).collect()
}

/// A `latestResourceSchemas` entry, `<prefix>.<resource>.<group>` with `core` for the core group,
/// as a CRD-stored resource.
fn crd_schema(schema: &str) -> Result<ResourceSchema, ConversionError> {
    let mut segments = schema.splitn(3, '.');
    let (Some(_), Some(resource), Some(group)) =
        (segments.next(), segments.next(), segments.next())
    else {
        return Err(ConversionError::InvalidSchema(schema.to_string()));
    };
    let group = match group {
        "core" => "",
        group => group,
    };
    Ok(ResourceSchema {
        name: resource.to_string(),
        group: group.to_string(),
        schema: schema.to_string(),
        storage: ResourceSchemaStorage {
            crd: Some(Empty {}),
            virtual_storage: None,
        },
    })
}

// The object around spec and status.

/// Drops object members that are `null`, at any depth: Go decodes a `null` into a field as the
/// field's zero value, which is what an absent member gives too.
pub fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// `value` as a `T`, decoded as Go would.
fn from_json<T: DeserializeOwned>(value: &Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(without_nulls(value))
}

/// An annotation's list, decoded as Go would (`null` is an empty list).
fn parse_list<T: DeserializeOwned>(text: &str) -> Result<Vec<T>, serde_json::Error> {
    let value: Value = serde_json::from_str(text)?;
    let list: Option<Vec<T>> = from_json(&value)?;
    Ok(list.unwrap_or_default())
}

fn present<'v>(fields: &'v Map<String, Value>, field: &str) -> Option<&'v Value> {
    fields.get(field).filter(|value| !value.is_null())
}

/// An object taken apart: what is kept, the annotations as they came in (what the conversion reads)
/// and as they go out, and the spec and status to convert.
struct Parts<'a> {
    kind: Option<&'a Value>,
    metadata: Option<Map<String, Value>>,
    original: Map<String, Value>,
    annotations: Map<String, Value>,
    spec: Option<&'a Value>,
    status: Option<&'a Value>,
}

impl<'a> Parts<'a> {
    fn split(obj: &'a Value) -> Result<Self, ConversionError> {
        let Value::Object(fields) = obj else {
            return Err(ConversionError::NotAnObject("object"));
        };
        let metadata = match present(fields, "metadata") {
            None => None,
            Some(Value::Object(metadata)) => Some(metadata.clone()),
            Some(_) => return Err(ConversionError::NotAnObject("metadata")),
        };
        let original = match metadata.as_ref().and_then(|m| present(m, "annotations")) {
            None => Map::new(),
            Some(Value::Object(annotations)) => annotations.clone(),
            Some(_) => return Err(ConversionError::NotAnObject("metadata.annotations")),
        };
        Ok(Parts {
            kind: fields.get("kind"),
            metadata,
            annotations: original.clone(),
            original,
            spec: present(fields, "spec"),
            status: present(fields, "status"),
        })
    }

    fn spec<T: DeserializeOwned + Default>(&self) -> Result<T, ConversionError> {
        decode(self.spec, "spec")
    }

    fn status<T: DeserializeOwned + Default>(&self) -> Result<T, ConversionError> {
        decode(self.status, "status")
    }

    /// The list in annotation `key` of the input, if it has one (`null` is an empty list, as in
    /// Go), and the annotation off the output: kcp deletes what it restores from.
    fn take<T: DeserializeOwned>(
        &mut self,
        key: &'static str,
    ) -> Result<Option<Vec<T>>, ConversionError> {
        let text = match self.original.get(key) {
            None => return Ok(None),
            Some(Value::String(text)) => text,
            Some(_) => return Err(ConversionError::AnnotationNotString(key)),
        };
        let list = parse_list(text).map_err(|source| ConversionError::Annotation(key, source))?;
        self.annotations.shift_remove(key);
        Ok(Some(list))
    }

    /// Sets annotation `key` of the output to `value` as JSON.
    fn write<T>(&mut self, key: &'static str, value: &T) -> Result<(), ConversionError>
    where
        T: Serialize + ?Sized,
    {
        let text = serde_json::to_string(value);
        let text = text.map_err(|source| ConversionError::Encode(key, source))?;
        self.annotations
            .insert(key.to_string(), Value::String(text));
        Ok(())
    }

    /// Writes annotation `key` with the `items` the other version cannot hold, if there are any.
    fn keep<T: Serialize>(
        &mut self,
        key: &'static str,
        items: &[&T],
    ) -> Result<(), ConversionError> {
        if items.is_empty() {
            return Ok(());
        }
        self.write(key, items)
    }

    /// Puts the converted object together.
    fn finish<S, T>(self, api_version: &str, spec: &S, status: &T) -> Result<Value, ConversionError>
    where
        S: Serialize + Default,
        T: Serialize + Default,
    {
        let mut out = Map::new();
        out.insert("apiVersion".into(), Value::String(api_version.to_string()));
        if let Some(kind) = self.kind {
            out.insert("kind".into(), kind.clone());
        }
        let mut metadata = self.metadata;
        if self.annotations.is_empty() {
            if let Some(metadata) = metadata.as_mut() {
                metadata.shift_remove("annotations");
            }
        } else {
            let annotations = Value::Object(self.annotations);
            metadata
                .get_or_insert_with(Map::new)
                .insert("annotations".into(), annotations);
        }
        if let Some(metadata) = metadata {
            out.insert("metadata".into(), Value::Object(metadata));
        }
        section(&mut out, "spec", self.spec.is_some(), spec)?;
        section(&mut out, "status", self.status.is_some(), status)?;
        Ok(Value::Object(out))
    }
}

fn decode<T: DeserializeOwned + Default>(
    value: Option<&Value>,
    field: &'static str,
) -> Result<T, ConversionError> {
    let Some(value) = value else {
        return Ok(T::default());
    };
    from_json(value).map_err(|source| ConversionError::Malformed(field, source))
}

fn encode<T: Serialize>(value: &T, field: &'static str) -> Result<Value, ConversionError> {
    serde_json::to_value(value).map_err(|source| ConversionError::Encode(field, source))
}

/// Writes `spec` or `status` when the input had it or it says something.
fn section<T: Serialize + Default>(
    out: &mut Map<String, Value>,
    field: &'static str,
    had: bool,
    value: &T,
) -> Result<(), ConversionError> {
    let encoded = encode(value, field)?;
    if had || encoded != encode(&T::default(), field)? {
        out.insert(field.to_string(), encoded);
    }
    Ok(())
}

fn with_api_version(mut obj: Value, api_version: &str) -> Value {
    if let Value::Object(fields) = &mut obj {
        fields.insert("apiVersion".into(), Value::String(api_version.to_string()));
    }
    obj
}

// APIExport.

/// APIExport: stored v1alpha2 → served v1alpha1, as kcp's
/// `Convert_v1alpha2_APIExport_To_v1alpha1_APIExport`.
pub fn export_to_v1alpha1(v2: Value) -> Result<Value, ConversionError> {
    export_v2_to_v1(&v2)
}

/// APIExport: served v1alpha1 → stored v1alpha2, as kcp's
/// `Convert_v1alpha1_APIExport_To_v1alpha2_APIExport`.
pub fn export_to_v1alpha2(v1: Value) -> Result<Value, ConversionError> {
    export_v1_to_v2(&v1)
}

fn export_v2_to_v1(obj: &Value) -> Result<Value, ConversionError> {
    let mut parts = Parts::split(obj)?;
    let spec: V2ExportSpec = parts.spec()?;
    let status: ExportStatus = parts.status()?;

    // Only CRD-stored resources fit latestResourceSchemas; only ["*"] fits a v1alpha1 claim.
    let mut latest = Vec::new();
    let mut other_storage = Vec::new();
    for resource in &spec.resources {
        if resource.storage.crd.is_some() {
            latest.push(resource.schema.clone());
        } else {
            other_storage.push(resource);
        }
    }
    parts.keep(RESOURCE_SCHEMAS_ANNOTATION, &other_storage)?;
    let other_verbs = overhanging(&spec.permission_claims, V2Claim::is_wildcard);
    parts.keep(PERMISSION_CLAIMS_ANNOTATION, &other_verbs)?;

    let mut out = V1ExportSpec {
        latest_resource_schemas: latest,
        identity: spec.identity.clone(),
        maximal_permission_policy: spec.maximal_permission_policy.clone(),
        permission_claims: map_all(&spec.permission_claims, V2Claim::to_v1),
    };
    // Converted from v1alpha1 before: `all` and `resourceSelector` as they were.
    if let Some(originals) = parts.take::<V1Claim>(V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION)? {
        for claim in &mut out.permission_claims {
            claim.restore(&originals);
        }
    }

    parts.finish(API_VERSION_V1ALPHA1, &out, &status)
}

fn export_v1_to_v2(obj: &Value) -> Result<Value, ConversionError> {
    let mut parts = Parts::split(obj)?;
    let spec: V1ExportSpec = parts.spec()?;
    let status: ExportStatus = parts.status()?;

    let mut resources = Vec::new();
    for schema in &spec.latest_resource_schemas {
        resources.push(crd_schema(schema)?);
    }
    let mut out = V2ExportSpec {
        resources,
        identity: spec.identity.clone(),
        maximal_permission_policy: spec.maximal_permission_policy.clone(),
        permission_claims: map_all(&spec.permission_claims, V1Claim::to_v2),
    };

    // v1alpha2 has no `all` and `resourceSelector`: keep the v1alpha1 claims.
    if !spec.permission_claims.is_empty() {
        parts.write(
            V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION,
            &spec.permission_claims,
        )?;
    }

    // Converted from v1alpha2 before: the resources not stored as CRDs, the claims' verbs and
    // default selectors.
    if let Some(schemas) = parts.take::<ResourceSchema>(RESOURCE_SCHEMAS_ANNOTATION)? {
        out.resources.extend(schemas);
    }
    if let Some(originals) = parts.take::<V2Claim>(PERMISSION_CLAIMS_ANNOTATION)? {
        for claim in &mut out.permission_claims {
            if let Some(original) = original_of(&originals, claim) {
                claim.verbs = original.verbs.clone();
                claim.default_selector = original.default_selector.clone();
            }
        }
    }

    for claim in &mut out.permission_claims {
        claim.default_verbs();
    }

    parts.finish(API_VERSION_V1ALPHA2, &out, &status)
}

// APIBinding.

/// APIBinding: stored v1alpha2 → served v1alpha1, as kcp's
/// `Convert_v1alpha2_APIBinding_To_v1alpha1_APIBinding`.
pub fn binding_to_v1alpha1(v2: Value) -> Result<Value, ConversionError> {
    binding_v2_to_v1(&v2)
}

/// APIBinding: served v1alpha1 → stored v1alpha2, as kcp's
/// `Convert_v1alpha1_APIBinding_To_v1alpha2_APIBinding`.
pub fn binding_to_v1alpha2(v1: Value) -> Result<Value, ConversionError> {
    binding_v1_to_v2(&v1)
}

fn binding_v2_to_v1(obj: &Value) -> Result<Value, ConversionError> {
    let mut parts = Parts::split(obj)?;
    let spec: V2BindingSpec = parts.spec()?;
    let status: V2BindingStatus = parts.status()?;

    // Spec claims with verbs other than ["*"] or a selector other than matchAll.
    let claims = &spec.permission_claims;
    let other = overhanging(claims, V2AcceptableClaim::fits_v1alpha1);
    parts.keep(ACCEPTABLE_PERMISSION_CLAIMS_ANNOTATION, &other)?;

    let mut out_spec = V1BindingSpec {
        reference: spec.reference.clone(),
        permission_claims: map_all(claims, V2AcceptableClaim::to_v1),
    };
    // Converted from v1alpha1 before: `all` and `resourceSelector` as they were.
    let originals: Option<Vec<V1AcceptableClaim>> =
        parts.take(V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION)?;
    if let Some(originals) = originals {
        let originals: Vec<V1Claim> = originals.into_iter().map(|c| c.claim).collect();
        for claim in &mut out_spec.permission_claims {
            claim.claim.restore(&originals);
        }
    }

    // The same for the status' claims.
    let export_claims = &status.export_permission_claims;
    let other_export = overhanging(export_claims, V2Claim::is_wildcard);
    parts.keep(STATUS_PERMISSION_CLAIMS_ANNOTATION, &other_export)?;
    let applied_claims = &status.applied_permission_claims;
    let other_applied = overhanging(applied_claims, V2ScopedClaim::fits_v1alpha1);
    parts.keep(STATUS_APPLIED_CLAIMS_ANNOTATION, &other_applied)?;

    let mut out_status = V1BindingStatus {
        api_export_cluster_name: status.api_export_cluster_name.clone(),
        bound_resources: status.bound_resources.clone(),
        phase: status.phase.clone(),
        conditions: status.conditions.clone(),
        applied_permission_claims: map_all(applied_claims, V2ScopedClaim::to_v1),
        export_permission_claims: map_all(export_claims, V2Claim::to_v1),
    };
    let originals: Option<Vec<V1Claim>> =
        parts.take(STATUS_PERMISSION_CLAIMS_V1ALPHA1_ANNOTATION)?;
    if let Some(originals) = originals {
        for claim in &mut out_status.export_permission_claims {
            claim.restore(&originals);
        }
    }
    // `all` too: the other direction turns a claim without selector into matchAll.
    let originals: Option<Vec<V1Claim>> = parts.take(STATUS_APPLIED_CLAIMS_V1ALPHA1_ANNOTATION)?;
    if let Some(originals) = originals {
        for claim in &mut out_status.applied_permission_claims {
            claim.restore(&originals);
        }
    }

    parts.finish(API_VERSION_V1ALPHA1, &out_spec, &out_status)
}

fn binding_v1_to_v2(obj: &Value) -> Result<Value, ConversionError> {
    let mut parts = Parts::split(obj)?;
    let spec: V1BindingSpec = parts.spec()?;
    let status: V1BindingStatus = parts.status()?;

    let claims = &spec.permission_claims;
    let mut out_spec = V2BindingSpec {
        reference: spec.reference.clone(),
        permission_claims: map_all(claims, V1AcceptableClaim::to_v2),
    };
    // v1alpha2 has no `resourceSelector`: keep the claims that have one.
    let with_selector = overhanging(claims, |c| c.claim.resource_selector.is_empty());
    parts.keep(V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION, &with_selector)?;

    // Converted from v1alpha2 before: verbs and selectors.
    let originals: Option<Vec<V2AcceptableClaim>> =
        parts.take(ACCEPTABLE_PERMISSION_CLAIMS_ANNOTATION)?;
    if let Some(originals) = originals {
        for claim in &mut out_spec.permission_claims {
            if let Some(original) = original_of(&originals, claim) {
                claim.scoped.claim.verbs = original.scoped.claim.verbs.clone();
                claim.scoped.selector = original.scoped.selector.clone();
            }
        }
    }
    for claim in &mut out_spec.permission_claims {
        claim.scoped.apply_defaults();
    }

    let export_claims = &status.export_permission_claims;
    let applied_claims = &status.applied_permission_claims;
    let mut out_status = V2BindingStatus {
        api_export_cluster_name: status.api_export_cluster_name.clone(),
        bound_resources: status.bound_resources.clone(),
        phase: status.phase.clone(),
        conditions: status.conditions.clone(),
        applied_permission_claims: map_all(applied_claims, V1Claim::to_v2_scoped),
        export_permission_claims: map_all(export_claims, V1Claim::to_v2),
    };
    // v1alpha2 has no `all` and `resourceSelector`: keep every export claim, and the applied claims
    // with a resourceSelector.
    if !export_claims.is_empty() {
        parts.write(STATUS_PERMISSION_CLAIMS_V1ALPHA1_ANNOTATION, export_claims)?;
    }
    let with_selector = overhanging(applied_claims, |c| c.resource_selector.is_empty());
    parts.keep(STATUS_APPLIED_CLAIMS_V1ALPHA1_ANNOTATION, &with_selector)?;

    // Converted from v1alpha2 before: the export claims' verbs, the applied claims' verbs and
    // selectors.
    let originals: Option<Vec<V2Claim>> = parts.take(STATUS_PERMISSION_CLAIMS_ANNOTATION)?;
    if let Some(originals) = originals {
        for claim in &mut out_status.export_permission_claims {
            if let Some(original) = original_of(&originals, claim) {
                claim.verbs = original.verbs.clone();
            }
        }
    }
    let originals: Option<Vec<V2ScopedClaim>> = parts.take(STATUS_APPLIED_CLAIMS_ANNOTATION)?;
    if let Some(originals) = originals {
        for claim in &mut out_status.applied_permission_claims {
            if let Some(original) = original_of(&originals, claim) {
                claim.claim.verbs = original.claim.verbs.clone();
                claim.selector = original.selector.clone();
            }
        }
    }

    for claim in &mut out_status.export_permission_claims {
        claim.default_verbs();
    }
    for claim in &mut out_status.applied_permission_claims {
        claim.apply_defaults();
    }

    parts.finish(API_VERSION_V1ALPHA2, &out_spec, &out_status)
}

// The registry's view.

/// APIExport served as v1alpha1 over stored v1alpha2. An object that does not convert is passed on
/// with only its apiVersion changed.
pub struct ExportV1alpha1;

impl Conversion for ExportV1alpha1 {
    fn to_storage(&self, api: Value) -> Value {
        export_v1_to_v2(&api).unwrap_or_else(|_| with_api_version(api, API_VERSION_V1ALPHA2))
    }

    fn to_api(&self, stored: Value) -> Value {
        export_v2_to_v1(&stored).unwrap_or_else(|_| with_api_version(stored, API_VERSION_V1ALPHA1))
    }
}

/// APIBinding served as v1alpha1 over stored v1alpha2. An object that does not convert is passed on
/// with only its apiVersion changed.
pub struct BindingV1alpha1;

impl Conversion for BindingV1alpha1 {
    fn to_storage(&self, api: Value) -> Value {
        binding_v1_to_v2(&api).unwrap_or_else(|_| with_api_version(api, API_VERSION_V1ALPHA2))
    }

    fn to_api(&self, stored: Value) -> Value {
        binding_v2_to_v1(&stored).unwrap_or_else(|_| with_api_version(stored, API_VERSION_V1ALPHA1))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn export(api_version: &str, spec: Value) -> Value {
        json!({
            "apiVersion": api_version, "kind": "APIExport",
            "metadata": {"name": "e"},
            "spec": spec,
        })
    }

    fn binding(api_version: &str, spec: Value) -> Value {
        json!({
            "apiVersion": api_version, "kind": "APIBinding",
            "metadata": {"name": "b"},
            "spec": spec,
        })
    }

    fn crd(name: &str, group: &str) -> Value {
        json!({
            "name": name, "group": group, "schema": format!("v1.{name}.{group}"),
            "storage": {"crd": {}},
        })
    }

    fn virtual_foo() -> Value {
        json!({
            "name": "foo", "group": "bar", "schema": "v1.foo.bar",
            "storage": {"virtual": {
                "reference": {
                    "apiGroup": "example.com", "kind": "MyEndpointSlice",
                    "name": "my-virtual-resource",
                },
                "identityHash": "123abc",
            }},
        })
    }

    fn annotation<'v>(obj: &'v Value, key: &str) -> &'v str {
        obj["metadata"]["annotations"][key]
            .as_str()
            .expect("annotation is set")
    }

    /// `obj` without the annotations `keys`, and without `metadata.annotations` once empty.
    fn without_annotations(mut obj: Value, keys: &[&str]) -> Value {
        let metadata = obj["metadata"].as_object_mut().expect("metadata");
        let mut annotations = match metadata.shift_remove("annotations") {
            Some(Value::Object(annotations)) => annotations,
            _ => Map::new(),
        };
        for key in keys {
            annotations.shift_remove(*key);
        }
        if !annotations.is_empty() {
            metadata.insert("annotations".into(), Value::Object(annotations));
        }
        obj
    }

    // APIExport.

    #[test]
    fn exports_survive_v1alpha2_to_v1alpha1_and_back() {
        let cases = [
            export(API_VERSION_V1ALPHA2, json!({})),
            export(
                API_VERSION_V1ALPHA2,
                json!({"resources": [crd("foo", "bar")]}),
            ),
            export(
                API_VERSION_V1ALPHA2,
                json!({"resources": [crd("foo", "bar"), crd("baz", "bar")]}),
            ),
            export(
                API_VERSION_V1ALPHA2,
                json!({
                    "resources": [crd("foo", "bar")],
                    "permissionClaims": [{"resource": "configmaps", "verbs": ["get"]}],
                }),
            ),
            export(
                API_VERSION_V1ALPHA2,
                json!({
                    "resources": [virtual_foo()],
                    "permissionClaims": [{"resource": "configmaps", "verbs": ["get"]}],
                }),
            ),
            export(
                API_VERSION_V1ALPHA2,
                json!({
                    "resources": [crd("foo", "bar")],
                    "permissionClaims": [{
                        "resource": "configmaps", "verbs": ["get", "list"],
                        "defaultSelector": {"matchLabels": {"platform-mesh.io/enabled": "true"}},
                    }],
                }),
            ),
            json!({
                "apiVersion": API_VERSION_V1ALPHA2, "kind": "APIExport",
                "metadata": {"name": "e", "annotations": {"keep": "me"}},
                "spec": {
                    "resources": [{
                        "name": "configmaps", "group": "", "schema": "v1.configmaps.core",
                        "storage": {"crd": {}},
                    }],
                    "identity": {"secretRef": {"namespace": "kcp-system", "name": "e"}},
                    "maximalPermissionPolicy": {"local": {}},
                    "permissionClaims": [
                        {"group": "example.org", "resource": "widgets", "verbs": ["*"],
                         "identityHash": "h1"},
                        {"resource": "secrets", "verbs": []},
                    ],
                },
                "status": {
                    "identityHash": "abc",
                    "conditions": [{"type": "IdentityValid", "status": "True",
                                    "lastTransitionTime": "2025-01-01T00:00:00Z"}],
                    "virtualWorkspaces": [{"url": "https://shard/services/apiexport/e"}],
                },
            }),
        ];
        for case in cases {
            let v1 = export_to_v1alpha1(case.clone()).expect("converts to v1alpha1");
            assert_eq!(v1["apiVersion"], API_VERSION_V1ALPHA1);
            let back = export_to_v1alpha2(v1).expect("converts back");
            // The way back keeps the v1alpha1 claims, as kcp does.
            let back = without_annotations(back, &[V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION]);
            if case["spec"]["permissionClaims"][1]["verbs"] == json!([]) {
                // No verbs come back as ["*"].
                let mut expected = case.clone();
                expected["spec"]["permissionClaims"][1]["verbs"] = json!(["*"]);
                assert_eq!(back, expected);
            } else {
                assert_eq!(back, case);
            }
        }
    }

    #[test]
    fn v1alpha1_export_keeps_what_it_cannot_hold_in_annotations() {
        let v2 = export(
            API_VERSION_V1ALPHA2,
            json!({
                "resources": [crd("baz", "bar"), virtual_foo()],
                "permissionClaims": [
                    {"resource": "configmaps", "verbs": ["get"]},
                    {"group": "example.org", "resource": "widgets", "verbs": ["*"],
                     "identityHash": "h1"},
                ],
            }),
        );
        let v1 = export_to_v1alpha1(v2).expect("converts");
        assert_eq!(v1["kind"], "APIExport");
        assert_eq!(
            v1["spec"],
            json!({
                "latestResourceSchemas": ["v1.baz.bar"],
                // As in kcp, `all` only comes from the v1alpha1 claims annotation.
                "permissionClaims": [
                    {"resource": "configmaps"},
                    {"group": "example.org", "resource": "widgets", "identityHash": "h1"},
                ],
            })
        );
        assert_eq!(
            annotation(&v1, RESOURCE_SCHEMAS_ANNOTATION),
            r#"[{"name":"foo","group":"bar","schema":"v1.foo.bar","storage":{"virtual":{"reference":{"apiGroup":"example.com","kind":"MyEndpointSlice","name":"my-virtual-resource"},"identityHash":"123abc"}}}]"#
        );
        assert_eq!(
            annotation(&v1, PERMISSION_CLAIMS_ANNOTATION),
            r#"[{"resource":"configmaps","verbs":["get"]}]"#
        );
        assert!(v1.get("status").is_none());
    }

    #[test]
    fn exports_survive_v1alpha1_to_v1alpha2_and_back() {
        let cases = [
            export(API_VERSION_V1ALPHA1, json!({})),
            export(
                API_VERSION_V1ALPHA1,
                json!({"latestResourceSchemas": ["v1.foo.org", "v1.bar.org"]}),
            ),
            export(
                API_VERSION_V1ALPHA1,
                json!({
                    "latestResourceSchemas": ["v1.foo.org", "v1.bar.org"],
                    "permissionClaims": [{"resource": "configmaps", "all": true}],
                }),
            ),
            json!({
                "apiVersion": API_VERSION_V1ALPHA1, "kind": "APIExport",
                "metadata": {"name": "e", "annotations": {"keep": "me"}},
                "spec": {
                    "latestResourceSchemas": ["v1.configmaps.core", "v2.widgets.example.org"],
                    "identity": {"secretRef": {"namespace": "kcp-system", "name": "e"}},
                    "maximalPermissionPolicy": {"local": {}},
                    "permissionClaims": [
                        {"resource": "configmaps", "all": true},
                        {"group": "example.org", "resource": "widgets",
                         "resourceSelector": [{"name": "a", "namespace": "b"}],
                         "identityHash": "h"},
                    ],
                },
                "status": {"identityHash": "abc"},
            }),
        ];
        for case in cases {
            let v2 = export_to_v1alpha2(case.clone()).expect("converts to v1alpha2");
            assert_eq!(v2["apiVersion"], API_VERSION_V1ALPHA2);
            let back = export_to_v1alpha1(v2).expect("converts back");
            assert_eq!(back, case);
        }
    }

    #[test]
    fn v1alpha2_export_of_a_v1alpha1_one() {
        let v1 = export(
            API_VERSION_V1ALPHA1,
            json!({
                "latestResourceSchemas": [
                    "v1.foo.org", "v2.widgets.example.org", "v1.configmaps.core",
                ],
                "permissionClaims": [{"resource": "configmaps", "all": true}],
            }),
        );
        let v2 = export_to_v1alpha2(v1).expect("converts");
        assert_eq!(
            v2["spec"],
            json!({
                "resources": [
                    {"name": "foo", "group": "org", "schema": "v1.foo.org",
                     "storage": {"crd": {}}},
                    {"name": "widgets", "group": "example.org",
                     "schema": "v2.widgets.example.org", "storage": {"crd": {}}},
                    {"name": "configmaps", "group": "", "schema": "v1.configmaps.core",
                     "storage": {"crd": {}}},
                ],
                "permissionClaims": [{"resource": "configmaps", "verbs": ["*"]}],
            })
        );
        assert_eq!(
            annotation(&v2, V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION),
            r#"[{"resource":"configmaps","all":true}]"#
        );
        assert!(v2.get("status").is_none());
    }

    #[test]
    fn v1alpha1_export_annotations_are_restored_and_removed() {
        let v1 = json!({
            "apiVersion": API_VERSION_V1ALPHA1, "kind": "APIExport",
            "metadata": {"name": "e", "annotations": {
                RESOURCE_SCHEMAS_ANNOTATION: r#"[{"name":"foo","group":"bar","schema":"v1.foo.bar","storage":{"virtual":{"reference":{"apiGroup":null,"kind":"K","name":"n"},"identityHash":"x"}}}]"#,
                PERMISSION_CLAIMS_ANNOTATION: r#"[{"resource":"configmaps","verbs":["get"],"defaultSelector":{"matchLabels":{"a":"b"}}},{"resource":"secrets","verbs":["list"]}]"#,
            }},
            "spec": {"permissionClaims": [{"resource": "configmaps", "all": true}]},
        });
        let v2 = export_to_v1alpha2(v1).expect("converts");
        assert_eq!(
            v2["spec"],
            json!({
                "resources": [{
                    "name": "foo", "group": "bar", "schema": "v1.foo.bar",
                    "storage": {"virtual": {
                        "reference": {"apiGroup": null, "kind": "K", "name": "n"},
                        "identityHash": "x",
                    }},
                }],
                // The annotated secrets claim matches nothing in the spec.
                "permissionClaims": [{
                    "resource": "configmaps", "verbs": ["get"],
                    "defaultSelector": {"matchLabels": {"a": "b"}},
                }],
            })
        );
        let kept = r#"[{"resource":"configmaps","all":true}]"#;
        assert_eq!(
            v2["metadata"]["annotations"],
            json!({V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION: kept})
        );
    }

    #[test]
    fn unknown_and_null_fields_are_dropped() {
        let v1 = json!({
            "apiVersion": API_VERSION_V1ALPHA1, "kind": "APIExport",
            "metadata": {"name": "e", "annotations": {}},
            "spec": {
                "latestResourceSchemas": null,
                "identity": null,
                "permissionClaims": [{"resource": "configmaps", "all": true, "bogus": 1}],
                "extra": "x",
            },
            "status": null,
            "junk": 1,
        });
        let v2 = export_to_v1alpha2(v1).expect("converts");
        let kept = r#"[{"resource":"configmaps","all":true}]"#;
        assert_eq!(
            v2,
            json!({
                "apiVersion": API_VERSION_V1ALPHA2, "kind": "APIExport",
                "metadata": {"name": "e", "annotations": {
                    V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION: kept,
                }},
                "spec": {"permissionClaims": [{"resource": "configmaps", "verbs": ["*"]}]},
            })
        );
    }

    #[test]
    fn export_conversion_errors() {
        let short = export(
            API_VERSION_V1ALPHA1,
            json!({"latestResourceSchemas": ["v1.foo"]}),
        );
        let err = export_to_v1alpha2(short).expect_err("too few segments");
        assert!(matches!(&err, ConversionError::InvalidSchema(s) if s == "v1.foo"));
        assert_eq!(
            err.to_string(),
            r#"invalid schema "v1.foo": must have at least 3 dot-separated segments"#
        );

        let mut bad_schemas = export(API_VERSION_V1ALPHA1, json!({}));
        bad_schemas["metadata"]["annotations"] = json!({RESOURCE_SCHEMAS_ANNOTATION: "not json"});
        let err = export_to_v1alpha2(bad_schemas).expect_err("annotation does not decode");
        assert!(matches!(
            err,
            ConversionError::Annotation(RESOURCE_SCHEMAS_ANNOTATION, _)
        ));

        let mut bad_claims = export(API_VERSION_V1ALPHA2, json!({}));
        bad_claims["metadata"]["annotations"] =
            json!({V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION: r#"[{"resource":1}]"#});
        let err = export_to_v1alpha1(bad_claims).expect_err("annotation does not decode");
        assert!(matches!(
            err,
            ConversionError::Annotation(V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION, _)
        ));

        let mut not_text = export(API_VERSION_V1ALPHA1, json!({}));
        not_text["metadata"]["annotations"] = json!({PERMISSION_CLAIMS_ANNOTATION: 1});
        let err = export_to_v1alpha2(not_text).expect_err("annotation is not a string");
        assert!(matches!(err, ConversionError::AnnotationNotString(_)));

        let malformed = export(API_VERSION_V1ALPHA1, json!({"permissionClaims": "nope"}));
        let err = export_to_v1alpha2(malformed).expect_err("spec does not decode");
        assert!(matches!(err, ConversionError::Malformed("spec", _)));

        let err = export_to_v1alpha1(json!("x")).expect_err("not an object");
        assert!(matches!(err, ConversionError::NotAnObject("object")));
    }

    #[test]
    fn export_registry_conversion() {
        let v1 = export(
            API_VERSION_V1ALPHA1,
            json!({"permissionClaims": [{"resource": "configmaps", "all": true}]}),
        );
        let stored = ExportV1alpha1.to_storage(v1.clone());
        assert_eq!(stored, export_to_v1alpha2(v1.clone()).expect("converts"));
        assert_eq!(ExportV1alpha1.to_api(stored), v1);

        // What does not convert only changes apiVersion.
        let bad = export(
            API_VERSION_V1ALPHA1,
            json!({"latestResourceSchemas": ["nodots"]}),
        );
        let mut expected = bad.clone();
        expected["apiVersion"] = json!(API_VERSION_V1ALPHA2);
        assert_eq!(ExportV1alpha1.to_storage(bad), expected);
    }

    // APIBinding.

    fn status_v1() -> Value {
        json!({
            "apiExportClusterName": "abc", "phase": "Bound",
            "boundResources": [{
                "group": "example.org", "resource": "widgets",
                "schema": {"name": "v1.widgets.example.org", "UID": "u", "identityHash": "h"},
                "storageVersions": ["v1"],
            }],
            "conditions": [{"type": "Ready", "status": "True",
                            "lastTransitionTime": "2025-01-01T00:00:00Z"}],
            "appliedPermissionClaims": [
                {"resource": "configmaps", "all": true},
                {"resource": "secrets",
                 "resourceSelector": [{"name": "s", "namespace": "default"}]},
            ],
            "exportPermissionClaims": [
                {"resource": "configmaps", "all": true},
                {"resource": "secrets",
                 "resourceSelector": [{"name": "s", "namespace": "default"}]},
            ],
        })
    }

    fn status_v2() -> Value {
        json!({
            "phase": "Bound",
            "exportPermissionClaims": [
                {"resource": "configmaps", "verbs": ["get", "list"]},
                {"resource": "secrets", "verbs": ["*"]},
            ],
            "appliedPermissionClaims": [
                {"resource": "configmaps", "verbs": ["get"],
                 "selector": {"matchLabels": {"env": "prod"}}},
                {"resource": "secrets", "verbs": ["*"], "selector": {"matchAll": true}},
            ],
        })
    }

    #[test]
    fn bindings_survive_v1alpha1_to_v1alpha2_and_back() {
        let reference = json!({"export": {"path": "foo", "name": "bar"}});
        let mut with_status = binding(
            API_VERSION_V1ALPHA1,
            json!({
                "reference": reference,
                "permissionClaims": [
                    {"resource": "configmaps", "all": true, "state": "Accepted"},
                    {"group": "example.org", "resource": "widgets", "identityHash": "h",
                     "resourceSelector": [{"name": "w"}], "state": "Rejected"},
                ],
            }),
        );
        with_status["status"] = status_v1();
        // Go writes `reference` even when empty.
        let cases = [
            binding(API_VERSION_V1ALPHA1, json!({"reference": {}})),
            binding(API_VERSION_V1ALPHA1, json!({"reference": reference})),
            binding(
                API_VERSION_V1ALPHA1,
                json!({
                    "reference": reference,
                    "permissionClaims": [
                        {"resource": "configmaps", "all": true, "state": "Accepted"},
                    ],
                }),
            ),
            binding(
                API_VERSION_V1ALPHA1,
                json!({
                    "reference": reference,
                    "permissionClaims": [{
                        "resource": "configmaps",
                        "resourceSelector": [{"name": "test", "namespace": "default"}],
                        "state": "Accepted",
                    }],
                }),
            ),
            with_status,
        ];
        for case in cases {
            let v2 = binding_to_v1alpha2(case.clone()).expect("converts to v1alpha2");
            assert_eq!(v2["apiVersion"], API_VERSION_V1ALPHA2);
            let back = binding_to_v1alpha1(v2).expect("converts back");
            assert_eq!(back, case);
        }
    }

    #[test]
    fn bindings_survive_v1alpha2_to_v1alpha1_and_back() {
        let reference = json!({"export": {"path": "foo", "name": "bar"}});
        let claim = |selector: Value| {
            json!({
                "reference": reference,
                "permissionClaims": [{
                    "resource": "configmaps", "verbs": ["get"], "selector": selector,
                    "state": "Accepted",
                }],
            })
        };
        let mut with_status = binding(
            API_VERSION_V1ALPHA2,
            json!({
                "reference": reference,
                "permissionClaims": [{
                    "group": "example.org", "resource": "widgets", "verbs": ["*"],
                    "identityHash": "h", "selector": {"matchAll": true}, "state": "Accepted",
                }],
            }),
        );
        with_status["status"] = status_v2();
        let cases = [
            binding(API_VERSION_V1ALPHA2, json!({"reference": {}})),
            binding(API_VERSION_V1ALPHA2, json!({"reference": reference})),
            binding(API_VERSION_V1ALPHA2, claim(json!({"matchAll": true}))),
            binding(
                API_VERSION_V1ALPHA2,
                claim(json!({"matchLabels": {"test": "label"}})),
            ),
            binding(
                API_VERSION_V1ALPHA2,
                claim(json!({"matchExpressions": [
                    {"key": "test", "operator": "In", "values": ["expression"]},
                ]})),
            ),
            with_status,
        ];
        // The way back keeps the v1alpha1 claims, as kcp does.
        let kept = [
            V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION,
            STATUS_PERMISSION_CLAIMS_V1ALPHA1_ANNOTATION,
        ];
        for case in cases {
            let v1 = binding_to_v1alpha1(case.clone()).expect("converts to v1alpha1");
            assert_eq!(v1["apiVersion"], API_VERSION_V1ALPHA1);
            let back = binding_to_v1alpha2(v1).expect("converts back");
            assert_eq!(without_annotations(back, &kept), case);
        }
    }

    #[test]
    fn v1alpha1_binding_keeps_what_it_cannot_hold_in_annotations() {
        let mut v2 = binding(
            API_VERSION_V1ALPHA2,
            json!({
                "reference": {"export": {"name": "widgets"}},
                "permissionClaims": [
                    {"resource": "configmaps", "verbs": ["*"], "selector": {"matchAll": true},
                     "state": "Accepted"},
                    {"group": "example.org", "resource": "widgets", "verbs": ["get"],
                     "identityHash": "h", "selector": {"matchLabels": {"env": "prod"}},
                     "state": "Rejected"},
                ],
            }),
        );
        v2["status"] = status_v2();
        let v1 = binding_to_v1alpha1(v2).expect("converts");
        assert_eq!(
            v1["spec"],
            json!({
                "reference": {"export": {"name": "widgets"}},
                "permissionClaims": [
                    {"resource": "configmaps", "all": true, "state": "Accepted"},
                    {"group": "example.org", "resource": "widgets", "identityHash": "h",
                     "state": "Rejected"},
                ],
            })
        );
        assert_eq!(
            v1["status"],
            json!({
                "phase": "Bound",
                "appliedPermissionClaims": [
                    {"resource": "configmaps"},
                    {"resource": "secrets", "all": true},
                ],
                "exportPermissionClaims": [{"resource": "configmaps"}, {"resource": "secrets"}],
            })
        );
        assert_eq!(
            annotation(&v1, ACCEPTABLE_PERMISSION_CLAIMS_ANNOTATION),
            r#"[{"group":"example.org","resource":"widgets","verbs":["get"],"identityHash":"h","selector":{"matchLabels":{"env":"prod"}},"state":"Rejected"}]"#
        );
        assert_eq!(
            annotation(&v1, STATUS_PERMISSION_CLAIMS_ANNOTATION),
            r#"[{"resource":"configmaps","verbs":["get","list"]}]"#
        );
        assert_eq!(
            annotation(&v1, STATUS_APPLIED_CLAIMS_ANNOTATION),
            r#"[{"resource":"configmaps","verbs":["get"],"selector":{"matchLabels":{"env":"prod"}}}]"#
        );
    }

    #[test]
    fn v1alpha2_binding_of_a_v1alpha1_one() {
        let mut v1 = binding(
            API_VERSION_V1ALPHA1,
            json!({
                "reference": {"export": {"name": "widgets"}},
                "permissionClaims": [
                    {"resource": "configmaps",
                     "resourceSelector": [{"name": "test", "namespace": "default"}],
                     "state": "Accepted"},
                    {"resource": "secrets", "all": true, "state": "Accepted"},
                ],
            }),
        );
        v1["status"] = status_v1();
        let v2 = binding_to_v1alpha2(v1).expect("converts");
        // Claims without a selector become matchAll, as v1alpha1 claims behaved.
        assert_eq!(
            v2["spec"]["permissionClaims"],
            json!([
                {"resource": "configmaps", "verbs": ["*"], "selector": {"matchAll": true},
                 "state": "Accepted"},
                {"resource": "secrets", "verbs": ["*"], "selector": {"matchAll": true},
                 "state": "Accepted"},
            ])
        );
        assert_eq!(
            v2["status"]["appliedPermissionClaims"],
            json!([
                {"resource": "configmaps", "verbs": ["*"], "selector": {"matchAll": true}},
                {"resource": "secrets", "verbs": ["*"], "selector": {"matchAll": true}},
            ])
        );
        assert_eq!(
            v2["status"]["exportPermissionClaims"],
            json!([
                {"resource": "configmaps", "verbs": ["*"]},
                {"resource": "secrets", "verbs": ["*"]},
            ])
        );
        assert_eq!(
            v2["status"]["boundResources"],
            status_v1()["boundResources"]
        );
        assert_eq!(
            annotation(&v2, V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION),
            r#"[{"resource":"configmaps","resourceSelector":[{"name":"test","namespace":"default"}],"state":"Accepted"}]"#
        );
        assert_eq!(
            annotation(&v2, STATUS_PERMISSION_CLAIMS_V1ALPHA1_ANNOTATION),
            r#"[{"resource":"configmaps","all":true},{"resource":"secrets","resourceSelector":[{"name":"s","namespace":"default"}]}]"#
        );
        assert_eq!(
            annotation(&v2, STATUS_APPLIED_CLAIMS_V1ALPHA1_ANNOTATION),
            r#"[{"resource":"secrets","resourceSelector":[{"name":"s","namespace":"default"}]}]"#
        );
    }

    #[test]
    fn binding_conversion_errors() {
        let mut bad = binding(API_VERSION_V1ALPHA1, json!({"reference": {}}));
        bad["metadata"]["annotations"] = json!({ACCEPTABLE_PERMISSION_CLAIMS_ANNOTATION: "["});
        let err = binding_to_v1alpha2(bad).expect_err("annotation does not decode");
        assert!(matches!(
            err,
            ConversionError::Annotation(ACCEPTABLE_PERMISSION_CLAIMS_ANNOTATION, _)
        ));

        let mut bad = binding(API_VERSION_V1ALPHA2, json!({"reference": {}}));
        bad["metadata"]["annotations"] =
            json!({STATUS_APPLIED_CLAIMS_V1ALPHA1_ANNOTATION: r#"{"not":"a list"}"#});
        let err = binding_to_v1alpha1(bad).expect_err("annotation does not decode");
        assert!(matches!(
            err,
            ConversionError::Annotation(STATUS_APPLIED_CLAIMS_V1ALPHA1_ANNOTATION, _)
        ));

        let mut malformed = binding(API_VERSION_V1ALPHA2, json!({"reference": {}}));
        malformed["status"] = json!({"appliedPermissionClaims": [{"selector": "all"}]});
        let err = binding_to_v1alpha1(malformed).expect_err("status does not decode");
        assert!(matches!(err, ConversionError::Malformed("status", _)));

        let mut metadata = binding(API_VERSION_V1ALPHA2, json!({}));
        metadata["metadata"]["annotations"] = json!(["x"]);
        let err = binding_to_v1alpha1(metadata).expect_err("annotations not an object");
        assert!(matches!(
            err,
            ConversionError::NotAnObject("metadata.annotations")
        ));
    }

    #[test]
    fn binding_registry_conversion() {
        let v2 = binding(
            API_VERSION_V1ALPHA2,
            json!({
                "reference": {"export": {"name": "widgets"}},
                "permissionClaims": [{"resource": "configmaps", "verbs": ["get"],
                                      "selector": {"matchAll": true}, "state": "Accepted"}],
            }),
        );
        let served = BindingV1alpha1.to_api(v2.clone());
        assert_eq!(served, binding_to_v1alpha1(v2.clone()).expect("converts"));
        assert_eq!(BindingV1alpha1.to_storage(served), v2);

        let mut bad = binding(API_VERSION_V1ALPHA2, json!({"reference": {}}));
        bad["metadata"]["annotations"] = json!({V1ALPHA1_PERMISSION_CLAIMS_ANNOTATION: "nope"});
        let mut expected = bad.clone();
        expected["apiVersion"] = json!(API_VERSION_V1ALPHA1);
        assert_eq!(BindingV1alpha1.to_api(bad), expected);
    }
}
