//! Impersonation (`Impersonate-User`, `-Group`, `-Uid`, `-Extra-*`): acting as another identity.
//!
//! As kube-apiserver: every impersonated attribute is authorized separately (verb `impersonate` on
//! users, groups, serviceaccounts, uids or userextras/<key>) for the caller, in the logical cluster
//! of the request. On top, kcp's gatekeeper keeps privileged groups and kcp's own extras out of reach
//! of those who do not hold them, and the impersonated identity is scoped to the request's cluster.

use std::collections::BTreeMap;

use kcp_apimachinery::status::{ApiError, Reason};
use kcp_auth::authn::AUTHENTICATED_GROUP;
use kcp_auth::authn::request_header::percent_decode;
use kcp_auth::authn::service_account;
use kcp_auth::authn::service_account::SCOPES_EXTRA;
use kcp_auth::authz::kcp::EXTERNAL_LOGICAL_CLUSTER_ADMIN;
use kcp_auth::authz::rbac::authorizer::{ANONYMOUS_USER as ANONYMOUS, UNAUTHENTICATED_GROUP};
use kcp_auth::authz::rbac::subject::SERVICE_ACCOUNT_PREFIX;
use kcp_auth::authz::{KCP_ADMIN, SYSTEM_MASTERS};
use kcp_auth::{Attributes, UserInfo};

use crate::ApiServer;
use kcp_http::request_info::{ClusterTarget, RequestInfo};

const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// Groups only their members may impersonate (kcp's gatekeeper); `system:masters` may impersonate
/// anything.
const GUARDED_GROUPS: &[&str] = &[
    SYSTEM_MASTERS,
    "system:kcp:logical-cluster-admin",
    EXTERNAL_LOGICAL_CLUSTER_ADMIN,
    "system:kcp:tenancy:workspace-bootstrapper",
    KCP_ADMIN,
    AUTHENTICATED_GROUP,
];

/// `user` as a virtual workspace may have a request served inside `cluster` (see
/// [`crate::hooks::Acting::As`]): never with a privileged group or kcp's own extras (no
/// caller granted them), and scoped to that cluster, as an impersonated identity is.
pub(crate) fn acting_in(mut user: UserInfo, cluster: &str) -> UserInfo {
    user.groups
        .retain(|g| g == AUTHENTICATED_GROUP || !GUARDED_GROUPS.contains(&g.as_str()));
    if !user.groups.iter().any(|g| g == AUTHENTICATED_GROUP) {
        user.groups.push(AUTHENTICATED_GROUP.to_string());
    }
    user.extra
        .retain(|key, _| !key.to_ascii_lowercase().contains("kcp.io"));
    user.extra
        .insert(SCOPES_EXTRA.to_string(), vec![format!("cluster:{cluster}")]);
    user
}

/// One thing the caller asks to act as, and what authorizing it means.
#[derive(Debug)]
enum Wanted {
    User(String),
    ServiceAccount { namespace: String, name: String },
    Group(String),
    Uid(String),
    Extra { key: String, value: String },
}

impl Wanted {
    /// `(api group, resource, subresource, namespace, name)` of the `impersonate` check.
    fn target(&self) -> (&'static str, &'static str, &str, &str, &str) {
        match self {
            Wanted::User(name) => ("", "users", "", "", name.as_str()),
            Wanted::ServiceAccount { namespace, name } => {
                ("", "serviceaccounts", "", namespace.as_str(), name.as_str())
            }
            Wanted::Group(name) => ("", "groups", "", "", name.as_str()),
            Wanted::Uid(uid) => ("authentication.k8s.io", "uids", "", "", uid.as_str()),
            Wanted::Extra { key, value } => (
                "authentication.k8s.io",
                "userextras",
                key.as_str(),
                "",
                value.as_str(),
            ),
        }
    }
}

