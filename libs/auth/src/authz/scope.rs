//! Scoping identities to logical clusters, as kcp does: a ServiceAccount (or any identity carrying
//! `authentication.kcp.io/scopes`) is itself only in the logical clusters it is scoped to. Anywhere
//! else it is a foreigner: authenticated, in `system:cluster:<home>`, and nothing more.
//!
//! kcp calls the foreigner `system:anonymous`. We name a foreign ServiceAccount
//! `system:kcp:serviceaccount:<cluster>:<namespace>:<name>` instead, so that a binding naming it (how
//! kcp documents granting it rights) matches without a special case in the subject matcher.

use std::borrow::Cow;
use std::collections::BTreeMap;

pub use crate::authn::service_account::CLUSTER_NAME_EXTRA;
use crate::authn::service_account::SCOPES_EXTRA;
use crate::authn::{AUTHENTICATED_GROUP, UserInfo};

use crate::authz::rbac::authorizer::ANONYMOUS_USER as ANONYMOUS;
use crate::authz::rbac::subject::SERVICE_ACCOUNT_PREFIX;

/// `user` as it acts in `cluster` (empty: a request outside any logical cluster, where scoping
/// does not apply).
pub fn scope_user<'a>(user: &'a UserInfo, cluster: &str) -> Cow<'a, UserInfo> {
    if cluster.is_empty() || in_scope(user, cluster) {
        return Cow::Borrowed(user);
    }
    let homes = home_clusters(user);
    let name = match (
        user.name.strip_prefix(SERVICE_ACCOUNT_PREFIX),
        homes.first(),
    ) {
        (Some(sa), Some(home)) => format!("system:kcp:serviceaccount:{home}:{sa}"),
        _ => ANONYMOUS.to_string(),
    };
    let mut groups = vec![AUTHENTICATED_GROUP.to_string()];
    groups.extend(homes.iter().map(|h| format!("system:cluster:{h}")));
    Cow::Owned(UserInfo {
        name,
        uid: String::new(),
        groups,
        extra: BTreeMap::new(),
    })
}

/// Whether `user` is itself in `cluster`: every `scopes` value (a comma-separated list of
/// `cluster:<name>`) must name it, and so must `cluster-name` when present.
fn in_scope(user: &UserInfo, cluster: &str) -> bool {
    let scoped_by_name = user
        .extra
        .get(CLUSTER_NAME_EXTRA)
        .is_none_or(|names| names.iter().any(|n| n == cluster));
    let scoped_by_scopes = user.extra.get(SCOPES_EXTRA).is_none_or(|values| {
        values.iter().all(|value| {
            value
                .split(',')
                .map(str::trim)
                .any(|scope| scope.strip_prefix("cluster:") == Some(cluster))
        })
    });
    scoped_by_name && scoped_by_scopes
}

/// The logical clusters an identity comes from.
fn home_clusters(user: &UserInfo) -> Vec<String> {
    if let Some(names) = user.extra.get(CLUSTER_NAME_EXTRA) {
        return names.clone();
    }
    let mut homes: Vec<String> = user
        .extra
        .get(SCOPES_EXTRA)
        .into_iter()
        .flatten()
        .flat_map(|v| v.split(','))
        .filter_map(|s| s.trim().strip_prefix("cluster:"))
        .map(str::to_string)
        .collect();
    homes.sort();
    homes.dedup();
    homes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_extra(name: &str, key: &str, values: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            uid: "u1".into(),
            groups: vec!["system:serviceaccounts".into(), AUTHENTICATED_GROUP.into()],
            extra: BTreeMap::from([(
                key.to_string(),
                values.iter().map(|v| v.to_string()).collect(),
            )]),
        }
    }

    #[test]
    fn unscoped_users_are_themselves_everywhere() {
        let alice = UserInfo {
            name: "alice".into(),
            ..UserInfo::default()
        };
        assert!(matches!(scope_user(&alice, "b"), Cow::Borrowed(_)));
    }

    #[test]
    fn service_accounts_are_foreigners_outside_their_cluster() {
        let sa = with_extra("system:serviceaccount:ns:robot", CLUSTER_NAME_EXTRA, &["a"]);
        assert_eq!(*scope_user(&sa, "a"), sa);
        assert_eq!(*scope_user(&sa, ""), sa);
        let foreign = scope_user(&sa, "b");
        assert_eq!(foreign.name, "system:kcp:serviceaccount:a:ns:robot");
        assert_eq!(
            foreign.groups,
            vec![
                AUTHENTICATED_GROUP.to_string(),
                "system:cluster:a".to_string()
            ]
        );
        assert!(foreign.extra.is_empty());
    }

    #[test]
    fn scopes_intersect() {
        let user = with_extra("bob", SCOPES_EXTRA, &["cluster:a,cluster:b", "cluster:b"]);
        assert_eq!(scope_user(&user, "b").name, "bob");
        let outside = scope_user(&user, "a");
        assert_eq!(outside.name, ANONYMOUS);
        assert!(outside.groups.contains(&"system:cluster:b".to_string()));
    }
}
