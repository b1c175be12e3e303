//! The parts of `tenancy.kcp.io/v1alpha1` Workspace this plugin reads and writes.

use serde::{Deserialize, Serialize};

use crate::path::TypeRef;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Workspace {
    #[serde(default)]
    pub metadata: Metadata,
    #[serde(default)]
    pub spec: Spec,
    #[serde(default)]
    pub status: Status,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Spec {
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_ref: Option<TypeRef>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cluster: String,
    #[serde(default, rename = "URL", skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// Only its presence matters: a mounted workspace's children are not listed through kcp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Status {
    #[serde(default)]
    pub phase: String,
}

/// The phase in which a workspace can be used.
pub const PHASE_READY: &str = "Ready";

/// A list of Workspaces.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct WorkspaceList {
    #[serde(default)]
    pub items: Vec<Workspace>,
}

impl Workspace {
    /// A new Workspace object for a create request; `location_selector` is a `metav1.LabelSelector`.
    pub fn create_request(
        name: &str,
        type_ref: Option<&TypeRef>,
        location_selector: Option<&serde_json::Value>,
    ) -> serde_json::Value {
        let mut spec = serde_json::json!({});
        if let Some(t) = type_ref {
            spec["type"] = serde_json::json!(t);
        }
        if let Some(s) = location_selector {
            spec["location"] = serde_json::json!({ "selector": s });
        }
        serde_json::json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "Workspace",
            "metadata": { "name": name },
            "spec": spec,
        })
    }

    pub fn is_ready(&self) -> bool {
        self.status.phase == PHASE_READY
    }

    /// `path:name` of the type, as kcp prints it.
    pub fn type_string(&self) -> String {
        self.spec
            .type_ref
            .as_ref()
            .map(TypeRef::to_string)
            .unwrap_or_default()
    }
}
