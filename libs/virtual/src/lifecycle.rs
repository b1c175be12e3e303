//! kcp's `initializingworkspaces` and `terminatingworkspaces` virtual workspaces, through which
//! an outside controller runs an initializer or terminator a WorkspaceType names:
//!
//! ```text
//! /services/initializingworkspaces/<initializer>/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters
//! /services/initializingworkspaces/<initializer>/clusters/<lc>/apis/core.kcp.io/v1alpha1/logicalclusters/cluster[/status]
//! /services/initializingworkspaces/<initializer>/clusters/<lc>/<anything else>
//! ```
//!
//! - Across clusters: list and watch of the LogicalClusters waiting on it (initializing ones
//!   whose `status.initializers` hold it; for a terminator, deleting ones whose
//!   `status.terminators` do), selected by the labels kcp keeps for each pending name, so one
//!   that stops waiting is DELETED for the watcher.
//! - In one of them: `get` of its LogicalCluster, and `get`, `update` and `patch` of its status,
//!   which may only remove this initializer (terminator) from the list.
//! - Anything else in one of them is served as a request of the cluster's owner (the user who
//!   created the workspace, `spec.createdBy`, without privileged groups and scoped to the
//!   cluster), while the cluster waits on this name.
//!
//! Who may: the caller must hold `initialize` (`terminate`) on the WorkspaceType the name comes
//! from (`<type's logical cluster>:<type name>`), in the type's workspace.
//!
//! Inside a waiting cluster the caller works as its owner, unless the WorkspaceType declares
//! `initializerPermissions` (`terminatorPermissions`): then as itself, with kcp's group
//! `system:kcp:initializer:<name>` (`terminator`), allowed by those rules alone and refused (403)
//! what they do not cover, as kcp's content proxy evaluates them.

use std::sync::Arc;

use async_trait::async_trait;
use kcp_api_types::ResourceDef;
use kcp_api_types::builtin::{INITIALIZER_LABEL_PREFIX, TERMINATOR_LABEL_PREFIX, lifecycle_label};
use kcp_api_types::tenancy::PHASE_LABEL;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::{ApiError, Cause};
use kcp_apiserver::ApiServer;
use kcp_apiserver::discovery::ApiSet;
use kcp_apiserver::hooks::{Acting, Routed, UpdateCheck, VirtualRequest, VirtualWorkspace};
use kcp_apiserver::registry::{keyspace, str_at as text};
use kcp_auth::authz::rbac::rule::PolicyRule;
use kcp_auth::{Attributes, Decision, UserInfo};
use kcp_controllers::builtin;
use kcp_http::request_info::{ClusterTarget, ServiceFamily, Target};
use serde_json::{Value, json};

/// Which of the two a workspace is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lifecycle {
    Initializing,
    Terminating,
}

impl Lifecycle {
    pub fn family(self) -> &'static str {
        match self {
            Lifecycle::Initializing => "initializingworkspaces",
            Lifecycle::Terminating => "terminatingworkspaces",
        }
    }

    /// The verb on the WorkspaceType that grants the use.
    fn verb(self) -> &'static str {
        match self {
            Lifecycle::Initializing => "initialize",
            Lifecycle::Terminating => "terminate",
        }
    }

    /// What a pending name is called, and the status list it is pending in.
    fn role(self) -> &'static str {
        match self {
            Lifecycle::Initializing => "initializer",
            Lifecycle::Terminating => "terminator",
        }
    }

    fn status_field(self) -> &'static str {
        match self {
            Lifecycle::Initializing => "initializers",
            Lifecycle::Terminating => "terminators",
        }
    }

    /// The WorkspaceType's field with the rules for this role.
    fn permissions_field(self) -> &'static str {
        match self {
            Lifecycle::Initializing => "/spec/initializerPermissions",
            Lifecycle::Terminating => "/spec/terminatorPermissions",
        }
    }

    /// The labels of a LogicalCluster waiting on `name`.
    fn waiting_labels(self, name: &str) -> Vec<(String, String)> {
        match self {
            Lifecycle::Initializing => vec![
                (PHASE_LABEL.to_string(), "Initializing".to_string()),
                lifecycle_label(INITIALIZER_LABEL_PREFIX, name),
            ],
            // Deleting while terminators are pending (kcp selects by deletionTimestamp).
            Lifecycle::Terminating => vec![
                (PHASE_LABEL.to_string(), "Terminating".to_string()),
                lifecycle_label(TERMINATOR_LABEL_PREFIX, name),
            ],
        }
    }
}

