//! APIBinding admission (kcp's `apis.kcp.io/APIBinding`). On create, and on an update that
//! re-points the binding (its reference or its export label changes): the export's logical
//! cluster is found from the reference (no path: the binding's own; else the workspace path), the
//! binding is labelled `internal.apis.kcp.io/export` with the hash of `<cluster>:<export>`, and
//! the requester must hold `bind` on the export there, asked as a deep SubjectAccessReview. A
//! missing export and a denied one get the same refusal, so a refusal does not tell which. Every
//! write must also name an export, have well-formed claim selectors, and never take the phase back
//! to empty.

use std::sync::Arc;

use async_trait::async_trait;
use kcp_api_types::apis::{EXPORT_LABEL, GROUP, conversion, export_label_value};
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::admission::{Admission, Attributes, Operation};
use kcp_apiserver::hooks::ClusterResolver;
use kcp_apiserver::registry::keyspace;
use kcp_apiserver::watch_cache::WatchCache;
use kcp_auth::authz::{Attributes as AuthzAttributes, Authorizer, AuthorizerChain, Decision};
use serde_json::{Value, json};

use super::{forbidden, is};

pub struct BindingAdmission {
    cache: Arc<WatchCache>,
    resolver: Option<Arc<dyn ClusterResolver>>,
    authorizer: AuthorizerChain,
    /// APIExports' keyspace (v1alpha2, their stored form).
    exports: kcp_store::keys::ResourceKeyspace,
}

impl BindingAdmission {
    pub fn new(
        cache: Arc<WatchCache>,
        resolver: Option<Arc<dyn ClusterResolver>>,
        authorizer: AuthorizerChain,
    ) -> Option<BindingAdmission> {
        let exports = kcp_controllers::builtin(GROUP, "apiexports")?;
        Some(BindingAdmission {
            cache,
            resolver,
            authorizer,
            exports: keyspace(&exports),
        })
    }

    /// The logical cluster of the export `reference` names, seen from `cluster`; `None` when no
    /// such export is known here.
    fn export_cluster(&self, cluster: &str, reference: &Reference) -> Option<LogicalClusterName> {
        let cluster = LogicalClusterName::parse(cluster).ok()?;
        let export_cluster =
            crate::export_cluster(self.resolver.as_deref(), &cluster, &reference.path)?;
        let key = self.exports.object(&export_cluster, None, &reference.name);
        self.cache.get(&key).map(|_| export_cluster)
    }

    fn may_bind(&self, attrs: &Attributes<'_>, cluster: &str, export: &str) -> bool {
        let review =
            AuthzAttributes::deep(attrs.user, cluster, "bind", GROUP, "apiexports", export);
        self.authorizer.authorize(&review) == Decision::Allow
    }
}

/// `spec.reference.export` of a binding.
#[derive(PartialEq, Eq)]
struct Reference {
    path: String,
    name: String,
}

impl Reference {
    fn of(binding: &Value) -> Option<Reference> {
        let export = binding.pointer("/spec/reference/export")?;
        let text = |key: &str| {
            (export.get(key).and_then(Value::as_str))
                .unwrap_or_default()
                .to_string()
        };
        Some(Reference {
            path: text("path"),
            name: text("name"),
        })
    }

    /// `path:name` as kcp prints it (just the name without a path).
    fn shown(&self) -> String {
        match self.path.as_str() {
            "" => self.name.clone(),
            path => format!("{path}:{}", self.name),
        }
    }
}

fn export_label(binding: &Value) -> Option<&str> {
    binding
        .pointer("/metadata/labels")
        .and_then(|l| l.get(EXPORT_LABEL))
        .and_then(Value::as_str)
}

/// The binding in its v1alpha2 form.
fn v1alpha2(attrs: &Attributes<'_>, binding: &Value) -> Result<Value, ApiError> {
    match attrs.def.version.as_str() {
        "v1alpha1" => conversion::binding_to_v1alpha2(binding.clone())
            .map_err(|err| forbidden(attrs, &[err.to_string()])),
        _ => Ok(binding.clone()),
    }
}

/// Whether this write is one that binds: a create, or an update re-pointing the binding.
fn binds(attrs: &Attributes<'_>, new: &Value, old: Option<&Value>) -> bool {
    match (attrs.operation, old) {
        (Operation::Create, _) => true,
        (Operation::Update, Some(old)) => {
            Reference::of(new) != Reference::of(old) || export_label(new) != export_label(old)
        }
        _ => false,
    }
}

