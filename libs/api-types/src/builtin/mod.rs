//! The built-in resources every logical cluster serves, with kube-apiserver's printer columns and
//! field selectors.

mod admission_policies;
pub mod certificates;
mod columns;
pub mod crd;
mod event_rules;
mod events;
mod go_values;
mod leases;
mod limit_ranges;
mod logical_cluster;
mod rbac;
mod resource_names;
mod resource_quotas;
mod secret_types;

pub use columns::{age_column_for_crd, age_since, human_duration, name_column};
pub use logical_cluster::{
    INACTIVE_ANNOTATION, INITIALIZER_LABEL_PREFIX, LEGACY_INACTIVE_ANNOTATION,
    TERMINATOR_LABEL_PREFIX, initialized_condition, lifecycle_label, marked_inactive,
};
mod strategies;
mod webhook_configurations;
mod workspace;

use std::sync::Arc;

use crate::resource::{
    Column, DefaultStrategy, FieldSelectorDef, NameRule, ResourceDef, ResourceKind, SharedStorage,
    Strategy,
};

use certificates::CsrStrategy;
use columns::*;
use event_rules::EventStrategy;
use leases::LeaseStrategy;
use limit_ranges::LimitRangeStrategy;
use logical_cluster::LogicalClusterStrategy;
use rbac::{BindingStrategy, RoleStrategy};
use resource_quotas::ResourceQuotaStrategy;
use strategies::*;
use webhook_configurations::WebhookConfigurationStrategy;
use workspace::WorkspaceStrategy;

/// The verbs of an ordinary stored resource (custom resources have them too).
pub const STANDARD_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// kcp's APIs-as-a-service group.
const APIS: &str = crate::apis::GROUP;

/// An APIBinding's columns (both versions): Ready is its `Ready` condition.
fn binding_ready_columns() -> Vec<Column> {
    vec![
        name_column(),
        age_column(),
        path_column(
            "Ready",
            "Whether the binding's APIs are bound",
            r#".status.conditions[?(@.type=="Ready")].status"#,
        ),
    ]
}

/// A small builder so each catalogue entry reads as one line of facts.
struct Def(ResourceDef);

fn def(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    schema_name: &str,
) -> Def {
    Def(ResourceDef {
        group: group.to_string(),
        version: version.to_string(),
        kind: kind.to_string(),
        list_kind: format!("{kind}List"),
        plural: plural.to_string(),
        singular: kind.to_lowercase(),
        namespaced,
        short_names: Vec::new(),
        categories: Vec::new(),
        verbs: STANDARD_VERBS.iter().map(|v| v.to_string()).collect(),
        status_subresource: false,
        name_rule: NameRule::Dns1123Subdomain,
        columns: vec![name_column(), created_at_column()],
        field_selectors: Vec::new(),
        strategy: Arc::new(DefaultStrategy),
        schema_name: schema_name.to_string(),
        backing: ResourceKind::Stored,
        shared_storage: None,
        storage_identity: None,
        custom_schema: None,
        openapi_component: None,
        scale: None,
        deprecation_warning: None,
    })
}

