//! The warnings kcp's plugin prints after switching into a workspace whose APIBindings leave permission
//! claims of their APIExports unanswered: not listed in the binding, neither accepted nor rejected, or
//! with other verbs than the export asks for.

use std::collections::BTreeSet;

use serde::Deserialize;

/// A permission claim as APIExports ask for it and APIBindings answer it (`apis.kcp.io/v1alpha2`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub resource: String,
    #[serde(default)]
    pub identity_hash: String,
    #[serde(default)]
    pub verbs: Vec<String>,
    /// `Accepted` or `Rejected` in a binding's spec.
    #[serde(default)]
    pub state: String,
}

impl Claim {
    /// Same group, resource and identity.
    fn same_resource(&self, other: &Claim) -> bool {
        self.group == other.group
            && self.resource == other.resource
            && self.identity_hash == other.identity_hash
    }
}

impl std::fmt::Display for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.group.as_str(), self.identity_hash.as_str()) {
            // Core resources have neither group nor identity.
            ("", _) => f.write_str(&self.resource),
            (g, "") => write!(f, "{}.{g}", self.resource),
            (g, id) => write!(f, "{}.{g}:{id}", self.resource),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingSpec {
    #[serde(default)]
    pub permission_claims: Vec<Claim>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingStatus {
    #[serde(default)]
    pub export_permission_claims: Vec<Claim>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct BindingMeta {
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Binding {
    #[serde(default)]
    pub metadata: BindingMeta,
    #[serde(default)]
    pub spec: BindingSpec,
    #[serde(default)]
    pub status: BindingStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct BindingList {
    #[serde(default)]
    pub items: Vec<Binding>,
}

/// kcp's warnings, in its words. As there, a claim missing from the binding also counts as unanswered
/// and as having other verbs; verbs are listed sorted (kcp's order is random).
pub fn warnings(bindings: &[Binding]) -> Vec<String> {
    let mut out = Vec::new();
    for b in bindings {
        let name = &b.metadata.name;
        for exported in &b.status.export_permission_claims {
            // The last matching entry of the spec decides, as in kcp's loop.
            let answer = b
                .spec
                .permission_claims
                .iter()
                .rev()
                .find(|c| c.same_resource(exported));
            // kcp only fills both verb sets when the binding lists the claim: a missing claim reports two
            // empty lists.
            let expected: BTreeSet<&str> = answer
                .map(|_| exported.verbs.iter().map(String::as_str).collect())
                .unwrap_or_default();
            let actual: BTreeSet<&str> = answer
                .map(|c| c.verbs.iter().map(String::as_str).collect())
                .unwrap_or_default();
            let acknowledged =
                answer.is_some_and(|c| c.state == "Accepted" || c.state == "Rejected");
            if answer.is_none() {
                out.push(format!(
                    "Warning: claim for {exported} exported but not specified on APIBinding {name}\nAdd this claim to the APIBinding's Spec."
                ));
            }
            if !acknowledged {
                out.push(format!(
                    "Warning: claim for {exported} specified on APIBinding {name} but not accepted or rejected."
                ));
            }
            if answer.is_none() || actual != expected {
                out.push(format!(
                    "Warning: allowed verbs ({}) on claim for {exported} on APIBinding {name} do not match expected verbs ({}).",
                    join(&actual),
                    join(&expected)
                ));
            }
        }
    }
    out
}

fn join(verbs: &BTreeSet<&str>) -> String {
    verbs.iter().copied().collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding(v: serde_json::Value) -> Binding {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn answered_claims_are_quiet() {
        let b = binding(serde_json::json!({
            "metadata": {"name": "cowboys"},
            "spec": {"permissionClaims": [
                {"resource": "configmaps", "verbs": ["list", "get"], "state": "Accepted"},
            ]},
            "status": {"exportPermissionClaims": [
                {"resource": "configmaps", "verbs": ["get", "list"]},
            ]},
        }));
        assert!(warnings(&[b]).is_empty());
    }

    #[test]
    fn unanswered_claims_warn() {
        let b = binding(serde_json::json!({
            "metadata": {"name": "cowboys"},
            "spec": {"permissionClaims": [
                {"group": "example.io", "resource": "widgets", "verbs": ["get"], "state": ""},
            ]},
            "status": {"exportPermissionClaims": [
                {"group": "example.io", "resource": "widgets", "verbs": ["watch", "get"]},
                {"group": "other.io", "resource": "gadgets", "identityHash": "abc", "verbs": ["get"]},
            ]},
        }));
        assert_eq!(
            warnings(&[b]),
            vec![
                "Warning: claim for widgets.example.io specified on APIBinding cowboys but not accepted or rejected.",
                "Warning: allowed verbs (get) on claim for widgets.example.io on APIBinding cowboys do not match expected verbs (get,watch).",
                "Warning: claim for gadgets.other.io:abc exported but not specified on APIBinding cowboys\nAdd this claim to the APIBinding's Spec.",
                "Warning: claim for gadgets.other.io:abc specified on APIBinding cowboys but not accepted or rejected.",
                "Warning: allowed verbs () on claim for gadgets.other.io:abc on APIBinding cowboys do not match expected verbs ().",
            ]
        );
    }
}
