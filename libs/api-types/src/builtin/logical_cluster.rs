//! kcp's LogicalCluster: its phase at birth, when its deletion starts and while it is marked
//! inactive, its `WorkspaceInitialized` condition, and the metadata kcp keeps in step with its
//! status — the phase label, a hashed label per pending initializer and terminator, the owner
//! annotation cut down to the creator's name once Ready (the phase label and the owner also on
//! Workspaces, see `workspace`). kcp's reconcilers set those in a write of their own after each
//! change; here they go into the write that makes the change, whoever makes it, so no write is
//! added.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha224};

use crate::resource::{Strategy, StrategyContext};
use crate::tenancy::{OWNER_ANNOTATION, PHASE_LABEL, trimmed_owner};

/// Labels of pending initializers and terminators (kcp's prefixes).
pub const INITIALIZER_LABEL_PREFIX: &str = "initializer.internal.kcp.io/";
pub const TERMINATOR_LABEL_PREFIX: &str = "terminator.internal.kcp.io/";
/// The longest label value (and name part of a key).
const LABEL_MAX: usize = 63;
/// `"true"` here marks an LC inactive: requests into it are refused, and a Ready LC is `Inactive`
/// until the mark goes (kcp's annotation, and the older name kcp still honours).
pub const INACTIVE_ANNOTATION: &str = "core.kcp.io/inactive";
pub const LEGACY_INACTIVE_ANNOTATION: &str = "internal.kcp.io/inactive";

/// Whether an LC's annotation `get` says it is marked inactive.
pub fn marked_inactive<S: AsRef<str>>(get: impl Fn(&str) -> Option<S>) -> bool {
    [INACTIVE_ANNOTATION, LEGACY_INACTIVE_ANNOTATION]
        .into_iter()
        .any(|key| get(key).is_some_and(|v| v.as_ref() == "true"))
}

/// A Ready LC marked inactive is `Inactive`, an `Inactive` one no longer marked is Ready again:
/// its status follows the mark (kcp's phase reconciler, in a write of its own there).
fn follow_inactive_mark(obj: &mut Value) {
    let annotations = obj.pointer("/metadata/annotations");
    let marked = marked_inactive(|key| annotations?.get(key)?.as_str());
    let Some(phase) = obj.pointer_mut("/status/phase") else {
        return;
    };
    match (phase.as_str(), marked) {
        (Some("Ready"), true) => *phase = json!("Inactive"),
        (Some("Inactive"), false) => *phase = json!("Ready"),
        _ => {}
    }
}

/// kcp's label for a pending initializer or terminator `name` under `prefix`: the key ends in the
/// start of the SHA-224 (hex) of the name, so the whole key stays within 63 characters; the value
/// is the whole hash, which makes the pair hard to forge.
pub fn lifecycle_label(prefix: &str, name: &str) -> (String, String) {
    let hash: String = Sha224::digest(name.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let key = format!("{prefix}{}", &hash[..LABEL_MAX - prefix.len()]);
    (key, hash)
}

/// `metadata.labels` of `obj`, made an object if it is missing (or not one).
fn labels_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let meta = obj.get_mut("metadata")?.as_object_mut()?;
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    labels.as_object_mut()
}

/// What kcp's metadata reconcilers keep on both a Workspace and a LogicalCluster: the phase as
/// label `tenancy.kcp.io/phase`, and once Ready only the creator's name in the owner annotation
/// (dropped when it is not a user's JSON).
pub(super) fn follow_phase(obj: &mut Value) {
    let phase = obj
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if phase.is_empty() {
        // The label says the phase or nothing: one a writer set without a phase is dropped, so
        // what counts by the label (`/metrics`, selectors) counts by the status.
        if let Some(labels) = obj
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            labels.remove(PHASE_LABEL);
        }
        return;
    }
    if let Some(labels) = labels_mut(obj) {
        labels.insert(PHASE_LABEL.into(), json!(phase));
    }
    if phase != "Ready" {
        return;
    }
    let Some(annotations) = obj
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let owner = annotations.get(OWNER_ANNOTATION).and_then(Value::as_str);
    match owner.map(trimmed_owner) {
        Some(Some(t)) => {
            annotations.insert(OWNER_ANNOTATION.into(), json!(t));
        }
        Some(None) => {
            annotations.remove(OWNER_ANNOTATION);
        }
        None => {}
    }
}

/// kcp's `WorkspaceInitialized` condition while `pending` initializers are left (False, with kcp's
/// reason and message) or none (True); without its time. A Workspace shows its LC's.
pub fn initialized_condition<S: AsRef<str>>(pending: &[S]) -> Value {
    if pending.is_empty() {
        return json!({"type": "WorkspaceInitialized", "status": "True"});
    }
    let names: Vec<&str> = pending.iter().map(AsRef::as_ref).collect();
    json!({"type": "WorkspaceInitialized", "status": "False", "severity": "Info",
           "reason": "InitializerExists",
           // Go's %v of a list: [a b].
           "message": format!("Initializers still exist: [{}]", names.join(" "))})
}

