//! The handler chain: parse → authenticate → authorize → dispatch, with one log line per request.

mod health;
pub(crate) use health::StoreHealth;
mod impersonation;
mod in_cluster;
mod metrics;
mod openapi;
mod resource;
mod review;
mod scale;
mod token_request;
mod token_review;
mod watch;

use std::sync::Arc;
use std::time::Instant;

use http::{Method, Request, Response, StatusCode, header};
use kcp_apimachinery::status::ApiError;
use kcp_auth::{Attributes, Authorizer, Decision, UserInfo};
use serde_json::json;

use crate::ApiServer;
use crate::codec::{Output, Produces, negotiate};
use crate::discovery::{V2_CONTENT_TYPE, V2BETA1_CONTENT_TYPE};
use crate::metrics::RequestShape;
use kcp_http::query::Query;
use kcp_http::request_info::{self, ClusterTarget, RequestInfo, Target, VerbHints};
use kcp_http::serve::PeerInfo;
use kcp_http::{Body, response};

/// Groups that may address a logical cluster without its LogicalCluster object, as kcp's content
/// authorizer lets them. Not `system:kcp:admin`: its cluster-admin everywhere (the bootstrap
/// policy) would let it write content into logical clusters that are no workspace's.
const PRIVILEGED_GROUPS: &[&str] = &[
    kcp_auth::authz::SYSTEM_MASTERS,
    "system:kcp:logical-cluster-admin",
];

/// Everything a handler needs about the request being served.
pub struct RequestContext {
    pub info: RequestInfo,
    pub query: Query,
    pub user: UserInfo,
    pub accept: Option<String>,
    pub content_type: Option<String>,
    pub user_agent: Option<String>,
    /// A SubjectAccessReview a `system:masters` caller asked to be deep ([`is_deep_review`]).
    pub deep_review: bool,
    /// The resource the request turned out to address, once found among those served: what its
    /// metrics are labelled with (never the raw path, which anyone may fill with anything).
    pub served: std::sync::OnceLock<Arc<kcp_api_types::ResourceDef>>,
    /// What the request may address: its logical cluster's APIs, or a virtual workspace's.
    pub apis: Arc<crate::discovery::ApiSet>,
    /// Labels a virtual workspace requires of every listed or watched object.
    pub required_labels: Vec<(String, String)>,
    /// Came through a virtual workspace: `apis` is all it may address.
    pub virtual_workspace: bool,
    /// A virtual workspace's rule for updates through it.
    pub update_check: Option<Arc<dyn crate::hooks::UpdateCheck>>,
}

/// kcp's answer to `/metrics` under a workspace.
const SHARD_LEVEL_ONLY: &str = "shard-level endpoint not available at workspace scope\n";

impl RequestContext {
    /// Refuses an update of `old` into `new` that the virtual workspace served through forbids.
    pub fn check_update(
        &self,
        def: &kcp_api_types::ResourceDef,
        name: &str,
        old: &serde_json::Value,
        new: &serde_json::Value,
    ) -> Result<(), ApiError> {
        match &self.update_check {
            Some(check) => check.check(def, name, old, new),
            None => Ok(()),
        }
    }

    /// The write's `dryRun`, refused as its options kind (per the request's verb) when invalid.
    pub fn dry_run(&self) -> Result<bool, ApiError> {
        let verb = match &self.info.target {
            Target::Resource(r) => r.verb.as_str(),
            _ => "",
        };
        self.query.dry_run(verb)
    }
}

