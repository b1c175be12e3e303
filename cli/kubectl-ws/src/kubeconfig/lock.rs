//! The `<file>.lock` files client-go's `ModifyConfig` holds while it rewrites kubeconfig files, so that
//! this plugin and kubectl do not write the same files at once.

use std::path::{Path, PathBuf};

use super::KubeconfigError;

/// Held locks; released (the lock files removed) on drop.
#[derive(Debug)]
pub struct Locks(Vec<PathBuf>);

impl Locks {
    /// Locks every file in `files`, in sorted order as client-go does (two writers taking them in the same
    /// order cannot deadlock). A lock that is already there is an error: another writer is busy, or one
    /// died and left it behind.
    pub fn acquire(files: &[PathBuf]) -> Result<Self, KubeconfigError> {
        let mut sorted = files.to_vec();
        sorted.sort();
        sorted.dedup();
        let mut held = Locks(Vec::new());
        for file in sorted {
            let lock = lock_path(&file);
            let lock_err = |source| KubeconfigError::Lock {
                path: lock.clone(),
                source,
            };
            // As client-go: the directory is made if missing (a first write to ~/.kube/config).
            if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(lock_err)?;
            }
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock)
                .map_err(lock_err)?;
            held.0.push(lock);
        }
        Ok(held)
    }
}

impl Drop for Locks {
    fn drop(&mut self) {
        for lock in &self.0 {
            // Nothing better to do if it is already gone.
            let _ = std::fs::remove_file(lock);
        }
    }
}

fn lock_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_and_released() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let files = vec![dir.path().join("b"), dir.path().join("a")];
        let held = Locks::acquire(&files).unwrap_or_else(|e| panic!("{e}"));
        assert!(dir.path().join("a.lock").exists());
        let err = Locks::acquire(&files[1..]).err().map(|e| e.to_string());
        assert!(
            err.as_deref().is_some_and(|e| e.contains("a.lock")),
            "{err:?}"
        );
        drop(held);
        assert!(!dir.path().join("a.lock").exists());
        assert!(!dir.path().join("b.lock").exists());
        assert!(Locks::acquire(&files).is_ok());
    }
}