impl Def {
    fn short(mut self, names: &[&str]) -> Def {
        self.0.short_names = names.iter().map(|s| s.to_string()).collect();
        self
    }
    fn categories(mut self, names: &[&str]) -> Def {
        self.0.categories = names.iter().map(|s| s.to_string()).collect();
        self
    }
    fn status(mut self) -> Def {
        self.0.status_subresource = true;
        self
    }
    fn names(mut self, rule: NameRule) -> Def {
        self.0.name_rule = rule;
        self
    }
    fn columns(mut self, columns: Vec<Column>) -> Def {
        self.0.columns = columns;
        self
    }
    fn fields(mut self, fields: Vec<FieldSelectorDef>) -> Def {
        self.0.field_selectors = fields;
        self
    }
    fn strategy(mut self, strategy: impl Strategy) -> Def {
        self.0.strategy = Arc::new(strategy);
        self
    }
    /// Validated against its own published schema (kcp's kinds).
    fn schema_checked(self) -> Def {
        self.schema_checked_with(std::convert::identity)
    }
    /// [`Def::schema_checked`], the schema's strategy wrapped in the kind's own.
    fn schema_checked_with<S: Strategy>(self, wrap: impl FnOnce(SchemaStrategy) -> S) -> Def {
        let strategy = SchemaStrategy::of(&self.0.group, &self.0.version, &self.0.kind);
        match strategy {
            Some(strategy) => self.strategy(wrap(strategy)),
            None => self,
        }
    }
    /// Served from another resource's stored objects through a conversion.
    fn stored_as(
        mut self,
        group: &str,
        plural: &str,
        conversion: impl crate::resource::Conversion,
    ) -> Def {
        self.0.shared_storage = Some(SharedStorage {
            group: group.to_string(),
            plural: plural.to_string(),
            conversion: Arc::new(conversion),
        });
        self
    }
    /// Kubernetes' namespace storage deletes no collection (a selector could take whole namespaces
    /// and everything in them at once).
    fn without_deletecollection(mut self) -> Def {
        self.0.verbs.retain(|v| v != "deletecollection");
        self
    }
    fn review(mut self) -> Def {
        self.0.backing = ResourceKind::Review;
        self.0.verbs = vec!["create".to_string()];
        self
    }
}

fn field(field: &'static str, value: fn(&serde_json::Value) -> Option<String>) -> FieldSelectorDef {
    FieldSelectorDef {
        field: field.into(),
        value: crate::resource::FieldSource::Computed(value),
    }
}

fn str_at(obj: &serde_json::Value, pointer: &str) -> Option<String> {
    Some(
        obj.pointer(pointer)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string(),
    )
}

fn event_fields() -> Vec<FieldSelectorDef> {
    vec![
        field("involvedObject.kind", |o| str_at(o, "/involvedObject/kind")),
        field("involvedObject.namespace", |o| {
            str_at(o, "/involvedObject/namespace")
        }),
        field("involvedObject.name", |o| str_at(o, "/involvedObject/name")),
        field("involvedObject.uid", |o| str_at(o, "/involvedObject/uid")),
        field("involvedObject.apiVersion", |o| {
            str_at(o, "/involvedObject/apiVersion")
        }),
        field("involvedObject.resourceVersion", |o| {
            str_at(o, "/involvedObject/resourceVersion")
        }),
        field("involvedObject.fieldPath", |o| {
            str_at(o, "/involvedObject/fieldPath")
        }),
        field("reason", |o| str_at(o, "/reason")),
        field("reportingComponent", |o| str_at(o, "/reportingComponent")),
        field("source", |o| str_at(o, "/source/component")),
        field("type", |o| str_at(o, "/type")),
    ]
}

/// Field selectors of events.k8s.io Events; they read the stored (core/v1) form.
fn regarding_fields() -> Vec<FieldSelectorDef> {
    vec![
        field("regarding.kind", |o| str_at(o, "/involvedObject/kind")),
        field("regarding.namespace", |o| {
            str_at(o, "/involvedObject/namespace")
        }),
        field("regarding.name", |o| str_at(o, "/involvedObject/name")),
        field("regarding.uid", |o| str_at(o, "/involvedObject/uid")),
        field("reason", |o| str_at(o, "/reason")),
        field("reportingController", |o| str_at(o, "/reportingComponent")),
        field("type", |o| str_at(o, "/type")),
    ]
}

