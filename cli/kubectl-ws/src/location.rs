//! `--location-selector`: a label selector string turned into the `metav1.LabelSelector` of a
//! Workspace's `spec.location.selector`, as apimachinery's `ParseToLabelSelector` does it.

use kcp_apimachinery::selector::label::{Operator, Selector};
use serde_json::{Map, Value, json};

/// `=`/`==` terms become `matchLabels`; `in`, `notin`, existence and non-existence become
/// `matchExpressions` with sorted values. `!=`, `gt` and `lt` have no LabelSelector form. The error is
/// apimachinery's message.
pub fn parse(selector: &str) -> Result<Value, String> {
    let parsed = Selector::parse(selector)
        .map_err(|e| format!("couldn't parse the selector string {selector:?}: {e}"))?;
    let mut labels = Map::new();
    let mut expressions = Vec::new();
    for r in parsed.requirements() {
        let op = match r.operator() {
            Operator::Equals | Operator::DoubleEquals => {
                let value = r.values().first().cloned().unwrap_or_default();
                labels.insert(r.key().to_owned(), Value::String(value));
                continue;
            }
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
            op @ (Operator::GreaterThan | Operator::LessThan) => {
                return Err(format!(
                    "{:?} isn't supported in label selectors",
                    op.as_str()
                ));
            }
            op @ Operator::NotEquals => {
                return Err(format!(
                    "{:?} is not a valid label selector operator",
                    op.as_str()
                ));
            }
        };
        let mut values = r.values().to_vec();
        values.sort();
        let mut e = json!({ "key": r.key(), "operator": op });
        if !values.is_empty() {
            e["values"] = json!(values);
        }
        expressions.push(e);
    }
    let mut out = Map::new();
    if !labels.is_empty() {
        out.insert("matchLabels".into(), Value::Object(labels));
    }
    if !expressions.is_empty() {
        out.insert("matchExpressions".into(), Value::Array(expressions));
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_expressions() {
        assert_eq!(
            parse("region=eu, tier in (b,a),!legacy").ok(),
            Some(json!({
                "matchLabels": {"region": "eu"},
                "matchExpressions": [
                    {"key": "legacy", "operator": "DoesNotExist"},
                    {"key": "tier", "operator": "In", "values": ["a", "b"]},
                ],
            }))
        );
        assert_eq!(parse("a==b").ok(), Some(json!({"matchLabels": {"a": "b"}})));
    }

    #[test]
    fn refused() {
        assert_eq!(
            parse("a!=b").err().as_deref(),
            Some("\"!=\" is not a valid label selector operator")
        );
        assert_eq!(
            parse("a>1").err().as_deref(),
            Some("\"gt\" isn't supported in label selectors")
        );
        let bad = parse("a=(").err().unwrap_or_default();
        assert!(
            bad.starts_with("couldn't parse the selector string \"a=(\": "),
            "{bad}"
        );
    }
}
