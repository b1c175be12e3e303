//! kcp's Workspace: validated and defaulted against its published schema like kcp's other kinds,
//! and, in every write, labelled with its phase, its owner annotation cut down to the creator's
//! name once Ready (as kcp's workspace metadata reconciler does in a write of its own), and its
//! shard's hash beside its shard's name once placed (as kcp's scheduler writes both).

use kcp_apimachinery::status::Cause;
use serde_json::{Value, json};

use super::logical_cluster::follow_phase;
use super::strategies::SchemaStrategy;
use crate::resource::{Strategy, StrategyContext};
use crate::tenancy::{SHARD_ANNOTATION, SHARD_HASH_ANNOTATION, shard_hash};

pub struct WorkspaceStrategy(pub SchemaStrategy);

impl Strategy for WorkspaceStrategy {
    fn prepare_for_create(&self, ctx: &StrategyContext<'_>, obj: &mut Value) {
        self.0.prepare_for_create(ctx, obj);
    }

    fn prepare_for_update(&self, ctx: &StrategyContext<'_>, new: &mut Value, old: &Value) {
        self.0.prepare_for_update(ctx, new, old);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        self.0.validate(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<Cause> {
        self.0.validate_update(new, old)
    }

    fn follow_status(&self, obj: &mut Value) {
        follow_phase(obj);
        let Some(annotations) = obj
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
        else {
            return;
        };
        let hash = match annotations.get(SHARD_ANNOTATION).and_then(Value::as_str) {
            Some(shard) => shard_hash(shard),
            None => return,
        };
        annotations.insert(SHARD_HASH_ANNOTATION.into(), json!(hash));
    }

    fn tracks_generation(&self) -> bool {
        self.0.tracks_generation()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tenancy::{OWNER_ANNOTATION, PHASE_LABEL};

    #[test]
    fn phase_label_and_owner_follow_the_status() {
        let strategy = WorkspaceStrategy(
            SchemaStrategy::of("tenancy.kcp.io", "v1alpha1", "Workspace").expect("a schema"),
        );
        let owner = r#"{"username":"alice","groups":["g"]}"#;
        let mut ws = json!({
            "metadata": {"annotations": {OWNER_ANNOTATION: owner}, "labels": {"keep": "x"}},
            "status": {"phase": "Initializing"},
        });
        strategy.follow_status(&mut ws);
        assert_eq!(ws["metadata"]["labels"][PHASE_LABEL], "Initializing");
        assert_eq!(ws["metadata"]["labels"]["keep"], "x");
        assert_eq!(ws["metadata"]["annotations"][OWNER_ANNOTATION], owner);
        ws["status"]["phase"] = json!("Ready");
        strategy.follow_status(&mut ws);
        assert_eq!(ws["metadata"]["labels"][PHASE_LABEL], "Ready");
        assert_eq!(
            ws["metadata"]["annotations"][OWNER_ANNOTATION],
            r#"{"username":"alice"}"#
        );
        // Without a phase (a new workspace's POST) nothing is labelled.
        let mut new = json!({"metadata": {"name": "a"}});
        strategy.follow_status(&mut new);
        assert!(new["metadata"].get("labels").is_none());
        // Placed: the shard's hash beside its name, whatever hash was there.
        let mut placed = json!({"metadata": {"annotations": {
            SHARD_ANNOTATION: "root", SHARD_HASH_ANNOTATION: "stale"}}});
        strategy.follow_status(&mut placed);
        assert_eq!(
            placed["metadata"]["annotations"][SHARD_HASH_ANNOTATION],
            "1pfxsevk"
        );
    }
}
