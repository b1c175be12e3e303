//! In-cluster clients: a ServiceAccount that talks to the default Kubernetes service address
//! (client-go's in-cluster config) cannot add `/clusters/<name>` to its paths, so a request without
//! that prefix, authenticated by a ServiceAccount token, is served in the account's own logical
//! cluster, as kcp does. Any other caller on such a path keeps the top-level view.

use std::sync::Arc;

use kcp_auth::authn::service_account::CLUSTER_NAME_EXTRA;
use kcp_auth::{Authenticator, UserInfo};

use crate::ApiServer;
use kcp_http::request_info::{self, ClusterTarget, RequestInfo, VerbHints};

/// Requests a shard sends to another for a sharded operation carry this header; kcp does not
/// reroute them, and neither do we.
const SHARDED_REQUEST_HEADER: &str = "x-kubernetes-sharded-request";

impl ApiServer {
    /// `info` re-parsed under `/clusters/<lc>` when the request is a ServiceAccount's on a path
    /// without a cluster, `lc` being the account's; otherwise `info` unchanged. `authenticated_by`
    /// is the authenticator that recognised `user`.
    pub(super) fn in_cluster(
        &self,
        parts: &http::request::Parts,
        user: &UserInfo,
        authenticated_by: &Arc<dyn Authenticator>,
        info: RequestInfo,
        hints: VerbHints,
    ) -> RequestInfo {
        if info.cluster != ClusterTarget::None || parts.headers.contains_key(SHARDED_REQUEST_HEADER)
        {
            return info;
        }
        let Some(tokens) = &self.config.service_account_tokens else {
            return info;
        };
        // The caller must be the ServiceAccount of a token our authenticator verified (not, say, a
        // client certificate that also sent one, nor an identity a front proxy asserted); the
        // account's cluster is then in the user it made.
        if !std::ptr::addr_eq(
            Arc::as_ptr(authenticated_by),
            Arc::as_ptr(&tokens.authenticator),
        ) {
            return info;
        }
        let Some([cluster]) = user.extra.get(CLUSTER_NAME_EXTRA).map(Vec::as_slice) else {
            return info;
        };
        let Some(decoded) = request_info::decode_path(parts.uri.path()) else {
            return info;
        };
        let path = format!("/clusters/{cluster}{decoded}");
        request_info::parse(&parts.method, &path, hints)
    }
}
