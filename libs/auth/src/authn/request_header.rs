//! Identities asserted in request headers by a trusted front proxy (`--requestheader-*`), as Kubernetes'
//! headerrequest authenticator: `X-Remote-User` names the user, every `X-Remote-Group` value is a group,
//! and `X-Remote-Extra-<key>` headers are extra values (the key percent-decoded and lower-cased).
//!
//! Only a client whose certificate chain leads to the request-header CA — not the ordinary client CA —
//! and whose CN is one of the allowed names (when any are configured) may assert an identity this way.
//! Anyone else's headers are ignored here; the server removes them from every request once it is
//! authenticated ([`IdentityHeaders`](crate::authn::IdentityHeaders)), so nothing after
//! authentication can trust them.

use std::collections::BTreeMap;

use http::HeaderName;
use rustls_pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::authn::{AUTHENTICATED_GROUP, Authenticator, AuthnResult, CaBundle, UserInfo};

pub const DEFAULT_USERNAME_HEADER: &str = "X-Remote-User";
pub const DEFAULT_GROUP_HEADER: &str = "X-Remote-Group";
pub const DEFAULT_EXTRA_HEADERS_PREFIX: &str = "X-Remote-Extra-";

#[derive(Debug, thiserror::Error)]
pub enum RequestHeaderError {
    #[error("invalid request header name {0:?}")]
    HeaderName(String),
    #[error("no username header configured")]
    NoUsernameHeader,
}

/// Which headers carry the identity; header names are case-insensitive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestHeaderNames {
    /// The first of these headers with a non-empty value names the user.
    pub username_headers: Vec<String>,
    /// Every non-empty value of every one of these headers is a group.
    pub group_headers: Vec<String>,
    /// Headers starting with one of these prefixes carry extra values.
    pub extra_headers_prefixes: Vec<String>,
}

/// [`RequestHeaderNames`] checked: blank entries skipped, the rest valid header names, the extra
/// prefixes lower-cased as `http` keeps header names.
pub(crate) struct ParsedHeaderNames {
    pub(crate) username_headers: Vec<HeaderName>,
    pub(crate) group_headers: Vec<HeaderName>,
    pub(crate) extra_prefixes: Vec<String>,
}

