//! Path elements: one step from a value to one of its children, as structured-merge-diff names
//! them in `fieldsV1` (`f:`, `k:`, `v:`, `i:`) and as Kubernetes prints them in conflicts.

use crate::field_error::go_quote;
use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

use super::json::{write_json_string, write_json_value};

/// One step into a value.
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A field of an object (struct field or map key).
    Field(String),
    /// The item of a map-list whose key fields have these values, sorted by field name.
    Key(Vec<(String, Value)>),
    /// The item of a set-list with this value.
    Value(Value),
    /// The item at a position of a list (only ever produced by other implementations).
    Index(usize),
}

/// A path from the root of an object.
pub type Path = Vec<PathElement>;

/// Why a `fieldsV1` key is not a path element.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathElementError {
    #[error("key must be 2 characters long: {0:?}")]
    TooShort(String),
    #[error("missing colon: {0}")]
    MissingColon(String),
    /// A prefix other than `f`, `k`, `v` or `i`; readers skip these for forward compatibility.
    #[error("unknown path element type: {0}")]
    UnknownType(String),
    #[error("invalid path element {0:?}: {1}")]
    Invalid(String, String),
}

impl PathElement {
    /// Builds a key element; key fields are sorted by name as structured-merge-diff stores them.
    pub fn key(mut fields: Vec<(String, Value)>) -> Self {
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    /// Parses the `fieldsV1` spelling of an element (`f:name`, `k:{...}`, `v:...`, `i:3`).
    pub fn parse(s: &str) -> Result<Self, PathElementError> {
        let bytes = s.as_bytes();
        if bytes.len() < 2 {
            return Err(PathElementError::TooShort(s.to_string()));
        }
        if bytes[1] != b':' {
            return Err(PathElementError::MissingColon(s.to_string()));
        }
        let rest = &s[2..];
        let invalid = |e: String| PathElementError::Invalid(s.to_string(), e);
        match bytes[0] {
            b'f' => Ok(PathElement::Field(rest.to_string())),
            b'v' => serde_json::from_str::<Value>(rest)
                .map(PathElement::Value)
                .map_err(|e| invalid(e.to_string())),
            b'k' => {
                let value: Value =
                    serde_json::from_str(rest).map_err(|e| invalid(e.to_string()))?;
                match value {
                    Value::Object(map) => Ok(PathElement::key(map.into_iter().collect())),
                    _ => Err(invalid("key is not a JSON object".to_string())),
                }
            }
            b'i' => rest
                .parse::<usize>()
                .map(PathElement::Index)
                .map_err(|e| invalid(e.to_string())),
            _ => Err(PathElementError::UnknownType(s.to_string())),
        }
    }

    /// The `fieldsV1` spelling of the element (not yet escaped as a JSON object key).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        match self {
            PathElement::Field(name) => {
                out.push_str("f:");
                // Field names are written raw, as structured-merge-diff does.
                out.push_str(name);
            }
            PathElement::Key(fields) => {
                out.push_str("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_json_string(&mut out, name);
                    out.push(':');
                    write_json_value(&mut out, value);
                }
                out.push('}');
            }
            PathElement::Value(value) => {
                out.push_str("v:");
                write_json_value(&mut out, value);
            }
            PathElement::Index(i) => {
                out.push_str("i:");
                out.push_str(&i.to_string());
            }
        }
        out
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }
}

/// structured-merge-diff's total order: fields < keys < values < indexes, then by content.
/// `fieldsV1` is written in this order, so it decides the bytes Kubernetes stores.
impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.as_bytes().cmp(b.as_bytes()),
            (PathElement::Key(a), PathElement::Key(b)) => compare_key_fields(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

fn compare_key_fields(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let c = x.0.as_bytes().cmp(y.0.as_bytes());
        if c != Ordering::Equal {
            return c;
        }
        let c = compare_values(&x.1, &y.1);
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

/// structured-merge-diff's total order on values: numbers (compared numerically, ints and
/// floats together) < strings < bools < lists < maps < null.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return x.cmp(&y);
            }
            if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                return x.cmp(&y);
            }
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let c = compare_values(p, q);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            // Walk the union of keys in lexical order; the side missing a key is greater,
            // and the side that runs out of keys first is smaller.
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for (i, k) in keys.into_iter().enumerate() {
                let c = if i == x.len() {
                    Ordering::Less
                } else if i == y.len() {
                    Ordering::Greater
                } else {
                    match (x.get(k), y.get(k)) {
                        (None, _) => Ordering::Greater,
                        (_, None) => Ordering::Less,
                        (Some(p), Some(q)) => compare_values(p, q),
                    }
                };
                if c != Ordering::Equal {
                    return c;
                }
            }
            Ordering::Equal
        }
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => type_rank(a).cmp(&type_rank(b)),
    }
}

