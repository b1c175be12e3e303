//! Who may use an export's virtual workspace, as kcp decides it, outermost first:
//!
//! 1. **Bound API** (requests into one logical cluster for a resource): the cluster must have a
//!    binding of this export, and the resource must be one it bound; or one the export claims
//!    and the binding accepted, for a verb both grant; or its APIBindings, which are read-only
//!    here (writing them would let a provider rewrite what a consumer accepted).
//! 2. **Content**: the caller must hold the request's verb on the `content` subresource the
//!    endpoint names ([`Content`]): `apiexports/content` of the export, in the export's workspace,
//!    as kcp asks; or, on an object-partitioned endpoint, `apiexportendpointslices/content` of
//!    the slice, in the slice's workspace (discovery and other non-resource requests: `get`).
//! 3. **Maximal permission policy** (a resource claimed from another export by its identity):
//!    every export of that identity with a local policy must allow the request, asked of its
//!    workspace's RBAC for the caller with kcp's `apis.kcp.io:binding:` prefix (a deep review).
//!
//! Steps 2 and 3 are reviews ([`ApiServer::review`]): kcp-vw has its shard decide them, as kcp's
//! virtual workspaces ask theirs by SubjectAccessReview. The refusals carry kcp's reasons, in the
//! words of a Kubernetes 403.

use kcp_api_types::apis::GROUP;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apimachinery::status::ApiError;
use kcp_apiserver::ApiServer;
use kcp_apiserver::registry::{keyspace, str_at as text};
use kcp_auth::{Attributes, Decision, UserInfo};
use kcp_http::request_info::Target;
use serde_json::Value;

use super::Scope;
use super::served::{Claim, Served};
use kcp_api_types::apis::claims::claim_key;

/// kcp's words when the target cluster has no binding of the export.
pub const NO_BINDING: &str = "could not find suitable APIBinding in target logical cluster";
/// kcp's words when the binding does not cover the resource.
pub const NOT_BOUND: &str = "failed to find suitable reason to allow access in APIBinding";
/// kcp's words for a write to an APIBinding through the virtual workspace.
pub const BINDINGS_READ_ONLY: &str =
    "write access to APIBinding is not allowed from virtual workspace";

/// Whose `content` subresource grants an endpoint's use.
pub struct Content<'a> {
    /// `apiexports`, or `apiexportendpointslices` for a partition.
    pub resource: &'a str,
    pub name: &'a str,
    /// The logical cluster the object is in.
    pub cluster: &'a str,
}

impl Content<'_> {
    /// How a refusal names what was not granted (kcp's words for an export).
    fn shown(&self) -> &'static str {
        match self.resource {
            "apiexports" => "API export",
            _ => "API export endpoint slice",
        }
    }
}

/// Decides a request of an export's virtual workspace; `attrs` are the request's own. Allowed
/// into one logical cluster under a permission claim, the labels its accepted selector matches
/// by, which writes must carry (kcp stamps them; `matchExpressions` are not).
#[allow(clippy::too_many_arguments)]
pub async fn authorize(
    server: &ApiServer,
    bindings: &kcp_api_types::ResourceDef,
    scope: &Scope<'_>,
    content: &Content<'_>,
    served: Option<&Served>,
    user: &UserInfo,
    target: &Target,
    attrs: &Attributes<'_>,
) -> Result<Vec<(String, String)>, ApiError> {
    let mut claim_labels = Vec::new();
    if let (Some(cluster), Target::Resource(r)) = (scope.cluster, target) {
        let Some(binding) = binding_of(server, bindings, cluster, scope) else {
            return Err(server.refusal(user, attrs, NO_BINDING));
        };
        let bound = (binding
            .pointer("/status/boundResources")
            .and_then(Value::as_array))
        .into_iter()
        .flatten()
        .any(|b| text(b, "/group") == r.group && text(b, "/resource") == r.resource);
        let claim = served.and_then(|s| s.claim(&r.group, &r.resource));
        let bindings_read = r.group == GROUP && r.resource == "apibindings";
        match (bound, claim) {
            (true, _) => {}
            (false, _) if bindings_read => {
                if !matches!(r.verb.as_str(), "get" | "list" | "watch") {
                    return Err(server.refusal(user, attrs, BINDINGS_READ_ONLY));
                }
            }
            (false, Some(claim)) => {
                claim_labels = accepted(&binding, claim, &r.verb)
                    .ok_or_else(|| server.refusal(user, attrs, NOT_BOUND))?;
            }
            (false, None) => return Err(server.refusal(user, attrs, NOT_BOUND)),
        }
    }
    let verb = match target {
        Target::Resource(r) => r.verb.as_str(),
        _ => "get",
    };
    let review = Attributes {
        user: Some(user),
        cluster: content.cluster,
        verb,
        resource_request: true,
        api_group: GROUP,
        api_version: "v1alpha1",
        resource: content.resource,
        subresource: "content",
        name: content.name,
        ..Attributes::default()
    };
    let refused = match server.review(&review).await? {
        Decision::Allow => None,
        Decision::Deny(said) => Some(said),
        Decision::NoOpinion => Some(String::new()),
    };
    if let Some(said) = refused {
        let reason = format!(
            "{}: {:?}, workspace: {:?} RBAC decision: {said}",
            content.shown(),
            content.name,
            content.cluster
        );
        return Err(server.refusal(user, attrs, &reason));
    }
    if let Target::Resource(r) = target
        && let Some(claim) = served.and_then(|s| s.claim(&r.group, &r.resource))
    {
        bounded_by_policies(server, claim, user, attrs).await?;
    }
    Ok(claim_labels)
}