/// An LC's `WorkspaceInitialized` condition (kcp's phase reconciler sets it): False while
/// initializers are pending, True once Ready.
fn follow_initialized(obj: &mut Value) {
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let pending: Vec<&str> = (status.get("initializers").and_then(Value::as_array))
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let wanted = match status.get("phase").and_then(Value::as_str) {
        Some("Initializing") if !pending.is_empty() => initialized_condition(&pending),
        Some("Ready" | "Inactive") => initialized_condition::<&str>(&[]),
        // Scheduling, or on the way out: as it was.
        _ => return,
    };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    if let Some(conditions) = conditions.as_array_mut() {
        crate::conditions::set(conditions, wanted);
    }
}

pub struct LogicalClusterStrategy;

impl Strategy for LogicalClusterStrategy {
    fn prepare_for_create(&self, ctx: &StrategyContext<'_>, obj: &mut Value) {
        let initializers = obj
            .pointer("/spec/initializers")
            .cloned()
            .unwrap_or_else(|| json!([]));
        let Some(map) = obj.as_object_mut() else {
            return;
        };
        let has_initializers = initializers.as_array().is_some_and(|a| !a.is_empty());
        let phase = if has_initializers {
            "Initializing"
        } else {
            "Ready"
        };
        let mut status = match map.remove("status") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        status.entry("phase").or_insert_with(|| json!(phase));
        status.insert(
            "URL".into(),
            json!(format!("{}/clusters/{}", ctx.external_url, ctx.cluster)),
        );
        if has_initializers {
            status.entry("initializers").or_insert(initializers);
        }
        map.insert("status".into(), Value::Object(status));
    }

    /// Termination starts: the terminators of the spec become pending in the status, and the LC is
    /// `Terminating` while any is left, `Deleting` (content deletion) otherwise.
    fn prepare_for_delete(&self, obj: &mut Value) {
        let terminators = obj
            .pointer("/spec/terminators")
            .cloned()
            .filter(|t| t.as_array().is_some_and(|a| !a.is_empty()));
        let Some(map) = obj.as_object_mut() else {
            return;
        };
        let status = map.entry("status").or_insert_with(|| json!({}));
        let Some(status) = status.as_object_mut() else {
            return;
        };
        let phase = status.get("phase").and_then(Value::as_str);
        if matches!(phase, Some("Terminating" | "Deleting")) {
            return;
        }
        match terminators {
            Some(t) => {
                status.insert("terminators".into(), t);
                status.insert("phase".into(), json!("Terminating"));
            }
            None => {
                status.insert("phase".into(), json!("Deleting"));
            }
        }
    }

