//! Where a server that is more than the generic one plugs in. The generic server knows logical
//! clusters by name and serves resources in them; what kcp adds on top (workspace paths, home
//! workspaces, inactive clusters, workspace admission, its bootstrap objects) comes in through
//! these interfaces, given to [`crate::ApiServerBuilder`] by the process that assembles the server
//! (the shard plugs in kcp-tenancy). Without them the server serves `/clusters/<name>/...` only.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use http::Response;
use kcp_apimachinery::logical_cluster::{LogicalClusterName, WorkspacePath};
use kcp_apimachinery::status::ApiError;
use kcp_auth::{AuthorizerChain, UserInfo};
use kcp_http::Body;
use kcp_http::request_info::{RequestInfo, ServiceFamily, Target};

use crate::ApiServer;
use crate::admission::Admission;
use crate::watch_cache::{CacheObserver, WatchCache};

/// Resolves `/clusters/<a:b:c>` workspace paths to the logical cluster they lead to.
pub trait ClusterResolver: Send + Sync {
    /// `None`: this server knows no such path (404).
    fn cluster_of(&self, path: &WorkspacePath) -> Option<LogicalClusterName>;

    /// The canonical path of `cluster`, when this server knows one.
    fn path_of(&self, _cluster: &LogicalClusterName) -> Option<WorkspacePath> {
        None
    }
}

/// Closes logical clusters to requests (kcp's inactive clusters).
pub trait ClusterGate: Send + Sync {
    /// Why a request for `target` into `cluster` is refused now, if it is.
    fn refuse(&self, cluster: &LogicalClusterName, target: &Target) -> Option<ApiError>;

    /// Resolves when a watch of `cluster` (`None`: of every cluster) must end. Subscribed when
    /// called, so a watch asks before it subscribes to the cache.
    fn watch_ends(
        &self,
        cluster: Option<&LogicalClusterName>,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + Sync>>;
}

/// Answers some requests itself, once the caller is known (after impersonation) and before
/// authorization (kcp's home workspaces: `GET workspaces/~`).
#[async_trait]
pub trait RequestHook: Send + Sync {
    /// Whether [`RequestHook::answer`] is to be asked about this request (a cheap check, so the
    /// others cost no call).
    fn wants(&self, info: &RequestInfo) -> bool;

    /// `Some`: the answer; `None`: the request goes on.
    async fn answer(
        &self,
        server: &ApiServer,
        info: &RequestInfo,
        user: &UserInfo,
    ) -> Option<Result<Response<Body>, ApiError>>;
}

/// Decides a virtual workspace's authorization reviews somewhere else: kcp-vw asks its shard by
/// SubjectAccessReview, as kcp's virtual-workspace server does. Without one, the server's own
/// chain decides ([`ApiServer::review`]).
#[async_trait]
pub trait AccessReviews: Send + Sync {
    /// The decision on `attrs` (a named logical cluster), or why none could be had (the decider
    /// did not answer).
    async fn review(
        &self,
        attrs: &kcp_auth::Attributes<'_>,
    ) -> Result<kcp_auth::Decision, ApiError>;
}

/// A family of `/services/<family>/<params>/clusters/<*|name>/...` paths (a virtual workspace).
/// The caller is known (authenticated, impersonation applied); the family authorizes the request
/// by its own rules instead of the logical cluster's, and says what the server is to serve for it:
/// which logical cluster (or all), and which APIs. Serving itself (lists, watches, writes,
/// discovery, OpenAPI) is the generic server's, as for any other request.
#[async_trait]
pub trait VirtualWorkspace: Send + Sync {
    fn family(&self) -> ServiceFamily;

    /// What to serve for `request`, or the refusal (403, or 404 for what is not there).
    async fn route(
        &self,
        server: &ApiServer,
        request: &VirtualRequest<'_>,
    ) -> Result<Routed, ApiError>;
}

/// A request of a virtual workspace's family.
pub struct VirtualRequest<'a> {
    /// The path as parsed: the family's parameters in `service`, then the cluster and target.
    pub info: &'a RequestInfo,
    pub user: &'a UserInfo,
    /// The HTTP method in lower case (the verb of a non-resource request).
    pub method: &'a str,
}

impl VirtualRequest<'_> {
    /// The family's parameters (`/services/<family>/<these>/clusters/...`).
    pub fn params(&self) -> &[String] {
        self.info
            .service
            .as_ref()
            .map(|s| s.params.as_slice())
            .unwrap_or_default()
    }

    /// The request's own authorization attributes, as the server would check them.
    pub fn attributes(&self) -> kcp_auth::Attributes<'_> {
        crate::handler::attributes(self.user, self.info, self.method)
    }
}

