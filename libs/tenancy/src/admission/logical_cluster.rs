//! kcp's LogicalCluster admission. A workspace's lifecycle hangs on its LC's `cluster` object,
//! so a requester outside kcp's privileged groups may not create one, may not delete one unless
//! it says `spec.directlyDeletable`, and may change it only as the lifecycle does: `spec.createdBy`,
//! `spec.owner` and `spec.initializers` never (kcp lets `owner` change, harmlessly there; here
//! an LC whose owner is gone is deleted with its content, so the owner is the shard's to set), `status.initializers` only by removing entries while the LC is
//! Initializing, the phase only forwards (Scheduling, Initializing, Ready), and only a Ready LC
//! may be marked inactive. On the way into Initializing the LC's status takes its initializers and
//! terminators from its spec, for every requester. The shard's own writes are not admitted.

use std::collections::BTreeSet;

use async_trait::async_trait;
use kcp_api_types::builtin::marked_inactive;
use kcp_apimachinery::status::{ApiError, Reason};
use kcp_auth::authz::SYSTEM_MASTERS;
use serde_json::Value;

use kcp_apiserver::admission::{Admission, Attributes, Operation};

/// Groups whose members may write LogicalClusters freely (kcp's names).
const PRIVILEGED: [&str; 4] = [
    SYSTEM_MASTERS,
    "system:kcp:logical-cluster-admin",
    "system:kcp:external-logical-cluster-admin",
    "system:kcp:tenancy:workspace-bootstrapper",
];

pub struct LogicalClusterAdmission;

fn is_logical_cluster(attrs: &Attributes<'_>) -> bool {
    attrs.def.group == "core.kcp.io" && attrs.def.plural == "logicalclusters"
}

fn forbidden(name: &str, message: &str) -> ApiError {
    ApiError::new(
        Reason::Forbidden,
        format!("logicalclusters.core.kcp.io \"{name}\" is forbidden: {message}"),
    )
}

