//! The key layout, resource-major so one prefix covers a resource across all logical clusters:
//!
//! ```text
//! /<group or "core">/<resource>/<identity or "local">/<cluster>/[<namespace>/]<name>
//! ```
//!
//! Objects bound from different APIExports never share a prefix because the identity hash differs.
//! Names, namespaces and cluster names never contain `/` (the API layer validates them first).

/// Which stored resource a key belongs to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResourceKeyspace {
    prefix: String,
    namespaced: bool,
}

impl ResourceKeyspace {
    /// `group` is the API group ("" for the core group); `identity` separates same-named resources bound
    /// from different APIExports (`None` for local resources).
    // Keys are joined with `concat` (one allocation), not `format!`: they are built for every cache
    // read and write, where `format!`'s machinery showed in profiles.
    pub fn new(group: &str, resource: &str, identity: Option<&str>, namespaced: bool) -> Self {
        let group = if group.is_empty() { "core" } else { group };
        let identity = identity.unwrap_or("local");
        ResourceKeyspace {
            prefix: ["/", group, "/", resource, "/", identity, "/"].concat(),
            namespaced,
        }
    }

    pub fn is_namespaced(&self) -> bool {
        self.namespaced
    }

    /// Every object of this resource in every logical cluster.
    pub fn all_clusters(&self) -> &str {
        &self.prefix
    }

    /// Every object of this resource in one logical cluster.
    pub fn cluster(&self, cluster: &str) -> String {
        [&self.prefix, cluster, "/"].concat()
    }

    /// Every object of this resource in one namespace of one logical cluster.
    pub fn namespace(&self, cluster: &str, namespace: &str) -> String {
        [&self.prefix, cluster, "/", namespace, "/"].concat()
    }

    /// The key of one object. `namespace` is ignored for cluster-scoped resources.
    pub fn object(&self, cluster: &str, namespace: Option<&str>, name: &str) -> String {
        match (self.namespaced, namespace) {
            (true, Some(ns)) => [&self.prefix, cluster, "/", ns, "/", name].concat(),
            _ => [&self.prefix, cluster, "/", name].concat(),
        }
    }

    /// Splits a key of this keyspace into its logical cluster, namespace and name.
    pub fn parse<'k>(&self, key: &'k str) -> Option<ObjectKey<'k>> {
        let rest = key.strip_prefix(self.prefix.as_str())?;
        let mut parts = rest.split('/');
        let cluster = parts.next().filter(|s| !s.is_empty())?;
        let (namespace, name) = if self.namespaced {
            (
                Some(parts.next().filter(|s| !s.is_empty())?),
                parts.next().filter(|s| !s.is_empty())?,
            )
        } else {
            (None, parts.next().filter(|s| !s.is_empty())?)
        };
        if parts.next().is_some() {
            return None;
        }
        Some(ObjectKey {
            cluster,
            namespace,
            name,
        })
    }
}

/// The parts of an object key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectKey<'k> {
    pub cluster: &'k str,
    pub namespace: Option<&'k str>,
    pub name: &'k str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_resource_major() {
        let cms = ResourceKeyspace::new("", "configmaps", None, true);
        assert_eq!(cms.all_clusters(), "/core/configmaps/local/");
        assert_eq!(cms.cluster("root"), "/core/configmaps/local/root/");
        assert_eq!(
            cms.namespace("root", "default"),
            "/core/configmaps/local/root/default/"
        );
        assert_eq!(
            cms.object("root", Some("default"), "a"),
            "/core/configmaps/local/root/default/a"
        );
        let parsed = cms
            .parse("/core/configmaps/local/root/default/a")
            .expect("parses");
        assert_eq!(
            parsed,
            ObjectKey {
                cluster: "root",
                namespace: Some("default"),
                name: "a"
            }
        );
        assert!(cms.parse("/core/configmaps/local/root/default").is_none());
        assert!(cms.parse("/core/secrets/local/root/default/a").is_none());

        let ns = ResourceKeyspace::new("", "namespaces", None, false);
        assert_eq!(
            ns.object("system:admin", Some("ignored"), "kube-system"),
            "/core/namespaces/local/system:admin/kube-system"
        );
        assert_eq!(
            ns.parse("/core/namespaces/local/root/x").map(|k| k.name),
            Some("x")
        );

        let bound = ResourceKeyspace::new("example.io", "widgets", Some("abc123"), true);
        assert_eq!(bound.all_clusters(), "/example.io/widgets/abc123/");
    }

    #[test]
    fn cluster_prefixes_do_not_overlap() {
        let cms = ResourceKeyspace::new("", "configmaps", None, true);
        assert!(
            !cms.object("rootx", Some("default"), "a")
                .starts_with(&cms.cluster("root"))
        );
    }
}
