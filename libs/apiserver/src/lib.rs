//! kcp-apiserver: the generic Kubernetes API server shared by kcp-rs services.
//!
//! A request walks: TLS and request parsing ([`kcp_http`]) → [`handler`] (authenticate, authorize)
//! → the generic [`registry`] over the store and the [`watch_cache`] → encoding ([`codec`], [`table`]).

pub mod admission;
pub mod apis;
pub mod apply;
mod authorization;
mod cache_snapshot;
pub mod cache_source;
mod cached_labels;
pub mod codec;
pub mod crd;
pub mod discovery;
mod handler;
pub mod hooks;
mod lifecycle;
pub mod metrics;
pub mod object_json;
mod object_map;
pub mod openapi;
pub mod registry;
mod stored_json;
pub mod table;
#[cfg(feature = "test-util")]
pub mod testing;
pub mod watch_cache;

use std::sync::Arc;

use kcp_auth::{
    Authenticator, Authorizer, AuthorizerChain, IdentityHeaders, KcpAuthorizer, RbacIndex,
    ServiceAccountTokens,
};
use kcp_store::Store;
use tokio_util::sync::CancellationToken;

use crate::discovery::ApiSet;
use crate::registry::Registry;
use crate::watch_cache::WatchCache;
use kcp_http::request_info::ClusterTarget;

pub use handler::version;
pub use lifecycle::ContentDeletion;

pub use kcp_http::Body;

/// What a server is to the store it serves from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerRole {
    /// The shard: owns its store, so it bootstraps it, compacts it, runs the controllers that
    /// write, serves every path, and serves the store itself over gRPC to its administrators.
    Shard,
    /// The standalone virtual-workspace server (kcp-vw): serves only `/services/...` (and health
    /// and metrics) from its shard's store, which it reads and writes through gRPC. It writes
    /// nothing on its own: the shard's controllers do that; it only follows what they wrote.
    VirtualWorkspaces,
}

impl ServerRole {
    /// Whether this server's own controllers and bootstrap write to the store.
    pub fn writes(self) -> bool {
        self == ServerRole::Shard
    }

    /// Whether it serves logical clusters (`/clusters/...`) and its store to administrators;
    /// the virtual-workspace server serves neither: both are its shard's.
    pub fn owns_store(self) -> bool {
        self == ServerRole::Shard
    }
}