impl RequestHeaderNames {
    pub(crate) fn parse(&self) -> Result<ParsedHeaderNames, RequestHeaderError> {
        let parse = |names: &[String]| {
            names
                .iter()
                .map(|n| n.trim())
                .filter(|n| !n.is_empty())
                .map(|n| {
                    HeaderName::try_from(n)
                        .map_err(|_| RequestHeaderError::HeaderName(n.to_string()))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let extra_prefixes = self
            .extra_headers_prefixes
            .iter()
            .map(|p| p.trim())
            .filter(|p| !p.is_empty())
            .map(|p| {
                // A prefix must itself be a valid header name start; checking it whole is close enough.
                HeaderName::try_from(p)
                    .map(|_| p.to_ascii_lowercase())
                    .map_err(|_| RequestHeaderError::HeaderName(p.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ParsedHeaderNames {
            username_headers: parse(&self.username_headers)?,
            group_headers: parse(&self.group_headers)?,
            extra_prefixes,
        })
    }
}

impl Default for RequestHeaderNames {
    fn default() -> Self {
        RequestHeaderNames {
            username_headers: vec![DEFAULT_USERNAME_HEADER.to_string()],
            group_headers: vec![DEFAULT_GROUP_HEADER.to_string()],
            extra_headers_prefixes: vec![DEFAULT_EXTRA_HEADERS_PREFIX.to_string()],
        }
    }
}

/// Authenticates requests of a trusted front proxy by the identity it asserts in headers.
#[derive(Debug)]
pub struct RequestHeaderAuthenticator {
    ca: CaBundle,
    allowed_names: Vec<String>,
    username_headers: Vec<HeaderName>,
    group_headers: Vec<HeaderName>,
    /// Lower-cased, as `http` keeps header names.
    extra_prefixes: Vec<String>,
}

impl RequestHeaderAuthenticator {
    /// `ca`: the request-header CA (`--requestheader-client-ca-file`). `allowed_names`: the CNs a proxy
    /// certificate may have (`--requestheader-allowed-names`); empty allows any CN the CA signed.
    pub fn new(
        ca: CaBundle,
        allowed_names: Vec<String>,
        names: RequestHeaderNames,
    ) -> Result<RequestHeaderAuthenticator, RequestHeaderError> {
        let names = names.parse()?;
        if names.username_headers.is_empty() {
            return Err(RequestHeaderError::NoUsernameHeader);
        }
        Ok(RequestHeaderAuthenticator {
            ca,
            allowed_names: allowed_names
                .into_iter()
                .filter(|n| !n.is_empty())
                .collect(),
            username_headers: names.username_headers,
            group_headers: names.group_headers,
            extra_prefixes: names.extra_prefixes,
        })
    }

    /// Whether the peer is a front proxy we trust to assert identities.
    fn trusts(&self, peer_certificates: &[CertificateDer<'static>]) -> bool {
        let Some(leaf) = peer_certificates.first() else {
            return false;
        };
        if !self.ca.verifies(peer_certificates) {
            return false;
        }
        if self.allowed_names.is_empty() {
            return true;
        }
        let Ok((_, cert)) = X509Certificate::from_der(leaf.as_ref()) else {
            return false;
        };
        // The last CN, as Go's subject keeps it.
        let cn = cert
            .subject()
            .iter_common_name()
            .last()
            .and_then(|cn| cn.as_str().ok());
        cn.is_some_and(|cn| self.allowed_names.iter().any(|n| n == cn))
    }

    /// The extra key a header carries, if it has one of the extra prefixes. As upstream, the name is
    /// lower-cased (`http` keeps it so) before it is percent-decoded, so escapes may carry capitals.
    fn extra_key(&self, name: &HeaderName) -> Option<String> {
        let name = name.as_str();
        self.extra_prefixes
            .iter()
            .find_map(|prefix| name.strip_prefix(prefix.as_str()))
            .map(percent_decode)
    }
}

impl Authenticator for RequestHeaderAuthenticator {
    fn authenticate(
        &self,
        parts: &http::request::Parts,
        peer_certificates: &[CertificateDer<'static>],
    ) -> AuthnResult {
        if !self.trusts(peer_certificates) {
            // Not a proxy: its X-Remote-* headers mean nothing, and its certificate or token decides.
            return AuthnResult::NoCredential;
        }
        let headers = &parts.headers;
        let Some(name) = self.username_headers.iter().find_map(|h| {
            headers
                .get(h)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .filter(|v| !v.is_empty())
        }) else {
            // A proxy calling on its own behalf: its certificate may still name it.
            return AuthnResult::NoCredential;
        };
        let mut groups: Vec<String> = self
            .group_headers
            .iter()
            .flat_map(|h| headers.get_all(h))
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .filter(|v| !v.is_empty())
            .collect();
        if !groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
            groups.push(AUTHENTICATED_GROUP.to_string());
        }
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (header, value) in headers {
            if let Some(key) = self.extra_key(header) {
                extra
                    .entry(key)
                    .or_default()
                    .push(String::from_utf8_lossy(value.as_bytes()).into_owned());
            }
        }
        AuthnResult::Authenticated(UserInfo {
            name,
            uid: String::new(),
            groups,
            extra,
        })
    }
}

/// `%XX` escapes decoded, as Go's `url.PathUnescape`; a key that does not decode (a bad escape, or
/// bytes that are not UTF-8) is kept as sent, as upstream keeps it.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => return s.to_string(),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use crate::authn::X509Authenticator;
    use crate::authn::ca_bundle::test_pki::TestCa;
    use crate::authn::chain::authenticate_chain;
    use std::sync::Arc;

    struct Setup {
        client_ca: TestCa,
        proxy_ca: TestCa,
    }

    impl Setup {
        fn new() -> Setup {
            Setup {
                client_ca: TestCa::new("client-ca"),
                proxy_ca: TestCa::new("requestheader-ca"),
            }
        }

        fn authenticator(&self, allowed: &[&str]) -> RequestHeaderAuthenticator {
            RequestHeaderAuthenticator::new(
                CaBundle::from_pem(self.proxy_ca.pem.as_bytes()).unwrap(),
                allowed.iter().map(|s| s.to_string()).collect(),
                RequestHeaderNames::default(),
            )
            .unwrap()
        }

        /// The shard's order: request headers, then the client certificate.
        fn chain(&self, allowed: &[&str]) -> Vec<Arc<dyn Authenticator>> {
            vec![
                Arc::new(self.authenticator(allowed)),
                Arc::new(X509Authenticator::new(
                    CaBundle::from_pem(self.client_ca.pem.as_bytes()).unwrap(),
                )),
            ]
        }
    }

    fn request(headers: &[(&str, &str)]) -> http::request::Parts {
        let mut builder = http::Request::builder();
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(()).unwrap().into_parts().0
    }

    fn forged() -> http::request::Parts {
        request(&[
            ("X-Remote-User", "mallory"),
            ("X-Remote-Group", "system:masters"),
            ("X-Remote-Extra-Scopes", "x"),
        ])
    }

    #[test]
    fn a_trusted_proxy_asserts_user_groups_and_extra() {
        let setup = Setup::new();
        let parts = request(&[
            ("x-remote-user", "alice"),
            ("X-Remote-Group", "team-a"),
            ("X-Remote-Group", "system:masters"),
            ("X-Remote-Group", ""),
            ("X-Remote-Extra-Authentication.kcp.io%2fScopes", "cluster:a"),
            ("X-Remote-Extra-authentication.kcp.io%2fscopes", "cluster:b"),
            ("X-Remote-Extra-Bad%zz", "kept"),
        ]);
        let proxy = setup.proxy_ca.client("front-proxy", None);
        let AuthnResult::Authenticated(user) = setup
            .authenticator(&["front-proxy"])
            .authenticate(&parts, &[proxy])
        else {
            panic!("expected a user");
        };
        assert_eq!(user.name, "alice");
        assert_eq!(
            user.groups,
            ["team-a", "system:masters", AUTHENTICATED_GROUP]
        );
        assert_eq!(
            user.extra.get("authentication.kcp.io/scopes").unwrap(),
            &["cluster:a", "cluster:b"]
        );
        assert_eq!(user.extra.get("bad%zz").unwrap(), &["kept"]);
    }

    #[test]
    fn any_cn_when_no_names_are_allowed_explicitly() {
        let setup = Setup::new();
        let proxy = setup.proxy_ca.client("whatever", None);
        assert!(matches!(
            setup.authenticator(&[]).authenticate(&forged(), &[proxy]),
            AuthnResult::Authenticated(u) if u.name == "mallory"
        ));
    }

    #[test]
    fn a_proxy_certificate_with_another_cn_is_not_trusted() {
        let setup = Setup::new();
        let proxy = setup.proxy_ca.client("not-the-proxy", None);
        assert_eq!(
            setup
                .authenticator(&["front-proxy"])
                .authenticate(&forged(), std::slice::from_ref(&proxy)),
            AuthnResult::NoCredential
        );
        // Nor does the x509 authenticator know it: nobody authenticates the request.
        assert_eq!(
            authenticate_chain(&setup.chain(&["front-proxy"]), &forged(), &[proxy]),
            AuthnResult::NoCredential
        );
    }

    #[test]
    fn headers_from_an_ordinary_client_certificate_are_ignored() {
        let setup = Setup::new();
        // Even with the proxy's CN: the ordinary client CA does not vouch for proxies.
        let client = setup.client_ca.client("front-proxy", Some("team-b"));
        assert_eq!(
            setup
                .authenticator(&["front-proxy"])
                .authenticate(&forged(), std::slice::from_ref(&client)),
            AuthnResult::NoCredential
        );
        let AuthnResult::Authenticated(user) =
            authenticate_chain(&setup.chain(&["front-proxy"]), &forged(), &[client])
        else {
            panic!("expected the certificate's user");
        };
        assert_eq!(user.name, "front-proxy");
        assert_eq!(user.groups, ["team-b", AUTHENTICATED_GROUP]);
        assert!(user.extra.is_empty());
    }

    #[test]
    fn headers_without_any_certificate_are_ignored() {
        let setup = Setup::new();
        assert_eq!(
            authenticate_chain(&setup.chain(&[]), &forged(), &[]),
            AuthnResult::NoCredential
        );
    }

    #[test]
    fn a_proxy_without_user_header_falls_through() {
        let setup = Setup::new();
        let proxy = setup.proxy_ca.client("front-proxy", None);
        assert_eq!(
            setup
                .authenticator(&["front-proxy"])
                .authenticate(&request(&[("X-Remote-Group", "g")]), &[proxy]),
            AuthnResult::NoCredential
        );
    }

    #[test]
    fn configured_header_names() {
        let setup = Setup::new();
        let authn = RequestHeaderAuthenticator::new(
            CaBundle::from_pem(setup.proxy_ca.pem.as_bytes()).unwrap(),
            vec![],
            RequestHeaderNames {
                username_headers: vec!["X-User".into(), "X-Fallback-User".into()],
                group_headers: vec!["X-Groups".into()],
                extra_headers_prefixes: vec!["X-Extra-".into()],
            },
        )
        .unwrap();
        let parts = request(&[
            ("X-User", ""),
            ("X-Fallback-User", "bob"),
            ("X-Groups", "g1"),
            ("X-Remote-Group", "ignored"),
            ("X-Extra-Foo", "bar"),
        ]);
        let proxy = setup.proxy_ca.client("p", None);
        let AuthnResult::Authenticated(user) = authn.authenticate(&parts, &[proxy]) else {
            panic!("expected a user");
        };
        assert_eq!(user.name, "bob");
        assert_eq!(user.groups, ["g1", AUTHENTICATED_GROUP]);
        assert_eq!(user.extra.get("foo").unwrap(), &["bar"]);

        assert!(matches!(
            RequestHeaderAuthenticator::new(
                CaBundle::from_pem(setup.proxy_ca.pem.as_bytes()).unwrap(),
                vec![],
                RequestHeaderNames {
                    username_headers: vec!["bad header".into()],
                    ..RequestHeaderNames::default()
                },
            ),
            Err(RequestHeaderError::HeaderName(_))
        ));
    }

    #[test]
    fn strips_identity_headers() {
        let mut parts = forged();
        parts.headers.insert("x-other", "kept".parse().unwrap());
        // The server strips them with IdentityHeaders, built from the names the authenticator reads.
        crate::authn::IdentityHeaders::new(&RequestHeaderNames::default())
            .unwrap()
            .strip(&mut parts.headers);
        let left: Vec<_> = parts.headers.keys().map(|k| k.as_str()).collect();
        assert_eq!(left, ["x-other"]);
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%2Fb"), "a/b");
        assert_eq!(percent_decode("plain"), "plain");
        assert_eq!(percent_decode("bad%2"), "bad%2");
        assert_eq!(percent_decode("bad%ff"), "bad%ff");
    }
}