impl ApiServer {
    /// Serves one request and logs it.
    pub async fn handle(
        self: Arc<Self>,
        req: Request<hyper::body::Incoming>,
        peer: Arc<PeerInfo>,
    ) -> Response<Body> {
        let started = Instant::now();
        if self.role().owns_store() && kcp_store::remote::is_store_call(&req) {
            return self.serve_store_call(req, &peer).await;
        }
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let query = Query::parse(req.uri().query());
        let deadline = kcp_http::deadline::request_deadline(&method, req.uri().path(), &query);
        // Watches are long-running and not counted; health checks must answer under load.
        let place = match deadline {
            Some(_) if !request_info::is_health(&path) => match self.in_flight.admit(&method) {
                Some(place) => Some(place),
                None => {
                    let resp = kcp_http::in_flight::too_many_requests();
                    self.metrics.observe(
                        RequestShape::of_method(&method),
                        resp.status().as_u16(),
                        started.elapsed(),
                    );
                    return resp;
                }
            },
            _ => None,
        };
        let req = req.map(kcp_http::request_body::RequestBody::new);
        // serve() fills in what the metrics are labelled with once it has read the path.
        let mut shape = None;
        let served = self.serve(req, query, &peer, &mut shape);
        let resp = match deadline {
            // A request that is not done by its deadline (a client sending its body slowly, or
            // not at all) is answered 504 and dropped, as kube-apiserver's timeout filter does.
            Some(deadline) => match tokio::time::timeout(deadline, served).await {
                Ok(Ok(resp)) => resp,
                Ok(Err(err)) => response::error(&err),
                Err(_) => response::error(&ApiError::timeout(
                    "Timeout: request did not complete within requested timeout - context deadline exceeded",
                )),
            },
            None => match served.await {
                Ok(resp) => resp,
                Err(err) => response::error(&err),
            },
        };
        let resp = match place {
            Some(place) => resp.map(|body| kcp_http::in_flight::holding(body, place)),
            None => resp,
        };
        let shape = shape.unwrap_or_else(|| RequestShape::of_method(&method));
        let code = resp.status().as_u16();
        // A watch is counted when it starts and open until its stream ends; it is not timed.
        let resp = if shape.is_watch() && resp.status().is_success() {
            let open = self.metrics.long_running(&shape);
            self.metrics.count(shape, code);
            resp.map(|body| kcp_http::in_flight::holding(body, open))
        } else {
            self.metrics.observe(shape, code, started.elapsed());
            resp
        };
        // A HEAD answer has the GET's headers and no body (HTTP/2 refuses one as a protocol error).
        let resp = if method == Method::HEAD {
            resp.map(|_| {
                use http_body_util::BodyExt;
                http_body_util::Empty::new().boxed_unsync()
            })
        } else {
            resp
        };
        tracing::info!(
            method = %method,
            path = %path,
            code = resp.status().as_u16(),
            latency_us = started.elapsed().as_micros() as u64,
            "request"
        );
        resp
    }

    /// A call of the store's gRPC service: for the shard's administrators (`system:masters`,
    /// the identity of the kubeconfig the virtual-workspace server is given), who may read and
    /// write every key anyway.
    async fn serve_store_call(
        &self,
        req: Request<hyper::body::Incoming>,
        peer: &PeerInfo,
    ) -> Response<Body> {
        let (mut parts, body) = req.into_parts();
        let user = kcp_http::authentication::authenticate(
            &self.config.authenticators,
            &self.config.identity_headers,
            &mut parts,
            &peer.certificates,
        );
        match user {
            Ok((user, _)) if user.is_system_masters() => {
                self.store_calls
                    .call(Request::from_parts(parts, body))
                    .await
            }
            Ok((user, _)) => {
                tracing::warn!(user = %user.name, "store call refused: not system:masters");
                kcp_store::remote::StoreCalls::refuse("the store is served to system:masters only")
            }
            Err(_) => {
                tracing::warn!("store call refused: unauthenticated");
                kcp_store::remote::StoreCalls::unauthenticated()
            }
        }
    }

    fn authorize(
        &self,
        user: &UserInfo,
        info: &RequestInfo,
        method: &Method,
    ) -> Result<(), ApiError> {
        let lower_method = method.as_str().to_ascii_lowercase();
        self.check(user, &attributes(user, info, &lower_method))
    }

    /// The 403 of a refusal of `attrs` for `reason`, in Kubernetes' words.
    pub fn refusal(&self, user: &UserInfo, attrs: &Attributes<'_>, reason: &str) -> ApiError {
        forbidden(
            &kcp_auth::authz::scope_user(user, attrs.cluster),
            attrs,
            reason,
        )
    }

    /// Whether the chain allows `attrs`; a refusal is the 403 Kubernetes words, naming the caller
    /// as it acts here (a ServiceAccount outside its own logical cluster is not the
    /// ServiceAccount of this one).
    pub(crate) fn check(&self, user: &UserInfo, attrs: &Attributes<'_>) -> Result<(), ApiError> {
        self.check_saying(user, attrs, None)
    }

    /// [`ApiServer::check`], a refusal giving `reason` (when given) whatever the authorizer said.
    pub fn check_saying(
        &self,
        user: &UserInfo,
        attrs: &Attributes<'_>,
        reason: Option<&str>,
    ) -> Result<(), ApiError> {
        allowed(user, attrs, self.decide(attrs), reason)
    }

