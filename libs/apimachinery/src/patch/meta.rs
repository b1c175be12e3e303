//! Patch metadata for strategic merge patch: per field, the `patchStrategy` and
//! `patchMergeKey` that Kubernetes reads from Go struct tags. The table for the built-in kinds
//! kcp-rs serves is transcribed from the upstream tags (k8s.io/api, k8s.io/apimachinery).

/// How a field is patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PatchStrategy {
    /// No tag: maps merge recursively, lists are replaced.
    #[default]
    Default,
    /// `patchStrategy:"merge"`: lists merge (by merge key for lists of maps, as a set otherwise).
    Merge,
    /// `patchStrategy:"replace"`: the patch value replaces the field.
    Replace,
}

/// The patch metadata of one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FieldPatchMeta {
    pub strategy: PatchStrategy,
    /// `retainKeys` in the tag; it only matters to clients computing patches, the server obeys
    /// the `$retainKeys` directive wherever it appears.
    pub retain_keys: bool,
    /// `patchMergeKey`, for merged lists of maps.
    pub merge_key: Option<&'static str>,
}

impl FieldPatchMeta {
    /// A list of maps merged by `key`.
    pub const fn merge_by(key: &'static str) -> Self {
        Self {
            strategy: PatchStrategy::Merge,
            retain_keys: false,
            merge_key: Some(key),
        }
    }

    /// A list of scalars merged as a set.
    pub const fn merge_set() -> Self {
        Self {
            strategy: PatchStrategy::Merge,
            retain_keys: false,
            merge_key: None,
        }
    }

    pub const fn replace() -> Self {
        Self {
            strategy: PatchStrategy::Replace,
            retain_keys: false,
            merge_key: None,
        }
    }
}

/// One row of a table: a dotted path of field names from the object root (list items are not
/// named: `webhooks.matchConditions` is the field inside each `webhooks[]` item).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchMetaEntry {
    pub path: &'static str,
    pub meta: FieldPatchMeta,
}

const fn entry(path: &'static str, meta: FieldPatchMeta) -> PatchMetaEntry {
    PatchMetaEntry { path, meta }
}

/// Patch metadata of one kind. Fields not listed get [`FieldPatchMeta::default`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchMeta {
    entries: Vec<PatchMetaEntry>,
}

impl PatchMeta {
    pub fn new(entries: impl IntoIterator<Item = PatchMetaEntry>) -> Self {
        Self {
            entries: entries.into_iter().collect(),
        }
    }

    /// No metadata at all: plain recursive map merge, lists replaced.
    pub fn empty() -> Self {
        Self::default()
    }

    pub fn entries(&self) -> &[PatchMetaEntry] {
        &self.entries
    }

    /// Metadata of the field at `path` (field names from the root, list positions skipped).
    pub fn lookup<S: AsRef<str>>(&self, path: &[S]) -> FieldPatchMeta {
        self.entries
            .iter()
            .find(|e| e.path.split('.').eq(path.iter().map(AsRef::as_ref)))
            .map(|e| e.meta)
            .unwrap_or_default()
    }
}

/// metav1.ObjectMeta, shared by every kind.
const OBJECT_META: &[PatchMetaEntry] = &[
    entry("metadata.ownerReferences", FieldPatchMeta::merge_by("uid")),
    entry("metadata.finalizers", FieldPatchMeta::merge_set()),
    // No tag upstream, so replaced like any list; listed to document the intent.
    entry("metadata.managedFields", FieldPatchMeta::replace()),
];

/// core/v1 Namespace. `spec.finalizers` has no patch strategy upstream, so it is replaced.
const NAMESPACE: &[PatchMetaEntry] = &[
    entry("spec.finalizers", FieldPatchMeta::replace()),
    entry("status.conditions", FieldPatchMeta::merge_by("type")),
];

/// core/v1 LimitRange: `spec.limits` is atomic.
const LIMIT_RANGE: &[PatchMetaEntry] = &[entry("spec.limits", FieldPatchMeta::replace())];

/// core/v1 ResourceQuota: `spec.scopes` and the scope selector's expressions are atomic.
const RESOURCE_QUOTA: &[PatchMetaEntry] = &[
    entry("spec.scopes", FieldPatchMeta::replace()),
    entry(
        "spec.scopeSelector.matchExpressions",
        FieldPatchMeta::replace(),
    ),
];

/// core/v1 ServiceAccount. Unlike PodSpec's, ServiceAccount's `imagePullSecrets` carries no
/// patch strategy upstream, so it is replaced.
const SERVICE_ACCOUNT: &[PatchMetaEntry] = &[
    entry("secrets", FieldPatchMeta::merge_by("name")),
    entry("imagePullSecrets", FieldPatchMeta::replace()),
];

const ROLE: &[PatchMetaEntry] = &[entry("rules", FieldPatchMeta::replace())];

