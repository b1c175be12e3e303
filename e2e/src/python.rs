//! A Python virtual environment with the official Kubernetes client (`e2e/python/requirements.txt`),
//! created on first use under `target/e2e-python` and shared by every test process (a file lock
//! keeps concurrent tests from building it twice). `scripts/setup.sh` prepares it ahead of time.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
}

/// `e2e/python/<name>`.
pub fn script(name: &str) -> PathBuf {
    workspace().join("e2e").join("python").join(name)
}

fn has_client(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import kubernetes"])
        .status()
        .is_ok_and(|s| s.success())
}

/// The venv's interpreter, with the Kubernetes client importable.
pub fn python_with_kubernetes() -> PathBuf {
    let dir = workspace().join("target").join("e2e-python");
    let python = dir.join("bin").join("python");
    if has_client(&python) {
        return python;
    }
    fs::create_dir_all(workspace().join("target")).expect("creating target/");
    let lock = fs::File::create(workspace().join("target").join("e2e-python.lock"))
        .expect("creating the venv lock file");
    lock.lock().expect("locking the venv");
    if !has_client(&python) {
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&dir)
            .status()
            .expect("running python3 -m venv");
        assert!(status.success(), "python3 -m venv failed: {status}");
        let status = Command::new(dir.join("bin").join("pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(script("requirements.txt"))
            .status()
            .expect("running pip install");
        assert!(
            status.success(),
            "pip install of the Kubernetes client failed: {status}"
        );
    }
    assert!(has_client(&python), "the Kubernetes client does not import");
    python
}
