//! Which kubeconfig files are read and which one receives new entries, as client-go's loading rules
//! decide it for kubectl: `--kubeconfig` alone, else every entry of `$KUBECONFIG`, else `~/.kube/config`.

use std::path::{Path, PathBuf};

use super::KubeconfigError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    /// `--kubeconfig`: the only file read and written; it must exist.
    pub explicit: Option<PathBuf>,
    /// The files merged in order (the first one defining an entry wins); missing ones are skipped.
    pub precedence: Vec<PathBuf>,
}

impl Sources {
    pub fn locate(
        flag: Option<&Path>,
        env: Option<&str>,
        home: Option<&Path>,
    ) -> Result<Self, KubeconfigError> {
        if let Some(p) = flag.filter(|p| !p.as_os_str().is_empty()) {
            return Ok(Self {
                explicit: Some(p.to_owned()),
                precedence: Vec::new(),
            });
        }
        if let Some(list) = env.filter(|s| !s.is_empty()) {
            // Empty entries are ignored and repeats read once, as client-go does.
            let mut precedence: Vec<PathBuf> = Vec::new();
            for p in std::env::split_paths(list).filter(|p| !p.as_os_str().is_empty()) {
                if !precedence.contains(&p) {
                    precedence.push(p);
                }
            }
            if !precedence.is_empty() {
                return Ok(Self {
                    explicit: None,
                    precedence,
                });
            }
        }
        let home = home.ok_or(KubeconfigError::NotFound)?;
        Ok(Self {
            explicit: None,
            precedence: vec![home.join(".kube").join("config")],
        })
    }

    /// The files to read, in merge order.
    pub fn files(&self) -> Vec<PathBuf> {
        match &self.explicit {
            Some(p) => vec![p.clone()],
            None => self.precedence.clone(),
        }
    }

    /// Where entries without a file of origin go: the explicit file, else the first file that exists,
    /// else the first one named (client-go's `GetDefaultFilename`).
    pub fn default_file(&self) -> PathBuf {
        if let Some(p) = &self.explicit {
            return p.clone();
        }
        self.precedence
            .iter()
            .find(|p| p.exists())
            .or(self.precedence.first())
            .cloned()
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_order() {
        let home = Path::new("/home/me");
        let flag = Sources::locate(Some(Path::new("/f")), Some("/e"), Some(home)).ok();
        assert_eq!(
            flag.as_ref().and_then(|s| s.explicit.clone()),
            Some("/f".into())
        );
        assert_eq!(flag.map(|s| s.files()), Some(vec![PathBuf::from("/f")]));

        let env = Sources::locate(
            None,
            Some("/nonexistent/a::/nonexistent/b:/nonexistent/a"),
            Some(home),
        )
        .ok();
        assert_eq!(
            env.as_ref().map(Sources::files),
            Some(vec![
                PathBuf::from("/nonexistent/a"),
                PathBuf::from("/nonexistent/b")
            ])
        );
        // None exists: the first one named.
        assert_eq!(
            env.map(|s| s.default_file()),
            Some(PathBuf::from("/nonexistent/a"))
        );
        assert_eq!(
            Sources::locate(None, None, Some(home))
                .ok()
                .map(|s| s.files()),
            Some(vec![PathBuf::from("/home/me/.kube/config")])
        );
        assert!(Sources::locate(None, Some(""), None).is_err());
    }

    #[test]
    fn default_file_is_first_existing() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let b = dir.path().join("b");
        std::fs::write(&b, "").unwrap_or_else(|e| panic!("{e}"));
        let list = format!("{}:{}", dir.path().join("a").display(), b.display());
        let s = Sources::locate(None, Some(&list), None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.default_file(), b);
    }
}
