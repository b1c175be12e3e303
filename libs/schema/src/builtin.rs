//! Schemas of the built-in kinds, generated once from k8s-openapi's `JsonSchema` impls.
//!
//! k8s-openapi is the single source: its generator output (OpenAPI 3 flavour, refs as
//! `#/components/schemas/<name>`) is both what we serve in OpenAPI documents and what we
//! compile for validation. Only kcp's own kinds are written by hand ([`crate::kcp`]).

use std::sync::{Arc, LazyLock};

use k8s_openapi::api::{
    admissionregistration::v1 as admissionregistration, authentication::v1 as authentication,
    authorization::v1 as authorization, autoscaling::v1 as autoscaling,
    certificates::v1 as certificates, coordination::v1 as coordination, core::v1 as core,
    events::v1 as events, rbac::v1 as rbac,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value};

use crate::kcp;
use crate::structural::{CompileOptions, Schema, SchemaNode, SchemaSet};

mod patch_extensions;

/// Component names the OpenAPI documents and validators refer to directly.
pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
pub const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
pub const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
/// What a `scale` subresource reads and writes.
pub const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";
/// apiextensions' `JSON` holds any JSON value, although k8s-openapi types it `object`.
const APIEXTENSIONS_JSON: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON";

/// A built-in kind and the component that describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinKind {
    /// API group; empty for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    /// Component name, e.g. `io.k8s.api.core.v1.ConfigMap`.
    pub schema_name: String,
}

struct Registry {
    kinds: Vec<BuiltinKind>,
    components: Map<String, Value>,
    set: SchemaSet,
    /// Parallel to `kinds`; a scan over a score of entries beats hashing three strings.
    schemas: Vec<Arc<Schema>>,
}

static REGISTRY: LazyLock<Registry> = LazyLock::new(build);

/// The compiled schema of a built-in kind (`group` is empty for core).
pub fn builtin_schema(group: &str, version: &str, kind: &str) -> Option<Arc<Schema>> {
    let registry = &*REGISTRY;
    registry
        .kinds
        .iter()
        .position(|k| k.kind == kind && k.version == version && k.group == group)
        .and_then(|index| registry.schemas.get(index))
        .cloned()
}

/// Every built-in kind this crate knows.
pub fn builtin_kinds() -> &'static [BuiltinKind] {
    &REGISTRY.kinds
}

/// All component schemas (OpenAPI v3 JSON) by name, as documents serve them.
pub fn component_schemas() -> &'static Map<String, Value> {
    &REGISTRY.components
}

/// One component schema (OpenAPI v3 JSON) by name.
pub fn component_schema(name: &str) -> Option<&'static Value> {
    REGISTRY.components.get(name)
}

/// The compiled form of any component, e.g. [`OBJECT_META`].
pub fn named_schema(name: &str) -> Option<Schema> {
    REGISTRY.set.get(name)
}

/// The compiled ObjectMeta, which every kind's (and every custom resource's) metadata follows.
pub fn object_meta() -> Schema {
    REGISTRY
        .set
        .get(OBJECT_META)
        .expect("ObjectMeta is generated with every built-in kind")
}

static OBJECT_META_SCHEMA: LazyLock<Schema> = LazyLock::new(object_meta);

/// ObjectMeta as a node that outlives any walk (validators splice it in for custom resources).
/// k8s-openapi holds a kind's `metadata` as a plain field, so schemars lists it as required; the
/// published OpenAPI (which `kubectl explain` shows) requires it of core Events only. (It also
/// requires an events.k8s.io Event's `eventTime`, which k8s-openapi keeps optional; the same
/// schema validates writes, where Kubernetes asks for it on create only, so it stays optional.)
fn published_required(component: &mut Value, schema_name: &str) {
    let Some(object) = component.as_object_mut() else {
        return;
    };
    let mut required: Vec<Value> = object
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if schema_name != "io.k8s.api.core.v1.Event" {
        required.retain(|r| r != "metadata");
    }
    if required.is_empty() {
        object.remove("required");
    } else {
        object.insert("required".into(), Value::Array(required));
    }
}

pub(crate) fn object_meta_node() -> SchemaNode<'static> {
    OBJECT_META_SCHEMA.root()
}

struct Collector {
    generator: SchemaGenerator,
    kinds: Vec<BuiltinKind>,
}

