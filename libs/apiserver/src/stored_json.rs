//! Reading a stored object's layout without building a `serde_json::Value` tree.
//!
//! At start-up the watch cache turns every stored object into its served form. Parsing each object
//! into a Value and writing it out again cost about 10 µs per object: most of a restart with a
//! million objects. The stored bytes are already the compact JSON the shard wrote; serving them only
//! adds `metadata.resourceVersion`. So one validating pass that allocates little finds where
//! `metadata` ends, the labels, and the values the cache may share between objects; the served
//! bytes are then the stored ones with the version spliced in ([`crate::object_json::ObjectJson`]).

use std::fmt;
use std::ops::Range;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// Where things are in a stored object's bytes.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// Values of the top-level fields other than `metadata`.
    pub fields: Vec<Range<usize>>,
    /// Values of `fieldsV1` in the entries of `metadata.managedFields`.
    pub field_sets: Vec<Range<usize>>,
    /// The closing brace of `metadata`, and whether `metadata` has fields (so the version added
    /// before the brace needs a comma). None without `metadata`.
    pub metadata_end: Option<(usize, bool)>,
    /// The value of `metadata.resourceVersion`, when the bytes have one (a served form, e.g. from
    /// a cache snapshot): it is replaced in place.
    pub resource_version: Option<Range<usize>>,
    /// `metadata.labels`, in document order.
    pub labels: Vec<(String, String)>,
}

/// The layout of `stored`, or None when it is not an object this pass can read exactly: then the
/// caller takes the slow path through a Value. That covers keys with escapes (they cannot be
/// borrowed), `metadata` that is not an object, and labels that are not all strings.
pub fn scan(stored: &[u8]) -> Option<Layout> {
    let top: Fields = serde_json::from_slice(stored).ok()?;
    let base = stored.as_ptr() as usize;
    let span = |raw: &RawValue| {
        let start = raw.get().as_ptr() as usize - base;
        start..start + raw.get().len()
    };
    let mut layout = Layout::default();
    for (key, value) in top.0 {
        if key != "metadata" {
            layout.fields.push(span(value));
            continue;
        }
        let meta: Fields = serde_json::from_str(value.get()).ok()?;
        let whole = span(value);
        layout.metadata_end = Some((whole.end - 1, !meta.0.is_empty()));
        for (key, value) in meta.0 {
            match key {
                "resourceVersion" => layout.resource_version = Some(span(value)),
                "labels" => layout.labels = labels(value)?,
                "managedFields" => {
                    // Entries that are not objects are served as they are, with nothing shared.
                    let entries: Vec<&RawValue> =
                        serde_json::from_str(value.get()).unwrap_or_default();
                    for entry in entries {
                        let Ok(fields) = serde_json::from_str::<Fields>(entry.get()) else {
                            continue;
                        };
                        layout.field_sets.extend(
                            fields
                                .0
                                .iter()
                                .filter(|(k, _)| *k == "fieldsV1")
                                .map(|(_, v)| span(v)),
                        );
                    }
                }
                _ => {}
            }
        }
    }
    Some(layout)
}

fn labels(raw: &RawValue) -> Option<Vec<(String, String)>> {
    let fields: Fields = serde_json::from_str(raw.get()).ok()?;
    fields
        .0
        .into_iter()
        .map(|(k, v)| Some((k.to_string(), serde_json::from_str::<String>(v.get()).ok()?)))
        .collect()
}

/// A JSON object's fields: borrowed keys and raw values, in document order.
struct Fields<'a>(Vec<(&'a str, &'a RawValue)>);

impl<'de> Deserialize<'de> for Fields<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(entry) = map.next_entry::<&'de str, &'de RawValue>()? {
                    fields.push(entry);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(FieldsVisitor)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn at<'a>(s: &'a str, r: &Range<usize>) -> &'a str {
        &s[r.clone()]
    }

    #[test]
    fn finds_metadata_labels_and_shareable_values() {
        let s = r#"{"apiVersion":"v1","metadata":{"name":"a","labels":{"x":"1","a":"2"},"managedFields":[{"manager":"m","fieldsV1":{"f:data":{}}},"odd"]},"data":{"k":"v"}}"#;
        let layout = scan(s.as_bytes()).unwrap();
        assert_eq!(
            layout.fields.iter().map(|r| at(s, r)).collect::<Vec<_>>(),
            [r#""v1""#, r#"{"k":"v"}"#]
        );
        assert_eq!(
            layout
                .field_sets
                .iter()
                .map(|r| at(s, r))
                .collect::<Vec<_>>(),
            [r#"{"f:data":{}}"#]
        );
        let (end, nonempty) = layout.metadata_end.unwrap();
        assert!(nonempty);
        assert_eq!(&s[end - 6..=end], r#""odd"]}"#);
        assert_eq!(
            layout.labels,
            [("x".into(), "1".into()), ("a".into(), "2".into())]
        );
    }

    #[test]
    fn finds_a_resource_version() {
        let s = r#"{"metadata":{"name":"a","resourceVersion":"3","uid":"u"}}"#;
        let layout = scan(s.as_bytes()).unwrap();
        assert_eq!(at(s, &layout.resource_version.unwrap()), r#""3""#);
    }

    #[test]
    fn empty_metadata_and_none() {
        let layout = scan(br#"{"metadata":{}}"#).unwrap();
        assert_eq!(layout.metadata_end, Some((13, false)));
        assert_eq!(scan(br#"{"kind":"X"}"#).unwrap().metadata_end, None);
    }

    #[test]
    fn refuses_what_it_cannot_read_exactly() {
        for s in [
            r#"[1]"#,
            r#"{"metadata":"x"}"#,
            r#"{"metadata":{"labels":{"a":1}}}"#,
            r#"{"metadata":{"na\"me":"a"}}"#,
            r#"{"metadata":{}"#,
            r#"{"metadata":{}} trailing"#,
        ] {
            assert_eq!(scan(s.as_bytes()), None, "{s}");
        }
    }
}
