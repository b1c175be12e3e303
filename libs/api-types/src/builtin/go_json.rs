//! Why Go's `json.Unmarshal` would refuse a text as a JSON object (`map[string]interface{}`), in
//! its words: Kubernetes passes that error on when a docker config Secret holds no JSON object.
//! Only the syntax check matters for the words, so this walks the bytes the way Go's scanner does.

/// What the scanner expects next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    BeginValue,
    BeginValueOrEmpty,
    BeginKey,
    BeginKeyOrEmpty,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    /// Inside `\u`, with this many hex digits still to come.
    InStringEscU(u8),
    Neg,
    /// After the first digit: `0` (no more integer digits) or `1`-`9`.
    Int(bool),
    Dot,
    Fraction,
    Exponent,
    ExponentSign,
    ExponentDigits,
    /// Inside `true`, `false` or `null`: the word and how much of it was read.
    Literal(&'static str, usize),
}

/// Whether a container is an object (awaiting a key or a value) or an array.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Container {
    ObjectKey,
    ObjectValue,
    Array,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// A byte as Go's scanner quotes it in its messages (`'x'`, `'\n'`, `'\''`).
fn quote_byte(c: u8) -> String {
    let shown = match c {
        b'\'' => "\\'".to_string(),
        b'"' => "\"".to_string(),
        b'\\' => "\\\\".to_string(),
        0x07 => "\\a".to_string(),
        0x08 => "\\b".to_string(),
        0x0c => "\\f".to_string(),
        b'\n' => "\\n".to_string(),
        b'\r' => "\\r".to_string(),
        b'\t' => "\\t".to_string(),
        0x0b => "\\v".to_string(),
        c if c < 0x20 || c == 0x7f => format!("\\x{c:02x}"),
        c if c < 0x80 => char::from(c).to_string(),
        // A byte above ASCII is read as the Latin-1 rune of that number.
        c if c < 0xa1 || c == 0xad => format!("\\u{:04x}", u32::from(c)),
        c => char::from(c).to_string(),
    };
    format!("'{shown}'")
}

struct Scanner {
    state: State,
    stack: Vec<Container>,
}

impl Scanner {
    fn error(c: u8, context: &str) -> String {
        format!("invalid character {} {context}", quote_byte(c))
    }

    fn begin_value(&mut self, c: u8) -> Result<(), String> {
        self.state = match c {
            b'{' => {
                self.stack.push(Container::ObjectKey);
                State::BeginKeyOrEmpty
            }
            b'[' => {
                self.stack.push(Container::Array);
                State::BeginValueOrEmpty
            }
            b'"' => State::InString,
            b'-' => State::Neg,
            b'0' => State::Int(false),
            b'1'..=b'9' => State::Int(true),
            b't' => State::Literal("true", 1),
            b'f' => State::Literal("false", 1),
            b'n' => State::Literal("null", 1),
            _ => return Err(Self::error(c, "looking for beginning of value")),
        };
        Ok(())
    }

    /// A value just ended (or `c` follows one).
    fn end_value(&mut self, c: u8) -> Result<(), String> {
        let Some(top) = self.stack.last_mut() else {
            self.state = State::EndTop;
            return self.end_top(c);
        };
        self.state = State::EndValue;
        if is_space(c) {
            return Ok(());
        }
        match (*top, c) {
            (Container::ObjectKey, b':') => {
                *top = Container::ObjectValue;
                self.state = State::BeginValue;
            }
            (Container::ObjectKey, _) => return Err(Self::error(c, "after object key")),
            (Container::ObjectValue, b',') => {
                *top = Container::ObjectKey;
                self.state = State::BeginKey;
            }
            (Container::ObjectValue, b'}') | (Container::Array, b']') => self.close(),
            (Container::ObjectValue, _) => {
                return Err(Self::error(c, "after object key:value pair"));
            }
            (Container::Array, b',') => self.state = State::BeginValue,
            (Container::Array, _) => return Err(Self::error(c, "after array element")),
        }
        Ok(())
    }

    fn close(&mut self) {
        self.stack.pop();
        self.state = if self.stack.is_empty() {
            State::EndTop
        } else {
            State::EndValue
        };
    }

