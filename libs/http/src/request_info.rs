//! Parsing a request path into what it addresses, as kube-apiserver's RequestInfo does, plus kcp's
//! `/clusters/<name>` prefix.

use http::Method;
use kcp_apimachinery::logical_cluster::{LogicalClusterName, WorkspacePath};

/// Which logical cluster(s) a request targets, as its `/clusters/<segment>` says. The segment is
/// classified once here; the server resolves a [`ClusterTarget::Path`] to the logical cluster it
/// leads to and refuses the others that name none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterTarget {
    /// No `/clusters/` prefix: top-level paths such as `/healthz` or `/version`.
    None,
    /// `/clusters/<name>`: a logical cluster by its name (`root`, `system:admin`, ...).
    Name(LogicalClusterName),
    /// `/clusters/root:org:team`: a workspace path, leading through Workspaces to a logical cluster.
    Path(WorkspacePath),
    /// A valid path that names no logical cluster by itself and leads through no Workspace (a
    /// segment too long for a name): nothing is there.
    Unnamed(WorkspacePath),
    /// `/clusters/<text>` where the text is no workspace path at all.
    Invalid(String),
    /// `/clusters/*`: every logical cluster of this shard.
    Wildcard,
}

impl ClusterTarget {
    /// What a `/clusters/<segment>` (percent-decoded) addresses.
    pub fn of_segment(segment: &str) -> ClusterTarget {
        // kubectl sends `*` percent-encoded.
        if segment == "*" || segment.eq_ignore_ascii_case("%2A") {
            return ClusterTarget::Wildcard;
        }
        let Ok(path) = WorkspacePath::parse(segment) else {
            return ClusterTarget::Invalid(segment.to_string());
        };
        if path.is_nested() {
            return ClusterTarget::Path(path);
        }
        match path.into_cluster_name() {
            Ok(name) => ClusterTarget::Name(name),
            Err(path) => ClusterTarget::Unnamed(path),
        }
    }

    /// The segment as the request gave it (`*` for the wildcard, empty for none).
    pub fn as_str(&self) -> &str {
        match self {
            ClusterTarget::None => "",
            ClusterTarget::Name(n) => n.as_str(),
            ClusterTarget::Path(p) | ClusterTarget::Unnamed(p) => p.as_str(),
            ClusterTarget::Invalid(text) => text,
            ClusterTarget::Wildcard => "*",
        }
    }
}

/// A request for a resource (or a collection of them).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ResourceRequest {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: String,
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// For a list or watch whose field selector requires one `metadata.name`: that name, which
    /// authorization sees as the request's name (so `resourceNames` rules allow it), as Kubernetes'
    /// request info does.
    pub selected_name: Option<String>,
}

impl ResourceRequest {
    /// The name authorization judges: the path's, or the one a list's field selector requires.
    pub fn authorized_name(&self) -> &str {
        self.name
            .as_deref()
            .or(self.selected_name.as_deref())
            .unwrap_or_default()
    }

    /// Sets [`ResourceRequest::selected_name`] from a list's or watch's `fieldSelector`; a selector
    /// that does not parse leaves it unset (the list answers the error).
    pub fn select_name(&mut self, field_selector: Option<&str>) {
        if self.name.is_some() || !matches!(self.verb.as_str(), "list" | "watch") {
            return;
        }
        let Some(selector) = field_selector
            .and_then(|s| kcp_apimachinery::selector::field::FieldSelector::parse(s).ok())
        else {
            return;
        };
        self.selected_name = selector
            .requires_exact_match("metadata.name")
            .filter(|n| kcp_apimachinery::names::is_valid_path_segment_name(n).is_empty())
            .map(str::to_string);
    }
}

