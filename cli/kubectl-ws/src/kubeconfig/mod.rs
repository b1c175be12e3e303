//! Reading and rewriting the kubeconfig the way kcp's plugin does through client-go.
//!
//! Several files may be in play ([`sources`]): they are read merged, the first file that defines an
//! entry winning, and every entry remembers the file it came from. A changed entry is written back to
//! that file, and an entry copied from another (kcp builds `workspace.kcp.io/current` from the current
//! context and cluster) inherits the copied one's file, as client-go's `ModifyConfig` does with
//! `LocationOfOrigin`. Entries without a file go to the default file.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

pub mod file;
pub mod lock;
pub mod sources;

use file::ConfigFile;
pub use sources::Sources;

/// Context and cluster name of the workspace the plugin switched to.
pub const CURRENT: &str = "workspace.kcp.io/current";
/// Context and cluster name of the workspace before the last switch (`kubectl ws -`).
pub const PREVIOUS: &str = "workspace.kcp.io/previous";

#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("parsing {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("locking {path}: {source}")]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("serializing kubeconfig: {0}")]
    Serialize(String),
    #[error("no kubeconfig found: pass --kubeconfig, set $KUBECONFIG or create ~/.kube/config")]
    NotFound,
    #[error("current {0:?} context not found")]
    ContextNotFound(String),
    #[error("cluster {0:?} not found in kubeconfig")]
    ClusterNotFound(String),
    #[error("cluster {0:?} has no server URL")]
    NoServer(String),
    #[error("no previous workspace found in kubeconfig")]
    NoPrevious,
    // create-context words its lookups differently from use.
    #[error("current context {0:?} is not found in kubeconfig")]
    CurrentContextMissing(String),
    #[error("current cluster {0:?} is not found in kubeconfig")]
    CurrentClusterMissing(String),
    /// client-go's message for `--context` naming an unknown context.
    #[error("context was not found for specified context: {0}")]
    NamedContextMissing(String),
}

type Result<T, E = KubeconfigError> = std::result::Result<T, E>;

/// The three named lists of a kubeconfig.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Cluster,
    Context,
    User,
}

impl Kind {
    fn list(self) -> &'static str {
        match self {
            Kind::Cluster => "clusters",
            Kind::Context => "contexts",
            Kind::User => "users",
        }
    }

    fn field(self) -> &'static str {
        match self {
            Kind::Cluster => "cluster",
            Kind::Context => "context",
            Kind::User => "user",
        }
    }
}

/// An entry's body and the file it came from (client-go's `LocationOfOrigin`).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub body: Value,
    pub origin: PathBuf,
}

impl Entry {
    fn with(mut self, key: &str, value: &str) -> Self {
        set_str(&mut self.body, key, value);
        self
    }

    fn str_field(&self, key: &str) -> String {
        self.body
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }
}

/// The merged view of the kubeconfig files.
#[derive(Debug, Clone)]
pub struct Kubeconfig {
    sources: Sources,
    /// The files that exist (and any created for writing), in merge order.
    files: Vec<ConfigFile>,
}

impl Kubeconfig {
    /// Reads the files of `sources`; missing ones are skipped unless named by `--kubeconfig`.
    pub fn load(sources: &Sources) -> Result<Self> {
        let mut files = Vec::new();
        for path in sources.files() {
            match ConfigFile::read(&path)? {
                Some(f) => files.push(f),
                None if sources.explicit.is_some() => {
                    return Err(KubeconfigError::Read {
                        path,
                        source: std::io::ErrorKind::NotFound.into(),
                    });
                }
                None => {}
            }
        }
        Ok(Self {
            sources: sources.clone(),
            files,
        })
    }

    /// A single in-memory file (tests).
    pub fn from_yaml(text: &str, path: &Path) -> Result<Self> {
        Ok(Self {
            sources: Sources {
                explicit: Some(path.to_owned()),
                precedence: Vec::new(),
            },
            files: vec![ConfigFile::from_yaml(text, path)?],
        })
    }