/// The impersonation headers of a request, or 400 when they ask for groups, a uid or extras
/// without a user.
fn wanted(headers: &http::HeaderMap) -> Result<Vec<Wanted>, ApiError> {
    let mut out = Vec::new();
    let value = |v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    let user = headers
        .get(USER_HEADER)
        .map(value)
        .filter(|u| !u.is_empty());
    if let Some(user) = &user {
        match user
            .strip_prefix(SERVICE_ACCOUNT_PREFIX)
            .and_then(|rest| rest.split_once(':'))
            .filter(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains(':'))
        {
            Some((namespace, name)) => out.push(Wanted::ServiceAccount {
                namespace: namespace.to_string(),
                name: name.to_string(),
            }),
            None => out.push(Wanted::User(user.clone())),
        }
    }
    for group in headers.get_all(GROUP_HEADER) {
        out.push(Wanted::Group(value(group)));
    }
    for (name, v) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            // `http` lower-cases names, as upstream does before decoding the key.
            out.push(Wanted::Extra {
                key: percent_decode(key),
                value: value(v),
            });
        }
    }
    if let Some(uid) = headers.get(UID_HEADER).map(value).filter(|u| !u.is_empty()) {
        out.push(Wanted::Uid(uid));
    }
    if user.is_none() && !out.is_empty() {
        return Err(ApiError::bad_request(format!(
            "requested {} without impersonating a user",
            describe(&out)
        )));
    }
    Ok(out)
}

fn describe(wanted: &[Wanted]) -> String {
    let items: Vec<String> = wanted
        .iter()
        .map(|w| match w {
            Wanted::User(n) => format!("user {n:?}"),
            Wanted::ServiceAccount { namespace, name } => {
                format!("serviceaccount {namespace:?}/{name:?}")
            }
            Wanted::Group(g) => format!("group {g:?}"),
            Wanted::Uid(u) => format!("uid {u:?}"),
            Wanted::Extra { key, value } => format!("extra {key:?}={value:?}"),
        })
        .collect();
    format!("[{}]", items.join(", "))
}

fn forbidden(message: &str) -> ApiError {
    ApiError::new(Reason::Forbidden, format!("forbidden: {message}"))
}

/// kcp's gatekeeper: privileged groups only for their members, kcp's own extras (scopes, warrants,
/// cluster names grant authority) only for `system:masters`.
fn gatekeeper(requester: &UserInfo, wanted: &[Wanted]) -> Result<(), ApiError> {
    if requester.is_system_masters() {
        return Ok(());
    }
    for w in wanted {
        match w {
            Wanted::Extra { key, .. } if key.to_ascii_lowercase().contains("kcp.io") => {
                return Err(forbidden(&format!(
                    "impersonating the extra key {key:?} is not allowed for the requestor"
                )));
            }
            Wanted::Group(g)
                if GUARDED_GROUPS.contains(&g.as_str()) && !requester.groups.contains(g) =>
            {
                return Err(forbidden("impersonation is not allowed for the requestor"));
            }
            _ => {}
        }
    }
    Ok(())
}

