//! Field selectors (`?fieldSelector=`), parsed like Kubernetes' `k8s.io/apimachinery/pkg/fields`:
//! comma-joined `field=value`, `field==value` or `field!=value` terms; in values, `\`, `,` and
//! `=` are escaped with a backslash.

use std::fmt;

/// Errors from parsing or checking a field selector; `Display` carries Kubernetes' wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldSelectorError {
    /// A term has no operator.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    InvalidTerm { selector: String, term: String },
    /// A backslash escapes something other than `\`, `,` or `=`, or ends the value.
    #[error("invalid field selector: invalid escape sequence: {0}")]
    InvalidEscapeSequence(String),
    /// An unescaped `,` or `=` in a value. Kubernetes prints the character's code point.
    #[error("invalid field selector: unescapedRune character in value: {}", u32::from(*.0))]
    UnescapedRune(char),
    /// The resource does not support selecting on this field.
    #[error("field label not supported: {0}")]
    UnsupportedField(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    Equals,
    DoubleEquals,
    NotEquals,
}

impl FieldOperator {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Equals => "=",
            Self::DoubleEquals => "==",
            Self::NotEquals => "!=",
        }
    }
}

/// One term of a field selector; `value` is unescaped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    pub field: String,
    pub operator: FieldOperator,
    pub value: String,
}

impl FieldRequirement {
    /// A missing field compares as the empty string, as in Kubernetes.
    pub fn matches(&self, actual: Option<&str>) -> bool {
        let actual = actual.unwrap_or("");
        match self.operator {
            FieldOperator::Equals | FieldOperator::DoubleEquals => actual == self.value,
            FieldOperator::NotEquals => actual != self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `==` prints as `=`: both mean the same and Kubernetes prints only `=`.
        let op = if self.operator == FieldOperator::NotEquals {
            "!="
        } else {
            "="
        };
        write!(f, "{}{}{}", self.field, op, escape_value(&self.value))
    }
}

/// A parsed field selector: the AND of its terms, sorted as Kubernetes sorts them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    pub fn parse(selector: &str) -> Result<Self, FieldSelectorError> {
        let mut terms = split_terms(selector);
        // Kubernetes sorts the raw terms before parsing, which fixes both the order of the
        // requirements and which bad term is reported first.
        terms.sort_unstable();
        let mut requirements = Vec::with_capacity(terms.len());
        for term in terms {
            if term.is_empty() {
                continue;
            }
            let Some((field, operator, raw_value)) = split_term(term) else {
                return Err(FieldSelectorError::InvalidTerm {
                    selector: selector.to_owned(),
                    term: term.to_owned(),
                });
            };
            requirements.push(FieldRequirement {
                field: field.to_owned(),
                operator,
                value: unescape_value(raw_value)?,
            });
        }
        Ok(Self { requirements })
    }

    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object matches; `get` returns the object's value of a field (e.g.
    /// `metadata.name`), `None` when it has none.
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements
            .iter()
            .all(|r| r.matches(get(&r.field).as_deref()))
    }

    /// The value the selector requires for `field` with `=`/`==`, if any.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator != FieldOperator::NotEquals)
            .map(|r| r.value.as_str())
    }

    /// Rejects fields the resource cannot select on, with Kubernetes' message
    /// (`field label not supported: <field>`).
    pub fn check_supported(&self, allowed: &[&str]) -> Result<(), FieldSelectorError> {
        match self
            .requirements
            .iter()
            .find(|r| !allowed.contains(&r.field.as_str()))
        {
            Some(r) => Err(FieldSelectorError::UnsupportedField(r.field.clone())),
            None => Ok(()),
        }
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Splits on commas that are not escaped; escapes stay in the terms.
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// Splits at the first operator; the field part has no escaping.
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    // `==` is tried before `=` so the value does not start with `=`.
    const OPERATORS: [(&str, FieldOperator); 3] = [
        ("!=", FieldOperator::NotEquals),
        ("==", FieldOperator::DoubleEquals),
        ("=", FieldOperator::Equals),
    ];
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (text, op) in OPERATORS {
            if let Some(value) = rest.strip_prefix(text) {
                return Some((&term[..i], op, value));
            }
        }
    }
    None
}

