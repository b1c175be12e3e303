//! Server URLs of the form `<base>/clusters/<path>`: the kubeconfig's way of pointing at a workspace.

use crate::path::WorkspacePath;

/// A server URL split at `/clusters/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterUrl {
    /// Scheme, authority and any path before `/clusters/`, without a trailing slash.
    pub base: String,
    pub path: WorkspacePath,
}

impl ClusterUrl {
    /// Splits `server`; `None` when it does not point to a workspace (no `/clusters/<valid path>`).
    pub fn parse(server: &str) -> Option<Self> {
        let uri: http::Uri = server.parse().ok()?;
        let scheme = uri.scheme_str()?;
        let authority = uri.authority()?;
        let full = uri.path();
        let idx = full.find("/clusters/")?;
        let rest = &full[idx + "/clusters/".len()..];
        let name = rest.split('/').next().unwrap_or_default();
        let path = WorkspacePath::parse(name).ok()?;
        Some(Self {
            base: format!("{scheme}://{authority}{}", &full[..idx]),
            path,
        })
    }

    /// The URL of another workspace on the same base.
    pub fn with_path(&self, path: &WorkspacePath) -> String {
        format!("{}{}", self.base, path.request_path())
    }
}

impl std::fmt::Display for ClusterUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.with_path(&self.path))
    }
}

/// Scheme and authority of `server`, for servers that do not point to a workspace.
pub fn origin(server: &str) -> Option<String> {
    let uri: http::Uri = server.parse().ok()?;
    Some(format!("{}://{}", uri.scheme_str()?, uri.authority()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_clusters() {
        let u =
            ClusterUrl::parse("https://kcp.example:6443/clusters/root:org").expect("workspace URL");
        assert_eq!(u.base, "https://kcp.example:6443");
        assert_eq!(u.path.to_string(), "root:org");
        let u = ClusterUrl::parse("https://h/prefix/clusters/root/api").expect("workspace URL");
        assert_eq!(u.base, "https://h/prefix");
        assert_eq!(u.to_string(), "https://h/prefix/clusters/root");
        assert_eq!(ClusterUrl::parse("https://h:6443"), None);
        assert_eq!(ClusterUrl::parse("https://h/clusters/Bad"), None);
        assert_eq!(
            origin("https://h:1/clusters/x").as_deref(),
            Some("https://h:1")
        );
    }
}
