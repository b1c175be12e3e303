//! In-cluster clients: a ServiceAccount that talks to the default Kubernetes service address
//! (client-go's in-cluster config) cannot add `/clusters/<name>` to its paths, so a request without
//! that prefix, authenticated by a ServiceAccount token, is served in the account's own logical
//! cluster, as kcp does. Any other caller on such a path keeps the top-level view.

use kcp_auth::UserInfo;
use kcp_auth::authn::service_account::CLUSTER_NAME_EXTRA;

use crate::ApiServer;
use crate::request_info::{self, ClusterTarget, RequestInfo, VerbHints};

/// Requests a shard sends to another for a sharded operation carry this header; kcp does not
/// reroute them, and neither do we.
const SHARDED_REQUEST_HEADER: &str = "x-kubernetes-sharded-request";

impl ApiServer {
    /// `info` re-parsed under `/clusters/<lc>` when the request is a ServiceAccount's on a path
    /// without a cluster, `lc` being the account's; otherwise `info` unchanged.
    pub(super) fn in_cluster(
        &self,
        parts: &http::request::Parts,
        user: &UserInfo,
        info: RequestInfo,
        hints: VerbHints,
    ) -> RequestInfo {
        if info.cluster != ClusterTarget::None
            || info.is_health()
            || parts.headers.contains_key(SHARDED_REQUEST_HEADER)
        {
            return info;
        }
        let Some(tokens) = &self.config.service_account_tokens else {
            return info;
        };
        // Only a ServiceAccount's requests are rerouted: the cheap look at the user first, so
        // other callers never pay for a token check.
        let home = match user.extra.get(CLUSTER_NAME_EXTRA).map(Vec::as_slice) {
            Some([home]) if user.name.starts_with("system:serviceaccount:") => home,
            _ => return info,
        };
        // The caller must be the ServiceAccount of the token (not, say, a client certificate that
        // also sent one), and the token is checked again rather than its claims trusted.
        let Some(cluster) = tokens.authenticator.cluster_of(parts) else {
            return info;
        };
        if *home != cluster {
            return info;
        }
        let path = format!("/clusters/{cluster}{}", parts.uri.path());
        request_info::parse(&parts.method, &path, hints)
    }
}
