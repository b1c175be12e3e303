//! Home workspaces, as kcp serves them: `GET /clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/~`
//! answers the caller's own workspace. The first such request (from a user allowed to `create`
//! `workspaces/~` in `root`) creates the home LogicalCluster — named from a hash of the user name,
//! of type `root:home`, path `user:<name>` — and the `workspace-admin` binding making the user
//! cluster-admin there; until it is Ready the answer is 429 with `Retry-After: 1`, which client-go
//! and the `kubectl ws` plugin retry. A Ready home is answered as a Workspace object.

use std::sync::Arc;

use async_trait::async_trait;
use http::{Response, StatusCode, header};
use kcp_api_types::tenancy::ROOT as ROOT_CLUSTER;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::hooks::RequestHook;
use kcp_auth::{Attributes, UserInfo};
use kcp_http::request_info::{ClusterTarget, RequestInfo, Target};
use kcp_http::{Body, response};
use serde_json::{Value, json};

use crate::paths::PathIndex;
use crate::workspace_types::{
    TypeRef, Types, new_logical_cluster, owner_info, workspace_admin_binding,
};

/// Whether the request is `GET workspaces/~` in `root`.
fn is_home_request(info: &RequestInfo) -> bool {
    matches!(&info.cluster, ClusterTarget::Name(c) if c == ROOT_CLUSTER)
        && matches!(&info.target, Target::Resource(r)
            if r.verb == "get" && r.group == "tenancy.kcp.io" && r.resource == "workspaces"
                && r.name.as_deref() == Some("~") && r.subresource.is_none())
}

/// 429 as Go's `http.Error` writes it, which kcp uses.
fn creating() -> Response<Body> {
    let mut resp = response::text(
        StatusCode::TOO_MANY_REQUESTS,
        "Creating the home workspace\n",
    );
    let headers = resp.headers_mut();
    headers.insert(header::RETRY_AFTER, http::HeaderValue::from_static("1"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        http::HeaderValue::from_static("nosniff"),
    );
    resp
}

/// Serves `GET workspaces/~` in `root`, before authorization (the caller's own home is theirs).
pub struct HomeWorkspaces {
    paths: Arc<PathIndex>,
}

impl HomeWorkspaces {
    pub fn new(paths: Arc<PathIndex>) -> HomeWorkspaces {
        HomeWorkspaces { paths }
    }
}

#[async_trait]
impl RequestHook for HomeWorkspaces {
    fn wants(&self, info: &RequestInfo) -> bool {
        is_home_request(info)
    }

    async fn answer(
        &self,
        server: &ApiServer,
        info: &RequestInfo,
        user: &UserInfo,
    ) -> Option<Result<Response<Body>, ApiError>> {
        if !is_home_request(info) {
            return None;
        }
        Some(self.serve_home(server, user).await)
    }
}

impl HomeWorkspaces {
    async fn serve_home(
        &self,
        server: &ApiServer,
        user: &UserInfo,
    ) -> Result<Response<Body>, ApiError> {
        let cluster = kcp_api_types::tenancy::home_cluster_name(&user.name);
        let Some(existing) = server.logical_cluster(&cluster).await? else {
            self.create_home(server, user, &cluster).await?;
            return Ok(creating());
        };
        let lc = existing.value().map_err(ApiError::internal)?;
        if lc.pointer("/status/phase").and_then(Value::as_str) != Some("Ready") {
            return Ok(creating());
        }
        let mut workspace = json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {
                "name": "cluster",
                "creationTimestamp": lc.pointer("/metadata/creationTimestamp").cloned().unwrap_or(Value::Null),
            },
            "spec": {
                "cluster": cluster,
                "URL": lc.pointer("/status/URL").cloned().unwrap_or(Value::Null),
            },
            "status": {"phase": "Ready"},
        });
        // The LC's own conditions and initializers, when it has any (kcp leaves empty ones out).
        for field in ["conditions", "initializers"] {
            let value = lc.pointer(&format!("/status/{field}"));
            if let Some(value) = value.filter(|v| v.as_array().is_some_and(|a| !a.is_empty())) {
                workspace["status"][field] = value.clone();
            }
        }
        Ok(response::json_value(StatusCode::OK, &workspace))
    }

    /// The home LogicalCluster and its admin binding, if the user may have a home.
    async fn create_home(
        &self,
        server: &ApiServer,
        user: &UserInfo,
        cluster: &LogicalClusterName,
    ) -> Result<(), ApiError> {
        let attrs = Attributes {
            user: Some(user),
            cluster: ROOT_CLUSTER,
            verb: "create",
            resource_request: true,
            api_group: "tenancy.kcp.io",
            api_version: "v1alpha1",
            resource: "workspaces",
            subresource: "",
            namespace: "",
            name: "~",
            path: "",
            deep_review: false,
        };
        // kcp gives one reason for any refusal here.
        let reason = kcp_auth::authz::kcp::ACCESS_NOT_PERMITTED;
        server.check_saying(user, &attrs, Some(reason))?;
        let home = TypeRef {
            path: ROOT_CLUSTER.to_string(),
            name: "home".to_string(),
        };
        let types = Types {
            cache: server.registry().cache(),
            paths: &self.paths,
        };
        let chain = types.chain(&home).map_err(ApiError::internal)?;
        let lc = new_logical_cluster(
            &format!("user:{}", user.name),
            &home,
            &chain,
            &owner_info(user),
        );
        let objects = [
            (("core.kcp.io", "logicalclusters"), lc),
            (
                ("rbac.authorization.k8s.io", "clusterrolebindings"),
                workspace_admin_binding(&user.name),
            ),
        ];
        for ((group, plural), object) in objects {
            let def = (server.builtin(group, plural))
                .ok_or_else(|| ApiError::internal(format!("{plural} kind missing")))?;
            server.create_missing(&def, cluster, object).await?;
        }
        Ok(())
    }
}
