//! Label selectors, parsed with the grammar and error messages of Kubernetes'
//! `k8s.io/apimachinery/pkg/labels` package:
//!
//! ```text
//! selector    ::= requirement | requirement "," selector
//! requirement ::= ["!"] KEY [ ("in" | "notin") "(" VALUES ")" | ("=" | "==" | "!=" | "<" | ">") VALUE ]
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::hash::BuildHasher;

use serde_json::{Map, Value};

use crate::field_error::{FieldError, aggregate_message, go_quote};
use crate::names::{is_qualified_name, is_valid_label_value};

/// Errors from parsing or building a label selector; `Display` carries Kubernetes' wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelSelectorError {
    /// The selector string is malformed (unexpected token).
    #[error("{0}")]
    Syntax(String),
    /// A requirement inside the selector string is malformed or invalid.
    #[error("unable to parse requirement: {0}")]
    Requirement(String),
    /// A requirement built from `metav1.LabelSelector` is invalid (key, values).
    #[error("{0}")]
    InvalidRequirement(String),
    /// `matchExpressions[].operator` is not In, NotIn, Exists or DoesNotExist.
    #[error("{} is not a valid label selector operator", go_quote(.0))]
    InvalidOperator(String),
    /// The `metav1.LabelSelector` JSON does not have the expected shape.
    #[error("invalid label selector: {0}")]
    Malformed(String),
}

/// Operator of one requirement (Kubernetes' `selection.Operator`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    In,
    NotIn,
    Equals,
    DoubleEquals,
    NotEquals,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

impl Operator {
    /// Kubernetes' string for the operator (`in`, `notin`, `=`, `==`, `!=`, `exists`, `!`, `gt`, `lt`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::In => "in",
            Self::NotIn => "notin",
            Self::Equals => "=",
            Self::DoubleEquals => "==",
            Self::NotEquals => "!=",
            Self::Exists => "exists",
            Self::DoesNotExist => "!",
            Self::GreaterThan => "gt",
            Self::LessThan => "lt",
        }
    }
}

/// Read access to a set of labels.
pub trait Labels {
    fn label(&self, key: &str) -> Option<&str>;
}