const CLUSTER_ROLE: &[PatchMetaEntry] = &[
    entry("rules", FieldPatchMeta::replace()),
    entry(
        "aggregationRule.clusterRoleSelectors",
        FieldPatchMeta::replace(),
    ),
];

const ROLE_BINDING: &[PatchMetaEntry] = &[entry("subjects", FieldPatchMeta::replace())];

/// certificates.k8s.io/v1 CSR: `status.conditions` is a list-map for server-side apply only;
/// it has no patch strategy, so strategic merge patch replaces it.
const CERTIFICATE_SIGNING_REQUEST: &[PatchMetaEntry] = &[
    entry("spec.usages", FieldPatchMeta::replace()),
    entry("status.conditions", FieldPatchMeta::replace()),
];

const WEBHOOK_CONFIGURATION: &[PatchMetaEntry] = &[
    entry("webhooks", FieldPatchMeta::merge_by("name")),
    entry("webhooks.matchConditions", FieldPatchMeta::merge_by("name")),
];

/// Kind-specific table (without ObjectMeta) of a built-in kind, `None` if not built in.
fn kind_table(group: &str, kind: &str) -> Option<&'static [PatchMetaEntry]> {
    Some(match (group, kind) {
        ("", "Namespace") => NAMESPACE,
        ("", "ConfigMap" | "Secret" | "Event") => &[],
        ("", "LimitRange") => LIMIT_RANGE,
        ("", "ResourceQuota") => RESOURCE_QUOTA,
        ("", "ServiceAccount") => SERVICE_ACCOUNT,
        ("rbac.authorization.k8s.io", "Role") => ROLE,
        ("rbac.authorization.k8s.io", "ClusterRole") => CLUSTER_ROLE,
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => ROLE_BINDING,
        ("coordination.k8s.io", "Lease") => &[],
        ("certificates.k8s.io", "CertificateSigningRequest") => CERTIFICATE_SIGNING_REQUEST,
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
        ) => WEBHOOK_CONFIGURATION,
        ("events.k8s.io", "Event") => &[],
        _ => return None,
    })
}

/// Whether strategic merge patch knows this kind (others should get 415, as CRDs do).
pub fn is_builtin_kind(group: &str, kind: &str) -> bool {
    kind_table(group, kind).is_some()
}

/// Patch metadata of a built-in kind: ObjectMeta's fields plus the kind's own. Unknown kinds
/// get an empty table, i.e. merge-patch-like behaviour with lists replaced.
pub fn builtin_patch_meta(group: &str, kind: &str) -> PatchMeta {
    match kind_table(group, kind) {
        Some(table) => PatchMeta::new(OBJECT_META.iter().chain(table).copied()),
        None => PatchMeta::empty(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        let ns = builtin_patch_meta("", "Namespace");
        assert_eq!(
            ns.lookup(&["metadata", "finalizers"]),
            FieldPatchMeta::merge_set()
        );
        assert_eq!(
            ns.lookup(&["metadata", "ownerReferences"]).merge_key,
            Some("uid")
        );
        assert_eq!(
            ns.lookup(&["status", "conditions"]),
            FieldPatchMeta::merge_by("type")
        );
        assert_eq!(
            ns.lookup(&["spec", "finalizers"]).strategy,
            PatchStrategy::Replace
        );
        assert_eq!(ns.lookup(&["spec"]), FieldPatchMeta::default());
        assert_eq!(ns.lookup::<&str>(&[]), FieldPatchMeta::default());

        let sa = builtin_patch_meta("", "ServiceAccount");
        assert_eq!(sa.lookup(&["secrets"]), FieldPatchMeta::merge_by("name"));
        let hooks = builtin_patch_meta(
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
        );
        assert_eq!(
            hooks.lookup(&["webhooks", "matchConditions"]).merge_key,
            Some("name")
        );
        assert_eq!(
            builtin_patch_meta("rbac.authorization.k8s.io", "ClusterRole")
                .lookup(&["rules"])
                .strategy,
            PatchStrategy::Replace
        );
    }

    #[test]
    fn builtin_kinds() {
        for (g, k) in [
            ("", "ConfigMap"),
            ("", "Secret"),
            ("", "Event"),
            ("events.k8s.io", "Event"),
            ("coordination.k8s.io", "Lease"),
            ("certificates.k8s.io", "CertificateSigningRequest"),
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration",
            ),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ] {
            assert!(is_builtin_kind(g, k), "{g}/{k}");
            assert_eq!(
                builtin_patch_meta(g, k).lookup(&["metadata", "finalizers"]),
                FieldPatchMeta::merge_set()
            );
        }
        assert!(!is_builtin_kind("example.com", "Widget"));
        assert_eq!(
            builtin_patch_meta("example.com", "Widget"),
            PatchMeta::empty()
        );
    }
}
