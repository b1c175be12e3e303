//! The subset of Kubernetes JSONPath that CRD printer columns and selectable fields use:
//! `.spec.replicas`, `.items[0]`, `.items[*].name`, `.metadata.labels['app.kubernetes.io/name']`
//! and filters such as `.status.conditions[?(@.type=="Ready")].status`. An optional `{...}`
//! wrapper and leading `$` are accepted, as kubectl's `-o jsonpath` accepts them.

use serde_json::Value;

/// One step of a parsed path.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Field(String),
    /// A list index; negative counts from the end.
    Index(i64),
    /// `[*]`: every item of a list or every value of a map.
    Wildcard,
    /// `[?(@.a.b=="x")]` or `!=`: the items whose field compares so.
    Filter {
        path: Vec<String>,
        equal: bool,
        value: Value,
    },
}

/// Why a path does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid JSONPath {path:?}: {reason}")]
pub struct PathError {
    pub path: String,
    pub reason: String,
}

/// Parses a path into steps.
pub fn parse(path: &str) -> Result<Vec<Step>, PathError> {
    let err = |reason: &str| PathError {
        path: path.to_string(),
        reason: reason.to_string(),
    };
    let mut rest = path.trim();
    if let Some(inner) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        rest = inner.trim();
    }
    rest = rest.strip_prefix('$').unwrap_or(rest);
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty() {
                return Err(err("empty field name"));
            }
            steps.push(if name == "*" {
                Step::Wildcard
            } else {
                Step::Field(name.to_string())
            });
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = bracket_end(after).ok_or_else(|| err("unterminated '['"))?;
            steps
                .push(bracket_step(after[..end].trim()).ok_or_else(|| err("unsupported '[...]'"))?);
            rest = &after[end + 1..];
        } else {
            return Err(err("expected '.' or '['"));
        }
    }
    Ok(steps)
}

/// The index of the `]` closing a bracket, skipping quoted text.
fn bracket_end(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, ']') => return Some(i),
            _ => {}
        }
    }
    None
}

fn unquote(s: &str) -> Option<&str> {
    s.strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .or_else(|| s.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
}

fn bracket_step(inner: &str) -> Option<Step> {
    if inner == "*" {
        return Some(Step::Wildcard);
    }
    if let Some(name) = unquote(inner) {
        return Some(Step::Field(name.to_string()));
    }
    if let Ok(index) = inner.parse::<i64>() {
        return Some(Step::Index(index));
    }
    let cond = inner.strip_prefix("?(")?.strip_suffix(')')?.trim();
    let (lhs, rhs, equal) = match (cond.find("=="), cond.find("!=")) {
        (Some(i), _) => (&cond[..i], &cond[i + 2..], true),
        (None, Some(i)) => (&cond[..i], &cond[i + 2..], false),
        (None, None) => return None,
    };
    let field = lhs.trim().strip_prefix('@')?;
    let path: Vec<String> = field
        .split('.')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let rhs = rhs.trim();
    let value = match unquote(rhs) {
        Some(text) => Value::String(text.to_string()),
        None => serde_json::from_str(rhs).ok()?,
    };
    Some(Step::Filter { path, equal, value })
}

/// Every value the path selects in `obj`, in document order.
pub fn find<'v>(obj: &'v Value, steps: &[Step]) -> Vec<&'v Value> {
    let mut current = vec![obj];
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            match step {
                Step::Field(name) => next.extend(value.get(name.as_str())),
                Step::Index(i) => {
                    if let Some(items) = value.as_array() {
                        let len = items.len() as i64;
                        let at = if *i < 0 { len + i } else { *i };
                        if (0..len).contains(&at) {
                            next.extend(usize::try_from(at).ok().and_then(|at| items.get(at)));
                        }
                    }
                }
                Step::Wildcard => match value {
                    Value::Array(items) => next.extend(items.iter()),
                    Value::Object(map) => next.extend(map.values()),
                    _ => {}
                },
                Step::Filter {
                    path,
                    equal,
                    value: want,
                } => {
                    if let Some(items) = value.as_array() {
                        next.extend(items.iter().filter(|item| {
                            let mut at = Some(*item);
                            for seg in path {
                                at = at.and_then(|v| v.get(seg.as_str()));
                            }
                            at.is_some_and(|found| (found == want) == *equal)
                        }));
                    }
                }
            }
        }
        current = next;
    }
    current
}

/// The first value `path` selects, or `None` when nothing matches or the path is invalid.
pub fn first<'v>(obj: &'v Value, path: &str) -> Option<&'v Value> {
    let steps = parse(path).ok()?;
    find(obj, &steps).into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selects_fields_indices_filters_and_quoted_keys() {
        let obj = json!({
            "spec": {"replicas": 3, "items": [{"name": "a"}, {"name": "b"}]},
            "metadata": {"labels": {"app.kubernetes.io/name": "x"}},
            "status": {"conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "Synced", "status": "False"}
            ]}
        });
        assert_eq!(first(&obj, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(first(&obj, "{.spec.items[1].name}"), Some(&json!("b")));
        assert_eq!(first(&obj, ".spec.items[-1].name"), Some(&json!("b")));
        assert_eq!(
            first(&obj, ".metadata.labels['app.kubernetes.io/name']"),
            Some(&json!("x"))
        );
        assert_eq!(
            first(&obj, r#".status.conditions[?(@.type=="Synced")].status"#),
            Some(&json!("False"))
        );
        let steps = parse(".spec.items[*].name").expect("valid path");
        assert_eq!(find(&obj, &steps), vec![&json!("a"), &json!("b")]);
        assert_eq!(first(&obj, ".spec.missing"), None);
        assert_eq!(first(&obj, ".spec.items[5]"), None);
    }

    #[test]
    fn rejects_malformed_paths() {
        for bad in ["spec", ".spec..x", ".a[", ".a[?(@.x)]", ".a[foo]"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