/// `metadata.labels` as stored JSON; a non-string value counts as absent.
impl Labels for Map<String, Value> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl<S: BuildHasher> Labels for HashMap<String, String, S> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// One `key op values` term of a selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Validates and builds a requirement, with Kubernetes' `NewRequirement` rules: a qualified
    /// key; non-empty values for in/notin; exactly one for `=`, `==`, `!=`; none for exists;
    /// exactly one integer for `gt`/`lt`; every value a valid label value.
    pub fn new(
        key: &str,
        operator: Operator,
        values: Vec<String>,
    ) -> Result<Self, LabelSelectorError> {
        let mut errs = Vec::new();
        let key_errs = is_qualified_name(key);
        if !key_errs.is_empty() {
            errs.push(FieldError::invalid("key", key, key_errs.join("; ")));
        }
        let values_json = || Value::from(values.clone());
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => errs.push(FieldError::invalid(
                "values",
                values_json(),
                "for 'in', 'notin' operators, values set can't be empty",
            )),
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                errs.push(FieldError::invalid(
                    "values",
                    values_json(),
                    "exact-match compatibility requires one single value",
                ))
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                errs.push(FieldError::invalid(
                    "values",
                    values_json(),
                    "values set must be empty for exists and does not exist",
                ))
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(FieldError::invalid(
                        "values",
                        values_json(),
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(FieldError::invalid(
                            format!("values[{i}]"),
                            v.as_str(),
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let value_errs = is_valid_label_value(v);
            if !value_errs.is_empty() {
                errs.push(FieldError::invalid(
                    format!("values[{i}][{key}]"),
                    v.as_str(),
                    value_errs.join("; "),
                ));
            }
        }
        if errs.is_empty() {
            Ok(Self {
                key: key.to_owned(),
                operator,
                values,
            })
        } else {
            Err(LabelSelectorError::InvalidRequirement(aggregate_message(
                &errs,
            )))
        }
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn operator(&self) -> Operator {
        self.operator
    }

    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, v: &str) -> bool {
        self.values.iter().any(|x| x == v)
    }

    /// Whether `labels` satisfy this requirement. A missing key satisfies `notin`, `!=` and `!`.
    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        let value = labels.label(&self.key);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => value.is_none_or(|v| !self.has_value(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(actual) = value.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let [wanted] = self.values.as_slice() else {
                    return false;
                };
                let Ok(wanted) = wanted.parse::<i64>() else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > wanted
                } else {
                    actual < wanted
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        // Values print sorted so equal selectors print equally.
        let mut values: Vec<&str> = self.values.iter().map(String::as_str).collect();
        values.sort_unstable();
        f.write_str(&values.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A label selector: the AND of its requirements (sorted by key), or the selector that matches
/// nothing (a `null` `metav1.LabelSelector`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Selector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl Selector {
    /// Matches every label set.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Matches no label set.
    pub fn nothing() -> Self {
        Self {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Builds a selector from requirements (sorted by key, as Kubernetes does).
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Self {
            requirements,
            nothing: false,
        }
    }

    /// Parses a `labelSelector` query string.
    pub fn parse(s: &str) -> Result<Self, LabelSelectorError> {
        Parser::new(s).parse().map(Self::from_requirements)
    }

    /// True when the selector does not restrict anything.
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// True for the selector that matches nothing.
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    pub fn matches<L: Labels + ?Sized>(&self, labels: &L) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Matches the `metadata.labels` of a stored object (absent labels = no labels).
    pub fn matches_object(&self, object: &Value) -> bool {
        static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
        let labels = object
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .unwrap_or_else(|| EMPTY.get_or_init(Map::new));
        self.matches(labels)
    }

    /// The single value the selector requires for `label`, if it pins one (`=`, `==`, `in (x)`),
    /// so callers can narrow a lookup.
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == label)?;
        match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for Selector {
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

/// Parses a `labelSelector` query string (see [`Selector::parse`]).
pub fn parse(s: &str) -> Result<Selector, LabelSelectorError> {
    Selector::parse(s)
}

/// Converts `metav1.LabelSelector` JSON: `null` matches nothing, `{}` matches everything,
/// otherwise `matchLabels` (as `=`) AND `matchExpressions` (In, NotIn, Exists, DoesNotExist).
pub fn from_label_selector(v: &Value) -> Result<Selector, LabelSelectorError> {
    let obj = match v {
        Value::Null => return Ok(Selector::nothing()),
        Value::Object(o) => o,
        _ => return Err(LabelSelectorError::Malformed("must be an object".into())),
    };
    let mut requirements = Vec::new();
    match obj.get("matchLabels") {
        None | Some(Value::Null) => {}
        Some(Value::Object(labels)) => {
            for (k, v) in labels {
                let v = v.as_str().ok_or_else(|| {
                    LabelSelectorError::Malformed(format!("matchLabels[{k}] must be a string"))
                })?;
                requirements.push(Requirement::new(k, Operator::Equals, vec![v.to_owned()])?);
            }
        }
        Some(_) => {
            return Err(LabelSelectorError::Malformed(
                "matchLabels must be an object".into(),
            ));
        }
    }
    match obj.get("matchExpressions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(exprs)) => {
            for (i, expr) in exprs.iter().enumerate() {
                requirements.push(expression_requirement(i, expr)?);
            }
        }
        Some(_) => {
            return Err(LabelSelectorError::Malformed(
                "matchExpressions must be a list".into(),
            ));
        }
    }
    if requirements.is_empty() {
        return Ok(Selector::everything());
    }
    Ok(Selector::from_requirements(requirements))
}

fn expression_requirement(i: usize, expr: &Value) -> Result<Requirement, LabelSelectorError> {
    let malformed =
        |what: &str| LabelSelectorError::Malformed(format!("matchExpressions[{i}].{what}"));
    let expr = expr
        .as_object()
        .ok_or_else(|| malformed("must be an object"))?;
    let text = |field: &str| match expr.get(field) {
        None | Some(Value::Null) => Ok(""),
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(_) => Err(malformed(&format!("{field} must be a string"))),
    };
    let key = text("key")?;
    let operator = match text("operator")? {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => return Err(LabelSelectorError::InvalidOperator(other.to_owned())),
    };
    let values = match expr.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(vs)) => vs
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| malformed("values must be strings"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(malformed("values must be a list")),
    };
    Requirement::new(key, operator, values)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn literal_token(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Byte-level lexer; like Kubernetes', a NUL byte ends the input.
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&c) => {
                self.pos += 1;
                c
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn scan_id_or_keyword(&mut self) -> (Token, String) {
        let start = self.pos;
        let mut end = start;
        loop {
            let c = self.read();
            if c == 0 {
                break;
            }
            if is_special(c) || is_whitespace(c) {
                self.unread();
                break;
            }
            end = self.pos;
        }
        let bytes = &self.s[start..end];
        let lit = String::from_utf8_lossy(bytes).into_owned();
        match literal_token(bytes) {
            Some(t) => (t, lit),
            None => (Token::Identifier, lit),
        }
    }

    fn scan_special(&mut self) -> (Token, String) {
        let mut buf: Vec<u8> = Vec::new();
        let mut last: Option<(Token, String)> = None;
        loop {
            let c = self.read();
            if c == 0 {
                break;
            }
            if !is_special(c) {
                self.unread();
                break;
            }
            buf.push(c);
            if let Some(t) = literal_token(&buf) {
                last = Some((t, String::from_utf8_lossy(&buf).into_owned()));
            } else if last.is_some() {
                self.unread();
                break;
            }
        }
        last.unwrap_or_else(|| {
            (
                Token::Error,
                format!(
                    "error expected: keyword found '{}'",
                    String::from_utf8_lossy(&buf)
                ),
            )
        })
    }

    fn lex(&mut self) -> (Token, String) {
        let mut c = self.read();
        while is_whitespace(c) {
            c = self.read();
        }
        if c == 0 {
            return (Token::EndOfString, String::new());
        }
        self.unread();
        if is_special(c) {
            self.scan_special()
        } else {
            self.scan_id_or_keyword()
        }
    }
}

/// Whether `in`/`notin` are keywords (after a key) or plain values.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

impl Parser {
    fn new(s: &str) -> Self {
        let mut lexer = Lexer {
            s: s.as_bytes(),
            pos: 0,
        };
        let mut items = Vec::new();
        loop {
            let item = lexer.lex();
            let end = item.0 == Token::EndOfString;
            items.push(item);
            if end {
                break;
            }
        }
        Self { items, position: 0 }
    }

    fn item(&self, at: usize, ctx: Context) -> (Token, String) {
        let (tok, lit) = self
            .items
            .get(at)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        match tok {
            Token::In | Token::NotIn if ctx == Context::Values => (Token::Identifier, lit),
            _ => (tok, lit),
        }
    }

    fn lookahead(&self, ctx: Context) -> (Token, String) {
        self.item(self.position, ctx)
    }

    fn consume(&mut self, ctx: Context) -> (Token, String) {
        let item = self.item(self.position, ctx);
        self.position += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, LabelSelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self.parse_requirement().map_err(|e| match e {
                        LabelSelectorError::Syntax(m)
                        | LabelSelectorError::InvalidRequirement(m) => {
                            LabelSelectorError::Requirement(m)
                        }
                        other => other,
                    })?;
                    requirements.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(LabelSelectorError::Syntax(format!(
                                    "found '{l2}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(LabelSelectorError::Syntax(format!(
                                "found '{l}', expected: ',' or 'end of string'"
                            )));
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(LabelSelectorError::Syntax(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    )));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, LabelSelectorError> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(op) = inferred {
            return Requirement::new(&key, op, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(&key, operator, values.into_iter().collect())
    }

    /// Reads `[!]key`; the operator is known already for `!key` and for a bare `key`.
    fn parse_key_and_infer_operator(
        &mut self,
    ) -> Result<(String, Option<Operator>), LabelSelectorError> {
        let mut operator = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(LabelSelectorError::Syntax(format!(
                "found '{lit}', expected: identifier"
            )));
        }
        let errs = is_qualified_name(&lit);
        if !errs.is_empty() {
            return Err(LabelSelectorError::Syntax(
                FieldError::invalid("", lit.as_str(), errs.join("; ")).to_string(),
            ));
        }
        let (next, _) = self.lookahead(Context::Values);
        if (next == Token::EndOfString || next == Token::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((lit, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, LabelSelectorError> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(LabelSelectorError::Syntax(format!(
                    "found '{lit}', expected: {BINARY_OPERATORS}"
                )));
            }
        })
    }

    /// `( v1, v2, ... )`; empty entries stand for the empty value.
    fn parse_values(&mut self) -> Result<BTreeSet<String>, LabelSelectorError> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(LabelSelectorError::Syntax(format!(
                "found '{lit}' expected: '('"
            )));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Context::Values);
                if tok != Token::ClosedPar {
                    return Err(LabelSelectorError::Syntax(format!(
                        "found '{lit}', expected: ')'"
                    )));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(LabelSelectorError::Syntax(format!(
                "found '{lit}', expected: ',', ')' or identifier"
            ))),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, LabelSelectorError> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => {
                            return Err(LabelSelectorError::Syntax(format!(
                                "found '{lit2}', expected: ',' or ')'"
                            )));
                        }
                    }
                }
                Token::Comma => {
                    // "(,", ",)" and ",," all stand for the empty value.
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if tok2 == Token::Comma {
                        self.consume(Context::Values);
                        set.insert(String::new());
                    }
                }
                _ => {
                    return Err(LabelSelectorError::Syntax(format!(
                        "found '{lit}', expected: ',', or identifier"
                    )));
                }
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, LabelSelectorError> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            Ok(BTreeSet::from([lit]))
        } else {
            Err(LabelSelectorError::Syntax(format!(
                "found '{lit}', expected: identifier"
            )))
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_and_prints() {
        let cases = [
            ("", ""),
            ("x=a", "x=a"),
            ("x==a", "x==a"),
            ("x!=a", "x!=a"),
            (" x = a ", "x=a"),
            ("x=", "x="),
            ("x", "x"),
            ("!x", "!x"),
            (
                "x in (foo,,baz),y,z notin ()",
                "x in (,baz,foo),y,z notin ()",
            ),
            ("x in (b,a)", "x in (a,b)"),
            ("x in (a)", "x in (a)"),
            ("x notin (a, b)", "x notin (a,b)"),
            ("x>1", "x>1"),
            ("b=1,a=2", "a=2,b=1"),
            ("in=notin", "in=notin"),
            ("x=in", "x=in"),
            ("x in (in,notin)", "x in (in,notin)"),
            ("example.com/app=web", "example.com/app=web"),
            ("x\t=\na", "x=a"),
            ("x in (,a)", "x in (,a)"),
            ("x in (a,)", "x in (,a)"),
        ];
        for (input, want) in cases {
            let sel = Selector::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(sel.to_string(), want, "{input}");
        }
    }

    #[test]
    fn rejects_with_kubernetes_messages() {
        let cases = [
            ("x=a b", "found 'b', expected: ',' or 'end of string'"),
            ("x=a,", "found '', expected: identifier after ','"),
            (
                ",x",
                "found ',', expected: !, identifier, or 'end of string'",
            ),
            (
                "x in a",
                "unable to parse requirement: found 'a' expected: '('",
            ),
            (
                "x in (a b)",
                "unable to parse requirement: found 'b', expected: ',' or ')'",
            ),
            (
                "x in (=)",
                "unable to parse requirement: found '=', expected: ',', ')' or identifier",
            ),
            (
                "x in (a,=)",
                "unable to parse requirement: found '=', expected: ',', or identifier",
            ),
            (
                "x (a)",
                "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt",
            ),
            (
                "x==(",
                "unable to parse requirement: found '(', expected: identifier",
            ),
            (
                "!",
                "unable to parse requirement: found '', expected: identifier",
            ),
            ("!x=a", "found '=', expected: ',' or 'end of string'"),
            (
                "x>a",
                "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer",
            ),
            (
                "x=a@b",
                "unable to parse requirement: values[0][x]: Invalid value: \"a@b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            ),
            (
                "-x=a",
                "unable to parse requirement: : Invalid value: \"-x\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            ),
        ];
        for (input, want) in cases {
            let err = Selector::parse(input).expect_err(input);
            assert_eq!(err.to_string(), want, "{input}");
        }
    }

    #[test]
    fn matches_like_kubernetes() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("n", "5")]);
        let cases = [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app=db", false),
            ("app!=db", true),
            ("missing!=x", true),
            ("app in (db,web)", true),
            ("app notin (db,web)", false),
            ("missing notin (a)", true),
            ("missing in (a)", false),
            ("app", true),
            ("missing", false),
            ("!missing", true),
            ("!app", false),
            ("n>4", true),
            ("n>5", false),
            ("n<6", true),
            ("app>1", false),
            ("missing<1", false),
            ("app=web,tier=front", true),
            ("app=web,tier=back", false),
            ("missing=", false),
        ];
        for (input, want) in cases {
            let sel = Selector::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(sel.matches(&l), want, "{input}");
        }
        let empty_value = labels(&[("x", "")]);
        assert!(Selector::parse("x=").unwrap().matches(&empty_value));
        assert!(Selector::parse("x in ()").unwrap().matches(&empty_value));
    }

    #[test]
    fn matches_json_objects() {
        let obj = json!({"metadata": {"labels": {"app": "web", "odd": 1}}});
        assert!(Selector::parse("app=web").unwrap().matches_object(&obj));
        assert!(
            Selector::parse("!odd").unwrap().matches_object(&obj),
            "non-string values are ignored"
        );
        assert!(
            Selector::parse("!app")
                .unwrap()
                .matches_object(&json!({"metadata": {}}))
        );
        let map = obj["metadata"]["labels"].as_object().unwrap();
        assert!(Selector::parse("app in (web)").unwrap().matches(map));
    }

    #[test]
    fn exact_match() {
        let sel = Selector::parse("a=1,b in (2),c in (3,4),d!=5").unwrap();
        assert_eq!(sel.requires_exact_match("a"), Some("1"));
        assert_eq!(sel.requires_exact_match("b"), Some("2"));
        assert_eq!(sel.requires_exact_match("c"), None);
        assert_eq!(sel.requires_exact_match("d"), None);
        assert_eq!(sel.requires_exact_match("e"), None);
    }

    #[test]
    fn metav1_label_selector() {
        assert!(from_label_selector(&Value::Null).unwrap().matches_nothing());
        assert!(
            !from_label_selector(&Value::Null)
                .unwrap()
                .matches(&labels(&[]))
        );
        assert!(from_label_selector(&json!({})).unwrap().is_empty());
        let sel = from_label_selector(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["front", "edge"]},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "team", "operator": "Exists"},
                {"key": "legacy", "operator": "DoesNotExist"}
            ]
        }))
        .unwrap();
        assert_eq!(
            sel.to_string(),
            "app=web,env notin (prod),!legacy,team,tier in (edge,front)"
        );
        assert!(sel.matches(&labels(&[("app", "web"), ("tier", "edge"), ("team", "a")])));
        assert!(!sel.matches(&labels(&[("app", "web"), ("tier", "edge")])));

        let err =
            from_label_selector(&json!({"matchExpressions": [{"key": "a", "operator": "Gt"}]}))
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "\"Gt\" is not a valid label selector operator"
        );
        let err =
            from_label_selector(&json!({"matchExpressions": [{"key": "a", "operator": "In"}]}))
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
        );
        let err = from_label_selector(
            &json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "values: Invalid value: [\"x\"]: values set must be empty for exists and does not exist"
        );
        let err = from_label_selector(&json!({"matchLabels": {"a b": "c d"}})).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("[key: Invalid value: \"a b\": name part must consist"),
            "{err}"
        );
        assert!(matches!(
            from_label_selector(&json!([])),
            Err(LabelSelectorError::Malformed(_))
        ));
        assert!(matches!(
            from_label_selector(&json!({"matchLabels": []})),
            Err(LabelSelectorError::Malformed(_))
        ));
    }

    #[test]
    fn requirement_rules() {
        assert!(Requirement::new("a", Operator::Equals, vec![]).is_err());
        assert!(Requirement::new("a", Operator::Equals, vec!["x".into(), "y".into()]).is_err());
        assert!(
            Requirement::new("a", Operator::GreaterThan, vec!["+5".into()]).is_err(),
            "+ is not a label value"
        );
        assert!(Requirement::new("a", Operator::LessThan, vec!["12".into()]).is_ok());
        assert!(Requirement::new("a", Operator::Exists, vec![]).is_ok());
    }

    #[test]
    fn negative_integers_are_not_label_values() {
        assert!(Selector::parse("x<-1").is_err());
    }

    #[test]
    fn nul_bytes_act_like_kubernetes() {
        // A NUL ends the token being read; at the start of a token it ends the input.
        assert_eq!(
            Selector::parse("a=b\0garbage").unwrap_err().to_string(),
            "found 'garbage', expected: ',' or 'end of string'"
        );
        assert_eq!(Selector::parse("a=b \0garbage").unwrap().to_string(), "a=b");
    }

    fn key_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z][a-z0-9]{0,8}",
            "[a-z]{1,5}\\.[a-z]{2,4}/[A-Za-z][A-Za-z0-9_.-]{0,6}[a-z0-9]",
        ]
        .prop_filter("in/notin are keywords", |k| k != "in" && k != "notin")
    }

    fn value_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            "",
            "[A-Za-z0-9]",
            "[A-Za-z0-9][A-Za-z0-9_.-]{0,10}[A-Za-z0-9]"
        ]
    }

    fn requirement_strategy() -> impl Strategy<Value = Requirement> {
        (
            key_strategy(),
            0..9usize,
            prop::collection::btree_set(value_strategy(), 1..4),
            -50i64..50,
        )
            .prop_map(|(key, op, values, n)| {
                let one = values.iter().next().cloned().unwrap_or_default();
                let (operator, values) = match op {
                    0 => (Operator::In, values.into_iter().collect()),
                    1 => (Operator::NotIn, values.into_iter().collect()),
                    2 => (Operator::Equals, vec![one]),
                    3 => (Operator::DoubleEquals, vec![one]),
                    4 => (Operator::NotEquals, vec![one]),
                    5 => (Operator::Exists, vec![]),
                    6 => (Operator::DoesNotExist, vec![]),
                    7 => (Operator::GreaterThan, vec![n.unsigned_abs().to_string()]),
                    _ => (Operator::LessThan, vec![n.unsigned_abs().to_string()]),
                };
                Requirement::new(&key, operator, values).unwrap()
            })
    }

    proptest! {
        #[test]
        fn print_parse_round_trip(reqs in prop::collection::vec(requirement_strategy(), 0..5)) {
            let sel = Selector::from_requirements(reqs);
            let printed = sel.to_string();
            let reparsed = Selector::parse(&printed).unwrap();
            prop_assert_eq!(&reparsed, &sel, "{}", printed);
            prop_assert_eq!(reparsed.to_string(), printed);
        }

        #[test]
        fn never_panics(s in ".{0,40}") {
            let _ = Selector::parse(&s);
        }

        #[test]
        fn never_panics_on_selector_alphabet(s in "[a-z=!(),<> \t]{0,30}") {
            if let Ok(sel) = Selector::parse(&s) {
                // Whatever parses must print to something that parses to the same selector.
                prop_assert_eq!(Selector::parse(&sel.to_string()).unwrap(), sel);
            }
        }
    }
}