/// What a path addresses inside a cluster (or at the top level).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Resource(ResourceRequest),
    /// `/api`
    CoreVersions,
    /// `/apis`
    Groups,
    /// `/apis/<group>`
    Group(String),
    /// `/api/v1` or `/apis/<group>/<version>`
    GroupVersion {
        group: String,
        version: String,
    },
    /// `/openapi/v3`
    OpenApiV3Root,
    /// `/openapi/v3/<api/v1 | apis/g/v>`
    OpenApiV3 {
        group: String,
        version: String,
    },
    /// `/openapi/v2`
    OpenApiV2,
    Version,
    /// `/healthz`, `/livez`, `/readyz` and their sub-checks.
    Health(String),
    /// `/metrics`: the shard's, served at the top level only.
    Metrics,
    /// Anything else: answered 404.
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestInfo {
    /// The `/services/<family>/...` prefix the request came through, if any.
    pub service: Option<ServicePath>,
    pub cluster: ClusterTarget,
    pub target: Target,
    /// The path without the `/services/...` and `/clusters/<name>` prefixes.
    pub path: String,
}

/// A family of `/services/<name>/<param>.../` paths a server serves (a virtual workspace): its
/// name and how many path segments of its own follow the name, before the cluster path
/// (`/clusters/<name|*>/...`) that every family ends in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceFamily {
    pub name: &'static str,
    pub params: usize,
}

/// The `/services/...` prefix of a request: its family and that family's parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServicePath {
    pub family: &'static str,
    pub params: Vec<String>,
}

/// The path families a server serves: bare paths and `/clusters/<name>/...` always, and the
/// `/services/...` families it names. A `/services/` path of another family addresses nothing
/// (404).
#[derive(Clone, Debug, Default)]
pub struct PathFamilies {
    services: Vec<ServiceFamily>,
}

impl PathFamilies {
    pub fn with_service(mut self, family: ServiceFamily) -> PathFamilies {
        self.services.push(family);
        self
    }

    /// Parses a percent-decoded `path` (see [`decode_path`]).
    pub fn parse(&self, method: &Method, path: &str, hints: VerbHints) -> RequestInfo {
        let (service, path) = self.split_service(path);
        let mut info = parse(method, path, hints);
        info.service = service;
        info
    }

    /// `/services/<family>/<params>/<rest>` as the family and `<rest>` (`/` and after); anything
    /// else as it is.
    fn split_service<'p>(&self, path: &'p str) -> (Option<ServicePath>, &'p str) {
        let Some(after) = path.strip_prefix("/services/") else {
            return (None, path);
        };
        let (name, mut rest) = after.split_at(after.find('/').unwrap_or(after.len()));
        let Some(family) = self.services.iter().find(|f| f.name == name) else {
            return (None, path);
        };
        let mut params = Vec::with_capacity(family.params);
        for _ in 0..family.params {
            let Some(tail) = rest.strip_prefix('/') else {
                return (None, path);
            };
            let (param, tail) = tail.split_at(tail.find('/').unwrap_or(tail.len()));
            if param.is_empty() {
                return (None, path);
            }
            params.push(param.to_string());
            rest = tail;
        }
        let service = ServicePath {
            family: family.name,
            params,
        };
        (Some(service), rest)
    }
}

/// The query flags that change the verb.
pub struct VerbHints {
    pub watch: bool,
}

/// A request path percent-decoded, as Go's `URL.Path` is before Kubernetes routes it (a name
/// such as `foo bar` arrives as `foo%20bar`); `None` for a bad escape or bytes that are not UTF-8.
pub fn decode_path(raw: &str) -> Option<std::borrow::Cow<'_, str>> {
    if !raw.contains('%') {
        return Some(std::borrow::Cow::Borrowed(raw));
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok().map(std::borrow::Cow::Owned)
}

/// Parses a percent-decoded `path` (see [`decode_path`]) of the families every server serves:
/// bare paths and `/clusters/<name>/...`.
pub fn parse(method: &Method, path: &str, hints: VerbHints) -> RequestInfo {
    let (cluster, rest) = split_cluster(path);
    let trimmed = rest.trim_end_matches('/');
    let segments: Vec<&str> = trimmed.split('/').filter(|s| !s.is_empty()).collect();
    let target = classify(method, &segments, &hints);
    RequestInfo {
        service: None,
        cluster,
        target,
        path: if rest.is_empty() {
            "/".to_string()
        } else {
            rest.to_string()
        },
    }
}

