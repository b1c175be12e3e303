//! `GET /metrics` at the top level: authorized, as kcp does, by RBAC of `root` alone (a
//! `nonResourceURLs` grant such as ClusterRole `system:kcp:metrics-reader` is enough; no access
//! to the workspace is needed). Under `/clusters/<name>/` the handler answers 501 before this.

use http::{Method, Response, StatusCode};
use kcp_api_types::tenancy::{PHASE_LABEL, ROOT};
use kcp_apimachinery::status::ApiError;
use kcp_auth::{Attributes, UserInfo};

use crate::ApiServer;
use crate::metrics::ScrapeInputs;
use crate::registry::keyspace;
use kcp_http::{Body, response};

/// The OpenMetrics text format, which Prometheus reads (and asks for first).
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

impl ApiServer {
    pub(super) fn serve_metrics(
        &self,
        user: &UserInfo,
        method: &Method,
    ) -> Result<Response<Body>, ApiError> {
        let verb = method.as_str().to_ascii_lowercase();
        self.check(
            user,
            &Attributes {
                user: Some(user),
                cluster: ROOT,
                verb: &verb,
                path: "/metrics",
                // What root's RBAC grants, without the workspace access gate.
                deep_review: true,
                ..Attributes::default()
            },
        )?;
        let text = self.metrics.scrape(ScrapeInputs {
            in_flight: self.in_flight.in_use(),
            logical_clusters: self.count_by_phase("core.kcp.io", "logicalclusters"),
            workspaces: self.count_by_phase("tenancy.kcp.io", "workspaces"),
        });
        Ok(response::bytes_response(StatusCode::OK, CONTENT_TYPE, text))
    }

    /// How many objects of a kind this shard holds in each phase (by the phase label, which follows
    /// the status; `""` before the first phase).
    fn count_by_phase(&self, group: &str, plural: &str) -> Vec<(String, i64)> {
        let Some(def) = self.builtin(group, plural) else {
            return Vec::new();
        };
        let objects = self
            .registry()
            .cache()
            .list(keyspace(&def).all_clusters(), None);
        let mut counts: Vec<(String, i64)> = Vec::new();
        for object in &objects {
            let phase = object.labels.get(PHASE_LABEL).unwrap_or_default();
            match counts.iter_mut().find(|(p, _)| p == phase) {
                Some((_, n)) => *n += 1,
                None => counts.push((phase.to_string(), 1)),
            }
        }
        counts
    }
}
