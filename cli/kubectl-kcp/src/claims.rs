//! `kubectl kcp claims`: the permission claims of the current workspace's APIBindings, listed
//! (`get apibinding [<name>]`) and answered (`accept|reject [apibinding] <name> --resource r.g |
//! --identity-hash h`); kcp's `cli/pkg/claims`.
//!
//! Beyond kcp: a claim the binding does not list yet is answered from its export's claims
//! (`status.exportPermissionClaims`), both `--resource` and `--identity-hash` must match when both
//! are given, every matching claim is answered (kcp stops at the first identity match), and
//! answering nothing is an error rather than a silent update.

use http::Method;
use serde_json::Value;

use kubectl_ws::client::ClientError;
use kubectl_ws::commands::{Env, Streams};
use kubectl_ws::tabwriter;

use crate::BINDINGS;
use crate::error::{Error, Result};
use crate::permission_claims::{ClaimError, ClaimFilter, ClaimState, GroupResource};

/// `claims accept|reject`'s arguments and flags.
#[derive(Debug, Clone, clap::Args)]
pub struct AnswerArgs {
    /// [apibinding] <apibinding_name>
    #[arg(value_name = "APIBINDING")]
    pub args: Vec<String>,
    /// Resource group of permission claim. Format: --resource resource.group
    #[arg(long)]
    pub resource: Option<String>,
    /// Identity hash of the resource. Format: --identity-hash id
    #[arg(long = "identity-hash")]
    pub identity_hash: Option<String>,
}

/// The binding `accept|reject` answers: `<name>`, or `apibinding <name>` (the form `get` has).
pub fn binding_name(args: &[String]) -> Result<&str> {
    match args {
        [] => Err(Error::BindingNameMissing),
        [name] => Ok(name.as_str()),
        [kind, name] if kind == "apibinding" || kind == "apibindings" => Ok(name.as_str()),
        _ => Err(Error::ExtraArguments(args.to_vec())),
    }
}

/// `claims get apibinding [<name>]`: one binding's claims, or those of every binding here.
pub async fn get(env: &Env, name: Option<&str>, io: &mut Streams<'_>) -> Result<()> {
    let kc = env.load()?;
    let current = env.current_url(&kc)?;
    let client = env.client(&kc).await?;
    let base = format!("{}/{BINDINGS}", current.path.request_path());
    let bindings: Vec<Value> = match name {
        Some(name) => vec![
            client
                .request(Method::GET, &format!("{base}/{name}"), None)
                .await
                .map_err(Error::FindBinding)?,
        ],
        None => {
            let list: Value = client
                .request(Method::GET, &base, None)
                .await
                .map_err(|source| Error::ListBindings {
                    path: current.path.to_string(),
                    source,
                })?;
            list.get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        }
    };
    write!(io.out, "{}", claims_table(&bindings))?;
    Ok(())
}

/// kcp's table: one line per claim in the bindings' specs, aligned as kubectl aligns (padding 3).
pub fn claims_table(bindings: &[Value]) -> String {
    let mut text = String::from("APIBINDING\tGROUP-RESOURCE\tVERBS\tSTATUS\n");
    for binding in bindings {
        let name = binding
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let claims = binding
            .pointer("/spec/permissionClaims")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for claim in claims {
            let claimed = GroupResource {
                group: member(claim, "group").to_owned(),
                resource: member(claim, "resource").to_owned(),
            };
            let verbs: Vec<&str> = claim
                .get("verbs")
                .and_then(Value::as_array)
                .map(|verbs| verbs.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            text.push_str(&format!(
                "{name}\t{claimed}\t{}\t{}\n",
                verbs.join(","),
                member(claim, "state")
            ));
        }
    }
    tabwriter::align(&text, 3)
}

fn member<'a>(claim: &'a Value, key: &str) -> &'a str {
    claim.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// `claims accept|reject`: sets `state` on the matching claims of the binding and updates it.
pub async fn answer(
    env: &Env,
    args: &AnswerArgs,
    state: ClaimState,
    io: &mut Streams<'_>,
) -> Result<()> {
    let name = binding_name(&args.args)?;
    let filter = ClaimFilter::new(args.resource.as_deref(), args.identity_hash.as_deref())?;
    let kc = env.load()?;
    let current = env.current_url(&kc)?;
    let client = env.client(&kc).await?;
    let path = format!("{}/{BINDINGS}/{name}", current.path.request_path());
    let failed = |source: ClientError| Error::UpdateClaim {
        name: name.to_owned(),
        source,
    };
    let mut binding: Value = client
        .request(Method::GET, &path, None)
        .await
        .map_err(failed)?;
    if filter.answer(&mut binding, state) == 0 {
        return Err(ClaimError::NoMatch {
            filter: filter.describe(),
            binding: name.to_owned(),
        }
        .into());
    }
    // The object as read, resourceVersion included: a concurrent change is a conflict, not lost.
    let _: Value = client
        .request(Method::PUT, &path, Some(&binding))
        .await
        .map_err(failed)?;
    writeln!(
        io.out,
        "{} on APIBinding {name:?} is {}",
        filter.describe(),
        state.verb_past()
    )?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use serde_json::json;

    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn binding_names() {
        assert_eq!(
            binding_name(&strings(&["cert-manager"])).unwrap(),
            "cert-manager"
        );
        assert_eq!(
            binding_name(&strings(&["apibinding", "cert-manager"])).unwrap(),
            "cert-manager"
        );
        assert_eq!(
            binding_name(&strings(&["apibinding"])).unwrap(),
            "apibinding"
        );
        assert_eq!(
            binding_name(&[]).unwrap_err().to_string(),
            "error APIBinding name is missing"
        );
        assert!(matches!(
            binding_name(&strings(&["a", "b"])),
            Err(Error::ExtraArguments(_))
        ));
    }

    #[test]
    fn table_of_claims() {
        let bindings = [
            json!({"metadata": {"name": "cowboys"}, "spec": {"permissionClaims": [
                {"resource": "configmaps", "verbs": ["get", "list"], "state": "Accepted"},
                {"group": "wildwest.dev", "resource": "horses", "verbs": ["*"], "state": "Rejected"},
            ]}}),
            json!({"metadata": {"name": "no-claims"}, "spec": {}}),
        ];
        assert_eq!(
            claims_table(&bindings),
            "APIBINDING   GROUP-RESOURCE        VERBS      STATUS\n\
             cowboys      configmaps            get,list   Accepted\n\
             cowboys      horses.wildwest.dev   *          Rejected\n"
        );
        assert_eq!(
            claims_table(&[]),
            "APIBINDING   GROUP-RESOURCE   VERBS   STATUS\n"
        );
    }
}
