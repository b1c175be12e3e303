//! The schemas' name prefix, `v<YYMMDD>-<git short HEAD>`: a new name for each change, since an
//! APIResourceSchema cannot change; the `v` makes it start with a letter, as kcp's name rule wants.

use std::path::Path;
use std::process::Command;

use crate::error::ApigenError;

/// `git rev-parse --short HEAD` in `dir` (kcp's apigen runs it where it is started; the input
/// directory is where the CRDs' history is).
pub fn git_head(dir: &Path) -> Result<String, ApigenError> {
    let failed = |message: String| ApigenError::Git {
        dir: dir.to_owned(),
        message,
    };
    let output = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(dir)
        .output()
        .map_err(|e| failed(format!("running git: {e}")))?;
    if !output.status.success() {
        return Err(failed(
            String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        ));
    }
    let head = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if head.is_empty() {
        return Err(failed("git printed no revision".to_owned()));
    }
    Ok(head)
}

/// `v<date>-<head>`, `date` as `YYMMDD`.
pub fn prefix(date: &str, head: &str) -> String {
    format!("v{date}-{head}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args([
                "-c",
                "user.name=apigen",
                "-c",
                "user.email=apigen@example.com",
            ])
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn head_of_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let err = git_head(dir.path()).unwrap_err();
        assert!(matches!(err, ApigenError::Git { .. }), "{err}");
        git(dir.path(), &["init", "-q"]);
        std::fs::write(dir.path().join("a.yaml"), "a: 1\n").unwrap();
        git(dir.path(), &["add", "a.yaml"]);
        git(dir.path(), &["commit", "-q", "-m", "one"]);
        let head = git_head(dir.path()).unwrap();
        assert!(
            head.len() >= 7 && head.chars().all(|c| c.is_ascii_hexdigit()),
            "{head}"
        );
        assert_eq!(prefix("260807", &head), format!("v260807-{head}"));
    }
}
