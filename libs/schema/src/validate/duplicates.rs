//! Duplicate keys in a JSON body, which `serde_json::Value` silently collapses.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::MAX_STRICT_ERRORS;
use super::path::{go_quote, push_index, push_key};

/// Every duplicated key of a JSON document, as `duplicate field "<path>"` in document order
/// (the Go decoder's wording). Each object is checked, including maps and opaque values.
/// A syntax error ends the scan quietly: the real decode reports it.
pub fn duplicate_fields(raw_json: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut path = String::new();
    let mut deserializer = serde_json::Deserializer::from_slice(raw_json);
    let _syntax = Scan {
        path: &mut path,
        found: &mut found,
    }
    .deserialize(&mut deserializer);
    found
}

/// Walks any JSON value, tracking the path; serde_json's parser does the lexing (escapes,
/// numbers) and bounds the nesting depth.
struct Scan<'s> {
    path: &'s mut String,
    found: &'s mut Vec<String>,
}

impl Scan<'_> {
    fn nested(&mut self) -> Scan<'_> {
        Scan {
            path: self.path,
            found: self.found,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Scan<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Scan<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        loop {
            let mark = self.path.len();
            push_index(self.path, index);
            let more = seq.next_element_seed(self.nested())?;
            self.path.truncate(mark);
            if more.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let mark = self.path.len();
            push_key(self.path, &key);
            if !seen.insert(key) {
                let message = format!("duplicate field {}", go_quote(self.path));
                if self.found.len() < MAX_STRICT_ERRORS && !self.found.contains(&message) {
                    self.found.push(message);
                }
            }
            let value = map.next_value_seed(self.nested());
            self.path.truncate(mark);
            value?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_duplicates_at_every_level() {
        let raw = br#"{"metadata":{"name":"a","labels":{"x":"1","x":"2"},"name":"b"},
                       "data":{"k":"v"},"items":[{"a":1,"a":2}],"data":{}}"#;
        assert_eq!(
            duplicate_fields(raw),
            vec![
                r#"duplicate field "metadata.labels.x""#,
                r#"duplicate field "metadata.name""#,
                r#"duplicate field "items[0].a""#,
                r#"duplicate field "data""#,
            ]
        );
    }

    #[test]
    fn escaped_keys_compare_by_value() {
        let raw = br#"{"spec":{"a":1,"\u0061":2}}"#;
        assert_eq!(duplicate_fields(raw), vec![r#"duplicate field "spec.a""#]);
    }

    #[test]
    fn clean_and_broken_documents() {
        assert!(duplicate_fields(br#"{"a":{"b":[1,{"c":null}]},"b":{"a":1}}"#).is_empty());
        assert!(duplicate_fields(b"[]").is_empty());
        // Broken JSON: report what was seen before the error, do not panic.
        assert_eq!(
            duplicate_fields(br#"{"a":1,"a":2,"#),
            vec![r#"duplicate field "a""#]
        );
        let deep = "[".repeat(10_000);
        assert!(duplicate_fields(deep.as_bytes()).is_empty());
    }

    #[test]
    fn repeated_duplicates_are_reported_once() {
        let raw = br#"{"a":1,"a":2,"a":3}"#;
        assert_eq!(duplicate_fields(raw), vec![r#"duplicate field "a""#]);
    }
}
