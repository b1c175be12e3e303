//! Value constraints of a schema node (JSONSchemaProps' validation keywords and the
//! `x-kubernetes-*` list/map extensions), read once at compile time.
//!
//! Only nodes that carry at least one such keyword get a [`Constraints`], so the large built-in
//! schemas (which have almost none) pay nothing for them.

use regex::Regex;
use serde_json::{Map, Value};

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListType {
    Atomic,
    Set,
    Map,
}

impl ListType {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "atomic" => Self::Atomic,
            "set" => Self::Set,
            "map" => Self::Map,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Atomic => "atomic",
            Self::Set => "set",
            Self::Map => "map",
        }
    }
}

/// `x-kubernetes-map-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapType {
    Atomic,
    Granular,
}

impl MapType {
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "atomic" => Self::Atomic,
            "granular" => Self::Granular,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Atomic => "atomic",
            Self::Granular => "granular",
        }
    }
}

/// A `pattern`, compiled once. Go's RE2 syntax is (nearly) what the `regex` crate accepts; a
/// pattern it rejects is kept with the reason so CRD validation can report it, and matches
/// nothing is claimed about it at request time.
#[derive(Debug, Clone)]
pub struct Pattern {
    source: String,
    compiled: Result<Regex, String>,
}

impl Pattern {
    pub fn new(source: &str) -> Self {
        Pattern {
            source: source.to_owned(),
            compiled: Regex::new(source).map_err(|err| err.to_string()),
        }
    }

    /// The pattern as written in the schema.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The compiled expression, unless it did not compile.
    pub fn regex(&self) -> Option<&Regex> {
        self.compiled.as_ref().ok()
    }

    /// Why the pattern did not compile.
    pub fn error(&self) -> Option<&str> {
        self.compiled.as_ref().err().map(String::as_str)
    }
}

/// A numeric bound: the limit and whether it is exclusive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    pub limit: f64,
    pub exclusive: bool,
}

/// The value constraints of one node.
#[derive(Debug, Clone, Default)]
pub struct Constraints {
    pub pattern: Option<Pattern>,
    pub maximum: Option<Bound>,
    pub minimum: Option<Bound>,
    pub multiple_of: Option<f64>,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub default: Option<Value>,
    pub list_type: Option<ListType>,
    pub list_map_keys: Vec<String>,
    pub map_type: Option<MapType>,
    /// `x-kubernetes-validations`, raw (CEL rules are compiled elsewhere).
    pub validations: Option<Value>,
}

/// The keywords that make a node carry constraints (besides allOf/anyOf/oneOf/not).
const KEYWORDS: &[&str] = &[
    "pattern",
    "maximum",
    "minimum",
    "multipleOf",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxProperties",
    "minProperties",
    "default",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

impl Constraints {
    /// Reads the constraints of a schema object; `None` when it has none.
    pub(crate) fn read(map: &Map<String, Value>) -> Option<Self> {
        if !KEYWORDS.iter().any(|keyword| map.contains_key(*keyword)) {
            return None;
        }
        let bound = |limit: &str, exclusive: &str| {
            map.get(limit).and_then(Value::as_f64).map(|limit| Bound {
                limit,
                exclusive: map.get(exclusive).and_then(Value::as_bool).unwrap_or(false),
            })
        };
        let int = |key: &str| map.get(key).and_then(Value::as_i64);
        Some(Constraints {
            pattern: map.get("pattern").and_then(Value::as_str).map(Pattern::new),
            maximum: bound("maximum", "exclusiveMaximum"),
            minimum: bound("minimum", "exclusiveMinimum"),
            multiple_of: map.get("multipleOf").and_then(Value::as_f64),
            max_length: int("maxLength"),
            min_length: int("minLength"),
            max_items: int("maxItems"),
            min_items: int("minItems"),
            unique_items: map
                .get("uniqueItems")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            max_properties: int("maxProperties"),
            min_properties: int("minProperties"),
            default: map.get("default").cloned(),
            list_type: map
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
                .and_then(ListType::parse),
            list_map_keys: map
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|keys| {
                    keys.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            map_type: map
                .get("x-kubernetes-map-type")
                .and_then(Value::as_str)
                .and_then(MapType::parse),
            validations: map.get("x-kubernetes-validations").cloned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_only_when_present() {
        let map = json!({"type": "string", "description": "x"});
        assert!(Constraints::read(map.as_object().expect("object")).is_none());
        let map = json!({"type": "integer", "maximum": 10, "exclusiveMaximum": true,
                         "x-kubernetes-list-type": "bogus", "pattern": "("});
        let read = Constraints::read(map.as_object().expect("object")).expect("constraints");
        assert_eq!(
            read.maximum,
            Some(Bound {
                limit: 10.0,
                exclusive: true
            })
        );
        assert_eq!(read.list_type, None);
        let pattern = read.pattern.expect("pattern");
        assert!(pattern.regex().is_none() && pattern.error().is_some());
    }
}