/// kcp's maximal-permission-policy step: a claimed resource of another export is bounded by the
/// local policy of every export of its identity, as a request on a bound resource is in a
/// consumer's workspace.
async fn bounded_by_policies(
    server: &ApiServer,
    claim: &Claim,
    user: &UserInfo,
    attrs: &Attributes<'_>,
) -> Result<(), ApiError> {
    if claim.policies.is_empty() {
        return Ok(());
    }
    let prefixed = kcp_auth::authz::maximal_policy::prefixed(user);
    for (cluster, export) in &claim.policies {
        let review = Attributes {
            user: Some(&prefixed),
            cluster: cluster.as_str(),
            deep_review: true,
            ..attrs.clone()
        };
        let said = match server.review(&review).await? {
            Decision::Allow => continue,
            Decision::Deny(said) => said,
            Decision::NoOpinion => String::new(),
        };
        let reason = format!(
            "API export: {export:?}, workspace: {:?} RBAC decision: {said}",
            cluster.as_str()
        );
        return Err(server.refusal(user, attrs, &reason));
    }
    Ok(())
}

/// Whether `binding` accepted `claim` for `verb`: kcp intersects the binding's verbs with the
/// export's literally, so `*` grants everything only when both sides say it. The labels of the
/// accepted selector's `matchLabels` when it does.
fn accepted(binding: &Value, claim: &Claim, verb: &str) -> Option<Vec<(String, String)>> {
    let accepted = (binding
        .pointer("/spec/permissionClaims")
        .and_then(Value::as_array))
    .into_iter()
    .flatten()
    .find(|c| text(c, "/state") == "Accepted" && claim_key(c) == claim.key)?;
    let granted = (accepted.get("verbs").and_then(Value::as_array).into_iter())
        .flatten()
        .filter_map(Value::as_str)
        .filter(|v| claim.verbs.iter().any(|e| e == v))
        .any(|v| v == verb || v == "*");
    if !granted {
        return None;
    }
    let labels = (accepted
        .pointer("/selector/matchLabels")
        .and_then(Value::as_object))
    .into_iter()
    .flatten()
    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
    .collect();
    Some(labels)
}

/// The binding of the export in `cluster`: naming it, and bound to its workspace (as kcp matches
/// it: by `status.apiExportClusterName`, so a binding not yet bound opens nothing).
fn binding_of(
    server: &ApiServer,
    bindings: &kcp_api_types::ResourceDef,
    cluster: &LogicalClusterName,
    scope: &Scope<'_>,
) -> Option<Value> {
    let cache = server.registry().cache();
    let listed = cache.list(&keyspace(bindings).cluster(cluster), None);
    (listed.iter()).filter_map(|b| b.value().ok()).find(|b| {
        text(b, "/spec/reference/export/name") == scope.export_name
            && text(b, "/status/apiExportClusterName") == scope.export_cluster.as_str()
    })
}
