//! `/openapi/v3/<group-version>` served for caching as kube-apiserver serves it: each document
//! carries its hash as ETag (a matching `If-None-Match` is a 304); asked for by the hash the root
//! document lists, it never changes (`Cache-Control: public, immutable`), so kubectl's HTTP cache
//! keeps it instead of fetching it on every `apply` or `explain`; asked for by an outdated hash,
//! the client is sent (301) to the current one.

use http::{HeaderValue, Response, StatusCode, header};
use kcp_apimachinery::status::ApiError;

use super::RequestContext;
use crate::ApiServer;
use kcp_http::request_info::ClusterTarget;
use kcp_http::{Body, response};

/// How long an immutable document may be kept: kube-apiserver's year.
const IMMUTABLE_FOR: chrono::TimeDelta = chrono::TimeDelta::days(365);

impl ApiServer {
    pub(super) fn serve_openapi_v3(
        &self,
        ctx: &RequestContext,
        group: &str,
        version: &str,
        if_none_match: Option<&str>,
    ) -> Result<Response<Body>, ApiError> {
        let (bytes, hash) = ctx
            .apis
            .openapi()
            .group_version(group, version)
            .ok_or_else(ApiError::path_not_found)?;
        let etag = format!("\"{hash}\"");
        let asked = ctx.query.get("hash").filter(|h| !h.is_empty());
        if let Some(asked) = asked
            && asked != hash
        {
            let prefix = match &ctx.info.cluster {
                ClusterTarget::Name(name) => format!("/clusters/{name}"),
                _ => String::new(),
            };
            let location = format!("{prefix}{}?hash={hash}", ctx.info.path);
            let mut resp = response::text(StatusCode::MOVED_PERMANENTLY, "");
            if let Ok(value) = HeaderValue::from_str(&location) {
                resp.headers_mut().insert(header::LOCATION, value);
            }
            return Ok(resp);
        }
        let mut resp = if if_none_match.is_some_and(|tags| matches_etag(tags, &etag)) {
            let mut resp = Response::new(response::full(bytes::Bytes::new()));
            *resp.status_mut() = StatusCode::NOT_MODIFIED;
            resp
        } else {
            response::json_bytes(StatusCode::OK, bytes)
        };
        let headers = resp.headers_mut();
        if let Ok(value) = HeaderValue::from_str(&etag) {
            headers.insert(header::ETAG, value);
        }
        if asked.is_some() {
            headers.insert(header::VARY, HeaderValue::from_static("Accept"));
            headers.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, immutable"),
            );
            let expires = (chrono::Utc::now() + IMMUTABLE_FOR)
                .format("%a, %d %b %Y %H:%M:%S GMT")
                .to_string();
            if let Ok(value) = HeaderValue::from_str(&expires) {
                headers.insert(header::EXPIRES, value);
            }
        }
        Ok(resp)
    }
}

/// Whether an `If-None-Match` list names `etag` (or is `*`).
fn matches_etag(tags: &str, etag: &str) -> bool {
    tags.split(',')
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == "*" || t == etag)
}

#[cfg(test)]
mod tests {
    use super::matches_etag;

    #[test]
    fn if_none_match_lists() {
        assert!(matches_etag("\"abc\"", "\"abc\""));
        assert!(matches_etag("\"x\", W/\"abc\"", "\"abc\""));
        assert!(matches_etag("*", "\"abc\""));
        assert!(!matches_etag("\"abd\"", "\"abc\""));
    }
}