/// Values equal under [`compare_values`] (so `1` equals `1.0`).
pub fn values_equal(a: &Value, b: &Value) -> bool {
    compare_values(a, b) == Ordering::Equal
}

impl fmt::Display for PathElement {
    /// Kubernetes' rendering in conflict causes: `.name`, `[name="x",port=80]`, `[="v"]`, `[3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                f.write_str("[")?;
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{name}={}", display_value(value))?;
                }
                f.write_str("]")
            }
            PathElement::Value(value) => write!(f, "[={}]", display_value(value)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// Renders a path as Kubernetes prints it, e.g. `.spec.containers[name="x"].image`.
pub fn display_path(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// Go's `%v` of a value (strings quoted), used inside displayed paths.
fn display_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(display_value).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", display_value(v)))
            .collect(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse_and_encode_each_kind() {
        for s in [
            "f:spec",
            "k:{\"name\":\"nginx\"}",
            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}",
            "v:\"finalizer.example.com\"",
            "v:3",
            "i:2",
        ] {
            let pe = PathElement::parse(s).unwrap();
            assert_eq!(pe.encode(), s);
        }
    }

    #[test]
    fn key_fields_are_sorted_on_parse() {
        let pe = PathElement::parse("k:{\"protocol\":\"TCP\",\"port\":80}").unwrap();
        assert_eq!(pe.encode(), "k:{\"port\":80,\"protocol\":\"TCP\"}");
    }

    #[test]
    fn parse_errors() {
        assert!(matches!(
            PathElement::parse("f"),
            Err(PathElementError::TooShort(_))
        ));
        assert!(matches!(
            PathElement::parse("fx"),
            Err(PathElementError::MissingColon(_))
        ));
        assert!(matches!(
            PathElement::parse("z:foo"),
            Err(PathElementError::UnknownType(_))
        ));
        assert!(matches!(
            PathElement::parse("k:[1]"),
            Err(PathElementError::Invalid(..))
        ));
        assert!(matches!(
            PathElement::parse("k:{\"a\":1} x"),
            Err(PathElementError::Invalid(..))
        ));
        assert!(matches!(
            PathElement::parse("i:x"),
            Err(PathElementError::Invalid(..))
        ));
    }

    #[test]
    fn order_is_by_kind_then_content() {
        let f = PathElement::Field("z".into());
        let k = PathElement::key(vec![("a".into(), json!("a"))]);
        let v = PathElement::Value(json!(1));
        let i = PathElement::Index(0);
        assert!(f < k && k < v && v < i);
        assert!(PathElement::Value(json!(2)) < PathElement::Value(json!("1")));
        assert!(PathElement::Value(json!("b")) < PathElement::Value(json!(true)));
        assert_eq!(PathElement::Value(json!(1)), PathElement::Value(json!(1.0)));
        assert!(PathElement::Field("B".into()) < PathElement::Field("a".into()));
    }

    #[test]
    fn display_matches_kubernetes() {
        let path = vec![
            PathElement::Field("spec".into()),
            PathElement::Field("containers".into()),
            PathElement::key(vec![("name".into(), json!("x"))]),
            PathElement::Field("image".into()),
        ];
        assert_eq!(display_path(&path), ".spec.containers[name=\"x\"].image");
        let ports = PathElement::key(vec![
            ("protocol".into(), json!("TCP")),
            ("containerPort".into(), json!(80)),
        ]);
        assert_eq!(ports.to_string(), "[containerPort=80,protocol=\"TCP\"]");
        assert_eq!(PathElement::Value(json!("a")).to_string(), "[=\"a\"]");
        assert_eq!(PathElement::Index(4).to_string(), "[4]");
    }
}
