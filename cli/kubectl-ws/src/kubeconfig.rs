//! Reading and rewriting the kubeconfig the way kcp's plugin does.
//!
//! The file is kept as a generic YAML document (not typed structs) so that every field this plugin does not
//! know about, in every entry, survives the rewrite.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

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
}

type Result<T, E = KubeconfigError> = std::result::Result<T, E>;

/// Which file to use: `--kubeconfig`, else the first existing entry of `$KUBECONFIG`, else `~/.kube/config`.
/// kcp writes to the file the entries came from; with several files in `$KUBECONFIG` this plugin reads and
/// writes the first one only.
pub fn locate(flag: Option<&Path>, env: Option<&str>, home: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = flag {
        return Ok(p.to_owned());
    }
    if let Some(list) = env.filter(|s| !s.is_empty()) {
        let entries: Vec<PathBuf> = std::env::split_paths(list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        if let Some(p) = entries.iter().find(|p| p.exists()).or(entries.first()) {
            return Ok(p.clone());
        }
    }
    home.map(|h| h.join(".kube").join("config"))
        .ok_or(KubeconfigError::NotFound)
}

/// A kubeconfig document and where it lives.
#[derive(Debug, Clone)]
pub struct Kubeconfig {
    pub path: PathBuf,
    doc: Value,
}

impl Kubeconfig {
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| KubeconfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::from_yaml(&text, path)
    }

    pub fn from_yaml(text: &str, path: &Path) -> Result<Self> {
        let doc: Value = serde_saphyr::from_str(text).map_err(|e| KubeconfigError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let doc = if doc.is_null() {
            Value::Object(Map::new())
        } else {
            doc
        };
        if !doc.is_object() {
            return Err(KubeconfigError::Parse {
                path: path.to_owned(),
                message: "not a mapping".into(),
            });
        }
        Ok(Self {
            path: path.to_owned(),
            doc,
        })
    }

    pub fn to_yaml(&self) -> Result<String> {
        // Plain scalars as client-go writes them: folding would turn long base64 data into `>-` blocks.
        let mut options = serde_saphyr::SerializerOptions::default();
        options.prefer_block_scalars = false;
        serde_saphyr::to_string_with_options(&self.doc, options)
            .map_err(|e| KubeconfigError::Serialize(e.to_string()))
    }

    pub fn save(&self) -> Result<()> {
        let text = self.to_yaml()?;
        std::fs::write(&self.path, text).map_err(|source| KubeconfigError::Write {
            path: self.path.clone(),
            source,
        })
    }

    pub fn current_context_name(&self) -> &str {
        self.doc
            .get("current-context")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The body (`context`, `cluster`, `user`) of the entry `name` in list `list`.
    fn entry(&self, list: &str, field: &str, name: &str) -> Option<&Value> {
        self.doc
            .get(list)?
            .as_array()?
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))?
            .get(field)
    }

    /// Replaces the body of entry `name`, in place when it exists, else appended.
    fn set_entry(&mut self, list: &str, field: &str, name: &str, body: Value) {
        let Some(obj) = self.doc.as_object_mut() else {
            return;
        };
        let entries = obj.entry(list).or_insert_with(|| Value::Array(Vec::new()));
        if !entries.is_array() {
            *entries = Value::Array(Vec::new());
        }
        let Some(entries) = entries.as_array_mut() else {
            return;
        };
        match entries
            .iter_mut()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
        {
            Some(e) => {
                if let Some(e) = e.as_object_mut() {
                    e.insert(field.to_owned(), body);
                }
            }
            None => {
                let mut e = Map::new();
                e.insert("name".to_owned(), Value::String(name.to_owned()));
                e.insert(field.to_owned(), body);
                entries.push(Value::Object(e));
            }
        }
    }

    pub fn context(&self, name: &str) -> Option<&Value> {
        self.entry("contexts", "context", name)
    }

    pub fn cluster(&self, name: &str) -> Option<&Value> {
        self.entry("clusters", "cluster", name)
    }

    /// The current context's body.
    pub fn current_context(&self) -> Result<&Value> {
        let name = self.current_context_name();
        self.context(name)
            .ok_or_else(|| KubeconfigError::ContextNotFound(name.to_owned()))
    }

    fn cluster_name_of(context: &Value) -> String {
        context
            .get("cluster")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    /// The server URL of the current context's cluster.
    pub fn current_server(&self) -> Result<String> {
        self.server_of_cluster(Self::cluster_name_of(self.current_context()?))
    }

    /// The server URL of the cluster entry named `cluster`.
    fn server_of_cluster(&self, cluster: String) -> Result<String> {
        let body = self
            .cluster(&cluster)
            .ok_or_else(|| KubeconfigError::ClusterNotFound(cluster.clone()))?;
        body.get("server")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(KubeconfigError::NoServer(cluster))
    }

    /// Switches to `server`: the `workspace.kcp.io/current` context and cluster become copies of the current
    /// ones (so auth info and TLS settings carry over) with the new server URL; the context switched away
    /// from is kept as `workspace.kcp.io/previous`.
    pub fn enter(&mut self, server: &str) -> Result<()> {
        let mut current_ctx = self.current_context()?.clone();
        let old_cluster_name = Self::cluster_name_of(&current_ctx);
        let old_cluster = self
            .cluster(&old_cluster_name)
            .cloned()
            .ok_or_else(|| KubeconfigError::ClusterNotFound(old_cluster_name.clone()))?;

        let mut new_cluster = old_cluster.clone();
        set_str(&mut new_cluster, "server", server);
        self.set_entry("clusters", "cluster", CURRENT, new_cluster);
        let mut new_ctx = current_ctx.clone();
        set_str(&mut new_ctx, "cluster", CURRENT);
        self.set_entry("contexts", "context", CURRENT, new_ctx);

        // The old context pointed at the cluster entry just overwritten; keep its server under `previous`.
        if old_cluster_name == CURRENT {
            set_str(&mut current_ctx, "cluster", PREVIOUS);
            self.set_entry("clusters", "cluster", PREVIOUS, old_cluster);
        }
        self.set_entry("contexts", "context", PREVIOUS, current_ctx);
        self.set_current_context(CURRENT);
        Ok(())
    }

    /// `kubectl ws -`: swaps the current and previous contexts (and their clusters when they are the
    /// plugin's own entries). Returns the new server URL.
    pub fn swap_previous(&mut self) -> Result<String> {
        let mut current_ctx = self.current_context()?.clone();
        let mut prev = self
            .context(PREVIOUS)
            .cloned()
            .ok_or(KubeconfigError::NoPrevious)?;
        // Read both clusters before writing either: each write may overwrite the other's source.
        let current_cluster = match Self::cluster_name_of(&current_ctx).as_str() {
            CURRENT => Some(
                self.cluster(CURRENT)
                    .cloned()
                    .ok_or_else(|| cluster_missing(CURRENT))?,
            ),
            _ => None,
        };
        let prev_cluster = match Self::cluster_name_of(&prev).as_str() {
            PREVIOUS => Some(
                self.cluster(PREVIOUS)
                    .cloned()
                    .ok_or_else(|| cluster_missing(PREVIOUS))?,
            ),
            _ => None,
        };
        if let Some(c) = current_cluster {
            set_str(&mut current_ctx, "cluster", PREVIOUS);
            self.set_entry("clusters", "cluster", PREVIOUS, c);
        }
        if let Some(c) = prev_cluster {
            set_str(&mut prev, "cluster", CURRENT);
            self.set_entry("clusters", "cluster", CURRENT, c);
        }
        let new_cluster = Self::cluster_name_of(&prev);
        self.set_entry("contexts", "context", CURRENT, prev);
        self.set_entry("contexts", "context", PREVIOUS, current_ctx);
        self.set_current_context(CURRENT);
        self.server_of_cluster(new_cluster)
    }

    fn set_current_context(&mut self, name: &str) {
        set_str(&mut self.doc, "current-context", name);
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
        let yaml = k.to_yaml().unwrap_or_default();
        assert!(
            !yaml.contains(">-"),
            "long strings stay plain scalars: {yaml}"
        );
        let again = load(&yaml);
        assert_eq!(k.doc, again.doc);
        assert_eq!(
            again.doc["users"][0]["user"]["token"], "yes",
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
            k.cluster(CURRENT).and_then(|c| c.get("extensions")),
            k.cluster("kcp").and_then(|c| c.get("extensions"))
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
            assert_eq!(k.doc[key], orig.doc[key], "{key}");
        }
        assert_eq!(k.doc["clusters"][0], orig.doc["clusters"][0]);
        assert_eq!(k.doc["clusters"][1], orig.doc["clusters"][1]);
        assert_eq!(k.doc["contexts"][0], orig.doc["contexts"][0]);
        assert_eq!(k.doc["contexts"][1], orig.doc["contexts"][1]);
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

    #[test]
    fn locate_order() {
        let home = Path::new("/home/me");
        assert_eq!(
            locate(Some(Path::new("/f")), Some("/e"), Some(home)).ok(),
            Some(PathBuf::from("/f"))
        );
        assert_eq!(
            locate(None, Some("/nonexistent/a:/nonexistent/b"), Some(home)).ok(),
            Some(PathBuf::from("/nonexistent/a"))
        );
        assert_eq!(
            locate(None, None, Some(home)).ok(),
            Some(PathBuf::from("/home/me/.kube/config"))
        );
        assert!(locate(None, Some(""), None).is_err());
    }
}