    /// The files that were read, in merge order.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.files.iter().map(|f| f.path.clone()).collect()
    }

    /// Writes back every file that changed.
    /// Writes back every file that changed, holding client-go's locks on all the kubeconfig files.
    pub fn save(&self) -> Result<()> {
        if !self.files.iter().any(|f| f.dirty) {
            return Ok(());
        }
        let _locks = lock::Locks::acquire(&self.sources.files())?;
        for f in self.files.iter().filter(|f| f.dirty) {
            f.write()?;
        }
        Ok(())
    }

    /// `current-context` of the first file that sets one.
    pub fn current_context_name(&self) -> &str {
        self.files
            .iter()
            .map(ConfigFile::current_context)
            .find(|c| !c.is_empty())
            .unwrap_or_default()
    }

    /// The entry `name` of the first file defining it.
    pub fn get(&self, kind: Kind, name: &str) -> Option<Entry> {
        self.files.iter().find_map(|f| {
            f.entry(kind, name).map(|body| Entry {
                body: body.clone(),
                origin: f.path.clone(),
            })
        })
    }

    pub fn context(&self, name: &str) -> Option<Value> {
        self.get(Kind::Context, name).map(|e| e.body)
    }

    pub fn cluster(&self, name: &str) -> Option<Value> {
        self.get(Kind::Cluster, name).map(|e| e.body)
    }

    /// Stores `entry` under `name` in its file of origin (the default file when it has none). An entry
    /// equal to the merged one, file included, is left alone, as `ModifyConfig` skips unchanged ones.
    fn set(&mut self, kind: Kind, name: &str, mut entry: Entry) {
        if entry.origin.as_os_str().is_empty() {
            entry.origin = self.sources.default_file();
        }
        if self.get(kind, name).as_ref() == Some(&entry) {
            return;
        }
        self.file_mut(&entry.origin)
            .set_entry(kind, name, entry.body);
    }

    /// The loaded file at `path`, or a new empty one appended for it.
    fn file_mut(&mut self, path: &Path) -> &mut ConfigFile {
        let i = match self.files.iter().position(|f| f.path == path) {
            Some(i) => i,
            None => {
                self.files.push(ConfigFile::empty(path));
                self.files.len() - 1
            }
        };
        &mut self.files[i]
    }

    /// client-go's choice of file for `current-context`: the explicit file, else the first file that
    /// already sets one, else the default file.
    fn set_current_context(&mut self, name: &str) {
        if self.current_context_name() == name {
            return;
        }
        let target = match &self.sources.explicit {
            Some(p) => p.clone(),
            None => self
                .files
                .iter()
                .find(|f| !f.current_context().is_empty())
                .map(|f| f.path.clone())
                .unwrap_or_else(|| self.sources.default_file()),
        };
        self.file_mut(&target).set_current_context(name);
    }

    /// The current context's entry.
    pub fn current_context(&self) -> Result<Entry> {
        let name = self.current_context_name();
        self.get(Kind::Context, name)
            .ok_or_else(|| KubeconfigError::ContextNotFound(name.to_owned()))
    }

    /// The server URL of the current context's cluster.
    pub fn current_server(&self) -> Result<String> {
        self.server_of_cluster(&self.current_context()?.str_field("cluster"))
    }

    /// The server URL behind context `name` (for `--context`).
    pub fn server_of_context(&self, name: &str) -> Result<String> {
        let ctx = self
            .get(Kind::Context, name)
            .ok_or_else(|| KubeconfigError::NamedContextMissing(name.to_owned()))?;
        self.server_of_cluster(&ctx.str_field("cluster"))
    }

    fn server_of_cluster(&self, cluster: &str) -> Result<String> {
        let body = self
            .cluster(cluster)
            .ok_or_else(|| cluster_missing(cluster))?;
        body.get("server")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| KubeconfigError::NoServer(cluster.to_owned()))
    }

    /// Switches to `server`: the `workspace.kcp.io/current` context and cluster become copies of the current
    /// ones (so auth info and TLS settings carry over) with the new server URL; the context switched away
    /// from is kept as `workspace.kcp.io/previous`.
    pub fn enter(&mut self, server: &str) -> Result<()> {
        let current_ctx = self.current_context()?;
        let old_cluster_name = current_ctx.str_field("cluster");
        let old_cluster = self
            .get(Kind::Cluster, &old_cluster_name)
            .ok_or_else(|| cluster_missing(&old_cluster_name))?;

        self.set(
            Kind::Cluster,
            CURRENT,
            old_cluster.clone().with("server", server),
        );
        self.set(
            Kind::Context,
            CURRENT,
            current_ctx.clone().with("cluster", CURRENT),
        );

        // The old context pointed at the cluster entry just overwritten; keep its server under `previous`.
        let previous_ctx = if old_cluster_name == CURRENT {
            self.set(Kind::Cluster, PREVIOUS, old_cluster);
            current_ctx.with("cluster", PREVIOUS)
        } else {
            current_ctx
        };
        self.set(Kind::Context, PREVIOUS, previous_ctx);
        self.set_current_context(CURRENT);
        Ok(())
    }

    /// `kubectl ws -`: swaps the current and previous contexts (and their clusters when they are the
    /// plugin's own entries). Returns the new server URL.
    pub fn swap_previous(&mut self) -> Result<String> {
        let mut current_ctx = self.current_context()?;
        let mut prev = self
            .get(Kind::Context, PREVIOUS)
            .ok_or(KubeconfigError::NoPrevious)?;
        // Read both clusters before writing either: each write may overwrite the other's source.
        let current_cluster = match current_ctx.str_field("cluster").as_str() {
            CURRENT => Some(
                self.get(Kind::Cluster, CURRENT)
                    .ok_or_else(|| cluster_missing(CURRENT))?,
            ),
            _ => None,
        };
        let prev_cluster = match prev.str_field("cluster").as_str() {
            PREVIOUS => Some(
                self.get(Kind::Cluster, PREVIOUS)
                    .ok_or_else(|| cluster_missing(PREVIOUS))?,
            ),
            _ => None,
        };
        if let Some(c) = current_cluster {
            current_ctx = current_ctx.with("cluster", PREVIOUS);
            self.set(Kind::Cluster, PREVIOUS, c);
        }
        if let Some(c) = prev_cluster {
            prev = prev.with("cluster", CURRENT);
            self.set(Kind::Cluster, CURRENT, c);
        }
        let new_cluster = prev.str_field("cluster");
        self.set(Kind::Context, CURRENT, prev);
        self.set(Kind::Context, PREVIOUS, current_ctx);
        self.set_current_context(CURRENT);
        self.server_of_cluster(&new_cluster)
    }

    /// The current context's server as create-context reads it (its own wording when something is
    /// missing, and no `--context`).
    pub fn create_context_server(&self) -> Result<String> {
        let name = self.current_context_name();
        let ctx = self
            .get(Kind::Context, name)
            .ok_or_else(|| KubeconfigError::CurrentContextMissing(name.to_owned()))?;
        let cluster = ctx.str_field("cluster");
        self.get(Kind::Cluster, &cluster)
            .ok_or(KubeconfigError::CurrentClusterMissing(cluster))
            .map(|c| c.str_field("server"))
    }

    /// `kubectl ws create-context`: context and cluster `name`, copies of the current ones (the cluster's
    /// server replaced by `server` when given); the current context becomes `name` unless `keep_current`.
    pub fn add_context(
        &mut self,
        name: &str,
        server: Option<&str>,
        keep_current: bool,
    ) -> Result<()> {
        let current = self.current_context_name().to_owned();
        let ctx = self
            .get(Kind::Context, &current)
            .ok_or_else(|| KubeconfigError::CurrentContextMissing(current.clone()))?;
        let cluster_name = ctx.str_field("cluster");
        let mut cluster = self
            .get(Kind::Cluster, &cluster_name)
            .ok_or(KubeconfigError::CurrentClusterMissing(cluster_name))?;
        if let Some(s) = server {
            cluster = cluster.with("server", s);
        }
        self.set(Kind::Cluster, name, cluster);
        self.set(Kind::Context, name, ctx.with("cluster", name));
        if !keep_current {
            self.set_current_context(name);
        }
        Ok(())
    }
}

