//! Values printed the way Go's `fmt` prints unstructured JSON (`map[string]interface{}`, int64,
//! float64, ...), as Kubernetes' field errors embed them in their messages.

use std::fmt::Write;

use serde_json::{Number, Value};

use super::path::go_quote;

/// Go's `%v` of a float64: shortest digits, exponent form from 1e6 up and below 1e-4.
pub(crate) fn float(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits, as Go's does.
    let sci = format!("{value:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..6).contains(&exponent) {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        format!("{value}")
    }
}

/// `%v` of a JSON number as it sits in unstructured data (int64 or float64).
pub(crate) fn number(number: &Number) -> String {
    if let Some(i) = number.as_i64() {
        i.to_string()
    } else if let Some(u) = number.as_u64() {
        // Beyond int64 the Go decoder falls back to float64.
        float(u as f64)
    } else {
        float(number.as_f64().unwrap_or(0.0))
    }
}

/// The bad value as `field.Error.ErrorBody` prints it: numbers and booleans bare, strings
/// quoted, anything else in `%#v` form.
pub(crate) fn error_value(value: &Value) -> String {
    match value {
        Value::Null => "\"null\"".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => go_quote(s),
        Value::Array(_) | Value::Object(_) => sharp(value),
    }
}

/// Go's `%#v` of an unstructured value.
pub(crate) fn sharp(value: &Value) -> String {
    let mut out = String::new();
    write_sharp(&mut out, value, true);
    out
}

fn write_sharp(out: &mut String, value: &Value, typed: bool) {
    match value {
        Value::Null => out.push_str("interface {}(nil)"),
        Value::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => out.push_str(&go_quote(s)),
        Value::Array(items) => {
            if typed {
                out.push_str("[]interface {}");
            }
            out.push('{');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_sharp(out, item, true);
            }
            out.push('}');
        }
        Value::Object(map) => {
            if typed {
                out.push_str("map[string]interface {}");
            }
            out.push('{');
            // Go prints map keys sorted.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                out.push_str(&go_quote(key));
                out.push(':');
                if let Some(item) = map.get(key) {
                    write_sharp(out, item, true);
                }
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn prints_like_go() {
        assert_eq!(float(10.0), "10");
        assert_eq!(float(1.5), "1.5");
        assert_eq!(float(1e21), "1e+21");
        assert_eq!(float(0.00001), "1e-05");
        assert_eq!(float(123456.5), "123456.5");
        assert_eq!(float(1_000_000.0), "1e+06");
        assert_eq!(error_value(&json!("a")), "\"a\"");
        assert_eq!(error_value(&json!(3)), "3");
        assert_eq!(
            error_value(&json!({"name": "a", "port": 80})),
            r#"map[string]interface {}{"name":"a", "port":80}"#
        );
        assert_eq!(error_value(&json!(["a", 1])), r#"[]interface {}{"a", 1}"#);
    }
}
