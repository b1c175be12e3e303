//! Reading a bearer token from the `Authorization` header, as Kubernetes' bearertoken authenticator does.

/// The token of `Authorization: Bearer <token>` (scheme case-insensitive), or `None` when the header is
/// absent, of another scheme, or carries an empty token. Anything after a second space is ignored, as
/// upstream ignores it.
pub fn bearer_token(parts: &http::request::Parts) -> Option<&str> {
    let value = parts
        .headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim();
    let mut fields = value.splitn(3, ' ');
    let scheme = fields.next()?;
    let token = fields.next()?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return None;
    }
    Some(token)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn parts(authorization: Option<&str>) -> http::request::Parts {
        let mut builder = http::Request::builder();
        if let Some(value) = authorization {
            builder = builder.header(http::header::AUTHORIZATION, value);
        }
        builder.body(()).unwrap().into_parts().0
    }

    #[test]
    fn reads_bearer_tokens() {
        assert_eq!(bearer_token(&parts(Some("Bearer abc"))), Some("abc"));
        assert_eq!(bearer_token(&parts(Some("bearer abc"))), Some("abc"));
        assert_eq!(bearer_token(&parts(Some("BEARER abc"))), Some("abc"));
        assert_eq!(bearer_token(&parts(Some("  Bearer abc  "))), Some("abc"));
        assert_eq!(bearer_token(&parts(Some("Bearer abc def"))), Some("abc"));
    }

    #[test]
    fn ignores_other_schemes_and_empty_tokens() {
        assert_eq!(bearer_token(&parts(None)), None);
        assert_eq!(bearer_token(&parts(Some("Basic YTpi"))), None);
        assert_eq!(bearer_token(&parts(Some("Bearer"))), None);
        assert_eq!(bearer_token(&parts(Some("Bearer  abc"))), None);
        assert_eq!(bearer_token(&parts(Some("Bearerabc"))), None);
    }
}
