//! The conditions a terminating namespace reports while it is emptied, with the types, reasons and
//! messages Kubernetes' namespace controller uses, so `kubectl describe ns` and tools that read them
//! see the same thing.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// The condition types, in the order Kubernetes lists them.
const TYPES: [&str; 5] = [
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
];

/// `(reason, message)` of each type when nothing is wrong.
fn ok(condition_type: &str) -> (&'static str, &'static str) {
    match condition_type {
        "NamespaceDeletionDiscoveryFailure" => (
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        "NamespaceDeletionGroupVersionParsingFailure" => (
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        "NamespaceDeletionContentFailure" => (
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        "NamespaceContentRemaining" => ("ContentRemoved", "All content successfully removed"),
        _ => (
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
        ),
    }
}

/// What one pass over a terminating namespace found.
#[derive(Debug, Default)]
pub struct ContentTotals {
    /// `<resource>.<group>` → objects still present.
    pub remaining: BTreeMap<String, usize>,
    /// finalizer → objects still carrying it.
    pub finalizers: BTreeMap<String, usize>,
    /// One message per resource whose deletion failed.
    pub errors: Vec<String>,
}

impl ContentTotals {
    /// Counts one object left in the namespace.
    pub fn count(&mut self, group: &str, plural: &str, finalizers: &[String]) {
        *self
            .remaining
            .entry(format!("{plural}.{group}"))
            .or_default() += 1;
        for f in finalizers {
            *self.finalizers.entry(f.clone()).or_default() += 1;
        }
    }

    /// `(reason, message)` of each condition that is true now.
    fn failing(&self) -> BTreeMap<&'static str, (&'static str, String)> {
        let mut out = BTreeMap::new();
        if !self.errors.is_empty() {
            let mut errors = self.errors.clone();
            errors.sort();
            out.insert(
                "NamespaceDeletionContentFailure",
                (
                    "ContentDeletionFailed",
                    format!(
                        "Failed to delete all resource types, {} remaining: {}",
                        errors.len(),
                        errors.join(", ")
                    ),
                ),
            );
        }
        if !self.remaining.is_empty() {
            // BTreeMap order is the sorted order Kubernetes uses for stable messages.
            let parts: Vec<String> = self
                .remaining
                .iter()
                .map(|(r, n)| format!("{r} has {n} resource instances"))
                .collect();
            out.insert(
                "NamespaceContentRemaining",
                (
                    "SomeResourcesRemain",
                    format!("Some resources are remaining: {}", parts.join(", ")),
                ),
            );
        }
        if !self.finalizers.is_empty() {
            let parts: Vec<String> = self
                .finalizers
                .iter()
                .map(|(f, n)| format!("{f} in {n} resource instances"))
                .collect();
            out.insert(
                "NamespaceFinalizersRemaining",
                (
                    "SomeFinalizersRemain",
                    format!(
                        "Some content in the namespace has finalizers remaining: {}",
                        parts.join(", ")
                    ),
                ),
            );
        }
        out
    }
}

/// `status.conditions` after a pass: every type present, each true with its failure or false with
/// its "ok" reason; `lastTransitionTime` moves only when a condition's status changes.
pub fn updated(old: Option<&Value>, totals: &ContentTotals, now: &str) -> Vec<Value> {
    let mut conditions: Vec<Value> = old.and_then(Value::as_array).cloned().unwrap_or_default();
    let failing = totals.failing();
    for condition_type in TYPES {
        let (status, reason, message) = match failing.get(condition_type) {
            Some((reason, message)) => ("True", *reason, message.clone()),
            None => {
                let (reason, message) = ok(condition_type);
                ("False", reason, message.to_string())
            }
        };
        match conditions
            .iter_mut()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(condition_type))
        {
            Some(existing) => {
                if existing.get("status").and_then(Value::as_str) != Some(status) {
                    existing["lastTransitionTime"] = json!(now);
                }
                existing["status"] = json!(status);
                existing["reason"] = json!(reason);
                existing["message"] = json!(message);
            }
            None => conditions.push(json!({
                "type": condition_type,
                "status": status,
                "lastTransitionTime": now,
                "reason": reason,
                "message": message,
            })),
        }
    }
    conditions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find<'a>(conditions: &'a [Value], t: &str) -> &'a Value {
        conditions
            .iter()
            .find(|c| c["type"] == t)
            .unwrap_or_else(|| panic!("no condition {t}"))
    }

    #[test]
    fn remaining_content_and_finalizers_as_kubernetes_words_them() {
        let mut totals = ContentTotals::default();
        totals.count("", "configmaps", &["example.com/hold".into()]);
        totals.count("example.com", "widgets", &[]);
        totals.count("example.com", "widgets", &["example.com/hold".into()]);
        let c = updated(None, &totals, "t1");
        assert_eq!(c.len(), 5);
        let remaining = find(&c, "NamespaceContentRemaining");
        assert_eq!(remaining["status"], "True");
        assert_eq!(remaining["reason"], "SomeResourcesRemain");
        assert_eq!(
            remaining["message"],
            "Some resources are remaining: configmaps. has 1 resource instances, widgets.example.com has 2 resource instances"
        );
        let fin = find(&c, "NamespaceFinalizersRemaining");
        assert_eq!(fin["reason"], "SomeFinalizersRemain");
        assert_eq!(
            fin["message"],
            "Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances"
        );
        let discovery = find(&c, "NamespaceDeletionDiscoveryFailure");
        assert_eq!(discovery["status"], "False");
        assert_eq!(discovery["reason"], "ResourcesDiscovered");
    }

    #[test]
    fn transition_time_moves_only_with_the_status() {
        let mut totals = ContentTotals::default();
        totals.count("", "configmaps", &[]);
        let first = updated(None, &totals, "t1");
        let old = json!(first);
        let same = updated(Some(&old), &totals, "t2");
        assert_eq!(same, first);
        let done = updated(Some(&old), &ContentTotals::default(), "t3");
        let remaining = find(&done, "NamespaceContentRemaining");
        assert_eq!(remaining["status"], "False");
        assert_eq!(remaining["reason"], "ContentRemoved");
        assert_eq!(remaining["lastTransitionTime"], "t3");
        assert_eq!(
            find(&done, "NamespaceDeletionContentFailure")["lastTransitionTime"],
            "t1"
        );
    }

    #[test]
    fn deletion_errors_are_reported() {
        let totals = ContentTotals {
            errors: vec!["b: boom".into(), "a: bang".into()],
            ..Default::default()
        };
        let c = updated(None, &totals, "t");
        let failure = find(&c, "NamespaceDeletionContentFailure");
        assert_eq!(failure["reason"], "ContentDeletionFailed");
        assert_eq!(
            failure["message"],
            "Failed to delete all resource types, 2 remaining: a: bang, b: boom"
        );
    }
}
