//! `/healthz`, `/livez` and `/readyz`, answered as kube-apiserver answers them: `ok`, or with
//! `?verbose` one line per check; a failing check makes the whole a 500 that lists every check
//! (its reason withheld: these paths need no credentials); `/readyz/<check>` asks one check, an
//! unknown one is 404; `?exclude=<check>` leaves checks out.
//!
//! The checks: `ping` and `log` (always pass); `etcd`, the store, whichever it is (etcd answers a
//! read within 2 s; the embedded store's last commit did not fail); for `/readyz` also
//! `informer-sync` (the watch cache follows the store) and `shutdown` (fails once the shard is
//! stopping, so load balancers send it nothing new). The store's answer is kept for a second, so
//! a flood of probes, which pass no in-flight bound, cannot flood the store.

use std::time::{Duration, Instant};

use http::{HeaderValue, Response, StatusCode, header};

use crate::ApiServer;
use kcp_http::query::Query;
use kcp_http::{Body, response};

/// kube-apiserver's `--etcd-healthcheck-timeout`.
const STORE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the store's answer is reused.
const STORE_ANSWER_TTL: Duration = Duration::from_secs(1);

/// The store's last answer: when, and why it failed if it did.
pub(crate) type StoreHealth = parking_lot::Mutex<Option<(Instant, Result<(), String>)>>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Healthz,
    Livez,
    Readyz,
}

impl Endpoint {
    fn name(self) -> &'static str {
        match self {
            Endpoint::Healthz => "healthz",
            Endpoint::Livez => "livez",
            Endpoint::Readyz => "readyz",
        }
    }

    fn checks(self) -> &'static [&'static str] {
        match self {
            Endpoint::Healthz | Endpoint::Livez => &["ping", "log", "etcd"],
            Endpoint::Readyz => &["ping", "log", "etcd", "informer-sync", "shutdown"],
        }
    }
}

impl ApiServer {
    /// Answers `path`: `readyz`, `readyz/etcd`, ... (a [`kcp_http::request_info::Target::Health`]).
    pub(super) async fn serve_health(&self, path: &str, query: &Query) -> Response<Body> {
        let (endpoint, check) = match path.split_once('/') {
            Some((endpoint, check)) => (endpoint, Some(check)),
            None => (path, None),
        };
        let endpoint = match endpoint {
            "healthz" => Endpoint::Healthz,
            "livez" => Endpoint::Livez,
            _ => Endpoint::Readyz,
        };
        if let Some(check) = check {
            if !endpoint.checks().contains(&check) {
                return plain(StatusCode::NOT_FOUND, "404 page not found\n".into());
            }
            return match self.health_check(check).await {
                Ok(()) => plain(StatusCode::OK, "ok".into()),
                Err(reason) => plain(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("internal server error: {reason}\n"),
                ),
            };
        }
        let mut excluded: Vec<&str> = query.all("exclude").collect();
        let mut lines = String::new();
        let mut failed = false;
        for &check in endpoint.checks() {
            if let Some(i) = excluded.iter().position(|e| *e == check) {
                excluded.remove(i);
                lines.push_str(&format!("[+]{check} excluded: ok\n"));
                continue;
            }
            match self.health_check(check).await {
                Ok(()) => lines.push_str(&format!("[+]{check} ok\n")),
                Err(reason) => {
                    tracing::warn!(check, %reason, endpoint = endpoint.name(), "health check failed");
                    failed = true;
                    lines.push_str(&format!("[-]{check} failed: reason withheld\n"));
                }
            }
        }
        if !excluded.is_empty() {
            let names: Vec<String> = excluded.iter().map(|e| format!("{e:?}")).collect();
            lines.push_str(&format!(
                "warn: some health checks cannot be excluded: no matches for {}\n",
                names.join(",")
            ));
        }
        let name = endpoint.name();
        if failed {
            // Always verbose on failure.
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("{lines}{name} check failed\n"),
            );
        }
        if query.get("verbose").is_none() {
            return plain(StatusCode::OK, "ok".into());
        }
        plain(StatusCode::OK, format!("{lines}{name} check passed\n"))
    }

    async fn health_check(&self, check: &str) -> Result<(), String> {
        match check {
            "etcd" => self.store_health().await,
            "informer-sync" if !self.registry.cache().is_following() => {
                Err("the watch cache is loading from the store again".into())
            }
            "shutdown" if self.shutdown.is_cancelled() => Err("the shard is stopping".into()),
            _ => Ok(()),
        }
    }

    async fn store_health(&self) -> Result<(), String> {
        if let Some((at, answer)) = self.store_health.lock().as_ref()
            && at.elapsed() < STORE_ANSWER_TTL
        {
            return answer.clone();
        }
        let answer = match tokio::time::timeout(STORE_TIMEOUT, self.config.store.health()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(err)) => Err(err.to_string()),
            Err(_) => Err(format!("no answer within {STORE_TIMEOUT:?}")),
        };
        *self.store_health.lock() = Some((Instant::now(), answer.clone()));
        answer
    }
}

fn plain(code: StatusCode, text: String) -> Response<Body> {
    let mut resp = response::bytes_response(code, "text/plain; charset=utf-8", text);
    resp.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}