    /// The whole authorizer chain: the configured authorizers, then kcp's.
    pub fn decide(&self, attrs: &Attributes<'_>) -> Decision {
        self.authorizers.authorize(attrs)
    }

    /// A virtual workspace's question: decided where the server was told to ask
    /// ([`crate::hooks::AccessReviews`], kcp-vw's shard), or by [`ApiServer::decide`]. Only reviews in
    /// a named logical cluster leave the process; `system:masters` needs asking nobody.
    pub async fn review(&self, attrs: &Attributes<'_>) -> Result<Decision, ApiError> {
        let named = !attrs.cluster.is_empty() && attrs.cluster != "*";
        let masters = attrs.user.is_some_and(UserInfo::is_system_masters);
        match &self.reviews {
            Some(reviews) if named && !masters => reviews.review(attrs).await,
            _ => Ok(self.decide(attrs)),
        }
    }

    /// [`ApiServer::check_saying`] with the decision of [`ApiServer::review`].
    pub async fn check_reviewed(
        &self,
        user: &UserInfo,
        attrs: &Attributes<'_>,
        reason: Option<&str>,
    ) -> Result<(), ApiError> {
        allowed(user, attrs, self.review(attrs).await?, reason)
    }

    /// `/clusters/root:org:team/...` names a workspace path: serve the LC it leads to. A path this
    /// shard does not know is 404, as kcp answers; the raw path is never used as an LC name.
    fn resolve_path(&self, mut info: RequestInfo) -> Result<RequestInfo, ApiError> {
        match &info.cluster {
            // kcp's answer to a path no workspace could have (400, its words).
            ClusterTarget::Invalid(text) => Err(ApiError::bad_request(format!(
                "invalid cluster: {text:?} does not match the regex"
            ))),
            ClusterTarget::Path(path) => {
                match (self.resolver.as_ref()).and_then(|r| r.cluster_of(path)) {
                    Some(cluster) => {
                        info.cluster = ClusterTarget::Name(cluster);
                        Ok(info)
                    }
                    None => Err(ApiError::not_found(
                        "tenancy.kcp.io",
                        "workspaces",
                        path.as_str(),
                    )),
                }
            }
            _ => Ok(info),
        }
    }

    async fn serve(
        self: &Arc<Self>,
        req: Request<kcp_http::request_body::RequestBody>,
        query: Query,
        peer: &PeerInfo,
        shape: &mut Option<RequestShape>,
    ) -> Result<Response<Body>, ApiError> {
        let (mut parts, body) = req.into_parts();
        let watch = query.flag("watch");
        let path = request_info::decode_path(parts.uri.path()).ok_or_else(|| {
            ApiError::bad_request("the request path is not valid percent-encoded UTF-8")
        })?;
        let info = self
            .families
            .parse(&parts.method, &path, VerbHints { watch });
        *shape = Some(RequestShape::of(
            &parts.method,
            &info,
            &query,
            parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
        ));
        match (&info.target, &info.cluster) {
            // Health endpoints need no credentials.
            (Target::Health(path), _) => return Ok(self.serve_health(path, &query).await),
            // kcp's answer, before any credential is looked at: the shard's metrics are not a
            // workspace's.
            (Target::Metrics, cluster) if *cluster != ClusterTarget::None => {
                return Ok(response::text(
                    StatusCode::NOT_IMPLEMENTED,
                    SHARD_LEVEL_ONLY,
                ));
            }
            _ => {}
        }
        let (user, authenticated_by) = kcp_http::authentication::authenticate(
            &self.config.authenticators,
            &self.config.identity_headers,
            &mut parts,
            &peer.certificates,
        )?;
        if info.service.is_some() {
            return self
                .serve_virtual(parts, body, query, info, user, shape)
                .await;
        }
        let top_level = matches!(info.target, Target::Metrics | Target::Version)
            && info.cluster == ClusterTarget::None;
        if !self.role().owns_store() && !top_level {
            // The virtual-workspace server serves its families only; logical clusters are the
            // shard's.
            return Err(ApiError::path_not_found());
        }
        let info = self.in_cluster(&parts, &user, authenticated_by, info, VerbHints { watch });
        // A ServiceAccount's bare `/metrics` became its LC's: kcp answers that as above.
        if let (Target::Metrics, cluster) = (&info.target, &info.cluster)
            && !matches!(cluster, ClusterTarget::None | ClusterTarget::Wildcard)
        {
            return Ok(response::text(
                StatusCode::NOT_IMPLEMENTED,
                SHARD_LEVEL_ONLY,
            ));
        }
        let mut info = self.resolve_path(info)?;
        if let Target::Resource(r) = &mut info.target {
            r.select_name(query.get("fieldSelector"));
        }
        if let (ClusterTarget::Name(name), Some(gate)) = (&info.cluster, &self.gate)
            && let Some(refusal) = gate.refuse(name, &info.target)
        {
            return Err(refusal);
        }
        let user = self.impersonate(&parts, user, &info).await?;
        if let Target::Metrics = info.target {
            return self.serve_metrics(&user, &parts.method);
        }
        for hook in self.request_hooks.iter().filter(|h| h.wants(&info)) {
            if let Some(answer) = hook.answer(self, &info, &user).await {
                return answer;
            }
        }
        let deep_review = is_deep_review(&parts.headers, &user, &info);
        if let ClusterTarget::Unnamed(path) = &info.cluster {
            return Err(ApiError::not_found(
                "tenancy.kcp.io",
                "workspaces",
                path.as_str(),
            ));
        }
        self.serve_in_cluster(parts, body, query, info, user, deep_review, shape)
            .await
    }