fn split_cluster(path: &str) -> (ClusterTarget, &str) {
    if let Some(after) = path.strip_prefix("/clusters/") {
        let (name, rest) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        return (ClusterTarget::of_segment(name), rest);
    }
    (ClusterTarget::None, path)
}

fn is_health_segment(segment: &str) -> bool {
    matches!(segment, "healthz" | "livez" | "readyz")
}

/// Whether a (decoded) path is a health check, which [`parse`] makes a [`Target::Health`].
pub fn is_health(path: &str) -> bool {
    let (_, rest) = split_cluster(path);
    rest.split('/')
        .find(|s| !s.is_empty())
        .is_some_and(is_health_segment)
}

fn classify(method: &Method, seg: &[&str], hints: &VerbHints) -> Target {
    match seg {
        [] => Target::Unknown,
        ["version"] => Target::Version,
        ["metrics"] => Target::Metrics,
        [h, ..] if is_health_segment(h) => Target::Health(seg.join("/")),
        ["openapi", "v2"] => Target::OpenApiV2,
        ["openapi", "v3"] => Target::OpenApiV3Root,
        ["openapi", "v3", "api", version] => Target::OpenApiV3 {
            group: String::new(),
            version: version.to_string(),
        },
        ["openapi", "v3", "apis", group, version] => Target::OpenApiV3 {
            group: group.to_string(),
            version: version.to_string(),
        },
        ["api"] => Target::CoreVersions,
        ["api", version] => Target::GroupVersion {
            group: String::new(),
            version: version.to_string(),
        },
        ["api", version, rest @ ..] => resource(method, "", version, rest, hints),
        ["apis"] => Target::Groups,
        ["apis", group] => Target::Group(group.to_string()),
        ["apis", group, version] => Target::GroupVersion {
            group: group.to_string(),
            version: version.to_string(),
        },
        ["apis", group, version, rest @ ..] => resource(method, group, version, rest, hints),
        _ => Target::Unknown,
    }
}

