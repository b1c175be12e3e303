//! Workspace-path arithmetic: `root:org:team`, relative paths, `.`/`..`, and what `kubectl ws <arg>` means.

use std::fmt;

/// Errors from parsing or resolving a workspace path.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    #[error("invalid workspace path: {0}")]
    Invalid(String),
    #[error("cannot go up from root")]
    AboveRoot,
}

/// A logical-cluster path, the server's type: colon-separated segments, the first an LC name, every
/// further one a Workspace name inside the previous LC.
pub use kcp_apimachinery::logical_cluster::{ROOT, WorkspacePath};

impl From<kcp_apimachinery::logical_cluster::InvalidName> for PathError {
    fn from(err: kcp_apimachinery::logical_cluster::InvalidName) -> PathError {
        PathError::Invalid(err.text)
    }
}

/// What the argument of `kubectl ws [<arg>]` asks for, after kcp's preprocessing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `-`: swap current and previous.
    Previous,
    /// `:`: the root of the current tree.
    TreeRoot,
    /// `.`: print the current workspace.
    Current,
    /// `~` or `~:rest` (and no argument at all): the home workspace, then `rest` relative to it.
    Home { rest: String },
    /// `:abs:path` (absolute, leading colon stripped) or a path relative to the current workspace.
    Path { absolute: bool, path: String },
}

/// What preprocessing found besides the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedArg {
    pub target: Target,
    /// A bare `root:...` was given; kcp accepts it with a note on stderr.
    pub legacy_root: bool,
    /// No argument was given: kcp goes home and prints a note about `cd` semantics.
    pub no_arg: bool,
}

/// Interprets the argument of `kubectl ws`. `home_dir` undoes the shell's expansion of `~` (`kubectl ws ~/a`
/// arrives as `/home/me/a`); slashes are accepted as separators, as in kcp.
pub fn parse_arg(arg: &str, home_dir: Option<&str>, short: bool) -> ParsedArg {
    let mut name = arg.to_owned();
    if let Some(home) = home_dir.filter(|h| !h.is_empty())
        && let Some(rest) = name.strip_prefix(home)
    {
        name = format!("~{rest}");
    }
    name = name.replace('/', ":");
    let mut legacy_root = false;
    // kcp's condition, `root || (root: && !short)`, kept as it is.
    if name == ROOT || (name.starts_with("root:") && !short) {
        name = format!(":{name}");
        legacy_root = true;
    }
    let no_arg = name.is_empty();
    if no_arg {
        name = "~".to_owned();
    }
    let target = match name.as_str() {
        "-" => Target::Previous,
        ":" => Target::TreeRoot,
        "." => Target::Current,
        "~" => Target::Home {
            rest: String::new(),
        },
        _ if name.starts_with("~:") => Target::Home {
            rest: name[1..].to_owned(),
        },
        _ => match name.strip_prefix(':') {
            Some(abs) => Target::Path {
                absolute: true,
                path: abs.to_owned(),
            },
            None => Target::Path {
                absolute: false,
                path: name,
            },
        },
    };
    ParsedArg {
        target,
        legacy_root,
        no_arg,
    }
}

/// Resolves `path` (absolute without its colon, or relative to `current`) to a valid absolute path,
/// removing `.` and `..` segments.
pub fn resolve(
    current: &WorkspacePath,
    absolute: bool,
    path: &str,
) -> Result<WorkspacePath, PathError> {
    let joined = if absolute || current.is_empty() {
        path.to_owned()
    } else {
        format!("{current}:{path}")
    };
    let mut segments: Vec<String> = Vec::new();
    for part in joined.split(':') {
        match part {
            "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(PathError::AboveRoot);
                }
            }
            _ => segments.push(part.to_owned()),
        }
    }
    // `root:..` resolves to nothing, which kcp calls an invalid path (one `..` more is "above root").
    if segments.is_empty() {
        return Err(PathError::Invalid(path.to_owned()));
    }
    let out = segments.join(":");
    WorkspacePath::parse(&out).map_err(|_| PathError::Invalid(path.to_owned()))
}

/// `--type` of `create`: `name` (path defaulted by the server) or `path:name`. kcp lowercases the name.
/// Also the `spec.type` of a Workspace on the wire.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TypeRef {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
}

impl TypeRef {
    pub fn parse(s: &str) -> Self {
        match s.rfind(':') {
            Some(i) => Self {
                name: s[i + 1..].to_lowercase(),
                path: s[..i].to_owned(),
            },
            None => Self {
                name: s.to_lowercase(),
                path: String::new(),
            },
        }
    }
}

