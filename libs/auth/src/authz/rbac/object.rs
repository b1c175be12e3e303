//! The four RBAC kinds read from their Kubernetes JSON into the shapes the index evaluates.

use std::collections::BTreeMap;
use std::fmt;

use kcp_apimachinery::selector::Selector;
use kcp_apimachinery::selector::label::from_label_selector;
use serde_json::Value;

use crate::authz::rbac::rule::PolicyRule;
use crate::authz::rbac::subject::Subject;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RbacKind {
    Role,
    ClusterRole,
    RoleBinding,
    ClusterRoleBinding,
}

impl RbacKind {
    /// The kind named by an object's `kind` field.
    pub fn from_kind(kind: &str) -> Option<Self> {
        Some(match kind {
            "Role" => Self::Role,
            "ClusterRole" => Self::ClusterRole,
            "RoleBinding" => Self::RoleBinding,
            "ClusterRoleBinding" => Self::ClusterRoleBinding,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Role => "Role",
            Self::ClusterRole => "ClusterRole",
            Self::RoleBinding => "RoleBinding",
            Self::ClusterRoleBinding => "ClusterRoleBinding",
        }
    }

    /// The plural resource name in `rbac.authorization.k8s.io`.
    pub fn resource(self) -> &'static str {
        match self {
            Self::Role => "roles",
            Self::ClusterRole => "clusterroles",
            Self::RoleBinding => "rolebindings",
            Self::ClusterRoleBinding => "clusterrolebindings",
        }
    }

    pub fn is_namespaced(self) -> bool {
        matches!(self, Self::Role | Self::RoleBinding)
    }
}

impl fmt::Display for RbacKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an object was not taken into the index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RbacObjectError {
    #[error("{kind} {name:?} in logical cluster {cluster:?} ignored: {message}")]
    Malformed {
        cluster: String,
        kind: RbacKind,
        name: String,
        message: String,
    },
    #[error("{0} is namespaced: a namespace is required")]
    MissingNamespace(RbacKind),
    #[error("{0:?} is not an RBAC kind")]
    UnknownKind(String),
    #[error("the object has no metadata.name")]
    MissingName,
}

/// A binding's `roleRef`. `kind` stays a string: an unknown kind is kept, and refused when the binding
/// is evaluated, as Kubernetes does.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RoleRef {
    pub kind: String,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Binding {
    pub role_ref: RoleRef,
    pub subjects: Vec<Subject>,
}

#[derive(Clone, Debug)]
pub(crate) struct ClusterRole {
    pub labels: BTreeMap<String, String>,
    pub rules: Vec<PolicyRule>,
    /// `aggregationRule.clusterRoleSelectors`; `Some` makes this an aggregated role whose own `rules`
    /// are replaced by `aggregated`, as the aggregation controller would.
    pub selectors: Option<Vec<Selector>>,
    pub aggregated: Vec<PolicyRule>,
    /// The selectors of this role and of every aggregated role it takes in, transitively: what a role
    /// of another LC must match to flow into this one (see [`crate::authz::rbac::aggregation`]).
    pub aggregated_selectors: Vec<Selector>,
}

impl ClusterRole {
    /// The rules the role grants.
    pub fn effective(&self) -> &[PolicyRule] {
        if self.selectors.is_some() {
            &self.aggregated
        } else {
            &self.rules
        }
    }

    /// Equal as written (ignoring the computed aggregation), so a resync is not a change.
    pub fn same_definition(&self, other: &ClusterRole) -> bool {
        self.labels == other.labels
            && self.rules == other.rules
            && self.selectors == other.selectors
    }
}

pub(crate) fn parse_rules(object: &Value) -> Result<Vec<PolicyRule>, String> {
    match object.get("rules") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(rules)) => rules
            .iter()
            .enumerate()
            .map(|(i, r)| PolicyRule::from_json(r).map_err(|e| format!("rules[{i}]: {e}")))
            .collect(),
        Some(_) => Err("rules must be a list".into()),
    }
}

pub(crate) fn parse_cluster_role(object: &Value) -> Result<ClusterRole, String> {
    let labels = match object.get("metadata").and_then(|m| m.get("labels")) {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(labels)) => labels
            .iter()
            .map(|(k, v)| {
                v.as_str()
                    .map(|v| (k.clone(), v.to_owned()))
                    .ok_or_else(|| format!("label {k:?} must be a string"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("metadata.labels must be an object".into()),
    };
    let selectors = match object.get("aggregationRule") {
        None | Some(Value::Null) => None,
        Some(rule) => Some(match rule.get("clusterRoleSelectors") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(selectors)) => selectors
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    from_label_selector(s)
                        .map_err(|e| format!("aggregationRule.clusterRoleSelectors[{i}]: {e}"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("aggregationRule.clusterRoleSelectors must be a list".into()),
        }),
    };
    Ok(ClusterRole {
        labels,
        rules: parse_rules(object)?,
        selectors,
        aggregated: Vec::new(),
        aggregated_selectors: Vec::new(),
    })
}

pub(crate) fn parse_binding(object: &Value) -> Result<Binding, String> {
    let role_ref = object
        .get("roleRef")
        .and_then(Value::as_object)
        .ok_or("roleRef must be an object")?;
    let field = |name: &str| {
        role_ref
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("roleRef.{name} must be a string"))
    };
    let role_ref = RoleRef {
        kind: field("kind")?,
        name: field("name")?,
    };
    let subjects = match object.get("subjects") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(subjects)) => subjects
            .iter()
            .enumerate()
            .map(|(i, s)| Subject::from_json(s).map_err(|e| format!("subjects[{i}]: {e}")))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("subjects must be a list".into()),
    };
    Ok(Binding { role_ref, subjects })
}
