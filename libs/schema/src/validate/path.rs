//! Field paths the way the Go decoder spells them: `spec.containers[0].name`.

pub(crate) use kcp_apimachinery::field_error::go_quote;
use std::fmt::Write;

/// Appends an object key.
pub(crate) fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

/// Appends a list index.
pub(crate) fn push_index(path: &mut String, index: usize) {
    // Writing to a String cannot fail.
    let _ = write!(path, "[{index}]");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_quotes() {
        let mut path = String::new();
        push_key(&mut path, "spec");
        push_key(&mut path, "containers");
        push_index(&mut path, 3);
        push_key(&mut path, "name");
        assert_eq!(path, "spec.containers[3].name");
        assert_eq!(go_quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(go_quote("tab\there\u{1}"), r#""tab\there\x01""#);
        assert_eq!(go_quote("ünïcode"), "\"ünïcode\"");
    }
}
