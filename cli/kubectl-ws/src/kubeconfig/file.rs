//! One kubeconfig file, kept as a generic YAML document (not typed structs) so that every field this
//! plugin does not know about, in every entry, survives a rewrite.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{Kind, KubeconfigError};

type Result<T, E = KubeconfigError> = std::result::Result<T, E>;

#[derive(Debug, Clone)]
pub struct ConfigFile {
    pub path: PathBuf,
    pub doc: Value,
    /// Changed since it was read: to be written back.
    pub dirty: bool,
}

impl ConfigFile {
    /// Reads `path`; `Ok(None)` when it does not exist.
    pub fn read(path: &Path) -> Result<Option<Self>> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_yaml(&text, path).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(KubeconfigError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// An empty document for a file that does not exist yet.
    pub fn empty(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            doc: Value::Object(Map::new()),
            dirty: false,
        }
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
            dirty: false,
        })
    }

    pub fn to_yaml(&self) -> Result<String> {
        // Plain scalars as client-go writes them: folding would turn long base64 data into `>-` blocks.
        let mut options = serde_saphyr::SerializerOptions::default();
        options.prefer_block_scalars = false;
        serde_saphyr::to_string_with_options(&self.doc, options)
            .map_err(|e| KubeconfigError::Serialize(e.to_string()))
    }

    pub fn write(&self) -> Result<()> {
        let text = self.to_yaml()?;
        let write_err = |source| KubeconfigError::Write {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(write_err)?;
        }
        // A new file gets client-go's mode, 0600: kubeconfigs hold credentials.
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&self.path).map_err(write_err)?;
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(write_err)
    }

    pub fn current_context(&self) -> &str {
        self.doc
            .get("current-context")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    pub fn set_current_context(&mut self, name: &str) {
        if let Some(o) = self.doc.as_object_mut() {
            o.insert("current-context".into(), Value::String(name.to_owned()));
            self.dirty = true;
        }
    }

    /// The body (`context`, `cluster`, `user`) of the entry `name`.
    pub fn entry(&self, kind: Kind, name: &str) -> Option<&Value> {
        self.doc
            .get(kind.list())?
            .as_array()?
            .iter()
            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))?
            .get(kind.field())
    }

    /// Replaces the body of entry `name`, in place when it exists, else appended.
    pub fn set_entry(&mut self, kind: Kind, name: &str, body: Value) {
        let Some(obj) = self.doc.as_object_mut() else {
            return;
        };
        let entries = obj
            .entry(kind.list())
            .or_insert_with(|| Value::Array(Vec::new()));
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
                    e.insert(kind.field().to_owned(), body);
                }
            }
            None => {
                let mut e = Map::new();
                e.insert("name".to_owned(), Value::String(name.to_owned()));
                e.insert(kind.field().to_owned(), body);
                entries.push(Value::Object(e));
            }
        }
        self.dirty = true;
    }
}