pub struct LifecycleWorkspace {
    lifecycle: Lifecycle,
    logical_clusters: Arc<ResourceDef>,
    types: Arc<ResourceDef>,
    apis: Arc<ApiSet>,
}

impl LifecycleWorkspace {
    /// `None` when kcp's kinds are missing from the catalogue.
    pub fn new(lifecycle: Lifecycle) -> Option<LifecycleWorkspace> {
        let logical_clusters = builtin("core.kcp.io", "logicalclusters")?;
        let types = builtin("tenancy.kcp.io", "workspacetypes")?;
        let apis = Arc::new(ApiSet::new(vec![logical_clusters.clone()]));
        Some(LifecycleWorkspace {
            lifecycle,
            logical_clusters,
            types,
            apis,
        })
    }

    /// How the caller may work inside a cluster as `name` (`<type's cluster>:<type name>`): by
    /// the rules its WorkspaceType gives the initializer (terminator), or as the owner when the
    /// type gives none (kcp's two modes). A type that is gone, or whose rules do not read, lets
    /// nobody in (kcp fails closed), except for kcp's own `system:` names, which are the
    /// owner's.
    fn permissions(
        &self,
        server: &ApiServer,
        name: &str,
    ) -> Result<Option<Vec<PolicyRule>>, String> {
        if name.starts_with("system:") {
            return Ok(None);
        }
        let gone = || format!("the WorkspaceType of {name:?} is not there");
        let (cluster, type_name) = name.rsplit_once(':').ok_or_else(gone)?;
        let cluster = LogicalClusterName::parse(cluster).map_err(|_| gone())?;
        let key = keyspace(&self.types).object(&cluster, None, type_name);
        let wt = (server.registry().cache().get(&key))
            .and_then(|o| o.value().ok())
            .ok_or_else(gone)?;
        let Some(rules) = wt.pointer(self.lifecycle.permissions_field()) else {
            return Ok(None);
        };
        let rules = (rules.as_array().into_iter().flatten())
            .map(PolicyRule::from_json)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("the WorkspaceType's permissions do not read: {e}"))?;
        // kcp treats an empty list as none.
        Ok((!rules.is_empty()).then_some(rules))
    }

    /// The caller's right to act as `name`: the verb on the WorkspaceType it comes from (a
    /// review: kcp-vw has its shard decide it).
    async fn authorize(
        &self,
        server: &ApiServer,
        request: &VirtualRequest<'_>,
        name: &str,
    ) -> Result<(), ApiError> {
        let attrs = request.attributes();
        let refused = |reason: &str| server.refusal(request.user, &attrs, reason);
        // `<cluster>:<type>`, the cluster a logical cluster's name (it goes into a review's path).
        let Some((cluster, type_name)) = name
            .rsplit_once(':')
            .filter(|(cluster, _)| LogicalClusterName::parse(cluster).is_ok())
        else {
            return Err(refused(&format!(
                "unable to determine {}",
                self.lifecycle.role()
            )));
        };
        let review = Attributes {
            user: Some(request.user),
            cluster,
            verb: self.lifecycle.verb(),
            resource_request: true,
            api_group: "tenancy.kcp.io",
            api_version: "v1alpha1",
            resource: "workspacetypes",
            name: type_name,
            ..Attributes::default()
        };
        match server.review(&review).await? {
            Decision::Allow => Ok(()),
            Decision::Deny(said) => Err(refused(&said)),
            Decision::NoOpinion => Err(refused("")),
        }
    }

    /// The cluster's LogicalCluster, when it waits on `name`.
    fn waiting(
        &self,
        server: &ApiServer,
        cluster: &LogicalClusterName,
        name: &str,
    ) -> Option<Value> {
        let key = keyspace(&self.logical_clusters).object(cluster, None, "cluster");
        let lc = server.registry().cache().get(&key)?;
        let labels = self.lifecycle.waiting_labels(name);
        (labels.iter())
            .all(|(k, v)| lc.labels.get(k) == Some(v.as_str()))
            .then(|| lc.value().ok())
            .flatten()
    }
}