/// kcp's field errors of a binding (`old`: the binding it updates).
pub fn refusals(binding: &Value, old: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    match binding.pointer("/spec/reference/export") {
        None | Some(Value::Null) => out.push("spec.reference.export: Required value".to_string()),
        Some(export)
            if export
                .get("name")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty) =>
        {
            out.push("spec.reference.export.name: Required value".to_string());
        }
        Some(_) => {}
    }
    let claims = (binding
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array))
    .cloned()
    .unwrap_or_default();
    for (i, claim) in claims.iter().enumerate() {
        let at = format!("spec.permissionClaims[{i}].selector");
        let selector = claim.get("selector").cloned().unwrap_or_else(|| json!({}));
        let set = |key: &str| match selector.get(key) {
            Some(Value::Object(m)) => !m.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            _ => false,
        };
        let shown = serde_json::to_string(&selector).unwrap_or_default();
        if selector.get("matchAll").and_then(Value::as_bool) == Some(true) {
            if set("matchLabels") {
                out.push(format!("{at}.matchLabels: Invalid value: {shown}: matchLabels cannot be used with matchAll"));
            }
            if set("matchExpressions") {
                out.push(format!("{at}.matchExpressions: Invalid value: {shown}: matchExpressions cannot be used with matchAll"));
            }
        } else if !set("matchLabels") && !set("matchExpressions") {
            out.push(format!(
                "{at}: Required value: either one of matchAll, matchLabels, or matchExpressions must be set"
            ));
        }
    }
    let phase = |b: &Value| {
        (b.pointer("/status/phase").and_then(Value::as_str))
            .unwrap_or_default()
            .to_string()
    };
    if let Some(old) = old
        && !phase(old).is_empty()
        && phase(binding).is_empty()
    {
        out.push(format!(
            "status.phase: Forbidden: cannot transition from {:?} to \"\"",
            phase(old)
        ));
    }
    out
}

#[async_trait]
impl Admission for BindingAdmission {
    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&mut Value>,
    ) -> Result<bool, ApiError> {
        if !is(attrs, "apibindings") || attrs.operation == Operation::Delete {
            return Ok(false);
        }
        let Some(object) = object else {
            return Ok(false);
        };
        if !binds(attrs, object, attrs.old_object) {
            return Ok(false);
        }
        let Some(reference) = Reference::of(object).filter(|r| !r.name.is_empty()) else {
            return Ok(false);
        };
        let Some(export_cluster) = self.export_cluster(attrs.cluster, &reference) else {
            // Refused (in the same words as a denial) when validated.
            return Ok(false);
        };
        let value = export_label_value(&export_cluster, &reference.name);
        let meta = &mut object["metadata"];
        if !meta["labels"].is_object() {
            meta["labels"] = json!({});
        }
        meta["labels"][EXPORT_LABEL] = json!(value);
        Ok(true)
    }

    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        if !is(attrs, "apibindings") || attrs.operation == Operation::Delete {
            return Ok(());
        }
        let Some(object) = object else {
            return Ok(());
        };
        let binding = v1alpha2(attrs, object)?;
        let old = attrs.old_object.map(|o| v1alpha2(attrs, o)).transpose()?;
        let errors = refusals(&binding, old.as_ref());
        if !errors.is_empty() {
            return Err(forbidden(attrs, &errors));
        }
        if !binds(attrs, &binding, old.as_ref()) {
            return Ok(());
        }
        let Some(reference) = Reference::of(&binding) else {
            return Ok(());
        };
        let action = match attrs.operation {
            Operation::Create => "create",
            _ => "update",
        };
        let denied = || {
            ApiError::forbidden(
                &attrs.def.group,
                &attrs.def.plural,
                attrs.name,
                &format!(
                    "unable to {action} APIBinding: no permission to bind to export {}",
                    reference.shown()
                ),
            )
        };
        let export_cluster = self
            .export_cluster(attrs.cluster, &reference)
            .ok_or_else(denied)?;
        if !self.may_bind(attrs, &export_cluster, &reference.name) {
            return Err(denied());
        }
        let expected = export_label_value(&export_cluster, &reference.name);
        match export_label(&binding) {
            Some(value) if value == expected => Ok(()),
            value => Err(forbidden(
                attrs,
                &[format!(
                    "metadata.labels[{EXPORT_LABEL}]: Invalid value: {:?}: must be set to {expected:?}",
                    value.unwrap_or_default()
                )],
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_name_an_export_and_select_claims_one_way() {
        let binding = |spec: Value| json!({"spec": spec});
        assert!(
            refusals(
                &binding(json!({"reference": {"export": {"name": "e"}}})),
                None
            )
            .is_empty()
        );
        assert_eq!(
            refusals(&binding(json!({})), None),
            ["spec.reference.export: Required value"]
        );
        assert_eq!(
            refusals(
                &binding(json!({"reference": {"export": {"path": "root"}}})),
                None
            ),
            ["spec.reference.export.name: Required value"]
        );
        let claims = |selector: Value| {
            binding(json!({"reference": {"export": {"name": "e"}},
                           "permissionClaims": [{"resource": "configmaps", "selector": selector}]}))
        };
        assert!(refusals(&claims(json!({"matchAll": true})), None).is_empty());
        assert!(refusals(&claims(json!({"matchLabels": {"a": "b"}})), None).is_empty());
        let found = refusals(
            &claims(json!({"matchAll": true, "matchLabels": {"a": "b"}})),
            None,
        );
        assert!(
            found[0].ends_with("matchLabels cannot be used with matchAll"),
            "{found:?}"
        );
        assert_eq!(
            refusals(&claims(json!({})), None),
            [
                "spec.permissionClaims[0].selector: Required value: either one of matchAll, matchLabels, or matchExpressions must be set"
            ]
        );
    }

    #[test]
    fn the_phase_never_goes_back_to_empty() {
        let with_phase = |phase: &str| json!({"spec": {"reference": {"export": {"name": "e"}}}, "status": {"phase": phase}});
        assert!(refusals(&with_phase("Bound"), Some(&with_phase("Binding"))).is_empty());
        assert_eq!(
            refusals(&with_phase(""), Some(&with_phase("Bound"))),
            ["status.phase: Forbidden: cannot transition from \"Bound\" to \"\""]
        );
    }
}