    /// The end of every request into a logical cluster (or all of them): authorized there as
    /// `user`, the cluster known, served from its APIs.
    #[allow(clippy::too_many_arguments)]
    async fn serve_in_cluster(
        self: &Arc<Self>,
        parts: http::request::Parts,
        body: kcp_http::request_body::RequestBody,
        query: Query,
        info: RequestInfo,
        user: UserInfo,
        deep_review: bool,
        shape: &mut Option<RequestShape>,
    ) -> Result<Response<Body>, ApiError> {
        self.authorize(&user, &info, &parts.method)?;
        self.serve_authorized(parts, body, query, info, user, deep_review, shape)
            .await
    }

    /// [`ApiServer::serve_in_cluster`] once the request is authorized.
    #[allow(clippy::too_many_arguments)]
    async fn serve_authorized(
        self: &Arc<Self>,
        parts: http::request::Parts,
        body: kcp_http::request_body::RequestBody,
        query: Query,
        info: RequestInfo,
        user: UserInfo,
        deep_review: bool,
        shape: &mut Option<RequestShape>,
    ) -> Result<Response<Body>, ApiError> {
        if let ClusterTarget::Name(name) = &info.cluster {
            self.check_cluster_exists(name, &user).await?;
        }
        let apis = self.api_set(&info.cluster);
        let ctx = context(&parts, info, query, user, deep_review, apis);
        self.dispatch(ctx, &parts, body, shape).await
    }

    /// A request of a `/services/...` family: the virtual workspace authorizes it and says what
    /// to serve, which is then served as any request is.
    async fn serve_virtual(
        self: &Arc<Self>,
        parts: http::request::Parts,
        body: kcp_http::request_body::RequestBody,
        query: Query,
        info: RequestInfo,
        user: UserInfo,
        shape: &mut Option<RequestShape>,
    ) -> Result<Response<Body>, ApiError> {
        let mut info = info;
        if let Target::Resource(r) = &mut info.target {
            r.select_name(query.get("fieldSelector"));
        }
        let user = self.impersonate(&parts, user, &info).await?;
        let family = info.service.as_ref().map(|s| s.family);
        let Some(workspace) =
            (self.virtual_workspaces.iter()).find(|w| Some(w.family().name) == family)
        else {
            return Err(ApiError::path_not_found());
        };
        let method = parts.method.as_str().to_ascii_lowercase();
        let request = crate::hooks::VirtualRequest {
            info: &info,
            user: &user,
            method: &method,
        };
        let routed = workspace.route(self, &request).await?;
        let info = routed.info;
        if let (ClusterTarget::Name(name), Some(gate)) = (&info.cluster, &self.gate)
            && let Some(refusal) = gate.refuse(name, &info.target)
        {
            return Err(refusal);
        }
        if let Some(acting) = routed.inside {
            let ClusterTarget::Name(cluster) = &info.cluster else {
                return Err(ApiError::path_not_found());
            };
            return match acting {
                // Inside the cluster as someone else: judged there as their own request would be.
                crate::hooks::Acting::As(user) => {
                    let user = impersonation::acting_in(user, cluster.as_str());
                    let lower = parts.method.as_str().to_ascii_lowercase();
                    self.check_reviewed(&user, &attributes(&user, &info, &lower), None)
                        .await?;
                    self.serve_authorized(parts, body, query, info, user, false, shape)
                        .await
                }
                // Allowed by the virtual workspace's rules, or not at all.
                crate::hooks::Acting::Granted {
                    user,
                    rules,
                    grantee,
                } => {
                    let user = impersonation::acting_in(user, cluster.as_str());
                    let lower = parts.method.as_str().to_ascii_lowercase();
                    let attrs = attributes(&user, &info, &lower);
                    if !rules.iter().any(|rule| rule.allows(&attrs)) {
                        return Err(self.refusal(
                            &user,
                            &attrs,
                            &format!("not allowed by the permissions of {grantee}"),
                        ));
                    }
                    self.serve_authorized(parts, body, query, info, user, false, shape)
                        .await
                }
            };
        }
        let mut ctx = context(&parts, info, query, user, false, routed.apis);
        ctx.required_labels = routed.required_labels;
        ctx.update_check = routed.update_check;
        ctx.virtual_workspace = true;
        self.dispatch(ctx, &parts, body, shape).await
    }

