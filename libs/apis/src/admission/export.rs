//! APIExport admission (kcp's `apis.kcp.io/APIExport`), on create and update, judged on the
//! v1alpha2 form whichever version was written: a permission claim of a resource that is not
//! built in needs the identity hash of the export serving it (claims of `apis.kcp.io` excepted),
//! and each resource's schema must be named for that resource. A v1alpha1 write's annotations,
//! which hold what v1alpha1 cannot say, must decode.

use async_trait::async_trait;
use kcp_api_types::apis::conversion;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::admission::{Admission, Attributes, Operation};
use serde_json::Value;

use super::{forbidden, is};

pub struct ExportAdmission;

/// The resources kcp's APIExport virtual workspace serves of its own (its `builtin` schemas):
/// claimed without an identity.
pub const BUILT_IN: [(&str, &str); 26] = [
    ("", "namespaces"),
    ("", "configmaps"),
    ("", "events"),
    ("", "resourcequotas"),
    ("", "secrets"),
    ("", "serviceaccounts"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
    ("rbac.authorization.k8s.io", "roles"),
    ("rbac.authorization.k8s.io", "rolebindings"),
    ("certificates.k8s.io", "certificatesigningrequests"),
    ("coordination.k8s.io", "leases"),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    ),
    ("events.k8s.io", "events"),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicybindings",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("core.kcp.io", "logicalclusters"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
];

pub fn is_built_in(group: &str, resource: &str) -> bool {
    BUILT_IN.contains(&(group, resource))
}

fn text<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// What kcp refuses in a v1alpha2 export, as field errors.
pub fn refusals(export: &Value) -> Vec<String> {
    let list = |pointer: &str| {
        (export.pointer(pointer).and_then(Value::as_array))
            .cloned()
            .unwrap_or_default()
    };
    for (i, claim) in list("/spec/permissionClaims").iter().enumerate() {
        let (group, resource) = (text(claim, "group"), text(claim, "resource"));
        if text(claim, "identityHash").is_empty()
            && !is_built_in(group, resource)
            && group != kcp_api_types::apis::GROUP
        {
            return vec![format!(
                "spec.permissionClaims[{i}].identityHash: Invalid value: \"\": identityHash is required for API types that are not built-in"
            )];
        }
    }
    for (i, resource) in list("/spec/resources").iter().enumerate() {
        let group = match text(resource, "group") {
            "" => "core",
            g => g,
        };
        let suffix = format!(".{}.{group}", text(resource, "name"));
        let schema = text(resource, "schema");
        if !schema.ends_with(&suffix) {
            return vec![format!(
                "spec.resources[{i}].schema: Invalid value: {schema:?}: must end in {suffix}"
            )];
        }
    }
    Vec::new()
}

#[async_trait]
impl Admission for ExportAdmission {
    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        if !is(attrs, "apiexports") || attrs.operation == Operation::Delete {
            return Ok(());
        }
        let Some(object) = object else {
            return Ok(());
        };
        let v2 = match attrs.def.version.as_str() {
            "v1alpha1" => conversion::export_to_v1alpha2(object.clone())
                .map_err(|err| forbidden(attrs, &[err.to_string()]))?,
            _ => object.clone(),
        };
        match refusals(&v2).as_slice() {
            [] => Ok(()),
            errors => Err(forbidden(attrs, errors)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn claims_of_exported_apis_need_their_identity() {
        let export = |claims: Value| json!({"spec": {"permissionClaims": claims}});
        assert!(
            refusals(&export(
                json!([{"group": "", "resource": "configmaps", "verbs": ["*"]}])
            ))
            .is_empty()
        );
        assert!(
            refusals(&export(
                json!([{"group": "apis.kcp.io", "resource": "apibindings"}])
            ))
            .is_empty()
        );
        assert!(
            refusals(&export(
                json!([{"group": "wild.west", "resource": "cowboys", "identityHash": "abc"}])
            ))
            .is_empty()
        );
        assert_eq!(
            refusals(&export(
                json!([{"group": "wild.west", "resource": "cowboys"}])
            )),
            [
                "spec.permissionClaims[0].identityHash: Invalid value: \"\": identityHash is required for API types that are not built-in"
            ]
        );
    }

    #[test]
    fn schemas_are_named_for_their_resource() {
        let export = |name: &str, group: &str, schema: &str| json!({"spec": {"resources": [{"name": name, "group": group, "schema": schema, "storage": {"crd": {}}}]}});
        assert!(
            refusals(&export(
                "cowboys",
                "wildwest.dev",
                "today.cowboys.wildwest.dev"
            ))
            .is_empty()
        );
        assert!(refusals(&export("configmaps", "", "today.configmaps.core")).is_empty());
        assert_eq!(
            refusals(&export(
                "cowboys",
                "wildwest.dev",
                "today.sheriffs.wildwest.dev"
            )),
            [
                "spec.resources[0].schema: Invalid value: \"today.sheriffs.wildwest.dev\": must end in .cowboys.wildwest.dev"
            ]
        );
    }
}