fn cluster_missing(name: &str) -> KubeconfigError {
    KubeconfigError::ClusterNotFound(name.to_owned())
}

fn set_str(v: &mut Value, key: &str, s: &str) {
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    if let Some(o) = v.as_object_mut() {
        o.insert(key.to_owned(), Value::String(s.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"apiVersion: v1
kind: Config
preferences:
  colors: true
clusters:
- name: kcp
  cluster:
    server: https://kcp:6443/clusters/root
    certificate-authority-data: TUlJQ0FEQ0NBYWFnQXdJQkFnSVVjTUlJQ0FEQ0NBYWFnQXdJQkFnSVVjTUlJQ0FEQ0NBYWFnQXdJQkFnSVVjTUlJQ0FEQ0NBYWFnQXdJQkFnSVVj
    extensions:
    - name: ext
      extension: {a: 1}
- name: other
  cluster:
    server: https://elsewhere:443
contexts:
- name: admin
  context:
    cluster: kcp
    user: admin
    namespace: ns1
- name: unrelated
  context:
    cluster: other
    user: someone
current-context: admin
users:
- name: admin
  user:
    token: "yes"
- name: someone
  user:
    client-certificate: /x/c.crt
x-custom: keep-me
"#;

    fn load(text: &str) -> Kubeconfig {
        Kubeconfig::from_yaml(text, Path::new("/tmp/k")).unwrap_or_else(|e| panic!("{e}"))
    }

    fn server_of(k: &Kubeconfig, cluster: &str) -> Option<String> {
        k.cluster(cluster)?
            .get("server")?
            .as_str()
            .map(str::to_owned)
    }

    fn ctx_field(k: &Kubeconfig, ctx: &str, field: &str) -> Option<String> {
        k.context(ctx)?.get(field)?.as_str().map(str::to_owned)
    }

    /// The previous context points at the plugin's own `previous` cluster entry, whose server is `server`.
    fn assert_previous_is(k: &Kubeconfig, server: &str) {
        assert_eq!(ctx_field(k, PREVIOUS, "cluster").as_deref(), Some(PREVIOUS));
        assert_eq!(server_of(k, PREVIOUS).as_deref(), Some(server));
    }

    #[test]
    fn round_trip_preserves_everything() {
        let k = load(BASE);
        let yaml = k.files[0].to_yaml().unwrap_or_default();
        assert!(
            !yaml.contains(">-"),
            "long strings stay plain scalars: {yaml}"
        );
        let again = load(&yaml);
        assert_eq!(k.files[0].doc, again.files[0].doc);
        assert_eq!(
            again.files[0].doc["users"][0]["user"]["token"], "yes",
            "a YAML-1.1 boolean-looking string stays a string"
        );
    }

    #[test]
    fn enter_then_enter_then_swap() {
        let mut k = load(BASE);
        assert_eq!(
            k.current_server().ok().as_deref(),
            Some("https://kcp:6443/clusters/root")
        );
        k.enter("https://kcp:6443/clusters/root:a")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(k.current_context_name(), CURRENT);
        assert_eq!(
            server_of(&k, CURRENT).as_deref(),
            Some("https://kcp:6443/clusters/root:a")
        );
        // Copied from the original context: auth info, namespace; the TLS settings of the cluster.
        assert_eq!(ctx_field(&k, CURRENT, "user").as_deref(), Some("admin"));
        assert_eq!(ctx_field(&k, CURRENT, "namespace").as_deref(), Some("ns1"));
        assert_eq!(
            k.cluster(CURRENT)
                .and_then(|c| c.get("extensions").cloned()),
            k.cluster("kcp").and_then(|c| c.get("extensions").cloned())
        );
        // Previous is the original context, still pointing at the original cluster.
        assert_eq!(ctx_field(&k, PREVIOUS, "cluster").as_deref(), Some("kcp"));
        assert!(k.cluster(PREVIOUS).is_none());

        k.enter("https://kcp:6443/clusters/root:a:b")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            server_of(&k, CURRENT).as_deref(),
            Some("https://kcp:6443/clusters/root:a:b")
        );
        assert_previous_is(&k, "https://kcp:6443/clusters/root:a");

        let back = k.swap_previous().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, "https://kcp:6443/clusters/root:a");
        assert_eq!(
            k.current_server().ok().as_deref(),
            Some("https://kcp:6443/clusters/root:a")
        );
        assert_eq!(
            server_of(&k, PREVIOUS).as_deref(),
            Some("https://kcp:6443/clusters/root:a:b")
        );
        let forth = k.swap_previous().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(forth, "https://kcp:6443/clusters/root:a:b");

        // Unrelated entries are untouched and still in their places.
        let orig = load(BASE);
        for key in ["preferences", "users", "x-custom", "apiVersion", "kind"] {
            assert_eq!(k.files[0].doc[key], orig.files[0].doc[key], "{key}");
        }
        assert_eq!(
            k.files[0].doc["clusters"][0],
            orig.files[0].doc["clusters"][0]
        );
        assert_eq!(
            k.files[0].doc["clusters"][1],
            orig.files[0].doc["clusters"][1]
        );
        assert_eq!(
            k.files[0].doc["contexts"][0],
            orig.files[0].doc["contexts"][0]
        );
        assert_eq!(
            k.files[0].doc["contexts"][1],
            orig.files[0].doc["contexts"][1]
        );
    }

    #[test]
    fn swap_from_original_context() {
        let mut k = load(BASE);
        k.enter("https://kcp:6443/clusters/root:a")
            .unwrap_or_else(|e| panic!("{e}"));
        // First `-` after one switch goes back to the original cluster entry.
        let back = k.swap_previous().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back, "https://kcp:6443/clusters/root");
        assert_eq!(ctx_field(&k, CURRENT, "cluster").as_deref(), Some("kcp"));
        assert_previous_is(&k, "https://kcp:6443/clusters/root:a");
        let again = k.swap_previous().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again, "https://kcp:6443/clusters/root:a");
    }

    #[test]
    fn errors() {
        let mut k = load(BASE);
        assert_eq!(
            k.swap_previous().err().map(|e| e.to_string()).as_deref(),
            Some("no previous workspace found in kubeconfig")
        );
        let mut k2 = load(&BASE.replace("current-context: admin", "current-context: nope"));
        assert_eq!(
            k2.enter("https://x")
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some("current \"nope\" context not found")
        );
        let mut k3 = load(&BASE.replace("    cluster: kcp\n", "    cluster: gone\n"));
        assert_eq!(
            k3.enter("https://x")
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some("cluster \"gone\" not found in kubeconfig")
        );
        assert!(k.enter("https://x").is_ok());
    }

    /// Three files in `$KUBECONFIG` order: `a` has the current context, `b` the cluster it uses (and a
    /// shadowed copy of the context), `c` nothing the plugin touches.
    struct Files {
        dir: tempfile::TempDir,
        sources: Sources,
    }

    const FILE_A: &str = "contexts:\n- name: admin\n  context:\n    cluster: kcp\n    user: admin\ncurrent-context: admin\n";
    const FILE_B: &str = "clusters:\n- name: kcp\n  cluster:\n    server: https://kcp/clusters/root\n    certificate-authority: ca.pem\ncontexts:\n- name: admin\n  context:\n    cluster: shadowed\ncurrent-context: shadowed\nusers:\n- name: admin\n  user:\n    token: t\n";
    const FILE_C: &str =
        "clusters:\n- name: unrelated\n  cluster:\n    server: https://elsewhere\n";

    fn files(a: Option<&str>) -> Files {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let write = |n: &str, t: &str| {
            std::fs::write(dir.path().join(n), t).unwrap_or_else(|e| panic!("{e}"))
        };
        if let Some(a) = a {
            write("a", a);
        }
        write("b", FILE_B);
        write("c", FILE_C);
        let list = ["a", "b", "c"]
            .map(|n| dir.path().join(n).display().to_string())
            .join(":");
        let sources = Sources::locate(None, Some(&list), None).unwrap_or_else(|e| panic!("{e}"));
        Files { dir, sources }
    }

    impl Files {
        fn load(&self) -> Kubeconfig {
            Kubeconfig::load(&self.sources).unwrap_or_else(|e| panic!("{e}"))
        }
        fn read(&self, n: &str) -> Kubeconfig {
            let p = self.dir.path().join(n);
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{e}"));
            Kubeconfig::from_yaml(&text, &p).unwrap_or_else(|e| panic!("{e}"))
        }
        fn text(&self, n: &str) -> String {
            std::fs::read_to_string(self.dir.path().join(n)).unwrap_or_default()
        }
    }

    #[test]
    fn merged_first_file_wins() {
        let f = files(Some(FILE_A));
        let k = f.load();
        assert_eq!(k.current_context_name(), "admin");
        // `a`'s admin context (cluster kcp) hides `b`'s; kcp is found in `b`.
        assert_eq!(
            k.current_server().ok().as_deref(),
            Some("https://kcp/clusters/root")
        );
        assert_eq!(
            k.get(Kind::Context, "admin").map(|e| e.origin),
            Some(f.dir.path().join("a"))
        );
        assert_eq!(
            k.get(Kind::Cluster, "unrelated").map(|e| e.origin),
            Some(f.dir.path().join("c"))
        );
    }

    #[test]
    fn entries_go_back_to_their_files() {
        let f = files(Some(FILE_A));
        let mut k = f.load();
        k.enter("https://kcp/clusters/root:org")
            .unwrap_or_else(|e| panic!("{e}"));
        k.save().unwrap_or_else(|e| panic!("{e}"));

        // The context copied from `a`'s admin goes to `a`, with current-context (set there already).
        let a = f.read("a");
        assert_eq!(a.current_context_name(), CURRENT);
        assert_eq!(ctx_field(&a, CURRENT, "cluster").as_deref(), Some(CURRENT));
        assert_eq!(ctx_field(&a, PREVIOUS, "cluster").as_deref(), Some("kcp"));
        assert!(a.cluster(CURRENT).is_none());
        // The cluster copied from `b`'s kcp goes to `b`, CA path and all; `b`'s own current-context
        // stays (it is shadowed by `a`'s).
        let b = f.read("b");
        assert_eq!(
            server_of(&b, CURRENT).as_deref(),
            Some("https://kcp/clusters/root:org")
        );
        assert_eq!(
            b.cluster(CURRENT)
                .and_then(|c| c.get("certificate-authority").cloned()),
            Some(Value::String("ca.pem".into()))
        );
        assert_eq!(b.current_context_name(), "shadowed");
        assert!(b.context(CURRENT).is_none());
        // Untouched file, not rewritten.
        assert_eq!(f.text("c"), FILE_C);

        // Read merged again: the switch took effect; a second switch and `-` keep working across files.
        let mut k = f.load();
        assert_eq!(
            k.current_server().ok().as_deref(),
            Some("https://kcp/clusters/root:org")
        );
        k.enter("https://kcp/clusters/root:org:team")
            .unwrap_or_else(|e| panic!("{e}"));
        k.save().unwrap_or_else(|e| panic!("{e}"));
        let mut k = f.load();
        assert_eq!(
            k.swap_previous().ok().as_deref(),
            Some("https://kcp/clusters/root:org")
        );
        k.save().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            f.load().current_server().ok().as_deref(),
            Some("https://kcp/clusters/root:org")
        );
        assert_eq!(
            server_of(&f.read("b"), PREVIOUS).as_deref(),
            Some("https://kcp/clusters/root:org:team")
        );
        assert_eq!(f.text("c"), FILE_C);
    }

    #[test]
    fn current_context_goes_to_first_file_setting_one() {
        // `a` sets no current-context: `b`'s is the one rewritten, `a` keeps none.
        let f = files(Some(&FILE_A.replace("current-context: admin\n", "")));
        std::fs::write(
            f.dir.path().join("b"),
            FILE_B.replace("current-context: shadowed", "current-context: admin"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mut k = f.load();
        assert_eq!(k.current_context_name(), "admin");
        k.enter("https://kcp/clusters/root:x")
            .unwrap_or_else(|e| panic!("{e}"));
        k.save().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(f.read("b").current_context_name(), CURRENT);
        assert_eq!(f.read("a").current_context_name(), "");
        assert_eq!(
            f.load().current_server().ok().as_deref(),
            Some("https://kcp/clusters/root:x")
        );
    }

    #[test]
    fn new_entries_without_origin_go_to_first_existing_file() {
        // `a` does not exist: the default file is `b`.
        let f = files(None);
        let mut k = f.load();
        k.set(
            Kind::User,
            "fresh",
            Entry {
                body: serde_json::json!({"token": "x"}),
                origin: PathBuf::new(),
            },
        );
        k.save().unwrap_or_else(|e| panic!("{e}"));
        assert!(!f.dir.path().join("a").exists());
        assert!(f.text("b").contains("fresh"));
    }

    #[test]
    fn unchanged_entries_are_not_written() {
        let f = files(Some(FILE_A));
        let mut k = f.load();
        let same = k.get(Kind::Cluster, "unrelated");
        if let Some(e) = same {
            k.set(Kind::Cluster, "unrelated", e);
        }
        assert!(k.files.iter().all(|f| !f.dirty));
    }

    #[test]
    fn add_context_copies_current() {
        let f = files(Some(FILE_A));
        let mut k = f.load();
        k.add_context("mine", Some("https://kcp/clusters/abc"), false)
            .unwrap_or_else(|e| panic!("{e}"));
        k.save().unwrap_or_else(|e| panic!("{e}"));
        let k = f.load();
        assert_eq!(k.current_context_name(), "mine");
        assert_eq!(
            k.current_server().ok().as_deref(),
            Some("https://kcp/clusters/abc")
        );
        assert_eq!(ctx_field(&k, "mine", "user").as_deref(), Some("admin"));
        assert!(f.read("a").context("mine").is_some());
        assert!(f.read("b").cluster("mine").is_some());

        let mut k = f.load();
        k.add_context("kept", None, true)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(k.current_context_name(), "mine");
        assert_eq!(
            server_of(&k, "kept").as_deref(),
            Some("https://kcp/clusters/abc")
        );
    }

    #[test]
    fn explicit_file_must_exist() {
        let s = Sources::locate(Some(Path::new("/nonexistent/k")), None, None)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            Kubeconfig::load(&s),
            Err(KubeconfigError::Read { .. })
        ));
    }
}