/// Escapes `\`, `,` and `=` so a value can be put in a selector.
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Undoes [`escape_value`], rejecting unknown escapes and bare `,`/`=`.
pub fn unescape_value(s: &str) -> Result<String, FieldSelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_owned());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(FieldSelectorError::InvalidEscapeSequence(format!("\\{c}")));
            }
            out.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => return Err(FieldSelectorError::UnescapedRune(c)),
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err(FieldSelectorError::InvalidEscapeSequence("\\".to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn req(field: &str, operator: FieldOperator, value: &str) -> FieldRequirement {
        FieldRequirement {
            field: field.into(),
            operator,
            value: value.into(),
        }
    }

    #[test]
    fn parses() {
        use FieldOperator::*;
        let cases: Vec<(&str, Vec<FieldRequirement>)> = vec![
            ("", vec![]),
            (",", vec![]),
            ("metadata.name=a", vec![req("metadata.name", Equals, "a")]),
            (
                "metadata.name==a",
                vec![req("metadata.name", DoubleEquals, "a")],
            ),
            (
                "metadata.name!=a",
                vec![req("metadata.name", NotEquals, "a")],
            ),
            ("x=", vec![req("x", Equals, "")]),
            ("=x", vec![req("", Equals, "x")]),
            (
                "b=1,a=2",
                vec![req("a", Equals, "2"), req("b", Equals, "1")],
            ),
            ("x=a\\,b", vec![req("x", Equals, "a,b")]),
            ("x=a\\=b\\\\", vec![req("x", Equals, "a=b\\")]),
            ("x!=\\=a", vec![req("x", NotEquals, "=a")]),
        ];
        for (input, want) in cases {
            assert_eq!(
                FieldSelector::parse(input).unwrap().requirements(),
                want.as_slice(),
                "{input}"
            );
        }
    }

    #[test]
    fn rejects_with_kubernetes_messages() {
        let cases = [
            ("x", "invalid selector: 'x'; can't understand 'x'"),
            (
                "b=1,zz",
                "invalid selector: 'b=1,zz'; can't understand 'zz'",
            ),
            (
                "x=a\\b",
                "invalid field selector: invalid escape sequence: \\b",
            ),
            (
                "x=a\\",
                "invalid field selector: invalid escape sequence: \\",
            ),
            (
                "x=a=b",
                "invalid field selector: unescapedRune character in value: 61",
            ),
            (
                "x!==a",
                "invalid field selector: unescapedRune character in value: 61",
            ),
            ("x=a,b", "invalid selector: 'x=a,b'; can't understand 'b'"),
        ];
        for (input, want) in cases {
            assert_eq!(
                FieldSelector::parse(input).unwrap_err().to_string(),
                want,
                "{input}"
            );
        }
    }

    #[test]
    fn matches() {
        let get = |f: &str| match f {
            "metadata.name" => Some("web".to_owned()),
            "spec.nodeName" => Some(String::new()),
            _ => None,
        };
        let cases = [
            ("", true),
            ("metadata.name=web", true),
            ("metadata.name==web", true),
            ("metadata.name=db", false),
            ("metadata.name!=db", true),
            ("spec.nodeName=", true),
            ("missing=", true),
            ("missing!=", false),
            ("metadata.name=web,missing=x", false),
        ];
        for (input, want) in cases {
            assert_eq!(
                FieldSelector::parse(input).unwrap().matches(get),
                want,
                "{input}"
            );
        }
    }

    #[test]
    fn supported_fields() {
        let sel = FieldSelector::parse("metadata.name=a,spec.foo=b").unwrap();
        assert!(sel.check_supported(&["metadata.name", "spec.foo"]).is_ok());
        assert_eq!(
            sel.check_supported(&["metadata.name", "metadata.namespace"])
                .unwrap_err()
                .to_string(),
            "field label not supported: spec.foo"
        );
        assert_eq!(sel.requires_exact_match("metadata.name"), Some("a"));
        assert_eq!(
            FieldSelector::parse("a!=b")
                .unwrap()
                .requires_exact_match("a"),
            None
        );
    }

    proptest! {
        #[test]
        fn escape_round_trip(s in ".{0,20}") {
            prop_assert_eq!(unescape_value(&escape_value(&s)).unwrap(), s);
        }

        #[test]
        fn print_parse_round_trip(
            terms in prop::collection::vec(("[a-z][a-z.]{0,8}", prop::bool::ANY, "[a-z,=\\\\ ]{0,6}"), 0..4)
        ) {
            let reqs: Vec<FieldRequirement> = terms
                .into_iter()
                .map(|(field, neg, value)| req(&field, if neg { FieldOperator::NotEquals } else { FieldOperator::Equals }, &value))
                .collect();
            let printed = FieldSelector { requirements: reqs.clone() }.to_string();
            let parsed = FieldSelector::parse(&printed).unwrap();
            let mut want = reqs;
            want.sort_by_key(ToString::to_string);
            let mut got = parsed.requirements().to_vec();
            got.sort_by_key(ToString::to_string);
            prop_assert_eq!(got, want);
        }

        #[test]
        fn never_panics(s in ".{0,30}") {
            let _ = FieldSelector::parse(&s);
        }
    }
}