    fn follow_status(&self, obj: &mut Value) {
        follow_inactive_mark(obj);
        follow_initialized(obj);
        let status = obj.get("status");
        let pending = |field: &str, prefix: &str| -> Vec<(String, String)> {
            (status.and_then(|s| s.get(field)).and_then(Value::as_array))
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|name| lifecycle_label(prefix, name))
                .collect()
        };
        let mut wanted = pending("initializers", INITIALIZER_LABEL_PREFIX);
        wanted.extend(pending("terminators", TERMINATOR_LABEL_PREFIX));
        if let Some(labels) = labels_mut(obj) {
            labels.retain(|k, _| {
                !(k.starts_with(INITIALIZER_LABEL_PREFIX) || k.starts_with(TERMINATOR_LABEL_PREFIX))
            });
            for (k, v) in wanted {
                labels.insert(k, json!(v));
            }
        }
        follow_phase(obj);
    }

    fn tracks_generation(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::resource::TEST_CONTEXT as CTX;

    #[test]
    fn logical_clusters_get_url_and_phase() {
        let mut lc = json!({"metadata": {"name": "cluster"}});
        LogicalClusterStrategy.prepare_for_create(&CTX, &mut lc);
        assert_eq!(lc["status"]["phase"], "Ready");
        assert_eq!(lc["status"]["URL"], "https://localhost:6443/clusters/root");
    }

    #[test]
    fn lifecycle_labels_are_kcps() {
        // SHA-224 of "root:universal", checked with `printf root:universal | sha224sum`.
        let (key, value) = lifecycle_label(INITIALIZER_LABEL_PREFIX, "root:universal");
        assert_eq!(
            value,
            "d1d6459a03641b6fd7560fc2849f6c66fa971a0afeded6ba2d2743f2"
        );
        assert_eq!(key.len(), 63);
        assert_eq!(key, format!("{INITIALIZER_LABEL_PREFIX}{}", &value[..35]));
        let (key, value) = lifecycle_label(TERMINATOR_LABEL_PREFIX, "root:universal");
        assert_eq!(key, format!("{TERMINATOR_LABEL_PREFIX}{}", &value[..36]));
    }

    #[test]
    fn initialized_condition_follows_initializers() {
        let mut lc =
            json!({"status": {"phase": "Initializing", "initializers": ["root:a", "root:b"]}});
        LogicalClusterStrategy.follow_status(&mut lc);
        let waiting = lc["status"]["conditions"][0].clone();
        assert_eq!(waiting["type"], "WorkspaceInitialized");
        assert_eq!(waiting["status"], "False");
        assert_eq!(waiting["reason"], "InitializerExists");
        assert_eq!(
            waiting["message"],
            "Initializers still exist: [root:a root:b]"
        );
        assert!(waiting["lastTransitionTime"].is_string());
        // Another initializer done: still False, the time kept.
        lc["status"]["conditions"][0]["lastTransitionTime"] = json!("2026-01-01T00:00:00Z");
        lc["status"]["initializers"] = json!(["root:b"]);
        LogicalClusterStrategy.follow_status(&mut lc);
        let fewer = &lc["status"]["conditions"][0];
        assert_eq!(fewer["message"], "Initializers still exist: [root:b]");
        assert_eq!(fewer["lastTransitionTime"], "2026-01-01T00:00:00Z");
        lc["status"] =
            json!({"phase": "Ready", "initializers": [], "conditions": lc["status"]["conditions"]});
        LogicalClusterStrategy.follow_status(&mut lc);
        let done = &lc["status"]["conditions"];
        assert_eq!(done.as_array().map(Vec::len), Some(1), "{done}");
        assert_eq!(done[0]["status"], "True");
        assert!(done[0].get("reason").is_none(), "{done}");
        assert_ne!(done[0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
        // Unchanged from then on, whatever is written.
        let before = lc.clone();
        LogicalClusterStrategy.follow_status(&mut lc);
        assert_eq!(lc, before);
    }

    #[test]
    fn a_ready_lc_is_inactive_while_marked() {
        let mut lc = json!({"metadata": {"annotations": {INACTIVE_ANNOTATION: "true"}},
                            "status": {"phase": "Ready"}});
        LogicalClusterStrategy.follow_status(&mut lc);
        assert_eq!(lc["status"]["phase"], "Inactive");
        assert_eq!(lc["metadata"]["labels"][PHASE_LABEL], "Inactive");
        lc["metadata"]["annotations"] = json!({LEGACY_INACTIVE_ANNOTATION: "true"});
        LogicalClusterStrategy.follow_status(&mut lc);
        assert_eq!(lc["status"]["phase"], "Inactive");
        lc["metadata"]["annotations"] = json!({INACTIVE_ANNOTATION: "false"});
        LogicalClusterStrategy.follow_status(&mut lc);
        assert_eq!(lc["status"]["phase"], "Ready");
        assert_eq!(lc["metadata"]["labels"][PHASE_LABEL], "Ready");
        // Only a Ready LC: one still initializing keeps its phase.
        let mut initializing = json!({"metadata": {"annotations": {INACTIVE_ANNOTATION: "true"}},
                                      "status": {"phase": "Initializing"}});
        LogicalClusterStrategy.follow_status(&mut initializing);
        assert_eq!(initializing["status"]["phase"], "Initializing");
    }

    #[test]
    fn metadata_follows_the_status() {
        let owner = r#"{"username":"alice","groups":["g"]}"#;
        let mut lc = json!({
            "metadata": {"labels": {"keep": "x", "initializer.internal.kcp.io/stale": "y"},
                         "annotations": {OWNER_ANNOTATION: owner}},
            "status": {"phase": "Initializing", "initializers": ["root:a", "root:b"]},
        });
        LogicalClusterStrategy.follow_status(&mut lc);
        let labels = lc["metadata"]["labels"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(labels["keep"], "x");
        assert_eq!(labels[PHASE_LABEL], "Initializing");
        let (a, a_hash) = lifecycle_label(INITIALIZER_LABEL_PREFIX, "root:a");
        assert_eq!(labels[&a], json!(a_hash));
        assert!(!labels.contains_key("initializer.internal.kcp.io/stale"));
        assert_eq!(labels.len(), 4);
        // Not Ready yet: the owner stays whole.
        assert_eq!(lc["metadata"]["annotations"][OWNER_ANNOTATION], owner);

        lc["status"] = json!({"phase": "Ready", "initializers": []});
        LogicalClusterStrategy.follow_status(&mut lc);
        let labels = lc["metadata"]["labels"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(labels.len(), 2);
        assert_eq!(labels[PHASE_LABEL], "Ready");
        assert_eq!(
            lc["metadata"]["annotations"][OWNER_ANNOTATION],
            r#"{"username":"alice"}"#
        );

        lc["status"] = json!({"phase": "Terminating", "terminators": ["root:t"]});
        LogicalClusterStrategy.follow_status(&mut lc);
        let (t, _) = lifecycle_label(TERMINATOR_LABEL_PREFIX, "root:t");
        assert!(lc["metadata"]["labels"].get(&t).is_some());
    }
}
