//! Numbers as Go's decoders leave them: where Kubernetes decodes a body into `float64` first
//! (YAML bodies through YAMLToJSON, custom resources, strategic-merge patches), a number written
//! with a fraction or exponent but integral (`2.0`, `1e3`) comes out as an integer (Go prints
//! such a float64 as `2`), so a typed client can read it back into an integer field.

use serde_json::Value;

/// Within ±2^53 every integral f64 is exactly an i64.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// Rewrites every integral floating-point number in `value` as an integer.
pub fn integral_floats_to_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() <= EXACT) {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_to_integers),
        Value::Object(map) => map.values_mut().for_each(integral_floats_to_integers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integral_floats_become_integers() {
        let mut v = json!({"a": 2.0, "b": [1e3, 0.5, -4.0], "c": {"d": 7, "e": "2.0"}, "f": 1e300});
        integral_floats_to_integers(&mut v);
        assert_eq!(
            v.to_string(),
            r#"{"a":2,"b":[1000,0.5,-4],"c":{"d":7,"e":"2.0"},"f":1e+300}"#
        );
    }
}
