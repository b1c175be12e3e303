//! The objects kcp's tenancy starts from: the workspace types every shard's `root` holds, and the
//! Shard object a shard registers itself with.

use kcp_apimachinery::logical_cluster::LogicalClusterName;
use serde_json::{Value, json};

/// The logical cluster holding the bootstrap workspace types.
pub const ROOT: &str = "root";
/// On a Workspace and its LogicalCluster: JSON of the user who created it.
pub const OWNER_ANNOTATION: &str = "experimental.tenancy.kcp.io/owner";
/// On a Workspace and a LogicalCluster: its phase, for `-l` selection.
pub const PHASE_LABEL: &str = "tenancy.kcp.io/phase";
/// On a LogicalCluster and a placed Workspace: the shard holding it.
pub const SHARD_ANNOTATION: &str = "core.kcp.io/shard";
/// On a placed Workspace: the first 8 characters of its shard's [`shard_hash`] (kcp's older way
/// of naming the shard, which kcp still maintains beside [`SHARD_ANNOTATION`]).
pub const SHARD_HASH_ANNOTATION: &str = "internal.tenancy.kcp.io/shard";

/// What [`SHARD_HASH_ANNOTATION`] holds for shard `name`: its SHA-224 in base 36 (kcp's
/// `Base36Sha224.StringPad`), cut to 8 characters.
pub fn shard_hash(name: &str) -> String {
    use sha2::{Digest, Sha224};
    let mut hash = kcp_apimachinery::names::base36_pad(&Sha224::digest(name.as_bytes()));
    hash.truncate(8);
    hash
}

/// The name kcp gives a user's home LC: the first 8 bytes of SHA-224 of the user name, in base 36,
/// with a `0` in front for each leading zero byte (kcp's `BytesPad`).
pub fn home_cluster_name(user: &str) -> LogicalClusterName {
    use sha2::{Digest, Sha224};
    let hash = Sha224::digest(user.as_bytes());
    LogicalClusterName::parse(&kcp_apimachinery::names::base36_pad(&hash[..8]))
        .expect("base 36 digits are a cluster name")
}

/// An owner annotation cut down to `{"username":...}`, as kcp keeps it once Ready; `None` when it
/// is not a user's JSON (kcp then drops it).
pub fn trimmed_owner(owner: &str) -> Option<String> {
    let user: Value = serde_json::from_str(owner).ok()?;
    let name = user.get("username")?.as_str()?;
    Some(json!({ "username": name }).to_string())
}

/// A reference to a type in `root`.
fn root_type(name: &str) -> Value {
    json!({"name": name, "path": ROOT})
}

fn workspace_type(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "tenancy.kcp.io/v1alpha1",
        "kind": "WorkspaceType",
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// kcp's bootstrap types: `universal` (its initializer creates the `default` namespace), `root`
/// and `home` (tree tops: no parent allowed), `organization` (under root) and `team` (under an
/// organization or a team).
pub fn bootstrap_workspace_types() -> Vec<Value> {
    let universal = || json!({"with": [root_type("universal")]});
    vec![
        workspace_type("universal", json!({"initializer": true})),
        workspace_type(
            "root",
            json!({
                "extend": universal(),
                "defaultChildWorkspaceType": root_type("organization"),
                "limitAllowedParents": {"none": true},
            }),
        ),
        workspace_type(
            "home",
            json!({
                "extend": universal(),
                "defaultChildWorkspaceType": root_type("universal"),
                "limitAllowedParents": {"none": true},
            }),
        ),
        workspace_type(
            "organization",
            json!({
                "extend": universal(),
                "defaultChildWorkspaceType": root_type("universal"),
                "limitAllowedChildren": {"types": [root_type("universal")]},
                "limitAllowedParents": {"types": [root_type("root")]},
            }),
        ),
        workspace_type(
            "team",
            json!({
                "extend": universal(),
                "defaultChildWorkspaceType": root_type("universal"),
                "limitAllowedParents": {"types": [root_type("organization"), root_type("team")]},
            }),
        ),
    ]
}

/// The Shard object naming this shard and where it (and its virtual workspaces) are reached.
pub fn shard(name: &str, base_url: &str, external_url: &str, virtual_workspace_url: &str) -> Value {
    json!({
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "Shard",
        "metadata": {"name": name, "labels": {"name": name}},
        "spec": {
            "baseURL": base_url,
            "externalURL": external_url,
            "virtualWorkspaceURL": virtual_workspace_url,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_names_are_short_stable_base36() {
        let a = home_cluster_name("alice");
        assert_eq!(a, home_cluster_name("alice"));
        assert_ne!(a, home_cluster_name("bob"));
        assert!(a.len() <= 13 && !a.is_empty(), "{a}");
        assert!(
            a.chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
        );
        assert!(kcp_apimachinery::names::is_valid_cluster_name(&a));
        // A hash whose first byte is zero keeps a 0 for it, as kcp's BytesPad does (kcp's own
        // test vector: 00 c6 50 b1 ad 5a 99 c3 is "0f9mt7goyif7").
        let padded = home_cluster_name("user172");
        assert_eq!(padded, "0f9mt7goyif7");
    }

    #[test]
    fn every_bootstrap_type_extends_only_known_types() {
        let types = bootstrap_workspace_types();
        let names: Vec<&str> = types
            .iter()
            .filter_map(|t| t.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        assert_eq!(names, ["universal", "root", "home", "organization", "team"]);
        for t in &types {
            let refs = t
                .pointer("/spec/extend/with")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .chain(t.pointer("/spec/defaultChildWorkspaceType"));
            for r in refs {
                let name = r["name"].as_str().unwrap_or_default();
                assert!(names.contains(&name), "{name} is a bootstrap type");
                assert_eq!(r["path"], ROOT);
            }
        }
    }

    #[test]
    fn shard_hashes_are_kcps() {
        // kcp's own test vectors (its workspace scheduling and metadata reconciler tests).
        assert_eq!(shard_hash("root"), "1pfxsevk");
        assert_eq!(shard_hash("shard-1"), "2e1tfbst");
    }
}
