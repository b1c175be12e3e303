//! Logical-cluster names and workspace paths as types, as kcp's `logicalcluster.Name` and
//! `logicalcluster.Path`: checked once where they come in (a request path, a token's claim, a
//! kubeconfig) and carried as such, so code further in never validates or rewrites them again.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::names::{SYSTEM_CLUSTER_PREFIX, is_valid_cluster_name, is_valid_path};

/// A logical cluster's name: one segment (`root`, `2x8tcs3v4hb1ol1d`), or `system:` followed by
/// colon-joined segments (`system:admin`). What keys and authorization speak.
///
/// Shared, not copied, when cloned: the indexes, queues and caches of a shard hold the same name
/// many times over, once per object and per index entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LogicalClusterName(Arc<str>);

impl serde::Serialize for LogicalClusterName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// Text that is not a logical-cluster name, or not a workspace path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what}: {text:?}")]
pub struct InvalidName {
    pub what: &'static str,
    pub text: String,
}

/// `text` owned when `valid`, else the error naming `what` it is not.
fn checked(text: &str, valid: bool, what: &'static str) -> Result<String, InvalidName> {
    match valid {
        true => Ok(text.to_string()),
        false => Err(InvalidName {
            what,
            text: text.to_string(),
        }),
    }
}

impl LogicalClusterName {
    pub fn parse(name: &str) -> Result<LogicalClusterName, InvalidName> {
        checked(name, is_valid_cluster_name(name), "logical cluster name")
            .map(|n| LogicalClusterName(n.into()))
    }