/// What the API server needs from the process that hosts it.
pub struct ApiServerConfig {
    pub store: Arc<dyn Store>,
    pub role: ServerRole,
    /// This shard's name (`--shard-name`).
    pub shard_name: String,
    /// The URL clients reach this shard at, e.g. `https://localhost:6443`.
    pub external_url: String,
    /// Asked in order; the first that recognises a credential decides.
    pub authenticators: Vec<Arc<dyn Authenticator>>,
    /// Asked in order before kcp's own chain (system:masters, required groups, workspace access,
    /// RBAC with the bootstrap policy); the first that allows or denies decides.
    pub authorizers: Vec<Arc<dyn Authorizer>>,
    /// The ServiceAccount token issuer and authenticator (the latter also in `authenticators`, the
    /// same `Arc`), for the TokenRequest API and for routing bare `/api` requests of the users it
    /// authenticated to their cluster. `None`: the
    /// server issues no tokens.
    pub service_account_tokens: Option<ServiceAccountTokens>,
    /// The RBAC objects of every logical cluster, which the server keeps current from its watch
    /// cache; the RBAC authorizer in `authorizers` and SelfSubjectRulesReview read it.
    pub rbac: Arc<RbacIndex>,
    /// The identity headers (`X-Remote-*` and the configured `--requestheader-*` names) removed
    /// from every request once it is authenticated.
    pub identity_headers: IdentityHeaders,
    /// Where the watch cache is saved at shutdown and read back at the next start (for stores it
    /// pays off for: etcd). None: never.
    pub cache_snapshot: Option<std::path::PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiServerError {
    #[error("storage: {0}")]
    Store(#[from] kcp_store::StoreError),
    #[error("bootstrap: {0}")]
    Bootstrap(String),
}

/// The API server: owns the registry, watch cache and handler chain.
pub struct ApiServer {
    config: ApiServerConfig,
    registry: Registry,
    /// The API set of each logical cluster, composed of the built-ins and its CRDs.
    apis: apis::ClusterApis,
    /// The CRDs' part of those sets.
    crds: crd::CrdApis,
    crd_requeue: crd::controller::Requeue,
    /// `host:port` for `serverAddressByClientCIDRs`.
    server_address: String,
    shutdown: CancellationToken,
    namespaces: lifecycle::NamespaceFinalizer,
    /// The configured authorizers, then kcp's chain (fed by the watch cache).
    authorizers: AuthorizerChain,
    /// Resolves workspace paths, when something plugged it in.
    resolver: Option<Arc<dyn hooks::ClusterResolver>>,
    /// Closes logical clusters to requests, when something plugged it in.
    gate: Option<Arc<dyn hooks::ClusterGate>>,
    /// Answer some requests before authorization (home workspaces).
    request_hooks: Vec<Arc<dyn hooks::RequestHook>>,
    /// The `/services/...` families served, and the paths they parse.
    virtual_workspaces: Vec<Arc<dyn hooks::VirtualWorkspace>>,
    families: kcp_http::request_info::PathFamilies,
    /// Decides what the virtual workspaces ask, when the chain is not to ([`hooks::AccessReviews`]).
    reviews: Option<Arc<dyn hooks::AccessReviews>>,
    /// Requests in flight, bounded as kube-apiserver bounds them.
    in_flight: kcp_http::in_flight::InFlight,
    /// What `/metrics` shows.
    metrics: metrics::Metrics,
    /// The store's last answer to the health checks.
    store_health: handler::StoreHealth,
    /// The store over gRPC, answered by a shard to its administrators.
    store_calls: kcp_store::remote::StoreCalls,
}

/// Assembles an [`ApiServer`]: the generic server, and what the process plugs into it
/// ([`hooks`]).
pub struct ApiServerBuilder {
    config: ApiServerConfig,
    hooks: hooks::Hooks,
}

impl ApiServerBuilder {
    /// Told of every cache event, in order, with the server's own observers.
    pub fn observer(mut self, observer: Arc<dyn watch_cache::CacheObserver>) -> Self {
        self.hooks.observers.push(observer);
        self
    }

    /// Bounds requests on bound resources by their exports' maximal permission policies.
    pub fn permission_policies(
        mut self,
        policies: Arc<dyn kcp_auth::authz::PermissionPolicies>,
    ) -> Self {
        self.hooks.policies = Some(policies);
        self
    }

    /// Resolves `/clusters/<path>` workspace paths (without one, every such path is a 404).
    pub fn resolver(mut self, resolver: Arc<dyn hooks::ClusterResolver>) -> Self {
        self.hooks.resolver = Some(resolver);
        self
    }

    /// Closes logical clusters to requests.
    pub fn gate(mut self, gate: Arc<dyn hooks::ClusterGate>) -> Self {
        self.hooks.gate = Some(gate);
        self
    }

    /// Answers some requests before authorization.
    pub fn request_hook(mut self, hook: Arc<dyn hooks::RequestHook>) -> Self {
        self.hooks.requests.push(hook);
        self
    }

    /// Serves a `/services/...` family of paths (a virtual workspace).
    pub fn virtual_workspace(mut self, workspace: Arc<dyn hooks::VirtualWorkspace>) -> Self {
        self.hooks.virtual_workspaces.push(workspace);
        self
    }

    /// Has `reviews` decide what the virtual workspaces ask (kcp-vw: its shard), instead of the
    /// server's own chain.
    pub fn access_reviews(mut self, reviews: Arc<dyn hooks::AccessReviews>) -> Self {
        self.hooks.reviews = Some(reviews);
        self
    }

    /// Creates more objects at start-up, after the generic ones.
    pub fn bootstrap(mut self, bootstrap: Arc<dyn hooks::Bootstrap>) -> Self {
        self.hooks.bootstrap.push(bootstrap);
        self
    }

    /// Adds admission plugins, built once the cache and the authorizer chain exist.
    pub fn admission(
        mut self,
        factory: impl FnOnce(&hooks::AdmissionContext<'_>) -> hooks::AdmissionPlugins + Send + 'static,
    ) -> Self {
        self.hooks.admission.push(Box::new(factory));
        self
    }

    /// Builds the server, loads the watch cache and bootstraps the `root` logical cluster.
    pub async fn build(self) -> Result<Arc<ApiServer>, ApiServerError> {
        let ApiServerBuilder { config, hooks } = self;
        let hooks::Hooks {
            observers,
            resolver,
            gate,
            requests,
            bootstrap,
            admission: factories,
            policies,
            virtual_workspaces,
            reviews,
        } = hooks;
        let families = (virtual_workspaces.iter()).fold(
            kcp_http::request_info::PathFamilies::default(),
            |families, vw| families.with_service(vw.family()),
        );
        let started = std::time::Instant::now();
        let cache =
            WatchCache::start_with_snapshot(config.store.clone(), config.cache_snapshot.as_deref())
                .await?;
        let authorizer = Arc::new(KcpAuthorizer::new(
            config.rbac.clone(),
            Arc::new(authorization::CachedClusterFacts::new(cache.clone())),
        ));
        if let Some(policies) = policies {
            authorizer.set_permission_policies(policies);
        }
        let mut feed: Vec<Arc<dyn watch_cache::CacheObserver>> = vec![Arc::new(
            authorization::AuthorizationFeed::new(config.rbac.clone(), authorizer.clone()),
        )];
        feed.extend(observers);
        cache.set_observer(Arc::new(watch_cache::Observers(feed)));
        tracing::info!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            "start-up: authorization index and cache observers built"
        );
        let mut chain = config.authorizers.clone();
        chain.push(authorizer);
        let authorizers = AuthorizerChain::new(chain);
        let registry = Registry::new(
            config.store.clone(),
            cache.clone(),
            config.external_url.clone(),
        );
        let context = hooks::AdmissionContext {
            cache: &cache,
            authorizers: &authorizers,
        };
        let mut plugged = hooks::AdmissionPlugins::default();
        for factory in factories {
            let more = factory(&context);
            plugged.early.extend(more.early);
            plugged.last.extend(more.last);
        }
        // Policies before webhooks, in kube-apiserver's plugin order; what was plugged in early
        // right after RBAC escalation, the rest after all of them.
        let mut plugins: Vec<Arc<dyn admission::Admission>> =
            // Kubernetes checks RBAC escalation in its RBAC registry, before validating admission.
            vec![Arc::new(admission::RbacEscalationAdmission::new(
                config.rbac.clone(),
                authorizers.clone(),
            ))];
        plugins.extend(plugged.early);
        plugins.extend([
            Arc::new(admission::NamespaceLifecycle::new(cache.clone()))
                as Arc<dyn admission::Admission>,
            Arc::new(admission::CertificateAdmission::new(authorizers.clone())),
            Arc::new(admission::PolicyAdmission::new(cache.clone())),
            Arc::new(admission::WebhookAdmission::new(cache)),
        ]);
        plugins.extend(plugged.last);
        registry.set_admission(Arc::new(admission::Chain(plugins)));
        let builtins = Arc::new(ApiSet::new(
            kcp_api_types::builtin::catalogue()
                .into_iter()
                .map(Arc::new)
                .collect(),
        ));
        let server_address = config
            .external_url
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .to_string();
        let (namespaces, queue) = lifecycle::NamespaceFinalizer::new();
        let (crd_requeue, crd_queue) = crd::controller::Requeue::new();
        let metrics = metrics::Metrics::new(&config.shard_name);
        let shutdown = CancellationToken::new();
        let store_calls = kcp_store::remote::StoreCalls::new(
            config.store.clone(),
            registry.cache().clone(),
            shutdown.clone(),
        );
        let server = Arc::new(ApiServer {
            config,
            registry,
            apis: apis::ClusterApis::new(builtins),
            crds: crd::CrdApis::default(),
            crd_requeue,
            server_address,
            shutdown,
            namespaces,
            authorizers,
            resolver,
            gate,
            request_hooks: requests,
            virtual_workspaces,
            families,
            reviews,
            in_flight: kcp_http::in_flight::InFlight::default(),
            metrics,
            store_health: Default::default(),
            store_calls,
        });
        if server.role().writes() {
            lifecycle::spawn_namespace_finalizer(server.clone(), queue);
            lifecycle::spawn_compactor(&server, lifecycle::COMPACTION_INTERVAL);
        }
        // Also where CRDs become served APIs, which a follower needs as much as the shard.
        crd::controller::spawn(server.clone(), crd_queue);
        server.bootstrap(&bootstrap).await?;
        tracing::info!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            "start-up: bootstrap objects in place"
        );
        Ok(server)
    }
}

impl ApiServer {
    /// Starts assembling a server.
    pub fn builder(config: ApiServerConfig) -> ApiServerBuilder {
        ApiServerBuilder {
            config,
            hooks: hooks::Hooks::default(),
        }
    }

