//! The subset of CSV that Kubernetes' token file reader (Go's `encoding/csv` with its defaults) accepts:
//! `,` separates fields, `"` quotes them (`""` is a quote inside), a quoted field may span lines, lines
//! that are entirely empty are skipped, and nothing else is special: no comments, no trimming, and a
//! `"` inside an unquoted field is an error.

/// One record and the line it starts on (1-based).
#[derive(Debug, PartialEq, Eq)]
pub struct Record {
    pub line: usize,
    pub fields: Vec<String>,
}

#[derive(Debug, PartialEq, Eq)]
pub struct CsvError {
    pub line: usize,
    pub reason: &'static str,
}

const BARE_QUOTE: &str = "bare \" in non-quoted field";
const BAD_QUOTE: &str = "extraneous or missing \" in quoted field";

pub fn records(text: &str) -> Result<Vec<Record>, CsvError> {
    // `\r\n` ends a line like `\n` does; a lone `\r` is data.
    let lines: Vec<&str> = text
        .split_inclusive('\n')
        .map(|l| {
            let l = l.strip_suffix('\n').unwrap_or(l);
            l.strip_suffix('\r').unwrap_or(l)
        })
        .collect();
    let mut records = Vec::new();
    let mut next = 0;
    while next < lines.len() {
        let start = next + 1;
        let mut line_no = start;
        let mut rest = lines[next];
        next += 1;
        if rest.is_empty() {
            continue;
        }
        let mut fields = Vec::new();
        'fields: loop {
            let Some(quoted) = rest.strip_prefix('"') else {
                let (field, more) = match rest.split_once(',') {
                    Some((field, more)) => (field, Some(more)),
                    None => (rest, None),
                };
                if field.contains('"') {
                    return Err(CsvError {
                        line: line_no,
                        reason: BARE_QUOTE,
                    });
                }
                fields.push(field.to_string());
                match more {
                    Some(more) => {
                        rest = more;
                        continue 'fields;
                    }
                    None => break 'fields,
                }
            };
            let mut field = String::new();
            let mut s = quoted;
            loop {
                match s.find('"') {
                    Some(q) => {
                        field.push_str(&s[..q]);
                        let after = &s[q + 1..];
                        if let Some(after) = after.strip_prefix('"') {
                            field.push('"');
                            s = after;
                        } else if let Some(after) = after.strip_prefix(',') {
                            fields.push(field);
                            rest = after;
                            continue 'fields;
                        } else if after.is_empty() {
                            fields.push(field);
                            break 'fields;
                        } else {
                            return Err(CsvError {
                                line: line_no,
                                reason: BAD_QUOTE,
                            });
                        }
                    }
                    // The quoted field goes on past the end of this line.
                    None => {
                        field.push_str(s);
                        let Some(line) = lines.get(next) else {
                            return Err(CsvError {
                                line: line_no,
                                reason: BAD_QUOTE,
                            });
                        };
                        field.push('\n');
                        s = line;
                        next += 1;
                        line_no += 1;
                    }
                }
            }
        }
        records.push(Record {
            line: start,
            fields,
        });
    }
    Ok(records)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn fields(text: &str) -> Vec<(usize, Vec<String>)> {
        records(text)
            .unwrap()
            .into_iter()
            .map(|r| (r.line, r.fields))
            .collect()
    }

    fn rec(line: usize, fields: &[&str]) -> (usize, Vec<String>) {
        (line, fields.iter().map(|f| f.to_string()).collect())
    }

    #[test]
    fn plain_and_quoted_fields() {
        assert_eq!(
            fields("a,b,c\r\n\n\"x,y\",\"say \"\"hi\"\"\",,\nlast"),
            vec![
                rec(1, &["a", "b", "c"]),
                rec(3, &["x,y", "say \"hi\"", "", ""]),
                rec(4, &["last"]),
            ]
        );
    }

    #[test]
    fn quoted_fields_span_lines() {
        assert_eq!(
            fields("\"a\nb\",c\nd,e\n"),
            vec![rec(1, &["a\nb", "c"]), rec(3, &["d", "e"])]
        );
    }

    #[test]
    fn whitespace_and_hashes_are_data() {
        assert_eq!(
            fields(" a , b\n# not a comment\n"),
            vec![rec(1, &[" a ", " b"]), rec(2, &["# not a comment"])]
        );
    }

    #[test]
    fn quote_errors_name_their_line() {
        assert_eq!(
            records("a,b,c\nx,y\"z,w\n"),
            Err(CsvError {
                line: 2,
                reason: BARE_QUOTE
            })
        );
        assert_eq!(
            records("a,b,c\n\n\"x\"y,z\n"),
            Err(CsvError {
                line: 3,
                reason: BAD_QUOTE
            })
        );
        assert_eq!(
            records("\"never closed,a\nb\n"),
            Err(CsvError {
                line: 2,
                reason: BAD_QUOTE
            })
        );
    }
}