/// What the server serves for a request of a virtual workspace.
pub struct Routed {
    /// The request as served: `cluster` a logical cluster's name or the wildcard.
    pub info: RequestInfo,
    /// The APIs discovery lists and requests may address.
    pub apis: Arc<crate::discovery::ApiSet>,
    /// Labels every object served must carry: lists and watches select by them, a single object
    /// without them is not found, writes keep them ([`crate::registry::required_labels`]).
    pub required_labels: Vec<(String, String)>,
    /// Checks each update through the view beyond the resource's own rules.
    pub update_check: Option<Arc<dyn UpdateCheck>>,
    /// Serve it instead as a request into `info`'s logical cluster (`apis` and the rest above
    /// are then unused): a virtual workspace that lets its caller work inside a cluster.
    pub inside: Option<Acting>,
}

/// Who a request served inside a logical cluster acts as, and what allows it.
pub enum Acting {
    /// This user, authorized and answered there as their own request would be (someone else's
    /// identity: a workspace's owner).
    As(UserInfo),
    /// This user (the caller, with the virtual workspace's group), allowed by these rules alone,
    /// not by the cluster's RBAC (kcp's lifecycle permissions of a WorkspaceType).
    Granted {
        user: UserInfo,
        rules: Arc<Vec<kcp_auth::authz::rbac::rule::PolicyRule>>,
        /// Who the rules are for, in a refusal's words (`initializer "root:slow"`).
        grantee: String,
    },
}

impl Routed {
    /// A view of `apis` for `info`, with nothing else asked.
    pub fn view(info: RequestInfo, apis: Arc<crate::discovery::ApiSet>) -> Routed {
        Routed {
            info,
            apis,
            required_labels: Vec::new(),
            update_check: None,
            inside: None,
        }
    }
}

/// A virtual workspace's rule for updates through it (kcp's initializers may only remove
/// themselves from a LogicalCluster's status).
pub trait UpdateCheck: Send + Sync {
    /// Refuses the update of `old` into `new` of a `def` object named `name`, if it must be.
    fn check(
        &self,
        def: &kcp_api_types::ResourceDef,
        name: &str,
        old: &serde_json::Value,
        new: &serde_json::Value,
    ) -> Result<(), ApiError>;
}

/// Objects a fresh server needs besides the generic ones, created through the registry.
#[async_trait]
pub trait Bootstrap: Send + Sync {
    /// Annotations of the `root` LogicalCluster when the server first creates it.
    fn root_annotations(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }

    /// Whether it writes to the store: a server that follows another's store
    /// ([`crate::ServerRole::VirtualWorkspaces`]) runs only the bootstraps that do not.
    fn writes(&self) -> bool {
        true
    }

    /// Runs at the end of the generic bootstrap, before the server is handed out.
    async fn bootstrap(&self, server: &ApiServer) -> Result<(), ApiError>;
}

/// What admission plugins are built from: the server's cache and its whole authorizer chain.
pub struct AdmissionContext<'a> {
    pub cache: &'a Arc<WatchCache>,
    pub authorizers: &'a AuthorizerChain,
}

/// Admission plugins a server adds to the generic chain, by where they sit in it.
#[derive(Default)]
pub struct AdmissionPlugins {
    /// Right after RBAC escalation, before the generic plugins and the webhooks.
    pub early: Vec<Arc<dyn Admission>>,
    /// After every webhook: the last word on what is written.
    pub last: Vec<Arc<dyn Admission>>,
}

/// Builds admission plugins once the server's cache and authorizers exist.
pub type AdmissionFactory = Box<dyn FnOnce(&AdmissionContext<'_>) -> AdmissionPlugins + Send>;

/// Everything plugged into one server.
#[derive(Default)]
pub struct Hooks {
    pub observers: Vec<Arc<dyn CacheObserver>>,
    pub resolver: Option<Arc<dyn ClusterResolver>>,
    pub gate: Option<Arc<dyn ClusterGate>>,
    pub requests: Vec<Arc<dyn RequestHook>>,
    pub bootstrap: Vec<Arc<dyn Bootstrap>>,
    pub admission: Vec<AdmissionFactory>,
    /// Bounds bound resources by their exports' maximal permission policies (kcp-apis).
    pub policies: Option<Arc<dyn kcp_auth::authz::PermissionPolicies>>,
    /// The `/services/...` families the server serves.
    pub virtual_workspaces: Vec<Arc<dyn VirtualWorkspace>>,
    /// Decides the virtual workspaces' reviews instead of the server's own chain.
    pub reviews: Option<Arc<dyn AccessReviews>>,
}