    fn end_top(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) {
            Ok(())
        } else {
            Err(Self::error(c, "after top-level value"))
        }
    }

    fn step(&mut self, c: u8) -> Result<(), String> {
        match self.state {
            State::BeginValue | State::BeginValueOrEmpty if is_space(c) => Ok(()),
            State::BeginValueOrEmpty if c == b']' => self.end_value(c),
            State::BeginValue | State::BeginValueOrEmpty => self.begin_value(c),
            State::BeginKey | State::BeginKeyOrEmpty if is_space(c) => Ok(()),
            State::BeginKeyOrEmpty if c == b'}' => {
                if let Some(top) = self.stack.last_mut() {
                    *top = Container::ObjectValue;
                }
                self.end_value(c)
            }
            State::BeginKey | State::BeginKeyOrEmpty => {
                if c != b'"' {
                    return Err(Self::error(c, "looking for beginning of object key string"));
                }
                self.state = State::InString;
                Ok(())
            }
            State::EndValue => self.end_value(c),
            State::EndTop => self.end_top(c),
            State::InString => {
                match c {
                    b'"' => self.state = State::EndValue,
                    b'\\' => self.state = State::InStringEsc,
                    c if c < 0x20 => return Err(Self::error(c, "in string literal")),
                    _ => {}
                }
                Ok(())
            }
            State::InStringEsc => {
                self.state = match c {
                    b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => State::InString,
                    b'u' => State::InStringEscU(4),
                    _ => return Err(Self::error(c, "in string escape code")),
                };
                Ok(())
            }
            State::InStringEscU(left) => {
                if !c.is_ascii_hexdigit() {
                    return Err(Self::error(c, "in \\u hexadecimal character escape"));
                }
                self.state = if left == 1 {
                    State::InString
                } else {
                    State::InStringEscU(left - 1)
                };
                Ok(())
            }
            State::Neg => {
                self.state = match c {
                    b'0' => State::Int(false),
                    b'1'..=b'9' => State::Int(true),
                    _ => return Err(Self::error(c, "in numeric literal")),
                };
                Ok(())
            }
            State::Int(true) if c.is_ascii_digit() => Ok(()),
            State::Int(_) => match c {
                b'.' => {
                    self.state = State::Dot;
                    Ok(())
                }
                b'e' | b'E' => {
                    self.state = State::Exponent;
                    Ok(())
                }
                _ => self.end_value(c),
            },
            State::Dot => {
                if !c.is_ascii_digit() {
                    return Err(Self::error(c, "after decimal point in numeric literal"));
                }
                self.state = State::Fraction;
                Ok(())
            }
            State::Fraction => match c {
                c if c.is_ascii_digit() => Ok(()),
                b'e' | b'E' => {
                    self.state = State::Exponent;
                    Ok(())
                }
                _ => self.end_value(c),
            },
            State::Exponent if c == b'+' || c == b'-' => {
                self.state = State::ExponentSign;
                Ok(())
            }
            State::Exponent | State::ExponentSign => {
                if !c.is_ascii_digit() {
                    return Err(Self::error(c, "in exponent of numeric literal"));
                }
                self.state = State::ExponentDigits;
                Ok(())
            }
            State::ExponentDigits if c.is_ascii_digit() => Ok(()),
            State::ExponentDigits => self.end_value(c),
            State::Literal(word, read) => {
                let want = word.as_bytes()[read];
                if c != want {
                    let context = format!("in literal {word} (expecting {})", quote_byte(want));
                    return Err(Self::error(c, &context));
                }
                self.state = if read + 1 == word.len() {
                    State::EndValue
                } else {
                    State::Literal(word, read + 1)
                };
                Ok(())
            }
        }
    }
}

/// Go's error for unmarshalling `bytes` into a `map[string]interface{}`, `None` when it would
/// succeed (a JSON object, or `null`).
pub fn object_error(bytes: &[u8]) -> Option<String> {
    let mut scanner = Scanner {
        state: State::BeginValue,
        stack: Vec::new(),
    };
    for &c in bytes {
        if let Err(err) = scanner.step(c) {
            return Some(err);
        }
    }
    // The end of input is read as a space (ending a number at the top level), whose error, if
    // any, is the one Go reports.
    if scanner.state != State::EndTop {
        if let Err(err) = scanner.step(b' ') {
            return Some(err);
        }
        if scanner.state != State::EndTop {
            return Some("unexpected end of JSON input".to_string());
        }
    }
    let first = bytes.iter().copied().find(|c| !is_space(*c))?;
    let kind = match first {
        b'{' | b'n' => return None,
        b'[' => "array",
        b'"' => "string",
        b't' | b'f' => "bool",
        _ => "number",
    };
    Some(format!(
        "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_go_writes_them() {
        for (text, want) in [
            ("{\"auths\":{}}", None),
            (" null ", None),
            ("", Some("unexpected end of JSON input")),
            ("{\"a\":", Some("unexpected end of JSON input")),
            (
                "not-json",
                Some("invalid character 'o' in literal null (expecting 'u')"),
            ),
            (
                "abc",
                Some("invalid character 'a' looking for beginning of value"),
            ),
            (
                "{a:1}",
                Some("invalid character 'a' looking for beginning of object key string"),
            ),
            ("{\"a\" 1}", Some("invalid character '1' after object key")),
            (
                "{\"a\":1 \"b\"}",
                Some("invalid character '\"' after object key:value pair"),
            ),
            ("[1 2]", Some("invalid character '2' after array element")),
            ("{} x", Some("invalid character 'x' after top-level value")),
            ("-", Some("invalid character ' ' in numeric literal")),
            (
                "{\"a\":1.}",
                Some("invalid character '}' after decimal point in numeric literal"),
            ),
            (
                "{\"a\":\"\\q\"}",
                Some("invalid character 'q' in string escape code"),
            ),
            (
                "{\"a\":\"\n\"}",
                Some("invalid character '\\n' in string literal"),
            ),
            (
                "[]",
                Some("json: cannot unmarshal array into Go value of type map[string]interface {}"),
            ),
            (
                "12",
                Some("json: cannot unmarshal number into Go value of type map[string]interface {}"),
            ),
            (
                "\"x\"",
                Some("json: cannot unmarshal string into Go value of type map[string]interface {}"),
            ),
            (
                "true",
                Some("json: cannot unmarshal bool into Go value of type map[string]interface {}"),
            ),
        ] {
            assert_eq!(object_error(text.as_bytes()).as_deref(), want, "{text:?}");
        }
    }
}