impl ApiServer {
    /// The identity the request acts as: `user` itself without impersonation headers.
    pub(super) async fn impersonate(
        &self,
        parts: &http::request::Parts,
        user: UserInfo,
        info: &RequestInfo,
    ) -> Result<UserInfo, ApiError> {
        let wanted = wanted(&parts.headers)?;
        if wanted.is_empty() {
            return Ok(user);
        }
        gatekeeper(&user, &wanted)?;
        let masters = user.is_system_masters();
        // The impersonated identity is scoped to one logical cluster; a request that names none
        // (or all) leaves nothing to scope it to.
        let cluster = match &info.cluster {
            ClusterTarget::Name(_) | ClusterTarget::Unnamed(_) => info.cluster.as_str(),
            _ if masters => info.cluster.as_str(),
            _ => {
                return Err(forbidden(
                    "impersonation is only allowed within a logical cluster",
                ));
            }
        };
        let groups_given = wanted.iter().any(|w| matches!(w, Wanted::Group(_)));
        let mut out = UserInfo::default();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for w in &wanted {
            let (api_group, resource, subresource, namespace, name) = w.target();
            let attrs = Attributes {
                user: Some(&user),
                cluster,
                verb: "impersonate",
                resource_request: true,
                api_group,
                api_version: "v1",
                resource,
                subresource,
                namespace,
                name,
                path: &info.path,
                deep_review: false,
            };
            // A virtual workspace may have its reviews decided elsewhere (kcp-vw: by its shard).
            self.check_reviewed(&user, &attrs, None).await?;
            match w {
                Wanted::User(name) => out.name = name.clone(),
                Wanted::ServiceAccount { namespace, name } => {
                    out.name = service_account::username(namespace, name);
                    if !groups_given {
                        // A ServiceAccount's groups follow from its name.
                        out.groups = service_account::groups(namespace);
                    }
                }
                Wanted::Group(g) => out.groups.push(g.clone()),
                Wanted::Uid(uid) => out.uid = uid.clone(),
                Wanted::Extra { key, value } => {
                    extra.entry(key.clone()).or_default().push(value.clone())
                }
            }
        }
        if out.name != ANONYMOUS {
            if !out
                .groups
                .iter()
                .any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP)
            {
                out.groups.push(AUTHENTICATED_GROUP.to_string());
            }
        } else if !out.groups.iter().any(|g| g == UNAUTHENTICATED_GROUP) {
            out.groups.push(UNAUTHENTICATED_GROUP.to_string());
        }
        // kcp scopes whoever is impersonated to this cluster, unless a superuser impersonates.
        if !masters {
            extra
                .entry(SCOPES_EXTRA.to_string())
                .or_default()
                .push(format!("cluster:{cluster}"));
        }
        out.extra = extra;
        tracing::debug!(requester = %user.name, impersonated = %out.name, "impersonation");
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn parses_every_header() {
        let w = wanted(&headers(&[
            ("Impersonate-User", "system:serviceaccount:ns:robot"),
            ("Impersonate-Group", "a"),
            ("Impersonate-Group", "b"),
            ("Impersonate-Uid", "u-1"),
            ("Impersonate-Extra-Example.com%2Fscope", "x"),
        ]))
        .unwrap();
        assert_eq!(w.len(), 5);
        assert!(
            matches!(&w[0], Wanted::ServiceAccount { namespace, name } if namespace == "ns" && name == "robot")
        );
        assert!(matches!(&w[2], Wanted::Group(g) if g == "b"));
        assert!(
            matches!(&w[3], Wanted::Extra { key, value } if key == "example.com/scope" && value == "x")
        );
        assert!(matches!(&w[4], Wanted::Uid(u) if u == "u-1"));
        assert!(wanted(&headers(&[])).unwrap().is_empty());
    }

    #[test]
    fn groups_without_a_user_are_a_bad_request() {
        let err = wanted(&headers(&[("Impersonate-Group", "a")])).unwrap_err();
        assert_eq!(err.code, 400);
        assert!(
            err.message.contains("without impersonating a user"),
            "{}",
            err.message
        );
        let err = wanted(&headers(&[("Impersonate-Uid", "u")])).unwrap_err();
        assert_eq!(err.code, 400);
    }

    #[test]
    fn gatekeeper_guards_privileged_groups_and_kcp_extras() {
        let alice = UserInfo {
            name: "alice".into(),
            groups: vec!["system:kcp:admin".into()],
            ..Default::default()
        };
        let w = |pairs: &[(&str, &str)]| wanted(&headers(pairs)).unwrap();
        let masters = w(&[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "system:masters"),
        ]);
        assert_eq!(gatekeeper(&alice, &masters).unwrap_err().code, 403);
        // A group the requester holds itself may be passed on.
        let admin = w(&[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "system:kcp:admin"),
        ]);
        assert!(gatekeeper(&alice, &admin).is_ok());
        let scoped = w(&[
            ("Impersonate-User", "bob"),
            (
                "Impersonate-Extra-Authentication.kcp.io%2Fscopes",
                "cluster:x",
            ),
        ]);
        assert_eq!(gatekeeper(&alice, &scoped).unwrap_err().code, 403);
        let root = UserInfo {
            name: "root".into(),
            groups: vec![SYSTEM_MASTERS.into()],
            ..Default::default()
        };
        assert!(gatekeeper(&root, &masters).is_ok());
        assert!(gatekeeper(&root, &scoped).is_ok());
    }
}