    /// Serves an authorized request.
    async fn dispatch(
        &self,
        ctx: RequestContext,
        parts: &http::request::Parts,
        body: kcp_http::request_body::RequestBody,
        shape: &mut Option<RequestShape>,
    ) -> Result<Response<Body>, ApiError> {
        let header = |name: header::HeaderName| header_text(parts, name);
        let is_read = matches!(parts.method, Method::GET | Method::HEAD);
        match &ctx.info.target {
            Target::Resource(_) => {
                // Admission may warn; the warnings become `Warning` headers of the answer.
                let (resp, warnings) = crate::admission::warnings::collect(self.serve_resource(
                    &ctx,
                    &parts.method,
                    body,
                ))
                .await;
                if let (Some(def), Some(shape), Target::Resource(r)) =
                    (ctx.served.get(), shape.as_mut(), &ctx.info.target)
                {
                    shape.served_by(def, r.subresource.as_deref());
                }
                if resp.is_ok() && !is_read && is_rbac(&ctx.info) && !ctx.dry_run()? {
                    // Answer only once the cache (and so the RBAC index) holds the change: a
                    // client that was told its binding exists must be authorized by it. A dry run
                    // wrote nothing to wait for.
                    let _ = self.registry.cache().wait_fresh().await;
                }
                // Warnings go with errors too, as kube-apiserver's recorder writes them with
                // whatever headers the answer has.
                let mut resp = resp.unwrap_or_else(|err| response::error(&err));
                response::add_warnings(&mut resp, &warnings);
                Ok(resp)
            }
            _ if !is_read => Err(ApiError::method_not_allowed(format!(
                "the server does not allow this method on the requested resource: {}",
                parts.method
            ))),
            Target::Version => {
                negotiate(ctx.accept.as_deref(), Produces::JsonOnly)?;
                Ok(response::json_value(StatusCode::OK, &version()))
            }
            Target::CoreVersions | Target::Groups => self.serve_discovery_root(&ctx),
            Target::Group(group) => {
                negotiate(ctx.accept.as_deref(), Produces::JsonOnly)?;
                let set = ctx.apis.clone();
                set.group(group)
                    .map(|doc| response::json_value(StatusCode::OK, &doc))
                    .ok_or_else(ApiError::path_not_found)
            }
            Target::GroupVersion { group, version } => {
                negotiate(ctx.accept.as_deref(), Produces::JsonOnly)?;
                let set = ctx.apis.clone();
                set.resource_list(group, version)
                    .map(|doc| response::json_value(StatusCode::OK, &doc))
                    .ok_or_else(ApiError::path_not_found)
            }
            Target::OpenApiV3Root => {
                negotiate(ctx.accept.as_deref(), Produces::JsonOnly)?;
                let set = ctx.apis.clone();
                Ok(response::json_value(StatusCode::OK, &set.openapi().root()))
            }
            Target::OpenApiV3 { group, version } => {
                negotiate(ctx.accept.as_deref(), Produces::JsonOnly)?;
                self.serve_openapi_v3(
                    &ctx,
                    group,
                    version,
                    header(header::IF_NONE_MATCH).as_deref(),
                )
            }
            // client-go asks for the protobuf form only; kubectl validates with it the kinds its
            // v3 lookup missed.
            Target::OpenApiV2 => {
                let protobuf = crate::codec::openapi_v2_protobuf(ctx.accept.as_deref())?;
                let set = ctx.apis.clone();
                let v2 = set.openapi().v2();
                Ok(match protobuf {
                    true => response::bytes_response(
                        StatusCode::OK,
                        crate::codec::OPENAPI_V2_PROTOBUF[1],
                        v2.protobuf.clone(),
                    ),
                    false => response::json_bytes(StatusCode::OK, v2.json.clone()),
                })
            }
            // Health and metrics were answered earlier.
            Target::Unknown | Target::Health(_) | Target::Metrics => {
                Err(ApiError::path_not_found())
            }
        }
    }

