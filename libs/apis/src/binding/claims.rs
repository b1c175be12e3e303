//! A binding's permission claims, as kcp's `kcp-permissionclaimlabel` controller applies them:
//! the claims both exported and accepted are expected; accepted claims the export does not make
//! are invalid (`PermissionClaimsValid=False/InvalidPermissionClaims`), and accepted claims whose
//! verbs or selector differ from the export's are reported (`PermissionClaimsMismatch`). Each
//! claim that came, went or changed its selector has every object of its resource in the
//! cluster relabelled; what was fully relabelled is `status.appliedPermissionClaims`.

use std::collections::{BTreeMap, BTreeSet};

use kcp_api_types::apis::claims::claim_key;
use kcp_apimachinery::logical_cluster::LogicalClusterName;
use kcp_apiserver::ApiServer;
use kcp_apiserver::registry::{ObjectRef, UpdateKind, WriteOptions, keyspace};
use serde_json::Value;

use super::status::Conditions;
use super::text;
use crate::claims::{ClaimIndex, restamp};

/// kcp shows at most this many invalid claims, and this many mismatches, in a message.
const SHOWN_INVALID: usize = 10;
const SHOWN_MISMATCHES: usize = 5;

fn claims_by_key(list: Option<&Value>) -> BTreeMap<String, &Value> {
    (list.and_then(Value::as_array).into_iter().flatten())
        .map(|c| (claim_key(c), c))
        .collect()
}

/// Go's `%v` of an error aggregate: one alone, several in brackets.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