impl Collector {
    fn kind<T: JsonSchema>(
        &mut self,
        group: &'static str,
        version: &'static str,
        kind: &'static str,
    ) {
        // Registers T (and all it refers to) as definitions; the returned `$ref` is not needed.
        let _reference = self.generator.subschema_for::<T>();
        self.kinds.push(BuiltinKind {
            group,
            version,
            kind,
            schema_name: T::schema_name().into_owned(),
        });
    }

    fn helper<T: JsonSchema>(&mut self) {
        let _reference = self.generator.subschema_for::<T>();
    }
}

fn build() -> Registry {
    let generator = SchemaSettings::openapi3()
        .with(|settings| settings.meta_schema = None)
        .into_generator();
    let mut c = Collector {
        generator,
        kinds: Vec::new(),
    };
    c.kind::<core::Namespace>("", "v1", "Namespace");
    c.kind::<core::ConfigMap>("", "v1", "ConfigMap");
    c.kind::<core::Secret>("", "v1", "Secret");
    c.kind::<core::Event>("", "v1", "Event");
    c.kind::<core::LimitRange>("", "v1", "LimitRange");
    c.kind::<core::ResourceQuota>("", "v1", "ResourceQuota");
    c.kind::<core::ServiceAccount>("", "v1", "ServiceAccount");
    c.kind::<events::Event>("events.k8s.io", "v1", "Event");
    c.kind::<coordination::Lease>("coordination.k8s.io", "v1", "Lease");
    c.kind::<rbac::Role>("rbac.authorization.k8s.io", "v1", "Role");
    c.kind::<rbac::RoleBinding>("rbac.authorization.k8s.io", "v1", "RoleBinding");
    c.kind::<rbac::ClusterRole>("rbac.authorization.k8s.io", "v1", "ClusterRole");
    c.kind::<rbac::ClusterRoleBinding>("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding");
    c.kind::<certificates::CertificateSigningRequest>(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
    );
    c.kind::<admissionregistration::MutatingWebhookConfiguration>(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
    );
    c.kind::<admissionregistration::ValidatingWebhookConfiguration>(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
    );
    c.kind::<admissionregistration::ValidatingAdmissionPolicy>(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
    );
    c.kind::<admissionregistration::ValidatingAdmissionPolicyBinding>(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
    );
    c.kind::<authorization::SelfSubjectAccessReview>(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
    );
    c.kind::<authorization::SubjectAccessReview>(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
    );
    c.kind::<authorization::LocalSubjectAccessReview>(
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
    );
    c.kind::<authorization::SelfSubjectRulesReview>(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
    );
    c.kind::<authentication::SelfSubjectReview>("authentication.k8s.io", "v1", "SelfSubjectReview");
    c.kind::<authentication::TokenReview>("authentication.k8s.io", "v1", "TokenReview");
    // The body of `serviceaccounts/token`, a subresource rather than a resource of its own.
    c.helper::<authentication::TokenRequest>();
    c.kind::<apiextensions::CustomResourceDefinition>(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
    );
    // Referenced by the operations of every OpenAPI document.
    c.helper::<meta::ObjectMeta>();
    c.helper::<meta::ListMeta>();
    c.helper::<meta::Status>();
    c.helper::<meta::DeleteOptions>();
    c.helper::<meta::Patch>();
    c.helper::<autoscaling::Scale>();
    // Referenced by kcp's APIExport (a virtual resource's storage); no built-in kind refers to it.
    c.helper::<core::TypedLocalObjectReference>();

    let Collector {
        mut generator,
        mut kinds,
    } = c;
    let mut components = generator.take_definitions(true);
    if let Some(Value::Object(json)) = components.get_mut(APIEXTENSIONS_JSON) {
        // Upstream publishes it untyped: defaults, examples and enum values may be any JSON.
        json.remove("type");
    }
    for k in &kinds {
        if let Some(component) = components.get_mut(&k.schema_name) {
            published_required(component, &k.schema_name);
        }
    }
    for k in &kcp::KINDS {
        components.insert(k.schema_name.to_owned(), (k.schema)());
        kinds.push(BuiltinKind {
            group: k.group,
            version: k.version,
            kind: k.kind,
            schema_name: k.schema_name.to_owned(),
        });
    }
    patch_extensions::annotate(&mut components, &kinds);
    components.sort_keys();

    let set = SchemaSet::compile(
        &components,
        &CompileOptions {
            opaque_empty_objects: true,
        },
    )
    .expect("schemas generated from k8s-openapi and our own kcp kinds compile");
    let schemas = kinds
        .iter()
        .map(|kind| {
            let schema = set
                .get(&kind.schema_name)
                .expect("every registered kind has its component");
            Arc::new(schema)
        })
        .collect();
    Registry {
        kinds,
        components,
        set,
        schemas,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structural::SchemaType;

    const EXPECTED: [(&str, &str, &str); 38] = [
        ("", "v1", "Namespace"),
        ("", "v1", "ConfigMap"),
        ("", "v1", "Secret"),
        ("", "v1", "Event"),
        ("", "v1", "LimitRange"),
        ("", "v1", "ResourceQuota"),
        ("", "v1", "ServiceAccount"),
        ("events.k8s.io", "v1", "Event"),
        ("coordination.k8s.io", "v1", "Lease"),
        ("rbac.authorization.k8s.io", "v1", "Role"),
        ("rbac.authorization.k8s.io", "v1", "RoleBinding"),
        ("rbac.authorization.k8s.io", "v1", "ClusterRole"),
        ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
        ("certificates.k8s.io", "v1", "CertificateSigningRequest"),
        (
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
        ),
        (
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
        ),
        ("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
        ("authorization.k8s.io", "v1", "SubjectAccessReview"),
        ("authorization.k8s.io", "v1", "LocalSubjectAccessReview"),
        ("authorization.k8s.io", "v1", "SelfSubjectRulesReview"),
        ("authentication.k8s.io", "v1", "SelfSubjectReview"),
        ("authentication.k8s.io", "v1", "TokenReview"),
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        ("core.kcp.io", "v1alpha1", "LogicalCluster"),
        ("core.kcp.io", "v1alpha1", "Shard"),
        ("tenancy.kcp.io", "v1alpha1", "Workspace"),
        ("tenancy.kcp.io", "v1alpha1", "WorkspaceType"),
        ("apis.kcp.io", "v1alpha1", "APIResourceSchema"),
        ("apis.kcp.io", "v1alpha1", "APIExport"),
        ("apis.kcp.io", "v1alpha2", "APIExport"),
        ("apis.kcp.io", "v1alpha1", "APIBinding"),
        ("apis.kcp.io", "v1alpha2", "APIBinding"),
        ("apis.kcp.io", "v1alpha1", "APIExportEndpointSlice"),
        ("apis.kcp.io", "v1alpha1", "APIConversion"),
        ("topology.kcp.io", "v1alpha1", "Partition"),
        ("topology.kcp.io", "v1alpha1", "PartitionSet"),
    ];

    #[test]
    fn every_listed_kind_has_a_schema_with_metadata() {
        for (group, version, kind) in EXPECTED {
            let schema = builtin_schema(group, version, kind)
                .unwrap_or_else(|| panic!("no schema for {group}/{version} {kind}"));
            let root = schema.root();
            assert_eq!(root.schema_type(), Some(SchemaType::Object), "{kind}");
            let metadata = root
                .property("metadata")
                .unwrap_or_else(|| panic!("{kind} has no metadata"));
            assert_eq!(metadata.name(), Some(OBJECT_META), "{kind}");
            assert!(root.property("apiVersion").is_some(), "{kind}");
        }
        assert_eq!(builtin_kinds().len(), EXPECTED.len());
        assert!(builtin_schema("", "v1", "Pod").is_none());
        assert!(builtin_schema("apps", "v1", "ConfigMap").is_none());
    }

    #[test]
    fn schemas_are_compiled_once_and_shared() {
        let a = builtin_schema("", "v1", "ConfigMap").expect("ConfigMap");
        let b = builtin_schema("", "v1", "ConfigMap").expect("ConfigMap");
        assert!(Arc::ptr_eq(&a, &b));
        let meta_a = a.root().property("metadata").expect("metadata").resolved();
        let rb = builtin_schema("rbac.authorization.k8s.io", "v1", "RoleBinding").expect("RB");
        let meta_b = rb.root().property("metadata").expect("metadata").resolved();
        assert_eq!(meta_a.identity(), meta_b.identity());
    }

    #[test]
    fn components_are_openapi3_and_resolvable() {
        let components = component_schemas();
        let config_map = component_schema("io.k8s.api.core.v1.ConfigMap").expect("ConfigMap");
        assert!(
            config_map["description"]
                .as_str()
                .is_some_and(|d| d.contains("ConfigMap"))
        );
        // The generator moves a described $ref into allOf, as kube-apiserver's v3 does.
        let metadata = &config_map["properties"]["metadata"];
        assert_eq!(
            metadata["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        for name in [OBJECT_META, LIST_META, STATUS, DELETE_OPTIONS, PATCH, SCALE] {
            assert!(components.contains_key(name), "{name}");
        }
        assert!(
            component_schema(APIEXTENSIONS_JSON).is_some_and(|json| json.get("type").is_none())
        );
    }

    #[test]
    fn recursive_crd_schema_compiles() {
        let crd =
            builtin_schema("apiextensions.k8s.io", "v1", "CustomResourceDefinition").expect("CRD");
        let props = crd
            .root()
            .property("spec")
            .and_then(|spec| spec.property("versions"))
            .and_then(|versions| versions.items())
            .and_then(|version| version.property("schema"))
            .and_then(|schema| schema.property("openAPIV3Schema"))
            .expect("openAPIV3Schema");
        // JSONSchemaProps refers to itself through properties, items and not.
        let nested = props
            .property("properties")
            .and_then(|properties| match properties.additional_properties() {
                crate::structural::AdditionalProperties::Schema(inner) => Some(inner),
                _ => None,
            })
            .and_then(|inner| inner.property("not"))
            .expect("nested JSONSchemaProps");
        assert_eq!(nested.name(), props.name());
    }

    #[test]
    fn logical_cluster_schema_is_structured() {
        let lc = builtin_schema("core.kcp.io", "v1alpha1", "LogicalCluster").expect("LC");
        let status = lc.root().property("status").expect("status");
        let phase = status.property("phase").expect("phase");
        assert_eq!(phase.enum_values().len(), 7);
        let owner = lc
            .root()
            .property("spec")
            .and_then(|spec| spec.property("owner"))
            .expect("owner");
        for field in [
            "apiVersion",
            "resource",
            "name",
            "namespace",
            "cluster",
            "uid",
        ] {
            assert!(owner.property(field).is_some(), "{field}");
        }
        let condition = status
            .property("conditions")
            .and_then(|c| c.items())
            .expect("condition");
        for field in [
            "type",
            "status",
            "severity",
            "reason",
            "message",
            "lastTransitionTime",
        ] {
            assert!(condition.property(field).is_some(), "{field}");
        }
    }

    #[test]
    fn tenancy_schemas_are_structured() {
        let ws = builtin_schema("tenancy.kcp.io", "v1alpha1", "Workspace").expect("Workspace");
        let spec = ws.root().property("spec").expect("spec");
        for field in ["type", "location", "cluster", "URL"] {
            assert!(spec.property(field).is_some(), "{field}");
        }
        let selector = spec
            .property("location")
            .and_then(|l| l.property("selector"))
            .expect("selector");
        assert!(
            selector.property("matchLabels").is_some(),
            "LabelSelector resolved"
        );
        let phase = ws
            .root()
            .property("status")
            .and_then(|s| s.property("phase"))
            .expect("phase");
        assert!(phase.enum_values().iter().any(|p| p == "Ready"));

        let wt =
            builtin_schema("tenancy.kcp.io", "v1alpha1", "WorkspaceType").expect("WorkspaceType");
        let spec = wt.root().property("spec").expect("spec");
        for field in [
            "initializer",
            "terminator",
            "extend",
            "defaultChildWorkspaceType",
            "limitAllowedChildren",
            "limitAllowedParents",
            "additionalWorkspaceLabels",
            "initializerPermissions",
            "terminatorPermissions",
        ] {
            assert!(spec.property(field).is_some(), "{field}");
        }

        let shard = builtin_schema("core.kcp.io", "v1alpha1", "Shard").expect("Shard");
        let spec = shard.root().property("spec").expect("spec");
        for field in ["baseURL", "externalURL", "virtualWorkspaceURL"] {
            assert!(spec.property(field).is_some(), "{field}");
        }
    }
}