    /// Requests into a logical cluster that does not exist are refused, the same way as requests the
    /// caller may not make, so nobody learns which clusters exist. The privileged groups may address
    /// any cluster: that is how a new one comes into existence (by creating its LogicalCluster).
    async fn check_cluster_exists(&self, cluster: &str, user: &UserInfo) -> Result<(), ApiError> {
        if user
            .groups
            .iter()
            .any(|g| PRIVILEGED_GROUPS.contains(&g.as_str()))
        {
            return Ok(());
        }
        if self.logical_cluster_exists(cluster).await? {
            return Ok(());
        }
        Err(ApiError::new(
            kcp_apimachinery::status::Reason::Forbidden,
            "access not permitted",
        ))
    }

    /// Whether a logical cluster exists; a cluster the cache does not know yet is looked up again once
    /// the cache has caught up with every acknowledged write (it may have just been created).
    pub(crate) async fn logical_cluster_exists(&self, cluster: &str) -> Result<bool, ApiError> {
        Ok(self.logical_cluster(cluster).await?.is_some())
    }

    /// A logical cluster's LogicalCluster object, looked up as [`Self::logical_cluster_exists`] does.
    pub async fn logical_cluster(
        &self,
        cluster: &str,
    ) -> Result<Option<Arc<crate::watch_cache::CachedObject>>, ApiError> {
        let key = crate::registry::keyspaces::logical_cluster_key(cluster);
        let cache = self.registry.cache();
        if let Some(found) = cache.get(&key) {
            return Ok(Some(found));
        }
        cache
            .wait_fresh()
            .await
            .map_err(crate::registry::cache_error)?;
        Ok(cache.get(&key))
    }

    fn serve_discovery_root(&self, ctx: &RequestContext) -> Result<Response<Body>, ApiError> {
        let core = ctx.info.target == Target::CoreVersions;
        let set = ctx.apis.clone();
        match negotiate(ctx.accept.as_deref(), Produces::Discovery)? {
            Output::DiscoveryV2 { beta } => {
                let doc = set.aggregated(core, beta);
                let mut resp = response::json_value(StatusCode::OK, &doc);
                let ct = if beta {
                    V2BETA1_CONTENT_TYPE
                } else {
                    V2_CONTENT_TYPE
                };
                resp.headers_mut()
                    .insert(header::CONTENT_TYPE, http::HeaderValue::from_static(ct));
                Ok(resp)
            }
            _ if core => Ok(response::json_value(
                StatusCode::OK,
                &set.core_versions(&self.server_address),
            )),
            _ => Ok(response::json_value(StatusCode::OK, &set.group_list())),
        }
    }
}

/// `/version`: a Kubernetes version within kubectl 1.32's supported skew, marked as kcp-rs.
pub fn version() -> serde_json::Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": concat!("v1.33.0+kcp-rs-", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, match std::env::consts::ARCH { "x86_64" => "amd64", "aarch64" => "arm64", other => other }),
    })
}

/// `Ok` when `decision` allows `attrs`; else the 403 in Kubernetes' words, giving `reason` (when
/// given) whatever the authorizer said, and naming the caller as it acts there (a ServiceAccount
/// outside its own logical cluster is not the ServiceAccount of that one).
fn allowed(
    user: &UserInfo,
    attrs: &Attributes<'_>,
    decision: Decision,
    reason: Option<&str>,
) -> Result<(), ApiError> {
    let acting = || kcp_auth::authz::scope_user(user, attrs.cluster);
    match decision {
        Decision::Allow => Ok(()),
        Decision::Deny(said) => Err(forbidden(&acting(), attrs, reason.unwrap_or(&said))),
        Decision::NoOpinion => Err(forbidden(&acting(), attrs, reason.unwrap_or_default())),
    }
}

