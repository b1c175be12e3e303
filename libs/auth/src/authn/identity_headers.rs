//! The request headers that assert an identity (`X-Remote-User`, `X-Remote-Group`,
//! `X-Remote-Extra-*` and whatever `--requestheader-*` names), removed from every request once it
//! is authenticated. Only a trusted front proxy may send them, and its assertion has been turned
//! into the request's user by then; anyone else's are forgeries. Either way nothing after
//! authentication (impersonation, forwarding, audit, webhooks) may see them and trust them.
//! Kubernetes' request-header authenticator clears them the same way after reading them.

use http::{HeaderMap, HeaderName};

use crate::authn::request_header::{
    DEFAULT_EXTRA_HEADERS_PREFIX, RequestHeaderError, RequestHeaderNames,
};

/// The identity headers a server strips: the defaults and the configured names alike, so a
/// server configured with other names still drops a forged `X-Remote-User`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityHeaders {
    names: Vec<HeaderName>,
    /// Lower-cased, as `http` keeps header names.
    prefixes: Vec<String>,
}

impl Default for IdentityHeaders {
    fn default() -> Self {
        // `DEFAULT_USERNAME_HEADER` and `DEFAULT_GROUP_HEADER`, in the lower case `http` keeps.
        IdentityHeaders {
            names: vec![
                HeaderName::from_static("x-remote-user"),
                HeaderName::from_static("x-remote-group"),
            ],
            prefixes: vec![DEFAULT_EXTRA_HEADERS_PREFIX.to_ascii_lowercase()],
        }
    }
}

impl IdentityHeaders {
    /// The defaults plus `configured`.
    pub fn new(configured: &RequestHeaderNames) -> Result<IdentityHeaders, RequestHeaderError> {
        let mut out = IdentityHeaders::default();
        let configured = configured.parse()?;
        for name in configured
            .username_headers
            .into_iter()
            .chain(configured.group_headers)
        {
            if !out.names.contains(&name) {
                out.names.push(name);
            }
        }
        for prefix in configured.extra_prefixes {
            if !out.prefixes.contains(&prefix) {
                out.prefixes.push(prefix);
            }
        }
        Ok(out)
    }

    /// Removes every identity header from `headers`.
    pub fn strip(&self, headers: &mut HeaderMap) {
        for name in &self.names {
            headers.remove(name);
        }
        let extras: Vec<HeaderName> = headers
            .keys()
            .filter(|name| {
                self.prefixes
                    .iter()
                    .any(|prefix| name.as_str().starts_with(prefix.as_str()))
            })
            .cloned()
            .collect();
        for name in extras {
            headers.remove(name);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    fn names(map: &HeaderMap) -> Vec<&str> {
        let mut names: Vec<&str> = map.keys().map(HeaderName::as_str).collect();
        names.sort();
        names
    }

    #[test]
    fn defaults_strip_kubernetes_names_only() {
        let mut map = headers(&[
            ("X-Remote-User", "mallory"),
            ("X-Remote-Group", "system:masters"),
            ("x-remote-group", "system:kcp:admin"),
            ("X-Remote-Extra-Scopes", "cluster:x"),
            ("X-Remote-Extra-Authentication.kcp.io%2Fscopes", "cluster:y"),
            ("Authorization", "Bearer t"),
            ("Impersonate-User", "bob"),
            ("X-Remote-Userx", "kept: not an identity header"),
        ]);
        IdentityHeaders::default().strip(&mut map);
        assert_eq!(
            names(&map),
            ["authorization", "impersonate-user", "x-remote-userx"]
        );
    }

    #[test]
    fn configured_names_add_to_the_defaults() {
        let configured = RequestHeaderNames {
            username_headers: vec!["X-User".into(), " ".into()],
            group_headers: vec!["X-Group".into()],
            extra_headers_prefixes: vec!["X-Extra-".into()],
        };
        let strip = IdentityHeaders::new(&configured).unwrap();
        let mut map = headers(&[
            ("x-user", "a"),
            ("X-Group", "b"),
            ("X-Extra-Foo", "c"),
            ("X-Remote-User", "d"),
            ("X-Remote-Extra-Foo", "e"),
            ("Accept", "application/json"),
        ]);
        strip.strip(&mut map);
        assert_eq!(names(&map), ["accept"]);

        let bad = RequestHeaderNames {
            username_headers: vec!["bad header".into()],
            ..RequestHeaderNames::default()
        };
        assert!(IdentityHeaders::new(&bad).is_err());
    }
}