fn verbs(claim: &Value) -> BTreeSet<&str> {
    (claim
        .get("verbs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten())
    .filter_map(Value::as_str)
    .collect()
}

/// An accepted claim without its state: what `appliedPermissionClaims` holds.
fn scoped(claim: &Value) -> Value {
    let mut claim = claim.clone();
    if let Some(o) = claim.as_object_mut() {
        o.remove("state");
    }
    claim
}

/// Applies `binding`'s claims against `export` in `cluster`, setting the claim conditions and
/// `appliedPermissionClaims` in `status`. Answers whether every claim was applied.
pub(super) async fn apply(
    server: &ApiServer,
    index: &ClaimIndex,
    cluster: &LogicalClusterName,
    binding: &Value,
    export: &Value,
    status: &mut Value,
) -> bool {
    // What admission stamps from now on follows this binding with the status about to be
    // written (so the claims are applied in the same write that binds), as what is relabelled
    // below does.
    let mut next = binding.clone();
    next["status"] = status.clone();
    index.set_binding(cluster, text(binding, "/metadata/name"), Some(&next));
    if text(status, "/apiExportClusterName").is_empty() {
        // Claim labels name the export's cluster: once the binding knows it.
        return true;
    }
    let exported = claims_by_key(export.pointer("/spec/permissionClaims"));
    let all_accepted = claims_by_key(binding.pointer("/spec/permissionClaims"));
    let accepted: BTreeMap<&String, &Value> = (all_accepted.iter())
        .filter(|(_, c)| text(c, "/state") == "Accepted")
        .map(|(k, c)| (k, *c))
        .collect();
    let applied = claims_by_key(status.get("appliedPermissionClaims"));
    let expected: Vec<&String> = (accepted.keys().copied())
        .filter(|k| exported.contains_key(*k))
        .collect();

    let mut changes: BTreeSet<&String> = BTreeSet::new();
    for k in &expected {
        match applied.get(*k) {
            None => {
                changes.insert(k);
            }
            Some(was) if was.get("selector") != accepted[k].get("selector") => {
                changes.insert(k);
            }
            Some(_) => {}
        }
    }
    changes.extend(applied.keys().filter(|k| !accepted.contains_key(k)));

    let mut conditions = Conditions::of(status);
    let mut errors = Vec::new();
    let mut failed = BTreeSet::new();
    for k in changes {
        let claim = accepted
            .get(k)
            .copied()
            .or_else(|| applied.get(k).copied())
            .unwrap_or(&Value::Null);
        if let Err(err) = relabel(server, index, cluster, claim).await {
            errors.push(err);
            if accepted.contains_key(k) {
                failed.insert(k.clone());
            }
        }
    }

    let invalid: Vec<String> = (accepted.iter())
        .filter(|(k, _)| !exported.contains_key(**k))
        .map(|(_, c)| {
            format!(
                "unexpected/invalid claim for {}.{} (identity {:?})",
                text(c, "/resource"),
                text(c, "/group"),
                text(c, "/identityHash")
            )
        })
        .collect();
    let mismatches: Vec<String> = (expected.iter())
        .filter_map(|k| mismatch(accepted[*k], exported[*k]))
        .collect();
    if !invalid.is_empty() {
        let shown = &invalid[..invalid.len().min(SHOWN_INVALID)];
        let message = format!(
            "{} unexpected and/or invalid permission claims (showing first {}): {}",
            invalid.len(),
            shown.len(),
            aggregate(shown)
        );
        conditions.set_false(
            "PermissionClaimsValid",
            "InvalidPermissionClaims",
            "Error",
            &message,
        );
    }
    if !mismatches.is_empty() {
        let shown = &mismatches[..mismatches.len().min(SHOWN_MISMATCHES)];
        let message = format!(
            "{} permission claim(s) have mismatched verbs or selectors (showing first {}): {}",
            mismatches.len(),
            shown.len(),
            shown.join(", ")
        );
        (conditions).set_false(
            "PermissionClaimsValid",
            "PermissionClaimsMismatch",
            "Warning",
            &message,
        );
    }
    if invalid.is_empty() && mismatches.is_empty() {
        conditions.set_true("PermissionClaimsValid");
    }
    if errors.is_empty() {
        conditions.set_true("PermissionClaimsApplied");
    } else {
        let shown = &errors[..errors.len().min(SHOWN_INVALID)];
        let message = format!(
            "Permission claims have not been fully applied: {}",
            aggregate(shown)
        );
        conditions.set_false(
            "PermissionClaimsApplied",
            "InternalError",
            "Error",
            &message,
        );
    }
    let applied_now: Vec<Value> = (expected.iter())
        .filter(|k| !failed.contains(**k))
        .map(|k| scoped(accepted[*k]))
        .collect();
    status["appliedPermissionClaims"] = Value::Array(applied_now);
    status["conditions"] = conditions.into_value();
    errors.is_empty()
}

/// How an accepted claim differs from the export's, as kcp words it (`None`: it does not). A
/// `*` on either side counts as the same verbs.
fn mismatch(accepted: &Value, exported: &Value) -> Option<String> {
    let (mine, theirs) = (verbs(accepted), verbs(exported));
    let verbs_differ = mine != theirs && !mine.contains("*") && !theirs.contains("*");
    let selector_differs = exported
        .get("defaultSelector")
        .is_some_and(|d| Some(d) != accepted.get("selector"));
    if !verbs_differ && !selector_differs {
        return None;
    }
    let mut parts = Vec::new();
    if verbs_differ {
        let go =
            |v: &BTreeSet<&str>| format!("[{}]", v.iter().copied().collect::<Vec<_>>().join(" "));
        parts.push(format!(
            "verbs: accepted {}, exported {}",
            go(&mine),
            go(&theirs)
        ));
    }
    if selector_differs {
        parts.push("selector differs from defaultSelector".to_string());
    }
    Some(format!(
        "{}.{} ({})",
        text(accepted, "/resource"),
        text(accepted, "/group"),
        parts.join("; ")
    ))
}

/// Brings the claim labels of every object of `claim`'s resource in `cluster` up to date.
async fn relabel(
    server: &ApiServer,
    index: &ClaimIndex,
    cluster: &LogicalClusterName,
    claim: &Value,
) -> Result<(), String> {
    let (group, resource) = (text(claim, "/group"), text(claim, "/resource"));
    let identity = text(claim, "/identityHash");
    let served = server.apis_of(cluster.as_str());
    let def = (served.resources().iter())
        .find(|d| {
            d.group == group
                && d.plural == resource
                && match identity {
                    "" => d.storage_identity.is_none(),
                    id => d.storage_identity.as_deref() == Some(id),
                }
        })
        .cloned()
        .ok_or_else(|| format!("unable to find informer for {resource}.{group}"))?;
    let cache = server.registry().cache();
    for cached in cache.list(&keyspace(&def).cluster(cluster), None) {
        let Ok(mut object) = cached.value() else {
            continue;
        };
        let expected = index.labels_for(cluster.as_str(), group, resource, &object);
        if !restamp(&mut object, &expected) {
            continue;
        }
        let at = ObjectRef {
            cluster,
            namespace: cached.namespace.as_deref(),
            name: &cached.name,
        };
        let written = server
            .registry()
            .update_if_present(&def, at, UpdateKind::Main, WriteOptions::default(), |old| {
                let mut new = old.clone();
                let expected = index.labels_for(cluster.as_str(), group, resource, old);
                restamp(&mut new, &expected);
                Ok(new)
            })
            .await;
        if let Err(err) = written {
            let ns = cached.namespace.as_deref().unwrap_or_default();
            return Err(format!(
                "error patching \"{resource}.{group}\" {cluster}|{ns}/{}: {err}",
                cached.name
            ));
        }
    }
    Ok(())
}