/// Every built-in resource, in discovery order.
pub fn catalogue() -> Vec<ResourceDef> {
    let core = |kind: &str, plural: &str, namespaced: bool| {
        def(
            "",
            "v1",
            kind,
            plural,
            namespaced,
            &format!("io.k8s.api.core.v1.{kind}"),
        )
    };
    let rbac = |kind: &str, plural: &str, namespaced: bool| {
        def(
            "rbac.authorization.k8s.io",
            "v1",
            kind,
            plural,
            namespaced,
            &format!("io.k8s.api.rbac.v1.{kind}"),
        )
        .names(NameRule::PathSegment)
    };
    let webhooks = |kind: &str, plural: &str| {
        def(
            "admissionregistration.k8s.io",
            "v1",
            kind,
            plural,
            false,
            &format!("io.k8s.api.admissionregistration.v1.{kind}"),
        )
        .categories(&["api-extensions"])
        .columns(vec![
            name_column(),
            count_column("Webhooks", "/webhooks"),
            age_column(),
        ])
        .strategy(WebhookConfigurationStrategy {
            mutating: kind.starts_with("Mutating"),
        })
    };
    // Create-only kinds answered from the request (authorization.k8s.io, authentication.k8s.io).
    let review = |group: &str, kind: &str, plural: &str, namespaced: bool| {
        let package = group.trim_end_matches(".k8s.io");
        def(
            group,
            "v1",
            kind,
            plural,
            namespaced,
            &format!("io.k8s.api.{package}.v1.{kind}"),
        )
        .review()
        .0
    };
    vec![
        core("ConfigMap", "configmaps", true)
            .short(&["cm"])
            .columns(vec![name_column(), configmap_data_column(), age_column()])
            .strategy(ConfigMapStrategy)
            .0,
        core("Event", "events", true)
            .strategy(EventStrategy { strict: false })
            .short(&["ev"])
            .columns(event_columns())
            .fields(event_fields())
            .0,
        core("LimitRange", "limitranges", true)
            .short(&["limits"])
            .strategy(LimitRangeStrategy)
            .0,
        core("Namespace", "namespaces", false)
            .short(&["ns"])
            .status()
            .names(NameRule::Dns1123Label)
            .columns(vec![
                name_column(),
                path_column("Status", "The status of the namespace", ".status.phase"),
                age_column(),
            ])
            .fields(vec![field("status.phase", |o| str_at(o, "/status/phase"))])
            .strategy(NamespaceStrategy)
            .without_deletecollection()
            .0,
        core("ResourceQuota", "resourcequotas", true)
            .short(&["quota"])
            .status()
            .strategy(ResourceQuotaStrategy)
            .columns(vec![
                name_column(),
                age_column(),
                quota_column("Request", false),
                quota_column("Limit", true),
            ])
            .0,
        core("Secret", "secrets", true)
            .columns(vec![
                name_column(),
                path_column("Type", "The type of the secret", ".type"),
                secret_data_column(),
                age_column(),
            ])
            .fields(vec![field("type", |o| str_at(o, "/type"))])
            .strategy(SecretStrategy)
            .0,
        core("ServiceAccount", "serviceaccounts", true)
            .short(&["sa"])
            .columns(vec![
                name_column(),
                count_column("Secrets", "/secrets"),
                age_column(),
            ])
            .0,
        webhooks(
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
        )
        .0,
        webhooks(
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        )
        .0,
        def(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            false,
            "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
        )
        .status()
        .categories(&["api-extensions"])
        .columns(vec![name_column(), age_column()])
        .strategy(admission_policies::PolicyStrategy)
        .0,
        def(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            false,
            "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
        )
        .categories(&["api-extensions"])
        .columns(vec![name_column(), age_column()])
        .strategy(admission_policies::BindingStrategy)
        .0,
        def(
            "authentication.k8s.io",
            "v1",
            "SelfSubjectReview",
            "selfsubjectreviews",
            false,
            "io.k8s.api.authentication.v1.SelfSubjectReview",
        )
        .review()
        .0,
        review(
            "authentication.k8s.io",
            "TokenReview",
            "tokenreviews",
            false,
        ),
        review(
            "authorization.k8s.io",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            false,
        ),
        review(
            "authorization.k8s.io",
            "SubjectAccessReview",
            "subjectaccessreviews",
            false,
        ),
        review(
            "authorization.k8s.io",
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            true,
        ),
        review(
            "authorization.k8s.io",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            false,
        ),
        def(
            "certificates.k8s.io",
            "v1",
            "CertificateSigningRequest",
            "certificatesigningrequests",
            false,
            "io.k8s.api.certificates.v1.CertificateSigningRequest",
        )
        .short(&["csr"])
        .status()
        .strategy(CsrStrategy)
        .columns(csr_columns())
        .fields(vec![field("spec.signerName", |o| {
            str_at(o, "/spec/signerName")
        })])
        .0,
        def(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        )
        .short(&["crd", "crds"])
        .categories(&["api-extensions"])
        .status()
        .strategy(crd::CrdStrategy)
        .0,
        def(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            true,
            "io.k8s.api.coordination.v1.Lease",
        )
        .strategy(LeaseStrategy)
        .columns(vec![
            name_column(),
            path_column("Holder", "The holder of the lease", ".spec.holderIdentity"),
            age_column(),
        ])
        .0,
        def(
            "core.kcp.io",
            "v1alpha1",
            "LogicalCluster",
            "logicalclusters",
            false,
            "io.kcp.core.v1alpha1.LogicalCluster",
        )
        .status()
        .categories(&["kcp"])
        .names(NameRule::Fixed("cluster"))
        .columns(vec![
            name_column(),
            path_column(
                "Phase",
                "The current phase (e.g. Scheduling, Initializing, Ready)",
                ".status.phase",
            ),
            path_column("URL", "URL to access the logical cluster", ".status.URL"),
            age_column(),
        ])
        .strategy(LogicalClusterStrategy)
        .0,
        def(
            "core.kcp.io",
            "v1alpha1",
            "Shard",
            "shards",
            false,
            "io.kcp.core.v1alpha1.Shard",
        )
        .status()
        .schema_checked()
        .categories(&["kcp"])
        .columns(vec![
            name_column(),
            path_column(
                "Region",
                "The region of the shard",
                ".metadata.labels['region']",
            ),
            path_column(
                "URL",
                "Type URL to directly connect to the shard",
                ".spec.baseURL",
            ),
            path_column(
                "External URL",
                "The URL users are given to reach workspaces on the shard",
                ".spec.externalURL",
            ),
            age_column(),
        ])
        .0,
        def(
            "tenancy.kcp.io",
            "v1alpha1",
            "Workspace",
            "workspaces",
            false,
            "io.kcp.tenancy.v1alpha1.Workspace",
        )
        .short(&["ws"])
        .status()
        .schema_checked_with(WorkspaceStrategy)
        .categories(&["kcp"])
        .names(NameRule::Dns1123Label)
        .columns(vec![
            name_column(),
            path_column("Type", "Type of the workspace", ".spec.type.name"),
            path_column(
                "Region",
                "The region this workspace is in",
                ".metadata.labels['region']",
            ),
            path_column(
                "Phase",
                "The current phase (e.g. Scheduling, Initializing, Ready)",
                ".status.phase",
            ),
            path_column("URL", "URL to access the workspace", ".spec.URL"),
            age_column(),
        ])
        .0,
        def(
            "tenancy.kcp.io",
            "v1alpha1",
            "WorkspaceType",
            "workspacetypes",
            false,
            "io.kcp.tenancy.v1alpha1.WorkspaceType",
        )
        .status()
        .schema_checked()
        .categories(&["kcp"])
        .names(NameRule::Dns1123Label)
        .columns(vec![name_column(), age_column()])
        .0,
        // kcp's APIs as a service. A v1alpha2 kind first: discovery prefers the group's first version,
        // and kcp (serving these from CRDs) prefers the highest, v1alpha2.
        def(
            APIS,
            "v1alpha2",
            "APIExport",
            "apiexports",
            false,
            "io.kcp.apis.v1alpha2.APIExport",
        )
        .status()
        .schema_checked()
        .categories(&["kcp"])
        .columns(vec![name_column(), age_column()])
        .0,
        def(
            APIS,
            "v1alpha1",
            "APIExport",
            "apiexports",
            false,
            "io.kcp.apis.v1alpha1.APIExport",
        )
        .status()
        .schema_checked()
        .categories(&["kcp"])
        .columns(vec![
            name_column(),
            age_column(),
            path_column(
                "Ready",
                "Whether the export's virtual workspace URLs are ready",
                r#".status.conditions[?(@.type=="VirtualWorkspaceURLsReady")].status"#,
            ),
        ])
        .stored_as(APIS, "apiexports", crate::apis::conversion::ExportV1alpha1)
        .0,
        def(
            APIS,
            "v1alpha2",
            "APIBinding",
            "apibindings",
            false,
            "io.kcp.apis.v1alpha2.APIBinding",
        )
        .status()
        .schema_checked()
        .categories(&["kcp"])
        .columns(binding_ready_columns())
        .0,
        def(
            APIS,
            "v1alpha1",
            "APIBinding",
            "apibindings",
            false,
            "io.kcp.apis.v1alpha1.APIBinding",
        )
        .status()
        .schema_checked()
        .categories(&["kcp"])
        .columns(binding_ready_columns())
        .stored_as(
            APIS,
            "apibindings",
            crate::apis::conversion::BindingV1alpha1,
        )
        .0,
        def(
            APIS,
            "v1alpha1",
            "APIResourceSchema",
            "apiresourceschemas",
            false,
            "io.kcp.apis.v1alpha1.APIResourceSchema",
        )
        .schema_checked()
        .categories(&["kcp"])
        .columns(vec![name_column(), age_column()])
        .0,
        def(
            APIS,
            "v1alpha1",
            "APIExportEndpointSlice",
            "apiexportendpointslices",
            false,
            "io.kcp.apis.v1alpha1.APIExportEndpointSlice",
        )
        .status()
        .schema_checked()
        .categories(&["kcp"])
        .columns(vec![
            name_column(),
            path_column("Export", "The export the slice serves", ".spec.export.name"),
            path_column(
                "Partition",
                "The partition of shards it lists",
                ".spec.partition",
            ),
            age_column(),
        ])
        .0,
        def(
            APIS,
            "v1alpha1",
            "APIConversion",
            "apiconversions",
            false,
            "io.kcp.apis.v1alpha1.APIConversion",
        )
        .schema_checked()
        .categories(&["kcp"])
        .columns(vec![name_column(), age_column()])
        .0,
        def(
            "topology.kcp.io",
            "v1alpha1",
            "Partition",
            "partitions",
            false,
            "io.kcp.topology.v1alpha1.Partition",
        )
        .schema_checked()
        .categories(&["kcp"])
        .columns(vec![
            name_column(),
            path_column(
                "Owner",
                "The PartitionSet that made it",
                ".metadata.ownerReferences[0].name",
            ),
            age_column(),
        ])
        .0,
        def(
            "topology.kcp.io",
            "v1alpha1",
            "PartitionSet",
            "partitionsets",
            false,
            "io.kcp.topology.v1alpha1.PartitionSet",
        )
        .status()
        .schema_checked()
        .categories(&["kcp"])
        .columns(vec![
            name_column(),
            path_column("Count", "How many Partitions the set has", ".status.count"),
            age_column(),
        ])
        .0,
        def(
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            true,
            "io.k8s.api.events.v1.Event",
        )
        .strategy(EventStrategy { strict: true })
        .short(&["ev"])
        .columns(event_columns())
        .fields(regarding_fields())
        .stored_as("", "events", events::EventsConversion)
        .0,
        rbac("ClusterRole", "clusterroles", false)
            .strategy(RoleStrategy { namespaced: false })
            .0,
        rbac("ClusterRoleBinding", "clusterrolebindings", false)
            .columns(binding_columns())
            .strategy(BindingStrategy { namespaced: false })
            .0,
        rbac("Role", "roles", true)
            .strategy(RoleStrategy { namespaced: true })
            .0,
        rbac("RoleBinding", "rolebindings", true)
            .columns(binding_columns())
            .strategy(BindingStrategy { namespaced: true })
            .0,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_is_complete_and_unique() {
        let cat = catalogue();
        let mut seen = std::collections::HashSet::new();
        for d in &cat {
            assert!(
                seen.insert((d.group.clone(), d.version.clone(), d.plural.clone())),
                "duplicate {}/{}/{}",
                d.group,
                d.version,
                d.plural
            );
            assert!(!d.kind.is_empty());
            assert!(
                d.columns.iter().any(|c| c.name == "Name"),
                "{} has a Name column",
                d.kind
            );
        }
        for (g, r) in [
            ("", "configmaps"),
            ("", "secrets"),
            ("", "namespaces"),
            ("", "events"),
            ("", "limitranges"),
            ("", "resourcequotas"),
            ("", "serviceaccounts"),
            ("events.k8s.io", "events"),
            ("coordination.k8s.io", "leases"),
            ("rbac.authorization.k8s.io", "roles"),
            ("rbac.authorization.k8s.io", "rolebindings"),
            ("rbac.authorization.k8s.io", "clusterroles"),
            ("rbac.authorization.k8s.io", "clusterrolebindings"),
            ("certificates.k8s.io", "certificatesigningrequests"),
            (
                "admissionregistration.k8s.io",
                "mutatingwebhookconfigurations",
            ),
            (
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations",
            ),
            (
                "admissionregistration.k8s.io",
                "validatingadmissionpolicies",
            ),
            (
                "admissionregistration.k8s.io",
                "validatingadmissionpolicybindings",
            ),
            ("core.kcp.io", "logicalclusters"),
            ("core.kcp.io", "shards"),
            ("tenancy.kcp.io", "workspaces"),
            ("tenancy.kcp.io", "workspacetypes"),
            ("apis.kcp.io", "apiresourceschemas"),
            ("apis.kcp.io", "apiexports"),
            ("apis.kcp.io", "apibindings"),
            ("apis.kcp.io", "apiexportendpointslices"),
            ("apis.kcp.io", "apiconversions"),
            ("topology.kcp.io", "partitions"),
            ("topology.kcp.io", "partitionsets"),
            ("authorization.k8s.io", "subjectaccessreviews"),
            ("authorization.k8s.io", "localsubjectaccessreviews"),
            ("authorization.k8s.io", "selfsubjectaccessreviews"),
            ("authorization.k8s.io", "selfsubjectrulesreviews"),
            ("authentication.k8s.io", "tokenreviews"),
            ("authentication.k8s.io", "selfsubjectreviews"),
        ] {
            assert!(
                seen.iter()
                    .any(|(group, _, plural)| group == g && plural == r),
                "missing {g}/{r}"
            );
        }
    }

    /// Kinds whose strategies hold Kubernetes' rules are registered with them.
    #[test]
    fn kinds_carry_their_rules() {
        use serde_json::json;
        let cat = catalogue();
        let find = |group: &str, plural: &str| {
            cat.iter()
                .find(|d| d.is(group, plural))
                .unwrap_or_else(|| panic!("{group}/{plural}"))
        };
        let mut lr = json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}});
        find("", "limitranges").strategy.decode(&mut lr);
        assert_eq!(lr["spec"]["limits"][0]["defaultRequest"]["cpu"], "1");
        let lease = json!({"spec": {"leaseDurationSeconds": 0}});
        assert_eq!(
            find("coordination.k8s.io", "leases")
                .strategy
                .validate(&lease)
                .len(),
            1
        );
        let quota =
            json!({"spec": {"hard": {"pods": "1"}, "scopes": ["Terminating", "NotTerminating"]}});
        assert_eq!(
            find("", "resourcequotas").strategy.validate(&quota).len(),
            1
        );
        // The same old-style event passes core/v1 and fails events.k8s.io/v1 (no eventTime).
        let event = json!({"metadata": {"namespace": "default"}, "reason": "R", "type": "Normal"});
        assert!(find("", "events").strategy.validate(&event).is_empty());
        let strict = find("events.k8s.io", "events").strategy.validate(&event);
        assert!(strict.iter().any(|c| c.field == "eventTime"), "{strict:?}");
    }

    #[test]
    fn field_values() {
        let cat = catalogue();
        let secrets = cat.iter().find(|d| d.plural == "secrets").expect("secrets");
        let obj =
            serde_json::json!({"metadata": {"name": "s", "namespace": "n"}, "type": "Opaque"});
        assert_eq!(secrets.field_value(&obj, "type").as_deref(), Some("Opaque"));
        assert_eq!(
            secrets.field_value(&obj, "metadata.namespace").as_deref(),
            Some("n")
        );
        assert_eq!(secrets.field_value(&obj, "spec.nope"), None);
    }
}