impl fmt::Display for TypeRef {
    /// `path:name`, or `name` alone when the path is empty, as kcp prints `(type ...)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.path.is_empty(), self.name.is_empty()) {
            (true, _) => f.write_str(&self.name),
            (false, true) => f.write_str(&self.path),
            (false, false) => write!(f, "{}:{}", self.path, self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> WorkspacePath {
        WorkspacePath::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn go(current: &str, arg: &str) -> Result<String, PathError> {
        match parse_arg(arg, Some("/home/me"), false).target {
            Target::Path { absolute, path } => {
                resolve(&p(current), absolute, &path).map(|p| p.to_string())
            }
            other => panic!("{arg}: not a path target: {other:?}"),
        }
    }

    #[test]
    fn parse_validates_segments() {
        assert_eq!(p("root:org:team").to_string(), "root:org:team");
        assert_eq!(p("root").parent(), None);
        assert_eq!(p("root:a:b").parent(), Some(p("root:a")));
        assert_eq!(p("root:a:b").base(), "b");
        assert_eq!(p("root:a:b").tree_root(), p("root"));
        assert_eq!(p("root:a").request_path(), "/clusters/root:a");
        for bad in [
            "", ":", "root:", ":root", "Root", "root:-a", "root:a-", "root::a", "root:a b",
            "root:a_b",
        ] {
            assert_eq!(
                WorkspacePath::parse(bad).map_err(PathError::from),
                Err(PathError::Invalid(bad.to_owned())),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn relative_and_absolute() {
        assert_eq!(go("root:org", "team").as_deref(), Ok("root:org:team"));
        assert_eq!(go("root:org", "a:b").as_deref(), Ok("root:org:a:b"));
        assert_eq!(go("root:org", ":root:x").as_deref(), Ok("root:x"));
        assert_eq!(go("root:org", "root:x").as_deref(), Ok("root:x"));
        assert_eq!(go("root:org", "root").as_deref(), Ok("root"));
        assert_eq!(go("root:org", "a/b").as_deref(), Ok("root:org:a:b"));
        assert_eq!(go("root:org:team", "..").as_deref(), Ok("root:org"));
        assert_eq!(go("root:org:team", "..:..").as_deref(), Ok("root"));
        assert_eq!(go("root:org", "..:other").as_deref(), Ok("root:other"));
        assert_eq!(go("root:org", "./a:.").as_deref(), Ok("root:org:a"));
    }

    #[test]
    fn invalid_paths_are_errors() {
        assert_eq!(go("root", ".."), Err(PathError::Invalid("..".into())));
        assert_eq!(go("root", "..:.."), Err(PathError::AboveRoot));
        assert_eq!(go("root:a", "..:..:.."), Err(PathError::AboveRoot));
        assert_eq!(go("root", "Bad"), Err(PathError::Invalid("Bad".into())));
        assert_eq!(go("root", "a::b"), Err(PathError::Invalid("a::b".into())));
        assert_eq!(go("root", "a_b"), Err(PathError::Invalid("a_b".into())));
        assert_eq!(PathError::AboveRoot.to_string(), "cannot go up from root");
        assert_eq!(
            PathError::Invalid("x_".into()).to_string(),
            "invalid workspace path: x_"
        );
    }

    #[test]
    fn special_arguments() {
        let t = |a: &str| parse_arg(a, Some("/home/me"), false);
        assert_eq!(t("-").target, Target::Previous);
        assert_eq!(t(":").target, Target::TreeRoot);
        assert_eq!(t(".").target, Target::Current);
        assert_eq!(
            t("~").target,
            Target::Home {
                rest: String::new()
            }
        );
        assert_eq!(
            t("~:a:b").target,
            Target::Home {
                rest: ":a:b".into()
            }
        );
        // The shell expanded `~` and `~/a`.
        assert_eq!(
            t("/home/me").target,
            Target::Home {
                rest: String::new()
            }
        );
        assert_eq!(t("/home/me/a").target, Target::Home { rest: ":a".into() });
        let none = t("");
        assert!(none.no_arg);
        assert_eq!(
            none.target,
            Target::Home {
                rest: String::new()
            }
        );
        assert!(t("root:a").legacy_root);
        assert!(t("root").legacy_root);
        assert!(!t(":root:a").legacy_root);
        assert!(!parse_arg("root:a", None, true).legacy_root);
    }

    #[test]
    fn type_refs() {
        assert_eq!(
            TypeRef::parse("Universal"),
            TypeRef {
                name: "universal".into(),
                path: String::new()
            }
        );
        assert_eq!(TypeRef::parse("root:org:Team").to_string(), "root:org:team");
        assert_eq!(TypeRef::parse("universal").to_string(), "universal");
    }
}
