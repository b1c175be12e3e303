//! JSON text written the way Go's `encoding/json` (and json-iterator in its compatible mode)
//! writes it, so `fieldsV1` bytes match what kube-apiserver stores: `<`, `>`, `&`, U+2028 and
//! U+2029 are escaped, and object keys of values are sorted.

use serde_json::Value;

/// Appends `s` as a JSON string literal.
pub(crate) fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `v` as compact JSON.
pub(crate) fn write_json_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                if let Some(value) = map.get(k) {
                    write_json_value(out, value);
                }
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escapes_like_go() {
        let mut out = String::new();
        write_json_string(&mut out, "a<b>&\"\\\n\u{1}\u{2028}é");
        assert_eq!(out, r#""a\u003cb\u003e\u0026\"\\\n\u0001\u2028é""#);
    }

    #[test]
    fn sorts_object_keys() {
        let mut out = String::new();
        write_json_value(
            &mut out,
            &json!({"b": [1, true, null], "a": {"d": 1.5, "c": "x"}}),
        );
        assert_eq!(out, r#"{"a":{"c":"x","d":1.5},"b":[1,true,null]}"#);
    }
}