    /// The `root` logical cluster.
    pub fn root() -> LogicalClusterName {
        LogicalClusterName(ROOT.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// One of kcp's system clusters (`system:admin`, ...), which no workspace path leads to.
    pub fn is_system(&self) -> bool {
        self.0.starts_with(SYSTEM_CLUSTER_PREFIX)
    }

    pub fn into_string(self) -> String {
        self.0.to_string()
    }
}

/// The name of the root logical cluster.
pub const ROOT: &str = "root";

impl Deref for LogicalClusterName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

/// Maps keyed by name are looked up with a `&str` (hash and order are the inner string's).
impl std::borrow::Borrow<str> for LogicalClusterName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for LogicalClusterName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for LogicalClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for LogicalClusterName {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for LogicalClusterName {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

/// A workspace path: colon-joined segments `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, the first a logical
/// cluster (`root`, or a home's), each further one a Workspace in the one before (`root:org:team`).
/// The empty path is "none" (a kubeconfig pointing at no workspace).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct WorkspacePath(String);

impl WorkspacePath {
    /// Parses an absolute path without a leading colon, as kcp's `logicalcluster.Path.IsValid`
    /// accepts it.
    pub fn parse(path: &str) -> Result<WorkspacePath, InvalidName> {
        checked(path, is_valid_path(path), "workspace path").map(WorkspacePath)
    }

    /// The path of a logical cluster's name (a `system:` name is a path of several segments).
    pub fn of_cluster(name: &LogicalClusterName) -> WorkspacePath {
        WorkspacePath(name.as_str().to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split(':').filter(|s| !s.is_empty())
    }

    /// The path with the Workspace `name` appended; `None` when `name` is no path segment.
    pub fn join(&self, name: &str) -> Option<WorkspacePath> {
        if name.contains(':') || !is_valid_path(name) {
            return None;
        }
        Some(match self.is_empty() {
            true => WorkspacePath(name.to_string()),
            false => WorkspacePath(format!("{}:{name}", self.0)),
        })
    }

    /// The parent path, or `None` for a one-segment path (a logical cluster has no parent here).
    pub fn parent(&self) -> Option<WorkspacePath> {
        self.0
            .rfind(':')
            .map(|i| WorkspacePath(self.0[..i].to_string()))
    }

    /// The last segment: the Workspace's name in its parent (or the logical cluster's name).
    pub fn base(&self) -> &str {
        self.0.rsplit(':').next().unwrap_or_default()
    }

    /// The first segment: the root of the tree the path lives in (`root`, or a home's name).
    pub fn tree_root(&self) -> WorkspacePath {
        WorkspacePath(self.0.split(':').next().unwrap_or_default().to_string())
    }

    /// Whether the first segment is `root`.
    pub fn starts_with_root(&self) -> bool {
        self.tree_root().0 == ROOT
    }

    /// The logical cluster a path names by itself, without a lookup: a one-segment path that is a
    /// valid name, or a `system:` cluster. Longer paths lead through Workspaces.
    pub fn as_cluster_name(&self) -> Option<LogicalClusterName> {
        self.names_cluster()
            .then(|| LogicalClusterName(self.0.as_str().into()))
    }

    /// `/clusters/<path>`, the URL prefix of this workspace.
    pub fn request_path(&self) -> String {
        format!("/clusters/{}", self.0)
    }

    /// [`WorkspacePath::as_cluster_name`], reusing the path's text.
    pub fn into_cluster_name(self) -> Result<LogicalClusterName, WorkspacePath> {
        match self.names_cluster() {
            true => Ok(LogicalClusterName(self.0.into())),
            false => Err(self),
        }
    }

    fn names_cluster(&self) -> bool {
        let direct = !self.0.contains(':') || self.0.starts_with(SYSTEM_CLUSTER_PREFIX);
        direct && is_valid_cluster_name(&self.0)
    }

    /// Whether the path leads through Workspaces (more than one segment, not a `system:` name).
    pub fn is_nested(&self) -> bool {
        self.0.contains(':') && !self.0.starts_with(SYSTEM_CLUSTER_PREFIX)
    }
}

impl fmt::Display for WorkspacePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn p(s: &str) -> WorkspacePath {
        WorkspacePath::parse(s).unwrap()
    }

    #[test]
    fn cluster_names() {
        for good in [
            "root",
            "2x8tcs3v4hb1ol1d",
            "system:admin",
            "system:cache:server",
        ] {
            assert_eq!(LogicalClusterName::parse(good).unwrap().as_str(), good);
        }
        let long = "a".repeat(64);
        for bad in [
            "",
            "root:org",
            "Root",
            "a_b",
            "-a",
            "system:",
            long.as_str(),
        ] {
            assert!(LogicalClusterName::parse(bad).is_err(), "{bad:?}");
        }
        assert!(
            LogicalClusterName::parse("system:admin")
                .unwrap()
                .is_system()
        );
        assert!(!LogicalClusterName::root().is_system());
    }

    #[test]
    fn paths() {
        assert_eq!(p("root:org:team").to_string(), "root:org:team");
        assert_eq!(p("root").parent(), None);
        assert_eq!(p("root:a:b").parent(), Some(p("root:a")));
        assert_eq!(p("root:a:b").base(), "b");
        assert_eq!(p("root:a:b").tree_root(), p("root"));
        assert!(p("root:a").starts_with_root());
        assert_eq!(p("root:a").request_path(), "/clusters/root:a");
        assert!(!p("home:a").starts_with_root());
        assert_eq!(p("root").join("org"), Some(p("root:org")));
        assert_eq!(WorkspacePath::default().join("root"), Some(p("root")));
        assert_eq!(p("root").join("a:b"), None);
        assert_eq!(p("root").join("A"), None);
        assert_eq!(
            p("root:a:b").segments().collect::<Vec<_>>(),
            ["root", "a", "b"]
        );
        for bad in [
            "", ":", "root:", ":root", "Root", "root:-a", "root:a-", "root::a", "root:a b",
            "root:a_b",
        ] {
            assert!(WorkspacePath::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn paths_that_name_clusters() {
        assert_eq!(
            p("root").as_cluster_name(),
            Some(LogicalClusterName::root())
        );
        assert_eq!(
            p("system:admin").as_cluster_name().map(|n| n.into_string()),
            Some("system:admin".to_string())
        );
        assert_eq!(p("root:org").as_cluster_name(), None);
        assert!(p("root:org").is_nested());
        assert!(!p("system:admin").is_nested());
        assert!(!p("root").is_nested());
        // A valid path segment that is too long for a name names nothing.
        assert_eq!(p(&"a".repeat(64)).as_cluster_name(), None);
    }
}
