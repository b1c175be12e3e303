//! How long a request may take, as kube-apiserver's timeout filter bounds it.

use std::time::Duration;

use http::Method;

use crate::query::Query;

/// kube-apiserver's default request timeout for requests that are not long-running.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a request may take: `None` for a watch (long-running: a GET asking to watch), else
/// the request timeout or the shorter one its `timeout` parameter asks for (a Go duration such as
/// `30s`). Any other request asking to watch is bounded like any other.
pub fn request_deadline(method: &Method, path: &str, query: &Query) -> Option<Duration> {
    if *method == Method::GET && (query.flag("watch") || path.contains("/watch/")) {
        return None;
    }
    let asked = query.get("timeout").and_then(go_duration);
    Some(asked.map_or(REQUEST_TIMEOUT, |d| d.min(REQUEST_TIMEOUT)))
}

/// A Go duration made of numbers with units (`1m30s`, `500ms`); `None` when it is not one.
pub fn go_duration(text: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit() && c != '.')?;
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += Duration::try_from_secs_f64(number * seconds).ok()?;
        rest = &rest[unit_len..];
    }
    (!text.is_empty()).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_have_no_deadline_others_the_shorter() {
        let uri = |s: &str| s.parse::<http::Uri>().expect("a URI");
        let request_deadline =
            |uri: http::Uri| request_deadline(&Method::GET, uri.path(), &Query::parse(uri.query()));
        assert_eq!(
            request_deadline(uri("/clusters/root/api/v1/configmaps?watch=true")),
            None
        );
        assert_eq!(
            request_deadline(uri("/clusters/root/api/v1/watch/configmaps")),
            None
        );
        assert_eq!(
            request_deadline(uri("/clusters/root/api/v1/configmaps")),
            Some(REQUEST_TIMEOUT)
        );
        assert_eq!(
            request_deadline(uri("/clusters/root/api/v1/configmaps?timeout=1m30s")),
            Some(REQUEST_TIMEOUT)
        );
        assert_eq!(
            request_deadline(uri("/x?timeout=1500ms")),
            Some(Duration::from_millis(1500))
        );
        // Only a GET watches: a write asking to is bounded as any write.
        assert_eq!(
            super::request_deadline(
                &Method::POST,
                "/clusters/root/api/v1/configmaps",
                &Query::parse(Some("watch=1"))
            ),
            Some(REQUEST_TIMEOUT)
        );
        assert_eq!(go_duration("10x"), None);
        assert_eq!(go_duration(""), None);
    }
}