fn resource(
    method: &Method,
    group: &str,
    version: &str,
    rest: &[&str],
    hints: &VerbHints,
) -> Target {
    let mut watch = hints.watch;
    let mut rest = rest;
    // The deprecated `/watch/` path prefix means the same as `?watch=true`, and is the only way to
    // watch one object by its path (`?watch=true` on an object's path is a plain get, as in
    // Kubernetes).
    let watch_prefix = rest.first() == Some(&"watch");
    if watch_prefix {
        watch = true;
        rest = &rest[1..];
    }
    let (namespace, parts): (Option<&str>, &[&str]) = match rest {
        // `namespaces/<ns>/<resource>...` is namespaced; `namespaces[/<name>[/<sub>]]` is the namespace itself.
        // ...except `namespaces/<name>/status|finalize`, the Namespace's own subresources.
        ["namespaces", ns, tail @ ..]
            if !tail.is_empty() && !matches!(tail, ["status" | "finalize"]) =>
        {
            (Some(ns), tail)
        }
        other => (None, other),
    };
    let (resource, name, subresource) = match parts {
        [r] => (*r, None, None),
        [r, n] => (*r, Some(*n), None),
        [r, n, s] => (*r, Some(*n), Some(*s)),
        _ => return Target::Unknown,
    };
    // An empty verb is a method the path does not serve (405), e.g. PUT on a collection.
    let verb = match (method.as_str(), name.is_some()) {
        ("GET" | "HEAD", true) if watch_prefix => "watch",
        ("GET" | "HEAD", true) => "get",
        ("GET" | "HEAD", false) if watch => "watch",
        ("GET" | "HEAD", false) => "list",
        ("POST", false) => "create",
        ("POST", true) if subresource.is_some() => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => "",
    };
    Target::Resource(ResourceRequest {
        verb: verb.to_string(),
        group: group.to_string(),
        version: version.to_string(),
        namespace: namespace.map(str::to_string),
        resource: resource.to_string(),
        name: name.map(str::to_string),
        subresource: subresource.map(str::to_string),
        selected_name: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(method: Method, path: &str) -> RequestInfo {
        parse(&method, path, VerbHints { watch: false })
    }

    fn res(info: &RequestInfo) -> &ResourceRequest {
        match &info.target {
            Target::Resource(r) => r,
            other => panic!("not a resource request: {other:?}"),
        }
    }

    #[test]
    fn cluster_prefix() {
        let i = p(
            Method::GET,
            "/clusters/root/api/v1/namespaces/default/configmaps",
        );
        assert_eq!(i.cluster, ClusterTarget::Name(LogicalClusterName::root()));
        let r = res(&i);
        assert_eq!(
            (r.verb.as_str(), r.namespace.as_deref(), r.resource.as_str()),
            ("list", Some("default"), "configmaps")
        );
        assert_eq!(
            p(Method::GET, "/clusters/*/api/v1/configmaps").cluster,
            ClusterTarget::Wildcard
        );
        assert_eq!(
            p(Method::GET, "/clusters/%2A/api/v1/configmaps").cluster,
            ClusterTarget::Wildcard
        );
        assert_eq!(p(Method::GET, "/healthz").cluster, ClusterTarget::None);
        let cluster = |path: &str| p(Method::GET, path).cluster;
        assert!(
            matches!(cluster("/clusters/root:org/api"), ClusterTarget::Path(p) if p.as_str() == "root:org")
        );
        assert!(
            matches!(cluster("/clusters/system:admin/api"), ClusterTarget::Name(n) if n.is_system())
        );
        assert!(matches!(cluster("/clusters/Root/api"), ClusterTarget::Invalid(t) if t == "Root"));
        let long = format!("/clusters/{}/api", "a".repeat(64));
        assert!(matches!(cluster(&long), ClusterTarget::Unnamed(_)));
        assert_eq!(
            p(Method::GET, "/clusters/root/version/").target,
            Target::Version
        );
    }

    #[test]
    fn service_families() {
        let families = PathFamilies::default().with_service(ServiceFamily {
            name: "apiexport",
            params: 2,
        });
        let i = families.parse(
            &Method::GET,
            "/services/apiexport/root:provider/widgets/clusters/*/apis/example.com/v1/widgets",
            VerbHints { watch: false },
        );
        assert_eq!(
            i.service,
            Some(ServicePath {
                family: "apiexport",
                params: vec!["root:provider".into(), "widgets".into()],
            })
        );
        assert_eq!(i.cluster, ClusterTarget::Wildcard);
        assert_eq!(res(&i).resource, "widgets");
        assert_eq!(i.path, "/apis/example.com/v1/widgets");
        // Too few parameters, another family, or none served: the path addresses nothing.
        for path in [
            "/services/apiexport/root:provider",
            "/services/apiexport//widgets/clusters/x/api/v1/configmaps",
            "/services/other/a/b/clusters/x/api/v1/configmaps",
        ] {
            let i = families.parse(&Method::GET, path, VerbHints { watch: false });
            assert_eq!((i.service, i.target), (None, Target::Unknown), "{path}");
        }
        let i = p(
            Method::GET,
            "/services/apiexport/a/b/clusters/x/api/v1/configmaps",
        );
        assert_eq!((i.service, i.target), (None, Target::Unknown));
    }

    #[test]
    fn namespaces_themselves() {
        let i = p(Method::GET, "/clusters/root/api/v1/namespaces/default");
        let r = res(&i);
        assert_eq!(
            (
                r.verb.as_str(),
                r.resource.as_str(),
                r.name.as_deref(),
                r.namespace.as_deref()
            ),
            ("get", "namespaces", Some("default"), None)
        );
        let i = p(
            Method::PUT,
            "/clusters/root/api/v1/namespaces/default/status",
        );
        let r = res(&i);
        assert_eq!(
            (
                r.verb.as_str(),
                r.subresource.as_deref(),
                r.namespace.as_deref()
            ),
            ("update", Some("status"), None)
        );
        let i = p(
            Method::DELETE,
            "/clusters/root/api/v1/namespaces/x/configmaps",
        );
        assert_eq!(res(&i).verb, "deletecollection");
    }

    #[test]
    fn discovery_and_openapi() {
        assert_eq!(
            p(Method::GET, "/clusters/root/api/").target,
            Target::CoreVersions
        );
        assert_eq!(p(Method::GET, "/clusters/root/apis").target, Target::Groups);
        assert_eq!(
            p(Method::GET, "/clusters/root/apis/rbac.authorization.k8s.io").target,
            Target::Group("rbac.authorization.k8s.io".into())
        );
        assert_eq!(
            p(
                Method::GET,
                "/clusters/root/openapi/v3/apis/coordination.k8s.io/v1"
            )
            .target,
            Target::OpenApiV3 {
                group: "coordination.k8s.io".into(),
                version: "v1".into()
            }
        );
        assert_eq!(
            p(Method::GET, "/clusters/root/nonsense").target,
            Target::Unknown
        );
    }

    #[test]
    fn paths_are_percent_decoded() {
        assert_eq!(decode_path("/a/foo%20bar").as_deref(), Some("/a/foo bar"));
        assert_eq!(
            decode_path("/clusters/%2A/x").as_deref(),
            Some("/clusters/*/x")
        );
        assert_eq!(decode_path("/plain").as_deref(), Some("/plain"));
        assert_eq!(decode_path("/bad%2"), None);
        assert_eq!(decode_path("/bad%zz"), None);
        assert_eq!(decode_path("/bad%ff"), None);
    }

    #[test]
    fn watch_forms() {
        let i = parse(
            &Method::GET,
            "/clusters/root/api/v1/configmaps",
            VerbHints { watch: true },
        );
        assert_eq!(res(&i).verb, "watch");
        let i = p(
            Method::GET,
            "/clusters/root/api/v1/watch/namespaces/default/configmaps",
        );
        assert_eq!(res(&i).verb, "watch");
        assert_eq!(res(&i).namespace.as_deref(), Some("default"));
        // One object: watched only through the `/watch/` prefix; `?watch` on its path is a get.
        let i = p(
            Method::GET,
            "/clusters/root/api/v1/watch/namespaces/default/configmaps/a",
        );
        assert_eq!(
            (res(&i).verb.as_str(), res(&i).name.as_deref()),
            ("watch", Some("a"))
        );
        let i = parse(
            &Method::GET,
            "/clusters/root/api/v1/namespaces/default/configmaps/a",
            VerbHints { watch: true },
        );
        assert_eq!(res(&i).verb, "get");
    }

    #[test]
    fn a_field_selector_names_what_is_authorized() {
        let mut i = parse(
            &Method::GET,
            "/clusters/root/api/v1/namespaces/default/secrets",
            VerbHints { watch: true },
        );
        let Target::Resource(r) = &mut i.target else {
            panic!("a resource request");
        };
        r.select_name(Some("type=Opaque,metadata.name=s1"));
        assert_eq!(r.authorized_name(), "s1");
        assert_eq!(r.name, None);
        r.select_name(Some("metadata.name!=s1"));
        assert_eq!(r.authorized_name(), "");
        r.select_name(Some("metadata.name=a/b"));
        assert_eq!(r.authorized_name(), "");
        r.verb = "deletecollection".into();
        r.select_name(Some("metadata.name=s1"));
        assert_eq!(r.authorized_name(), "");
    }
}
