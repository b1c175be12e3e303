//! What the workspace controller decides on, read from the cache without building whole objects:
//! most reconciles find nothing to do, and a Workspace or LogicalCluster carries managedFields,
//! annotations and conditions that decision never looks at.

use kcp_api_types::builtin::initialized_condition;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};

/// A LogicalCluster's lifecycle: its deletion, phase, pending initializers and terminators, and
/// the workspace that owns it.
#[derive(Deserialize, Default, Debug)]
#[serde(default)]
pub(super) struct LcState {
    metadata: Lifecycle,
    spec: LcSpec,
    status: LcStatus,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct Lifecycle {
    uid: String,
    #[serde(rename = "deletionTimestamp")]
    deletion_timestamp: Option<IgnoredAny>,
    finalizers: Vec<String>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct LcSpec {
    owner: Owner,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct Owner {
    uid: String,
    resource: String,
    cluster: String,
    name: String,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct LcStatus {
    /// Absent before the LC's first status write: taken as `Initializing`.
    phase: Option<String>,
    initializers: Vec<String>,
    terminators: Vec<String>,
    /// Only while its content is being deleted does an LC carry one (see [`CONTENT_DELETED`]).
    conditions: Vec<Condition>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct Condition {
    #[serde(rename = "type")]
    kind: String,
    message: String,
}

/// kcp's condition telling what a deleted workspace's content waits for.
pub(super) const CONTENT_DELETED: &str = "WorkspaceContentDeleted";

/// The condition saying that `remaining` (kcp's words, see the LC deletion) holds the content.
pub(super) fn content_remaining_condition(remaining: &str) -> Value {
    json!({"type": CONTENT_DELETED, "status": "False", "severity": "Info",
        "reason": "SomeResourcesRemain", "message": remaining,
        "lastTransitionTime": kcp_apiserver::registry::now_rfc3339()})
}

impl LcState {
    /// The state of an LC at hand as a whole object.
    pub(super) fn of(lc: &Value) -> LcState {
        LcState::deserialize(lc).unwrap_or_default()
    }

    pub(super) fn is_deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    pub(super) fn phase(&self) -> &str {
        self.status.phase.as_deref().unwrap_or("Initializing")
    }

    pub(super) fn initializers(&self) -> &[String] {
        &self.status.initializers
    }

    /// Its phase as its status states it, if it does.
    pub(super) fn stated_phase(&self) -> Option<&str> {
        self.status.phase.as_deref()
    }

    /// Whether its phase says `Initializing` (not merely defaults to it).
    pub(super) fn is_initializing(&self) -> bool {
        self.status.phase.as_deref() == Some("Initializing")
    }

    pub(super) fn terminators(&self) -> &[String] {
        &self.status.terminators
    }

    /// What its content waits for, as its condition last said.
    pub(super) fn content_remaining(&self) -> Option<&str> {
        (self.status.conditions.iter())
            .find(|c| c.kind == CONTENT_DELETED)
            .map(|c| c.message.as_str())
    }

    pub(super) fn has_finalizer(&self, finalizer: &str) -> bool {
        self.metadata.finalizers.iter().any(|f| f == finalizer)
    }

    /// The uid of the object that owns it (a Workspace's); empty if none.
    pub(super) fn owner_uid(&self) -> &str {
        &self.spec.owner.uid
    }

    /// Whether it is initializing with `initializer` still to run.
    pub(super) fn pending(&self, initializer: &str) -> bool {
        self.is_initializing() && self.status.initializers.iter().any(|i| i == initializer)
    }

    /// The workspace owning the LC, if a workspace made it: (its LC, its name).
    pub(super) fn owner(&self) -> Option<(LogicalClusterName, String)> {
        let o = &self.spec.owner;
        if o.resource != "workspaces" || o.name.is_empty() {
            return None;
        }
        Some((LogicalClusterName::parse(&o.cluster).ok()?, o.name.clone()))
    }

    /// The Workspace's status as this LC's state implies.
    pub(super) fn mirrored_status(&self) -> Value {
        let initializers = &self.status.initializers;
        let terminators = &self.status.terminators;
        let initialized = initializers.is_empty();
        let mut conditions = vec![
            json!({"type": "WorkspaceScheduled", "status": "True"}),
            initialized_condition(initializers),
        ];
        if self.is_deleting() {
            // What the LC says holds its content, once it says it (kcp's workspace copies it).
            conditions.push(match self.content_remaining() {
                Some(remaining) => json!({"type": CONTENT_DELETED, "status": "False", "severity": "Info",
                    "reason": "SomeResourcesRemain", "message": remaining}),
                None => json!({"type": CONTENT_DELETED, "status": "False", "severity": "Info",
                    "reason": "ContentDeletionPending", "message": "The content of the logical cluster is being deleted"}),
            });
        }
        // An LC marked inactive stays Ready to its workspace, as kcp's does.
        let phase = match self.phase() {
            "Inactive" => "Ready",
            phase => phase,
        };
        let mut status = json!({"phase": phase, "conditions": conditions});
        if !initialized {
            status["initializers"] = json!(initializers);
        }
        if !terminators.is_empty() {
            status["terminators"] = json!(terminators);
        }
        status
    }
}

/// The Workspace's status while it has no LC.
pub(super) fn unscheduled_status() -> Value {
    json!({"phase": "Scheduling"})
}

/// What a reconcile of a placed, live Workspace compares with its LC: everything else needs the
/// whole object (a deletion, scheduling, or a write).
#[derive(Deserialize, Default, Debug)]
#[serde(default)]
pub(super) struct WorkspaceState {
    metadata: Lifecycle,
    spec: WorkspaceSpec,
    pub(super) status: Option<Value>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(default)]
struct WorkspaceSpec {
    cluster: String,
}

impl WorkspaceState {
    pub(super) fn is_deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    pub(super) fn uid(&self) -> &str {
        &self.metadata.uid
    }

    pub(super) fn has_finalizer(&self, finalizer: &str) -> bool {
        self.metadata.finalizers.iter().any(|f| f == finalizer)
    }

    /// Its LC's name; empty until scheduled.
    /// Its LC's name, once it has a (well-formed) one.
    pub(super) fn cluster(&self) -> Option<LogicalClusterName> {
        LogicalClusterName::parse(&self.spec.cluster).ok()
    }

    /// The LC name a deleted workspace leaves to look after: its LC's, or else `chosen`, the
    /// name admission gave it (content may be there already).
    pub(super) fn left_behind(self, chosen: Option<&str>) -> Option<LogicalClusterName> {
        if !self.spec.cluster.is_empty() {
            return LogicalClusterName::parse(&self.spec.cluster).ok();
        }
        LogicalClusterName::parse(chosen?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_follows_the_logical_cluster() {
        assert_eq!(unscheduled_status()["phase"], "Scheduling");
        let initializing = LcState::of(
            &json!({"status": {"phase": "Initializing", "initializers": ["root:universal"]}}),
        );
        let s = initializing.mirrored_status();
        assert_eq!(s["phase"], "Initializing");
        assert_eq!(s["conditions"][1]["reason"], "InitializerExists");
        assert_eq!(s["initializers"], json!(["root:universal"]));
        let ready = LcState::of(&json!({"status": {"phase": "Ready", "initializers": []}}));
        let s = ready.mirrored_status();
        assert_eq!(s["phase"], "Ready");
        assert_eq!(s["conditions"][1]["status"], "True");
        assert!(kcp_api_types::conditions::same_status(Some(&s), &s));
        let inactive = LcState::of(&json!({"status": {"phase": "Inactive"}}));
        assert_eq!(
            inactive.mirrored_status(),
            s,
            "an inactive LC's workspace stays Ready"
        );
        let deleting = LcState::of(&json!({
            "metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": "Deleting", "terminators": ["t"]},
        }));
        let s = deleting.mirrored_status();
        assert_eq!(s["conditions"][2]["reason"], "ContentDeletionPending");
        assert_eq!(s["terminators"], json!(["t"]));
        // No status yet: shown as initializing, but nothing to run.
        assert_eq!(LcState::of(&json!({})).phase(), "Initializing");
        assert!(!LcState::of(&json!({})).pending("root:universal"));
        assert!(initializing.pending("root:universal"));
        assert!(!ready.pending("root:universal"));
    }

    #[test]
    fn owners_are_workspaces_only() {
        let owned = LcState::of(&json!({"spec": {"owner": {
            "resource": "workspaces", "cluster": "root", "name": "a", "uid": "u"}}}));
        assert_eq!(
            owned.owner(),
            Some((LogicalClusterName::root(), "a".into()))
        );
        let other = LcState::of(&json!({"spec": {"owner": {
            "resource": "things", "cluster": "root", "name": "a"}}}));
        assert_eq!(other.owner(), None);
        assert_eq!(LcState::of(&json!({})).owner(), None);
        assert_eq!(owned.owner_uid(), "u");
        assert_eq!(other.owner_uid(), "");
    }

    #[test]
    fn a_deleting_lc_reads_its_finalizers_and_terminators() {
        let lc = LcState::of(&json!({
            "metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z",
                         "finalizers": ["core.kcp.io/logicalcluster-deletion"]},
            "status": {"phase": "Deleting", "terminators": ["root:t"]},
        }));
        assert!(lc.is_deleting());
        assert!(lc.has_finalizer("core.kcp.io/logicalcluster-deletion"));
        assert!(!lc.has_finalizer("other"));
        assert_eq!(lc.terminators(), ["root:t"]);
        assert_eq!(lc.phase(), "Deleting");
        assert!(!LcState::of(&json!({})).has_finalizer("core.kcp.io/logicalcluster-deletion"));
    }

    #[test]
    fn a_workspace_reads_its_placement_and_deletion() {
        let ws: WorkspaceState = serde_json::from_value(json!({
            "metadata": {"name": "a", "uid": "u", "managedFields": [{"manager": "m"}],
                         "finalizers": ["core.kcp.io/logicalcluster"],
                         "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"cluster": "abc", "type": {"name": "universal"}},
            "status": {"phase": "Ready"},
        }))
        .expect("parses");
        assert!(ws.is_deleting());
        assert_eq!(ws.uid(), "u");
        assert!(ws.has_finalizer("core.kcp.io/logicalcluster"));
        assert!(!ws.has_finalizer("other"));
        assert_eq!(ws.cluster().as_deref(), Some("abc"));
        assert_eq!(ws.status, Some(json!({"phase": "Ready"})));
    }

    #[test]
    fn a_deleted_workspace_names_what_it_leaves() {
        let left = |ws: Value, chosen: Option<&str>| {
            serde_json::from_value::<WorkspaceState>(ws)
                .expect("parses")
                .left_behind(chosen)
        };
        assert_eq!(left(json!({}), Some("named")).as_deref(), Some("named"));
        let placed = json!({"spec": {"cluster": "placed"}});
        assert_eq!(left(placed, Some("named")).as_deref(), Some("placed"));
        assert!(left(json!({}), Some("")).is_none());
        assert!(left(json!({}), None).is_none());
    }
}
