//! Apply conflicts and the 409 `metav1.Status` Kubernetes answers them with.

use std::fmt;

use crate::status::{ApiError, Cause, Reason};

use super::entry::Operation;
use super::path::{Path, display_path};

/// A field the applier would change that another manager owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub manager: String,
    pub operation: Operation,
    /// Only shown for `Update` managers.
    pub api_version: String,
    pub subresource: String,
    pub path: Path,
}

impl Conflict {
    /// The manager as Kubernetes names it: `"mgr"`, `"mgr" with subresource "status"`,
    /// `"mgr" using v1` for updaters.
    pub fn manager_display(&self) -> String {
        let mut out = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }

    /// The field as Kubernetes prints it, e.g. `.spec.containers[name="x"].image`.
    pub fn field(&self) -> String {
        display_path(&self.path)
    }
}

/// The conflicts of a refused apply, grouped by manager in a stable order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Conflicts(pub Vec<Conflict>);

impl Conflicts {
    /// One `FieldManagerConflict` cause per field.
    pub fn causes(&self) -> Vec<Cause> {
        self.0
            .iter()
            .map(|c| {
                Cause::new(
                    "FieldManagerConflict",
                    c.field(),
                    format!("conflict with {}", c.manager_display()),
                )
            })
            .collect()
    }

    /// The 409 `Conflict` error Kubernetes returns for a refused apply.
    pub fn to_api_error(&self) -> ApiError {
        let mut err = ApiError::new(Reason::Conflict, self.to_string());
        err.details.causes = self.causes();
        err
    }
}

impl fmt::Display for Conflicts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [only] = self.0.as_slice() {
            return write!(
                f,
                "Apply failed with 1 conflict: conflict with {}: {}",
                only.manager_display(),
                only.field()
            );
        }
        write!(f, "Apply failed with {} conflicts: ", self.0.len())?;
        let mut lines = Vec::new();
        let mut current: Option<String> = None;
        for c in &self.0 {
            let manager = c.manager_display();
            if current.as_ref() != Some(&manager) {
                lines.push(format!("conflicts with {manager}:"));
                current = Some(manager);
            }
            lines.push(format!("- {}", c.field()));
        }
        f.write_str(&lines.join("\n"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use crate::managed_fields::set::field_path;

    fn conflict(manager: &str, operation: Operation, path: &[&str]) -> Conflict {
        Conflict {
            manager: manager.into(),
            operation,
            api_version: "v1".into(),
            subresource: String::new(),
            path: field_path(path),
        }
    }

    #[test]
    fn single_conflict_message() {
        let c = Conflicts(vec![conflict(
            "kubectl-client-side-apply",
            Operation::Update,
            &["data", "key"],
        )]);
        assert_eq!(
            c.to_string(),
            "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.key"
        );
        let err = c.to_api_error();
        assert_eq!(err.code, 409);
        assert_eq!(
            err.details.causes,
            vec![Cause::new(
                "FieldManagerConflict",
                ".data.key",
                "conflict with \"kubectl-client-side-apply\" using v1"
            )]
        );
    }

    #[test]
    fn several_conflicts_are_grouped_by_manager() {
        let mut status = conflict("ctrl", Operation::Apply, &["status", "phase"]);
        status.subresource = "status".into();
        let c = Conflicts(vec![
            status,
            conflict("mgr-a", Operation::Update, &["data", "x"]),
            conflict("mgr-a", Operation::Update, &["spec", "replicas"]),
        ]);
        assert_eq!(
            c.to_string(),
            "Apply failed with 3 conflicts: conflicts with \"ctrl\" with subresource \"status\":\n- .status.phase\nconflicts with \"mgr-a\" using v1:\n- .data.x\n- .spec.replicas"
        );
    }
}