/// The user who created a LogicalCluster's workspace: `spec.createdBy`, which admission records
/// and nobody may change (kcp reads it too; the owner annotation is cut to a name once Ready).
/// The server drops privileged groups from it and scopes it to the cluster before serving.
fn owner(lc: &Value) -> Option<UserInfo> {
    let info = lc.pointer("/spec/createdBy")?;
    let strings = |v: Option<&Value>| -> Vec<String> {
        (v.and_then(Value::as_array).into_iter().flatten())
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let extra = (info.get("extra").and_then(Value::as_object).into_iter())
        .flatten()
        .map(|(k, v)| (k.clone(), strings(Some(v))))
        .collect();
    let name = text(info, "/username").to_string();
    (!name.is_empty()).then(|| UserInfo {
        name,
        uid: text(info, "/uid").to_string(),
        groups: strings(info.get("groups")),
        extra,
    })
}

/// An update through the workspace may only take its own name out of the status list, of a
/// cluster waiting on it.
struct RemovesOnly {
    lifecycle: Lifecycle,
    name: String,
    /// The labels of a cluster waiting on the name.
    waiting: Vec<(String, String)>,
}

impl UpdateCheck for RemovesOnly {
    fn check(
        &self,
        _def: &ResourceDef,
        object: &str,
        old: &Value,
        new: &Value,
    ) -> Result<(), ApiError> {
        if !kcp_apiserver::registry::required_labels::carried_by(&self.waiting, old) {
            return Err(ApiError::not_found(
                "core.kcp.io",
                "logicalclusters",
                object,
            ));
        }
        let field = self.lifecycle.status_field();
        let list = |o: &Value| -> Vec<Value> {
            (o.pointer(&format!("/status/{field}"))
                .and_then(Value::as_array))
            .cloned()
            .unwrap_or_default()
        };
        // The status as it must be: the old one without this name, nothing else changed (the
        // status subresource writes nothing but the status).
        let mut wanted = old.get("status").cloned().unwrap_or_else(|| json!({}));
        let before = list(old);
        let kept: Vec<Value> = (before.iter())
            .filter(|n| n.as_str() != Some(&self.name))
            .cloned()
            .collect();
        let removed_once = kept.len() + 1 == before.len();
        wanted[field] = Value::Array(kept);
        if removed_once && new.get("status") == Some(&wanted) {
            return Ok(());
        }
        let cause = Cause::invalid(
            &format!("status.{field}"),
            &Value::Array(list(new)),
            &format!(
                "only removing the {:?} {} is supported",
                self.name,
                self.lifecycle.role()
            ),
        );
        Err(ApiError::invalid(
            "core.kcp.io",
            "LogicalCluster",
            object,
            vec![cause],
        ))
    }
}

#[async_trait]
impl VirtualWorkspace for LifecycleWorkspace {
    fn family(&self) -> ServiceFamily {
        ServiceFamily {
            name: self.lifecycle.family(),
            params: 1,
        }
    }

    async fn route(
        &self,
        server: &ApiServer,
        request: &VirtualRequest<'_>,
    ) -> Result<Routed, ApiError> {
        let [name] = request.params() else {
            return Err(ApiError::path_not_found());
        };
        if name.is_empty() {
            return Err(ApiError::path_not_found());
        }
        self.authorize(server, request, name).await?;
        let info = request.info;
        let logical_clusters = match &info.target {
            Target::Resource(r) => r.group == "core.kcp.io" && r.resource == "logicalclusters",
            _ => false,
        };
        let cluster = match &info.cluster {
            ClusterTarget::Wildcard => None,
            ClusterTarget::Name(cluster) => Some(cluster),
            _ => return Err(ApiError::path_not_found()),
        };
        let read_only = || {
            ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            )
        };
        match (cluster, &info.target) {
            (Some(cluster), _) if !logical_clusters => {
                // The cluster's content, as its owner, while it waits on this name.
                let refused = || {
                    ApiError::forbidden(
                        "core.kcp.io",
                        "logicalclusters",
                        cluster.as_str(),
                        &format!(
                            "{} {name:?} cannot access this workspace",
                            self.lifecycle.role()
                        ),
                    )
                };
                let lc = self.waiting(server, cluster, name).ok_or_else(refused)?;
                let role = self.lifecycle.role();
                let permissions = (self.permissions(server, name))
                    .map_err(|why| server.refusal(request.user, &request.attributes(), &why))?;
                let acting = match permissions {
                    Some(rules) => {
                        let mut user = request.user.clone();
                        user.groups.push(format!("system:kcp:{role}:{name}"));
                        Acting::Granted {
                            user,
                            rules: Arc::new(rules),
                            grantee: format!("{role} {name:?}"),
                        }
                    }
                    None => Acting::As(owner(&lc).ok_or_else(|| {
                        ApiError::internal(format!(
                            "LogicalCluster {cluster}|cluster had no user recorded"
                        ))
                    })?),
                };
                Ok(Routed {
                    inside: Some(acting),
                    ..Routed::view(info.clone(), self.apis.clone())
                })
            }
            (_, Target::Resource(r)) => {
                let allowed = match (cluster, r.subresource.as_deref()) {
                    (None, None) => matches!(r.verb.as_str(), "list" | "watch"),
                    (Some(_), None) => r.verb == "get",
                    (Some(_), Some("status")) => {
                        matches!(r.verb.as_str(), "get" | "update" | "patch")
                    }
                    _ => false,
                };
                if !allowed {
                    return Err(read_only());
                }
                let waiting = self.lifecycle.waiting_labels(name);
                // Reads see the waiting clusters only. A status write takes this name out, and
                // with it the labels, so they are not required of what it writes: the check
                // asks them of the cluster as it was.
                let reads = matches!(r.verb.as_str(), "get" | "list" | "watch");
                Ok(Routed {
                    required_labels: if reads { waiting.clone() } else { Vec::new() },
                    update_check: Some(Arc::new(RemovesOnly {
                        lifecycle: self.lifecycle,
                        name: name.clone(),
                        waiting,
                    })),
                    ..Routed::view(info.clone(), self.apis.clone())
                })
            }
            // Discovery and the like.
            _ => Ok(Routed::view(info.clone(), self.apis.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_initializer_removes_only_itself() {
        let def = builtin("core.kcp.io", "logicalclusters").expect("logicalclusters");
        let check = RemovesOnly {
            lifecycle: Lifecycle::Initializing,
            name: "root:mine".to_string(),
            waiting: vec![("w".to_string(), "yes".to_string())],
        };
        let lc = |list: Value| json!({"metadata": {"labels": {"w": "yes"}}, "status": {"initializers": list}});
        let old = lc(json!(["root:mine", "root:other"]));
        assert!(
            check
                .check(&def, "cluster", &old, &lc(json!(["root:other"])))
                .is_ok()
        );
        // Another status field changed with it is refused too.
        let mut sneaky = lc(json!(["root:other"]));
        sneaky["status"]["phase"] = json!("Ready");
        assert!(check.check(&def, "cluster", &old, &sneaky).is_err());
        for wrong in [
            json!(["root:mine"]),
            json!([]),
            json!(["root:x"]),
            old["status"]["initializers"].clone(),
        ] {
            let err = check
                .check(&def, "cluster", &old, &lc(wrong))
                .expect_err("refused");
            assert_eq!(err.code, 422);
            assert!(
                err.message
                    .contains("only removing the \"root:mine\" initializer is supported"),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn owners_come_from_the_recorded_user() {
        let lc = json!({"spec": {"createdBy":
            {"username": "alice", "uid": "u1", "groups": ["g", "system:authenticated"], "extra": {"k": ["v"]}}}});
        let user = owner(&lc).expect("owner");
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["g", "system:authenticated"]);
        assert_eq!(user.extra.get("k"), Some(&vec!["v".to_string()]));
        assert!(owner(&json!({"metadata": {}})).is_none());
    }
}