    /// The generic server alone: no workspace paths, homes or tenancy admission.
    pub async fn new(config: ApiServerConfig) -> Result<Arc<ApiServer>, ApiServerError> {
        ApiServer::builder(config).build().await
    }

    /// The APIs served in a logical cluster.
    fn api_set(&self, cluster: &ClusterTarget) -> Arc<ApiSet> {
        match cluster {
            ClusterTarget::Name(name) => self.apis.for_cluster(name),
            // Wildcard requests see the built-ins only; custom resources across clusters need
            // identical schemas everywhere, which bound APIs (not local CRDs) provide.
            _ => self.apis.builtins().clone(),
        }
    }

    /// The APIs a logical cluster serves now: the built-ins and its established CRDs.
    pub fn apis_of(&self, cluster: &str) -> Arc<ApiSet> {
        self.apis.for_cluster(cluster)
    }

    /// The CRDs' parts of the clusters' APIs (for tests and benchmarks of their sharing).
    pub fn crd_apis(&self) -> &crd::CrdApis {
        &self.crds
    }

    /// Every cluster's API set, as composed (for tests and benchmarks of their sharing).
    pub fn cluster_apis(&self) -> &apis::ClusterApis {
        &self.apis
    }

    /// Cancelled when the server shuts down; in-process controllers stop on it.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Saves the watch cache for the next start (see [`ApiServerConfig::cache_snapshot`]). Call
    /// after [`ApiServer::shutdown`], once requests are drained.
    pub async fn save_cache_snapshot(&self) -> Result<bool, kcp_store::StoreError> {
        match &self.config.cache_snapshot {
            Some(path) => {
                self.registry
                    .cache()
                    .save_snapshot(self.config.store.as_ref(), path)
                    .await
            }
            None => Ok(false),
        }
    }

    /// Ends every open watch so connections can drain.
    pub fn shutdown(&self) {
        self.shutdown.cancel();
        self.registry.cache().close_all();
    }

    /// The registry, for in-process controllers and tests.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The URL clients reach this shard at.
    pub fn external_url(&self) -> &str {
        &self.config.external_url
    }

    /// What this server is to its store.
    pub fn role(&self) -> ServerRole {
        self.config.role
    }

    /// This shard's name.
    pub fn shard_name(&self) -> &str {
        &self.config.shard_name
    }
}
