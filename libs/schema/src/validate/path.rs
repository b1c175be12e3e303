//! Field paths the way the Go decoder spells them: `spec.containers[0].name`.

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

/// Quotes like Go's `strconv.Quote`, which the decoder's messages use.
pub(crate) fn go_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
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