fn phase(lc: &Value) -> &str {
    lc.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The strings of the list at `pointer`, as a set.
fn names(lc: &Value, pointer: &str) -> BTreeSet<String> {
    (lc.pointer(pointer).and_then(Value::as_array))
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// kcp's order of phases an LC moves through; any other phase ranks below them all. `Inactive`
/// is a Ready LC's while it is marked so, which the write marking it sets (see
/// `kcp_api_types::builtin::marked_inactive`): it ranks as Ready.
fn rank(phase: &str) -> u8 {
    match phase {
        "" => 1,
        "Scheduling" => 2,
        "Initializing" => 3,
        "Ready" | "Inactive" => 4,
        _ => 0,
    }
}

fn is_marked_inactive(lc: &Value) -> bool {
    let annotations = lc.pointer("/metadata/annotations");
    marked_inactive(|key| annotations?.get(key)?.as_str())
}

/// Why an unprivileged update from `old` to `new` is refused, if it is (kcp's words).
fn update_refusal(old: &Value, new: &Value) -> Option<String> {
    for field in ["createdBy", "owner"] {
        let value = |lc: &Value| lc.pointer(&format!("/spec/{field}")).cloned();
        if value(old) != value(new) {
            return Some(format!(
                "spec.{field}: Invalid value: {}: field is immutable",
                value(new).unwrap_or(Value::Null)
            ));
        }
    }
    let (old_spec, new_spec) = (
        names(old, "/spec/initializers"),
        names(new, "/spec/initializers"),
    );
    let (old_status, new_status) = (
        names(old, "/status/initializers"),
        names(new, "/status/initializers"),
    );
    if old_spec != new_spec {
        return Some("spec.initializers is immutable".into());
    }
    let initializing = phase(new) == "Initializing";
    let entering = phase(old) != "Initializing" && initializing;
    if entering && new_spec != new_status {
        return Some("status.initializers do not equal spec.initializers".into());
    }
    if !entering && initializing && !new_status.is_subset(&old_status) {
        return Some("status.initializers must not grow".into());
    }
    if !initializing && old_status != new_status {
        return Some("status.initializers is immutable after initialization".into());
    }
    if phase(old) == "Initializing" && !initializing && !new_status.is_empty() {
        return Some("status.initializers is not empty".into());
    }
    if rank(phase(old)) > rank(phase(new)) {
        return Some(format!(
            "cannot transition from {:?} to {:?}",
            phase(old),
            phase(new)
        ));
    }
    // An LC initializing or terminating needs its content reachable (kcp's reason).
    if phase(old) != "Ready" && !is_marked_inactive(old) && is_marked_inactive(new) {
        return Some(format!(
            "LogicalCluster can only be marked inactive in phase \"Ready\", but is in phase {:?}",
            phase(old)
        ));
    }
    None
}

#[async_trait]
impl Admission for LogicalClusterAdmission {
    async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&mut Value>,
    ) -> Result<bool, ApiError> {
        let (true, Operation::Update, Some(new), Some(old)) = (
            is_logical_cluster(attrs),
            attrs.operation,
            object,
            attrs.old_object,
        ) else {
            return Ok(false);
        };
        if phase(old) == "Initializing" || phase(new) != "Initializing" {
            return Ok(false);
        }
        let spec = new.get("spec").cloned().unwrap_or(Value::Null);
        let Some(status) = new.get_mut("status").and_then(Value::as_object_mut) else {
            return Ok(false);
        };
        for field in ["initializers", "terminators"] {
            let from_spec = spec
                .get(field)
                .cloned()
                .unwrap_or_else(|| Value::Array(Vec::new()));
            status.insert(field.into(), from_spec);
        }
        Ok(true)
    }

    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        object: Option<&Value>,
    ) -> Result<(), ApiError> {
        if !is_logical_cluster(attrs)
            || (attrs.user.groups.iter()).any(|g| PRIVILEGED.contains(&g.as_str()))
        {
            return Ok(());
        }
        let refusal = match (attrs.operation, object, attrs.old_object) {
            (Operation::Create, _, _) => Some("LogicalCluster cannot be created".to_string()),
            (Operation::Delete, _, old) => {
                let deletable = old.and_then(|lc| lc.pointer("/spec/directlyDeletable"));
                (deletable != Some(&Value::Bool(true)))
                    .then(|| "LogicalCluster cannot be deleted".to_string())
            }
            (Operation::Update, Some(new), Some(old)) => update_refusal(old, new),
            _ => None,
        };
        match refusal {
            Some(message) => Err(forbidden(attrs.name, &message)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn lc(phase: &str, spec: &[&str], status: &[&str]) -> Value {
        json!({
            "spec": {"initializers": spec, "createdBy": {"username": "alice"}},
            "status": {"phase": phase, "initializers": status},
        })
    }

    #[test]
    fn the_lifecycle_only_moves_forward() {
        let initializing = lc("Initializing", &["a", "b"], &["a", "b"]);
        // Removing an initializer is what an initializing controller does.
        let one_done = lc("Initializing", &["a", "b"], &["b"]);
        assert_eq!(update_refusal(&initializing, &one_done), None);
        let done = lc("Ready", &["a", "b"], &[]);
        assert_eq!(
            update_refusal(&lc("Initializing", &["a", "b"], &[]), &done),
            None
        );
        for (new, why) in [
            (
                lc("Initializing", &["a", "b"], &["a", "b", "c"]),
                "status.initializers must not grow",
            ),
            (
                lc("Initializing", &["a"], &["a"]),
                "spec.initializers is immutable",
            ),
            (
                lc("Ready", &["a", "b"], &["a"]),
                "status.initializers is immutable after initialization",
            ),
            (
                lc("Ready", &["a", "b"], &["a", "b"]),
                "status.initializers is not empty",
            ),
        ] {
            assert_eq!(update_refusal(&initializing, &new).as_deref(), Some(why));
        }
        assert_eq!(
            update_refusal(&done, &lc("Initializing", &["a", "b"], &["a", "b"])).as_deref(),
            Some("cannot transition from \"Ready\" to \"Initializing\"")
        );
        assert_eq!(
            update_refusal(&done, &lc("Ready", &["a", "b"], &["x"])).as_deref(),
            Some("status.initializers is immutable after initialization")
        );
        let mut other_creator = done.clone();
        other_creator["spec"]["createdBy"] = json!({"username": "mallory"});
        assert!(
            update_refusal(&done, &other_creator)
                .is_some_and(|m| m.starts_with("spec.createdBy: Invalid value:"))
        );
        // The owner is the shard's: its orphan cleanup trusts it.
        let mut other_owner = done.clone();
        other_owner["spec"]["owner"] = json!({"uid": "0"});
        assert!(
            update_refusal(&done, &other_owner)
                .is_some_and(|m| m.starts_with("spec.owner: Invalid value: {\"uid\":\"0\"}"))
        );
        // Labels, annotations and the like are free.
        let mut labelled = done.clone();
        labelled["metadata"] = json!({"labels": {"x": "y"}});
        assert_eq!(update_refusal(&done, &labelled), None);
    }

    #[test]
    fn only_a_ready_lc_is_marked_inactive() {
        let marked = |lc: &Value, phase: &str| {
            let mut lc = lc.clone();
            lc["metadata"] = json!({"annotations": {"core.kcp.io/inactive": "true"}});
            lc["status"]["phase"] = json!(phase);
            lc
        };
        // As the marking write makes it (the strategy turns Ready into Inactive), and back.
        let ready = lc("Ready", &[], &[]);
        let inactive = marked(&ready, "Inactive");
        assert_eq!(update_refusal(&ready, &inactive), None);
        assert_eq!(update_refusal(&inactive, &ready), None);
        let initializing = lc("Initializing", &["a"], &["a"]);
        assert_eq!(
            update_refusal(&initializing, &marked(&initializing, "Initializing")).as_deref(),
            Some(
                "LogicalCluster can only be marked inactive in phase \"Ready\", but is in phase \"Initializing\""
            )
        );
    }
}
