//! Building HTTP responses: JSON documents, Status errors, and the encodings clients ask for.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use kcp_apimachinery::status::ApiError;
use serde_json::Value;

use crate::Body;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

pub fn bytes_response(
    code: StatusCode,
    content_type: &'static str,
    bytes: impl Into<Bytes>,
) -> Response<Body> {
    let mut resp = Response::new(full(bytes));
    *resp.status_mut() = code;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    resp
}

pub fn json_bytes(code: StatusCode, bytes: impl Into<Bytes>) -> Response<Body> {
    bytes_response(code, "application/json", bytes)
}

pub fn json_value(code: StatusCode, value: &Value) -> Response<Body> {
    match serde_json::to_vec(value) {
        Ok(bytes) => json_bytes(code, bytes),
        Err(err) => error(&ApiError::internal(err)),
    }
}

pub fn yaml_value(code: StatusCode, value: &Value) -> Response<Body> {
    match serde_saphyr::to_string(value) {
        Ok(text) => bytes_response(code, "application/yaml", text),
        Err(err) => error(&ApiError::internal(err)),
    }
}

pub fn text(code: StatusCode, body: &'static str) -> Response<Body> {
    bytes_response(code, "text/plain; charset=utf-8", body)
}

/// The one rendering of errors: a `metav1.Status` with the matching HTTP code.
pub fn error(err: &ApiError) -> Response<Body> {
    let code = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = match serde_json::to_vec(&err.to_status()) {
        Ok(bytes) => json_bytes(code, bytes),
        Err(_) => text(StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
    };
    if let Some(secs) = err.details.retry_after_seconds
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// Adds `Warning: 299 - "<text>"` headers, as kube-apiserver reports field-validation warnings.
pub fn add_warnings(resp: &mut Response<Body>, warnings: &[String]) {
    // Each text once, as kube-apiserver's recorder keeps them (a write retried after a conflict
    // warns again).
    let mut seen = std::collections::HashSet::new();
    for w in warnings.iter().filter(|w| seen.insert(w.as_str())) {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
}