/// The namespace a request is authorized in. As in kube-apiserver, a Namespace object is in
/// itself: a RoleBinding in namespace `x` may grant `get` on namespace `x`.
fn authorized_namespace(r: &kcp_http::request_info::ResourceRequest) -> &str {
    match (&r.namespace, &r.name) {
        (Some(ns), _) => ns,
        (None, Some(name)) if r.group.is_empty() && r.resource == "namespaces" => name,
        _ => "",
    }
}

/// kcp's deep SubjectAccessReview: a `SubjectAccessReview` (not the local or self kinds) whose
/// caller, as it acts after impersonation, is in `system:masters` and which carries
/// `X-Kcp-Internal-Deep-SubjectAccessReview: true`. Anyone else's header means nothing.
fn is_deep_review(headers: &http::HeaderMap, user: &UserInfo, info: &RequestInfo) -> bool {
    let asked = headers
        .get(kcp_auth::authz::DEEP_SAR_HEADER)
        .is_some_and(|v| v.as_bytes() == b"true");
    let is_sar = matches!(&info.target, Target::Resource(r)
        if r.group == "authorization.k8s.io" && r.resource == "subjectaccessreviews");
    asked && is_sar && user.is_system_masters()
}

fn is_rbac(info: &RequestInfo) -> bool {
    matches!(&info.target, Target::Resource(r) if r.group == "rbac.authorization.k8s.io")
}

/// The request's authorization attributes; `lower_method` is the verb of a non-resource request.
pub(crate) fn attributes<'a>(
    user: &'a UserInfo,
    info: &'a RequestInfo,
    lower_method: &'a str,
) -> Attributes<'a> {
    match &info.target {
        Target::Resource(r) => Attributes {
            user: Some(user),
            cluster: info.cluster.as_str(),
            verb: &r.verb,
            resource_request: true,
            api_group: &r.group,
            api_version: &r.version,
            resource: &r.resource,
            subresource: r.subresource.as_deref().unwrap_or_default(),
            namespace: authorized_namespace(r),
            name: r.authorized_name(),
            path: &info.path,
            deep_review: false,
        },
        _ => Attributes {
            user: Some(user),
            cluster: info.cluster.as_str(),
            verb: lower_method,
            path: &info.path,
            ..Default::default()
        },
    }
}

/// What the handlers are given of a request once it is authorized.
fn context(
    parts: &http::request::Parts,
    info: RequestInfo,
    query: Query,
    user: UserInfo,
    deep_review: bool,
    apis: Arc<crate::discovery::ApiSet>,
) -> RequestContext {
    let header = |name: header::HeaderName| header_text(parts, name);
    RequestContext {
        user_agent: header(header::USER_AGENT),
        accept: header(header::ACCEPT),
        content_type: header(header::CONTENT_TYPE),
        info,
        query,
        user,
        deep_review,
        served: std::sync::OnceLock::new(),
        apis,
        required_labels: Vec::new(),
        virtual_workspace: false,
        update_check: None,
    }
}

fn header_text(parts: &http::request::Parts, name: header::HeaderName) -> Option<String> {
    (parts.headers.get(name))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Kubernetes' wording of an authorization refusal.
fn forbidden(user: &UserInfo, attrs: &Attributes<'_>, reason: &str) -> ApiError {
    let who = format!("User {:?}", user.name);
    let mut detail = if attrs.resource_request {
        let mut d = format!("{who} cannot {} resource {:?}", attrs.verb, attrs.resource);
        if !attrs.subresource.is_empty() {
            d = format!(
                "{who} cannot {} resource \"{}/{}\"",
                attrs.verb, attrs.resource, attrs.subresource
            );
        }
        d.push_str(&format!(" in API group {:?}", attrs.api_group));
        if !attrs.namespace.is_empty() {
            d.push_str(&format!(" in the namespace {:?}", attrs.namespace));
        } else {
            d.push_str(" at the cluster scope");
        }
        d
    } else {
        format!("{who} cannot {} path {:?}", attrs.verb, attrs.path)
    };
    if !reason.is_empty() {
        detail.push_str(&format!(": {reason}"));
    }
    if attrs.resource_request {
        ApiError::forbidden(attrs.api_group, attrs.resource, attrs.name, &detail)
    } else {
        ApiError::forbidden_path(&detail)
    }
}
