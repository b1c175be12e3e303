//! Field manager names: the default taken from the user agent, and the checks on a given one.

/// Kubernetes' limit on a field manager name.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// The manager name Kubernetes uses when a request names none: the user agent up to its
/// first `/`, without unprintable characters, cut to 128 bytes (`kubectl/v1.30.0 (linux/amd64)`
/// gives `kubectl`).
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or_default();
    let mut out = String::new();
    for c in prefix.chars().filter(|c| is_printable(*c)) {
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// Go's `unicode.IsPrint`, near enough: no control characters, and space is the only
/// printable whitespace.
fn is_printable(c: char) -> bool {
    !c.is_control() && (c == ' ' || !c.is_whitespace())
}

/// Checks a `fieldManager` parameter; the error is the detail Kubernetes reports for
/// `fieldManager`.
pub fn validate_field_manager(name: &str) -> Result<(), String> {
    if name.len() > FIELD_MANAGER_MAX_LENGTH {
        return Err(format!(
            "must not be longer than {FIELD_MANAGER_MAX_LENGTH} characters"
        ));
    }
    if !name.chars().all(is_printable) {
        return Err("must only contain printable characters".to_string());
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    #[test]
    fn user_agent_prefix() {
        assert_eq!(
            manager_from_user_agent("kubectl/v1.30.0 (linux/amd64) kubernetes/7c48c2b"),
            "kubectl"
        );
        assert_eq!(manager_from_user_agent("curl"), "curl");
        assert_eq!(manager_from_user_agent("a\tb/c"), "ab");
        assert_eq!(manager_from_user_agent(&"x".repeat(200)).len(), 128);
        assert_eq!(manager_from_user_agent(""), "");
    }

    #[test]
    fn field_manager_checks() {
        assert!(validate_field_manager("kubectl").is_ok());
        assert!(validate_field_manager(&"x".repeat(129)).is_err());
        assert_eq!(
            validate_field_manager("a\nb"),
            Err("must only contain printable characters".to_string())
        );
    }
}
